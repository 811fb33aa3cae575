/*
 * test_map_run_cuda.c - oc_map_run with backend cuda (the NVRTC kernel streamed by
 * oc_stream_run) gives the CPU backend's bytes: same-shape and broadcast inputs, mixed
 * dtypes, an output cast, math functions within their ulp bounds, a job cut into several
 * chunks by a small --gpu-mem, a .npy output, and the CPU's error (no file) for an integer
 * negative power; a reduction asked of cuda fails naming the CPU. Exits 77 without a usable
 * device or without NVRTC.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness.h"
#include "map/cuda/nvrtc.h"
#include "map/map_plan.h"
#include "map_values.h"
#include "nvrtc_skip.h"

static oc_context *ctx;

typedef struct arg {
    const char *name;
    int type;
    int ndim;
    int64_t shape[3];
} arg;

/* Runs expr over inputs filled from seeds on the CPU and on the GPU (into memory, or into the
 * file `path` for the GPU when it is not NULL) and compares; returns the GPU's chunk count. */
static int64_t check(const char *expr, const arg *args, int n, int dtype, int64_t gpu_mem, int64_t ulps,
                     const char *path)
{
    oc_map_array in[4];
    void *data[4] = {0};
    for (int k = 0; k < n; k++) {
        int64_t count = 1;
        for (int d = 0; d < args[k].ndim; d++) count *= args[k].shape[d];
        data[k] = malloc((size_t)count * 8);
        fill(data[k], args[k].type, count, 11 + (uint64_t)k);
        in[k] = (oc_map_array)OC_MAP_ARRAY_INIT;
        in[k].name = args[k].name, in[k].data = data[k], in[k].dtype = args[k].type;
        in[k].ndim = args[k].ndim, in[k].shape = args[k].shape;
    }
    oc_map_options o = OC_MAP_OPTIONS_INIT;
    o.dtype = dtype, o.backend = OC_BACKEND_CPU; /* the reference: never auto's GPU */
    oc_map *cpu_m = NULL, *gpu_m = NULL;
    CHECK_MSG(oc_map_create(ctx, expr, in, n, NULL, 0, &o, &cpu_m) == OC_OK, "%s: %s", expr,
              oc_context_last_error(ctx));
    o.backend = OC_BACKEND_CUDA, o.gpu_mem_bytes = gpu_mem;
    CHECK(oc_map_create(ctx, expr, in, n, NULL, 0, &o, &gpu_m) == OC_OK);
    int64_t chunks = -1;
    if (cpu_m && gpu_m) {
        size_t bytes = (size_t)cpu_m->count * oc_mt_size(cpu_m->out_type);
        unsigned char *cpu = malloc(bytes), *gpu = malloc(bytes + 4096);
        oc_map_stats s = {.struct_size = sizeof s};
        CHECK_MSG(oc_map_run(ctx, cpu_m, NULL, cpu, NULL) == OC_OK, "%s on the CPU: %s", expr,
                  oc_context_last_error(ctx));
        oc_status st = oc_map_run(ctx, gpu_m, path, path ? NULL : gpu, &s);
        CHECK_MSG(st == OC_OK, "%s on the GPU: %s", expr, oc_context_last_error(ctx));
        if (st == OC_OK && path) { /* the data are the file's last bytes, after the .npy header */
            FILE *f = fopen(path, "rb");
            CHECK(f && fseek(f, -(long)bytes, SEEK_END) == 0 && fread(gpu, 1, bytes, f) == bytes);
            if (f) fclose(f);
            unlink(path);
        }
        if (st == OC_OK) {
            CHECK_MSG(s.backend == OC_BACKEND_CUDA && strncmp(s.backend_desc, "cuda:0", 6) == 0, "%s: ran on %s", expr,
                      s.backend_desc);
            CHECK_MSG(same_values(cpu, gpu, cpu_m->out_type, cpu_m->count, ulps),
                      "%s: the GPU's values differ from the CPU's", expr);
            const char *c = strrchr(s.backend_desc, ',');
            chunks = c ? strtoll(c + 1, NULL, 10) : -1;
        }
        free(cpu), free(gpu);
    }
    oc_map_free(cpu_m), oc_map_free(gpu_m);
    for (int k = 0; k < n; k++) free(data[k]);
    return chunks;
}

/* An integer negative power fails on the GPU as on the CPU, and leaves no file. */
static void check_negative_power(void)
{
    int64_t sa[1] = {100000}, sb[1] = {100000};
    int32_t *a = malloc(sizeof *a * 100000), *b = malloc(sizeof *b * 100000);
    for (int i = 0; i < 100000; i++) a[i] = i % 5 + 1, b[i] = i == 77777 ? -1 : i % 3;
    oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
    in[0].name = "a", in[0].data = a, in[0].dtype = OC_MAP_INT32, in[0].ndim = 1, in[0].shape = sa;
    in[1].name = "b", in[1].data = b, in[1].dtype = OC_MAP_INT32, in[1].ndim = 1, in[1].shape = sb;
    char cpu_msg[512] = "";
    for (int backend = 0; backend < 2; backend++) {
        oc_map_options o = OC_MAP_OPTIONS_INIT;
        o.backend = backend ? OC_BACKEND_CUDA : OC_BACKEND_CPU;
        oc_map *m = NULL;
        CHECK(oc_map_create(ctx, "a ** b", in, 2, NULL, 0, &o, &m) == OC_OK);
        const char *path = "test_map_run_cuda_negpow.npy";
        unlink(path);
        CHECK(m && oc_map_run(ctx, m, path, NULL, NULL) == OC_ERR_INPUT);
        CHECK(access(path, F_OK) != 0);
        if (!backend) snprintf(cpu_msg, sizeof cpu_msg, "%s", oc_context_last_error(ctx));
        else
            CHECK_MSG(strcmp(cpu_msg, oc_context_last_error(ctx)) == 0, "GPU: %s; CPU: %s", oc_context_last_error(ctx),
                      cpu_msg);
        oc_map_free(m);
    }
    free(a), free(b);
}

/* A reduction asked of the GPU fails (one line naming the CPU) before anything runs. */
static void check_reduce_refused(void)
{
    int64_t sa[1] = {1000};
    double *a = calloc(1000, sizeof *a);
    oc_map_array in = OC_MAP_ARRAY_INIT;
    in.name = "a", in.data = a, in.ndim = 1, in.shape = sa;
    oc_map_options o = OC_MAP_OPTIONS_INIT;
    o.backend = OC_BACKEND_CUDA, o.reduce = OC_MAP_REDUCE_SUM;
    oc_map *m = NULL;
    double sum = 0;
    CHECK(oc_map_create(ctx, "a * 2", &in, 1, NULL, 0, &o, &m) == OC_OK);
    CHECK(m && oc_map_run(ctx, m, NULL, &sum, NULL) == OC_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "reductions on the CPU") != NULL, "%s", oc_context_last_error(ctx));
    oc_map_free(m);
    free(a);
}

int main(void)
{
    if (gpu_nvrtc_missing()) return oc_test_finish();
    CHECK(oc_context_create(&ctx) == OC_OK);
    const arg same[2] = {{"a", MT_F64, 2, {1000, 300}}, {"b", MT_F64, 2, {1000, 300}}};
    check("a * b + a / b - 3", same, 2, -1, 0, 0, NULL);
    check("a * b", same, 2, MT_F32, 0, 0, NULL); /* output cast */
    const arg bcast[3] = {{"a", MT_I32, 2, {700, 129}}, {"b", MT_F32, 1, {129}}, {"c", MT_U8, 2, {700, 1}}};
    check("a + b", bcast, 2, -1, 0, 0, NULL);
    check("where(a > c, a * b, c - b) // 3", bcast, 3, -1, 0, 0, NULL); /* mixed dtypes */
    const arg ints[2] = {{"a", MT_I16, 3, {50, 40, 30}}, {"b", MT_U16, 3, {1, 40, 1}}};
    check("a % (b + 1) + a // (b | 1)", ints, 2, MT_I64, 0, 0, NULL);
    /* sqrt is correctly rounded on both; exp is within 1 ulp on glibc and CUDA (double) and 2
     * (CUDA float): 3 apart at most. */
    check("sqrt(abs(a)) * b", same, 2, -1, 0, 0, NULL);
    check("exp(a / 1000)", bcast, 1, -1, 0, 3, NULL);
    check("exp(b / 100)", bcast + 1, 1, -1, 0, 3, NULL);
    /* Several chunks: 4M float64 elements (32 MiB a array) under a 4 MiB device budget. */
    const arg big[2] = {{"a", MT_F64, 2, {4096, 1024}}, {"b", MT_F64, 1, {1024}}};
    int64_t chunks = check("a * b - a", big, 2, -1, 4 << 20, 0, "test_map_run_cuda_big.npy");
    CHECK_MSG(chunks > 2, "a 32 MiB job under 4 MiB ran in %lld chunks", (long long)chunks);
    check_negative_power();
    check_reduce_refused();
    oc_context_free(ctx);
    return oc_test_finish();
}
