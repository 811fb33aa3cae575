/*
 * map_cuda_reduce.c - map's reductions on CUDA device 0: the expression is evaluated and
 * reduced chunk by chunk on the device (the kernels of oc_map_emit_cuda, map_codegen.h) and
 * only the reduced values come back. The element-wise result is seen as [outer][len][inner]
 * (len the reduced axis; all elements: len the last dimension, outer the rest):
 *
 *   inner == 1 (rows)  chunks of whole rows [outer]; oc_map_reduce_rows writes each row's
 *                      reduction (numpy's pairwise order for float sums) to a chunked output
 *                      of outer values. An axis reduction is these values (0 + v for sums);
 *                      all elements are these values reduced on the host in row order
 *                      (oc_map_reduce_values: 0 + numpy's pairwise sum of the row sums).
 *   inner > 1 (axis)   chunks of rows of the reduced axis [outer][rows][inner]; one
 *                      accumulator per output element stays on the device (a RESULT array)
 *                      and oc_map_reduce_axis adds the chunk's rows to it in index order, so
 *                      the kernels of successive chunks are ordered by an event.
 *
 * Neither order depends on the chunk size. mean's division and the output cast are the CPU
 * backend's (oc_map_reduce_finish).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "map/map_reduce.h"
#include "map/cuda/map_cuda.h"
#include "map/cuda/nvrtc.h"
#include "map/map_codegen.h"
#include "map/map_types.h"

#define MAX_GRID 65536

typedef struct reduce_launch {
    oc_context *ctx;
    CUfunction fn;
    int used;    /* used inputs: arrays 1..used of the spec */
    int strided; /* inner > 1: oc_map_reduce_axis */
    long long outer, len, inner;
    int lanes_log2;   /* rows: 2^lanes_log2 threads per row */
    cudaEvent_t done; /* strided: the last chunk's kernel */
    int have_done;
    void **args;
    oc_status failed;
    char why[400];
} reduce_launch;

static int launch_failed(reduce_launch *l, const char *what, cudaError_t e)
{
    l->failed = OC_ERR_DEVICE;
    snprintf(l->why, sizeof l->why, "backend cuda: %s: %s", what, cudaGetErrorString(e));
    return 1;
}

/* Arguments: the result array, the used inputs, the kernel's scalars, the error flag. */
static int launch(const oc_stream_chunk *c, void *user)
{
    reduce_launch *l = user;
    long long rows = c->rows, first = c->start * l->len, start = c->start;
    int lanes_log2 = l->lanes_log2;
    void **args = l->args;
    int k = 0;
    for (int a = 0; a <= l->used; a++) args[k++] = (void *)&c->data[a];
    unsigned grid[3] = {1, 1, 1}, block[3] = {OC_MAP_CUDA_BLOCK, 1, 1};
    long long blocks;
    cudaStream_t stream = (cudaStream_t)c->stream;
    if (l->strided) {
        args[k++] = &l->outer, args[k++] = &rows, args[k++] = &l->len, args[k++] = &l->inner, args[k++] = &start;
        blocks = (l->outer * l->inner + OC_MAP_CUDA_BLOCK - 1) / OC_MAP_CUDA_BLOCK;
        cudaError_t e = l->have_done ? cudaStreamWaitEvent(stream, l->done, 0) : cudaSuccess;
        if (e != cudaSuccess) return launch_failed(l, "ordering the chunks", e);
    } else {
        args[k++] = &rows, args[k++] = &l->len, args[k++] = &first, args[k++] = &lanes_log2;
        const long long per = OC_MAP_CUDA_BLOCK >> lanes_log2;
        blocks = (rows + per - 1) / per;
    }
    args[k++] = (void *)&c->data[l->used + 1];
    grid[0] = (unsigned)(blocks < MAX_GRID ? blocks : MAX_GRID);
    const char *name = l->strided ? "oc_map_reduce_axis" : "oc_map_reduce_rows";
    l->failed = oc_nvrtc_launch(l->ctx, l->fn, name, grid, block, 0, (CUstream)stream, args);
    if (l->failed != OC_OK) {
        snprintf(l->why, sizeof l->why, "%s", oc_context_last_error(l->ctx));
        return 1;
    }
    if (l->strided) {
        cudaError_t e = cudaEventRecord(l->done, stream);
        if (e != cudaSuccess) return launch_failed(l, "ordering the chunks", e);
        l->have_done = 1;
    }
    return 0;
}

/* The reduction's shape and the stream spec's arrays: [0] the result (rows: a chunked
 * output of outer values into res; strided: the accumulators res, out_count values), the used
 * inputs, the error flag. */
static int make_arrays(const oc_map_plan *m, reduce_launch *l, void *res, int *error, oc_stream_array *arrays)
{
    const int rsize = oc_mt_size(m->reduce_type);
    int na = 0;
    if (l->strided)
        arrays[na++] = (oc_stream_array){"accumulators", OC_STREAM_RESULT, rsize, 1, {m->out_count}, 0, res};
    else arrays[na++] = (oc_stream_array){"row results", OC_STREAM_OUTPUT, rsize, 1, {l->outer}, 0, res};
    for (int k = 0; k < m->n_inputs; k++) {
        const oc_map_bound *in = &m->inputs[k];
        if (!in->used) continue;
        oc_stream_array a = {in->name, OC_STREAM_SIDE, oc_mt_size(in->type), 1, {in->count}, 0, (void *)in->data};
        if (in->same_shape && l->strided)
            a.role = OC_STREAM_INPUT, a.ndim = 3, a.shape[0] = l->outer, a.shape[1] = l->len, a.shape[2] = l->inner,
            a.axis = 1;
        else if (in->same_shape) a.role = OC_STREAM_INPUT, a.ndim = 2, a.shape[0] = l->outer, a.shape[1] = l->len;
        arrays[na++] = a;
        l->used++;
    }
    arrays[na++] = (oc_stream_array){"error flag", OC_STREAM_RESULT, (int)sizeof *error, 1, {1}, 0, error};
    return na;
}

oc_status oc_map_cuda_reduce(oc_context *ctx, const oc_map_plan *m, void *out, oc_map_stats *stats)
{
    /* No element to evaluate: the CPU's result (0, NaN) without starting the device. */
    if (m->count == 0) return oc_map_backend_cpu.run(ctx, m, out, stats);
    reduce_launch l = {.ctx = ctx, .outer = 1, .len = 1, .inner = 1};
    if (m->axis >= 0) {
        for (int d = 0; d < m->axis; d++) l.outer *= m->shape[d];
        l.len = m->shape[m->axis];
        for (int d = m->axis + 1; d < m->ndim; d++) l.inner *= m->shape[d];
    } else if (m->ndim > 0) {
        l.len = m->shape[m->ndim - 1];
        l.outer = m->count / l.len;
    }
    l.strided = l.inner > 1;
    while (l.lanes_log2 < 8 && l.len > (128LL << l.lanes_log2)) l.lanes_log2++;

    OC_CHECK(ctx, oc_map_cuda_device(ctx));
    OC_CHECK(ctx, oc_map_cuda_function(ctx, m, l.strided ? "oc_map_reduce_axis" : "oc_map_reduce_rows", &l.fn));
    const size_t rsize = oc_mt_size(m->reduce_type);
    const int64_t nres = l.strided ? m->out_count : l.outer;
    unsigned char *res = calloc((size_t)nres, rsize); /* sums start at 0 */
    oc_stream_array *arrays = malloc(sizeof *arrays * (size_t)(m->n_inputs + 2));
    l.args = malloc(sizeof *l.args * (size_t)(m->n_inputs + 8));
    oc_status st = OC_OK;
    if (!res || !arrays || !l.args) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory for the reduction's partial results");
        goto done;
    }
    if (l.strided && cudaEventCreateWithFlags(&l.done, cudaEventDisableTiming) != cudaSuccess) {
        (void)cudaGetLastError();
        st = oc_fail(ctx, OC_ERR_DEVICE, "backend cuda: cannot create an event on cuda:0");
        goto done;
    }
    int error = 0;
    oc_stream_spec spec = OC_STREAM_SPEC_INIT;
    spec.arrays = arrays, spec.narrays = make_arrays(m, &l, res, &error, arrays);
    spec.launch = launch, spec.user = &l, spec.extent = l.strided ? l.len : l.outer;
    st = oc_map_cuda_stream(ctx, m, &spec, &l.failed, l.why, &error, stats);
    if (st != OC_OK) goto done;
    if (m->axis < 0) {
        unsigned char one[8];
        oc_map_reduce_values(m->reduce_type, m->reduce, res, l.outer, one);
        memcpy(res, one, rsize);
    } else if (!l.strided) {
        /* Each row's value as the CPU finishes it: 0 + v for sums. */
        for (int64_t o = 0; o < l.outer; o++)
            oc_map_reduce_values(m->reduce_type, m->reduce, res + o * (int64_t)rsize, 1, res + o * (int64_t)rsize);
    }
    oc_map_reduce_finish(m, res, out);
done:
    if (l.done) (void)cudaEventDestroy(l.done);
    free(res), free(arrays), free(l.args);
    return st;
}
