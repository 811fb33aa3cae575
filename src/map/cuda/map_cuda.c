/*
 * map_cuda.c - map's element-wise plans on CUDA device 0: the plan's kernel
 * (oc_map_emit_cuda) compiled with NVRTC and run by the streaming engine (oc_stream_run)
 * over the flat, C-order result:
 *
 *   same-shape inputs  INPUT   1-D views of the input's memory, chunked with the output
 *   broadcast inputs   SIDE    uploaded once, whole (the kernel computes their offsets)
 *   the output         OUTPUT  map's destination (the mapped .npy or the caller's array)
 *   the error flag     RESULT  one int, 0 before the run; the kernel stores 1 on an integer
 *                              negative power, checked after the last chunk
 *
 * The engine plans the chunks under --gpu-mem and --host-mem and overlaps upload, compute and
 * download on three streams. Reductions run in map_cuda_reduce.c.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "engine/cuda/device.h"
#include "engine/cuda/driver_status.h"
#include "map/cuda/map_cuda.h"
#include "map/cuda/nvrtc.h"
#include "map/map_codegen.h"
#include "map/map_plan.h"
#include "map/map_types.h"

#define MAX_GRID 65536

typedef struct map_launch {
    oc_context *ctx;
    CUfunction fn;
    int used;         /* used inputs: arrays 1..used of the spec */
    void **args;      /* used + 4 kernel argument pointers */
    oc_status failed; /* the launch's own status and message (oc_stream_run replaces them) */
    char why[400];
} map_launch;

/* Arguments in the kernel's order: out, the used inputs, n, start, error. The spec's arrays
 * are in that order too: output first, inputs, then the flag. */
static int launch(const oc_stream_chunk *c, void *user)
{
    map_launch *l = user;
    long long n = c->rows, start = c->start;
    void **args = l->args;
    int k = 0;
    for (int a = 0; a <= l->used; a++) args[k++] = (void *)&c->data[a];
    args[k++] = &n;
    args[k++] = &start;
    args[k++] = (void *)&c->data[l->used + 1];
    long long blocks = (n + OC_MAP_CUDA_BLOCK - 1) / OC_MAP_CUDA_BLOCK;
    unsigned grid[3] = {(unsigned)(blocks < MAX_GRID ? blocks : MAX_GRID), 1, 1}, block[3] = {OC_MAP_CUDA_BLOCK, 1, 1};
    l->failed = oc_nvrtc_launch(l->ctx, l->fn, "oc_map_elementwise", grid, block, 0, (CUstream)c->stream, args);
    if (l->failed != OC_OK) snprintf(l->why, sizeof l->why, "%s", oc_context_last_error(l->ctx));
    return l->failed != OC_OK;
}

oc_status oc_map_cuda_function(oc_context *ctx, const oc_map_plan *m, const char *name, CUfunction *fn)
{
    char *src = NULL;
    OC_CHECK(ctx, oc_map_emit_cuda(ctx, m, &src, NULL));
    oc_nvrtc_source s = {"outcore_map.cu", src, NULL, 0};
    oc_status st = oc_nvrtc_function(ctx, &s, name, fn);
    free(src);
    return st;
}

oc_status oc_map_cuda_device(oc_context *ctx)
{
    /* The module is loaded into device 0's primary context, which oc_stream_run uses too. */
    cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess) e = cudaFree(0);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return oc_fail(ctx, OC_ERR_DEVICE, "backend cuda: CUDA device 0: %s", cudaGetErrorString(e));
    }
    return OC_OK;
}

static void stream_options(const oc_map_plan *m, oc_stream_options *so)
{
    *so = (oc_stream_options)OC_STREAM_OPTIONS_INIT;
    so->gpu_mem_bytes = m->opts.gpu_mem_bytes;
    if (m->opts.gpu_mem_fraction > 0) so->gpu_mem_fraction = m->opts.gpu_mem_fraction;
    so->host_mem_bytes = m->opts.host_mem_bytes;
    so->progress = m->opts.progress, so->progress_user = m->opts.progress_user;
}

static void describe(const oc_stream_stats *ss, oc_map_stats *stats)
{
    oc_cuda_props prop;
    char name[64] = "GPU";
    if (oc_cuda_props_get(0, &prop) == cudaSuccess) snprintf(name, sizeof name, "%.63s", prop.name);
    stats->backend = OC_BACKEND_CUDA;
    snprintf(stats->backend_desc, sizeof stats->backend_desc, "cuda:0 %.48s, %lld chunk%s%s", name,
             (long long)ss->chunks, ss->chunks == 1 ? "" : "s",
             ss->bytes_direct == 0                               ? ""
             : ss->bytes_direct == ss->bytes_h2d + ss->bytes_d2h ? ", pinned arrays"
                                                                 : ", some arrays pinned");
}

oc_status oc_map_cuda_stream(oc_context *ctx, const oc_map_plan *m, const oc_stream_spec *spec, const oc_status *failed,
                             const char *why, const int *error, oc_map_stats *stats)
{
    oc_stream_options so;
    stream_options(m, &so);
    oc_stream_stats ss = {.struct_size = sizeof ss};
    oc_status st = oc_stream_run(ctx, spec, &so, &ss);
    if (st != OC_OK && *failed != OC_OK) return oc_fail(ctx, *failed, "%s", why);
    OC_CHECK(ctx, st);
    if (*error) return oc_fail(ctx, OC_ERR_INPUT, "integers to negative integer powers are not allowed (as in numpy)");
    describe(&ss, stats);
    return OC_OK;
}

static oc_status map_cuda_run(oc_context *ctx, const oc_map_plan *m, void *out, oc_map_stats *stats)
{
    if (m->reduce != OC_MAP_REDUCE_NONE) return oc_map_cuda_reduce(ctx, m, out, stats);
    OC_CHECK(ctx, oc_map_cuda_device(ctx));
    map_launch l = {.ctx = ctx};
    OC_CHECK(ctx, oc_map_cuda_function(ctx, m, "oc_map_elementwise", &l.fn));

    oc_stream_array *arrays = malloc(sizeof *arrays * (size_t)(m->n_inputs + 2));
    l.args = malloc(sizeof *l.args * (size_t)(m->n_inputs + 4));
    if (!arrays || !l.args) {
        free(arrays), free(l.args);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    }
    int na = 0;
    arrays[na++] = (oc_stream_array){"output", OC_STREAM_OUTPUT, oc_mt_size(m->out_type), 1, {m->count}, 0, out};
    for (int k = 0; k < m->n_inputs; k++) {
        const oc_map_bound *in = &m->inputs[k];
        if (!in->used) continue;
        arrays[na++] = (oc_stream_array){in->name,
                                         in->same_shape ? OC_STREAM_INPUT : OC_STREAM_SIDE,
                                         oc_mt_size(in->type),
                                         1,
                                         {in->same_shape ? m->count : in->count},
                                         0,
                                         (void *)in->data};
        l.used++;
    }
    int error = 0;
    arrays[na++] = (oc_stream_array){"error flag", OC_STREAM_RESULT, (int)sizeof error, 1, {1}, 0, &error};

    oc_stream_spec spec = OC_STREAM_SPEC_INIT;
    spec.arrays = arrays, spec.narrays = na, spec.launch = launch, spec.user = &l;
    oc_status st = oc_map_cuda_stream(ctx, m, &spec, &l.failed, l.why, &error, stats);
    free(arrays), free(l.args);
    return st;
}

static int map_cuda_usable(char *why, size_t why_size)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        if (e != cudaSuccess) oc_cuda_no_device_reason(e, why, why_size);
        else snprintf(why, why_size, "no usable CUDA device: this machine has none");
        return 0;
    }
    char nv[300] = "";
    if (!oc_nvrtc_available(nv, sizeof nv)) {
        snprintf(why, why_size, "NVRTC cannot be loaded: %s", nv);
        return 0;
    }
    return 1;
}

const oc_map_backend oc_map_backend_cuda = {.name = "cuda", .run = map_cuda_run, .usable = map_cuda_usable};
