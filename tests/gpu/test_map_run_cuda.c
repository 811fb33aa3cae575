/*
 * test_map_run_cuda.c - oc_map_run with backend cuda (the NVRTC kernel streamed by
 * oc_stream_run) gives the CPU backend's bytes: same-shape and broadcast inputs, mixed
 * dtypes, an output cast, math functions within their ulp bounds, a job cut into several
 * chunks by a small --gpu-mem, a .npy output, and the CPU's error (no file) for an integer
 * negative power; reductions (sum, mean, min, max over all elements and every axis, float64,
 * float32, int32 and bool, NaN) give the same bytes under every device budget, the CPU's.
 * Exits 77 without a usable device or without NVRTC.
 */
#include <cuda_runtime_api.h>
#include <math.h>
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

/* Values of every magnitude (floats), NaN at nan_at (>= 0) in float types. */
static void fill_spread(void *p, int t, int64_t n, uint64_t seed, int64_t nan_at)
{
    fill(p, t, n, seed);
    for (int64_t i = 0; i < n && oc_mt_is_float(t); i++) {
        uint64_t r = oc_test_rand(&seed);
        double v = ((double)(r >> 11) * 0x1p-53 - 0.5) * ldexp(1.0, (int)(r % 41) - 20);
        if (i == nan_at) v = NAN;
        if (t == MT_F32) ((float *)p)[i] = (float)v;
        else ((double *)p)[i] = v;
    }
}

/* op of expr over a (type t, shape) along axis (-99: all elements) on the GPU under device
 * budgets from the default to 256 KiB: every budget gives the same bytes, the CPU's (float
 * sums of all elements of an N-D array: within the bound of docs/map.md); the smallest
 * budget runs several chunks when the input is larger than it. */
static void check_reduce(const char *expr, int t, int ndim, const int64_t *shape, oc_map_reduce op, int axis,
                         int64_t nan_at)
{
    int64_t count = 1;
    for (int d = 0; d < ndim; d++) count *= shape[d];
    void *a = malloc((size_t)count * 8);
    fill_spread(a, t, count, 5 + (uint64_t)op, nan_at);
    float b[1000];
    for (int i = 0; i < 1000; i++) b[i] = (float)(i % 17) * 0.25f - 2.0f;
    oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
    in[0].name = "a", in[0].data = a, in[0].dtype = t, in[0].ndim = ndim, in[0].shape = shape;
    in[1].name = "b", in[1].data = b, in[1].dtype = OC_MAP_FLOAT32, in[1].ndim = 1, in[1].shape = shape + ndim - 1;
    const int nin = strchr(expr, 'b') ? 2 : 1; /* b: shape[ndim - 1] <= 1000 */
    oc_map_options o = OC_MAP_OPTIONS_INIT;
    o.reduce = op, o.has_axis = axis != -99, o.axis = axis, o.backend = OC_BACKEND_CPU;
    oc_map *m = NULL;
    char what[200];
    snprintf(what, sizeof what, "%s of %s over %s, axis %d",
             op == OC_MAP_REDUCE_SUM    ? "sum"
             : op == OC_MAP_REDUCE_MEAN ? "mean"
             : op == OC_MAP_REDUCE_MIN  ? "min"
                                        : "max",
             expr, oc_mt_name(t), axis);
    CHECK_MSG(oc_map_create(ctx, expr, in, nin, NULL, 0, &o, &m) == OC_OK, "%s: %s", what, oc_context_last_error(ctx));
    if (!m) {
        free(a);
        return;
    }
    const int ot = m->out_type;
    const int64_t n = m->out_ndim ? m->out_count : 1;
    const size_t bytes = (size_t)n * oc_mt_size(ot);
    unsigned char *cpu = malloc(bytes), *gpu = malloc(bytes), *first = malloc(bytes);
    CHECK(oc_map_run(ctx, m, NULL, cpu, NULL) == OC_OK);
    /* Float sums of all elements of N-D arrays: row sums added pairwise; numpy's bound. */
    const int loose = axis == -99 && ndim > 1 && oc_mt_is_float(t) && op != OC_MAP_REDUCE_MIN &&
                      op != OC_MAP_REDUCE_MAX && nan_at < 0;
    double mag = 0; /* the sum of |a * 3 - 1| at most */
    for (int64_t i = 0; loose && i < count; i++) mag += 3 * fabs(t == MT_F32 ? ((float *)a)[i] : ((double *)a)[i]) + 1;
    if (op == OC_MAP_REDUCE_MEAN) mag /= (double)count;
    /* Elements of the unit a chunk holds whole: a row of the reduced run, or all but the
     * reduced axis; budgets too small for 16 of them are skipped. */
    int64_t outer = 1, inner = 1, unit;
    for (int d = 0; d < axis && axis >= 0; d++) outer *= shape[d];
    for (int d = axis + 1; d < ndim && axis >= 0; d++) inner *= shape[d];
    unit = inner > 1 ? outer * inner : axis >= 0 ? shape[axis] : ndim ? shape[ndim - 1] : 1;
    static const int64_t budgets[] = {0, 16 << 20, 1 << 20, 256 << 10};
    int64_t chunks = 0;
    for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
        if (budgets[b] && budgets[b] < 16 * unit * 8) continue;
        oc_map_plan *g = NULL;
        o.backend = OC_BACKEND_CUDA, o.gpu_mem_bytes = budgets[b];
        CHECK(oc_map_create(ctx, expr, in, nin, NULL, 0, &o, &g) == OC_OK);
        oc_map_stats s = {.struct_size = sizeof s};
        oc_status st = g ? oc_map_run(ctx, g, NULL, gpu, &s) : OC_ERR_INVALID_ARGUMENT;
        CHECK_MSG(st == OC_OK, "%s on the GPU (budget %lld): %s", what, (long long)budgets[b],
                  oc_context_last_error(ctx));
        oc_map_free(g);
        if (st != OC_OK) continue;
        CHECK_MSG(s.backend == OC_BACKEND_CUDA, "%s: ran on %s", what, s.backend_desc);
        const char *c = strrchr(s.backend_desc, ',');
        if (budgets[b] == 256 << 10) chunks = c ? strtoll(c + 1, NULL, 10) : -1;
        if (b == 0) memcpy(first, gpu, bytes);
        else
            CHECK_MSG(memcmp(first, gpu, bytes) == 0, "%s: budget %lld (%s) changes the bytes", what,
                      (long long)budgets[b], s.backend_desc);
        if (!loose) {
            CHECK_MSG(same_values(cpu, gpu, ot, n, 0), "%s: the GPU's values differ from the CPU's", what);
        } else {
            double x = ot == MT_F32 ? *(float *)gpu : *(double *)gpu, y = ot == MT_F32 ? *(float *)cpu : *(double *)cpu;
            double eps = ot == MT_F32 ? 0x1p-24 : 0x1p-53;
            CHECK_MSG(fabs(x - y) <= 2 * (log2((double)count) + 2) * eps * mag, "%s: %.17g against the CPU's %.17g",
                      what, x, y);
        }
    }
    if (chunks && (int64_t)(count * oc_mt_size(t)) > 1 << 20)
        CHECK_MSG(chunks > 1, "%s: %lld bytes under 256 KiB ran in %lld chunks", what,
                  (long long)(count * oc_mt_size(t)), (long long)chunks);
    free(cpu), free(gpu), free(first), free(a);
    oc_map_free(m);
}

static void check_reductions(void)
{
    static const int64_t s1[1] = {300000}, s2[2] = {2000, 300}, s3[3] = {40, 50, 60}, wide[2] = {3, 100000};
    static const int types[] = {MT_F64, MT_F32, MT_I32, MT_BOOL};
    static const oc_map_reduce ops[] = {OC_MAP_REDUCE_SUM, OC_MAP_REDUCE_MEAN, OC_MAP_REDUCE_MIN, OC_MAP_REDUCE_MAX};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
            const int t = types[ti];
            const oc_map_reduce op = ops[oi];
            const char *expr = t == MT_BOOL ? "a" : "a * 3 - 1";
            check_reduce(expr, t, 1, s1, op, -99, -1);
            check_reduce(expr, t, 2, s2, op, -99, -1);
            check_reduce(expr, t, 2, s2, op, 0, -1);
            check_reduce(expr, t, 2, s2, op, 1, -1);
            for (int axis = -99; axis < 3; axis = axis == -99 ? 0 : axis + 1)
                check_reduce(expr, t, 3, s3, op, axis, -1);
            check_reduce(expr, t, 2, wide, op, 1, -1); /* long rows: 256 threads per row */
            if (oc_mt_is_float(t)) {
                check_reduce(expr, t, 2, s2, op, -99, 123457);
                check_reduce(expr, t, 2, s2, op, 0, 123457);
                check_reduce(expr, t, 2, s2, op, 1, 123457);
            }
        }
    /* A broadcast input (b, float32 along the last dimension) and an output cast. */
    check_reduce("a * b + 1", MT_F64, 2, s2, OC_MAP_REDUCE_SUM, 0, -1);
    check_reduce("a * b + 1", MT_F64, 2, s2, OC_MAP_REDUCE_MAX, 1, -1);
    check_reduce("a - b", MT_I32, 3, s3, OC_MAP_REDUCE_MEAN, 1, -1);
    check_reduce("sqrt(abs(a)) + b", MT_F32, 2, s2, OC_MAP_REDUCE_MIN, -99, -1);
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
    check_reductions();
    oc_context_free(ctx);
    return oc_test_finish();
}
