/*
 * test_matmul_gpu_arrays.c - oc_matmul on A, B and C in GPU memory (oc_matmul_array.gpu), as
 * a caller with a framework's tensors runs it, against a reference computed here.
 *
 * All three on one device with rows back to back run as one product where they are (no byte
 * across PCIe), in float32, float64, bfloat16 and int8, with op(A) = Aᵀ, op(B) = Bᵀ, both, and
 * A·Aᵀ exactly symmetric; a forced tile runs the tiled plan with panels copied on the device
 * and gives the bytes of the same plan from host memory; A on the device with B and C on the
 * host mixes the two; a transpose or A·Aᵀ without C on the device, a conversion and the CPU
 * backend are refused before C is written; arrays one element off their allocations' start
 * are read by algorithms that allow it; a product on a second device leaves the caller's
 * current device as it was; int8's measured algorithm gives the bytes of the heuristic's
 * first; k = 0 gives zeros. Exits 77 when no GPU or no cuBLASLt is usable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "../harness.h"
#include "outcore.h"
#include "matmul_reference.h"
#include "matmul/matmul_dtype.h"
#include "matmul/matmul_job.h"
#include "cost/cost.h"
#include "mem/pool.h"

static oc_context *ctx;

/* A product through oc_matmul with A, B and C where mem gives them (host or device memory;
 * gpu marks device memory), the result downloaded into *c_host; its status. */
static oc_status public_run(const operands *o, void *const mem[3], const int gpu[3], const oc_matmul_options *opts,
                            void *c_host, oc_matmul_stats *stats)
{
    oc_matmul_array arr[3] = {OC_MATMUL_ARRAY_INIT, OC_MATMUL_ARRAY_INIT, OC_MATMUL_ARRAY_INIT};
    const oc_mm_type types[3] = {o->in, o->in, o->out};
    const int64_t rows[3] = {o->m, o->k, o->m}, cols[3] = {o->k, o->n, o->n};
    for (int i = 0; i < 3; ++i) {
        arr[i].data = mem[i], arr[i].dtype = oc_matmul_dtype_of(types[i]);
        arr[i].rows = rows[i], arr[i].cols = cols[i], arr[i].gpu = gpu[i];
    }
    stats->struct_size = sizeof *stats;
    const oc_status st = oc_matmul(ctx, &arr[0], &arr[1], &arr[2], opts, stats);
    const size_t bytes = (size_t)(o->m * o->n) * oc_mm_type_size(o->out);
    if (gpu[2]) CHECK(cudaMemcpy(c_host, mem[2], bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    else memcpy(c_host, mem[2], bytes);
    return st;
}

/* Operands and result in device memory through the public API: all three on the device,
 * rows back to back, run as one product where they are (no copy across PCIe) and match the
 * reference; a forced tile takes the tiled path with panels copied on the device, and gives
 * the bytes of the same plan from host memory; A on the device with B and C on the host
 * mixes the two; a transpose, A·Aᵀ, a conversion or the CPU backend are refused naming the
 * operand, before anything is written. */
static void check_device_memory(oc_mm_type in, oc_mm_type out)
{
    char what[96];
    snprintf(what, sizeof what, "%s -> %s in device memory", type_name(in), type_name(out));
    const int64_t m = 211, n = 204, k = 1101; /* n a multiple of 4: int8's resident plan */
    operands o = make_operands(m, n, k, in, out, 0, 777 + (uint64_t)in);
    const size_t ia = (size_t)(m * k) * oc_mm_type_size(in), ib = (size_t)(k * n) * oc_mm_type_size(in),
                 oc = (size_t)(m * n) * oc_mm_type_size(out);
    void *da = NULL, *db = NULL, *dc = NULL;
    if (cudaMalloc(&da, ia) != cudaSuccess || cudaMalloc(&db, ib) != cudaSuccess ||
        cudaMalloc(&dc, oc) != cudaSuccess) {
        CHECK_MSG(0, "%s: cudaMalloc failed", what);
        return;
    }
    CHECK(cudaMemcpy(da, o.a, ia, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaMemcpy(db, o.b, ib, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaMemset(dc, 0xA5, oc) == cudaSuccess);
    unsigned char *c = malloc(oc), *c_host = malloc(oc), *ones = malloc((size_t)(m * n));
    memset(ones, 1, (size_t)(m * n));
    oc_matmul_options opts = OC_MATMUL_OPTIONS_INIT;
    opts.dtype = oc_matmul_dtype_of(out);
    oc_matmul_stats stats;
    void *dev[3] = {da, db, dc};
    const int all[3] = {1, 1, 1};

    /* Resident: one product, nothing across PCIe, nothing pinned. */
    oc_status st = public_run(&o, dev, all, &opts, c, &stats);
    CHECK_MSG(st == OC_OK, "%s: %s", what, oc_context_last_error(ctx));
    CHECK_MSG(stats.backend == OC_BACKEND_CUDA && stats.tiles == 1 && stats.bytes_h2d == 0 && stats.bytes_d2h == 0,
              "%s: backend %d, %lld tiles, %lld bytes up, %lld down", what, (int)stats.backend, (long long)stats.tiles,
              (long long)stats.bytes_h2d, (long long)stats.bytes_d2h);
    check_result(&o, c, ones, 0, what);
    oc_matmul_array pa = OC_MATMUL_ARRAY_INIT, pb = OC_MATMUL_ARRAY_INIT, pc = OC_MATMUL_ARRAY_INIT;
    pa.data = da, pa.dtype = oc_matmul_dtype_of(in), pa.rows = m, pa.cols = k, pa.gpu = 1;
    pb.data = db, pb.dtype = pa.dtype, pb.rows = k, pb.cols = n, pb.gpu = 1;
    pc.data = dc, pc.dtype = opts.dtype, pc.rows = m, pc.cols = n, pc.gpu = 1;
    char *text = NULL;
    CHECK(oc_matmul_plan(ctx, &pa, &pb, &pc, &opts, 0, 0, &text) == OC_OK && text && strstr(text, "resident"));
    free(text);

    /* A forced tile: tiles and K panels copied on the device, the bytes of the same plan from
     * host memory. */
    opts.tile = 64, opts.gpu_mem_bytes = 2 << 20, opts.host_mem_bytes = 64 << 20;
    CHECK(cudaMemset(dc, 0xA5, oc) == cudaSuccess);
    st = public_run(&o, dev, all, &opts, c, &stats);
    CHECK_MSG(st == OC_OK && stats.tiles > 1 && stats.bytes_h2d == 0 && stats.bytes_d2h == 0,
              "%s, tiled: %s (%lld tiles, %lld bytes up)", what, oc_context_last_error(ctx), (long long)stats.tiles,
              (long long)stats.bytes_h2d);
    void *host[3] = {o.a, o.b, c_host};
    const int none[3] = {0, 0, 0};
    opts.backend = OC_BACKEND_CUDA;
    CHECK(public_run(&o, host, none, &opts, c_host, &stats) == OC_OK);
    CHECK_MSG(memcmp(c, c_host, oc) == 0, "%s, tiled: other bytes than the same plan from host memory", what);

    /* A on the device, B and C on the host. */
    void *mixed[3] = {da, o.b, c_host};
    const int a_only[3] = {1, 0, 0};
    opts.backend = OC_BACKEND_AUTO;
    memset(c_host, 0xA5, oc);
    st = public_run(&o, mixed, a_only, &opts, c_host, &stats);
    CHECK_MSG(st == OC_OK && stats.backend == OC_BACKEND_CUDA && stats.bytes_h2d > 0 && stats.bytes_d2h > 0,
              "%s, A alone on the device: %s", what, oc_context_last_error(ctx));
    CHECK_MSG(memcmp(c, c_host, oc) == 0, "%s, A alone on the device: other bytes", what);

    /* Refusals, C untouched. */
    opts.tile = 0, opts.gpu_mem_bytes = 0, opts.host_mem_bytes = 0;
    CHECK(cudaMemset(dc, 0x5A, oc) == cudaSuccess);
    oc_matmul_options o2 = opts;
    o2.backend = OC_BACKEND_CPU;
    CHECK(oc_matmul(ctx, &pa, &pb, &pc, &o2, NULL) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "GPU memory"));
    /* A transposed operand, or A·Aᵀ, on the device with C on the host: only the resident plan
     * reads operands transposed, and it needs C on the device too. */
    o2 = opts;
    o2.transpose_a = 1;
    oc_matmul_array sq = pa;
    sq.cols = m; /* op(A) = Aᵀ: a square m x m view of A's memory */
    sq.rows = m;
    oc_matmul_array bm = pb, hc = OC_MATMUL_ARRAY_INIT;
    bm.rows = m;
    hc.data = c_host, hc.dtype = pc.dtype, hc.rows = m, hc.cols = n;
    CHECK(oc_matmul(ctx, &sq, &bm, &hc, &o2, NULL) == OC_ERR_INPUT &&
          strstr(oc_context_last_error(ctx), "read transposed") &&
          strstr(oc_context_last_error(ctx), "C is not in that device's memory"));
    o2 = opts;
    o2.gram = 1;
    o2.dtype = OC_MATMUL_DEFAULT;
    hc.cols = m;
    CHECK(oc_matmul(ctx, &pa, NULL, &hc, &o2, NULL) == OC_ERR_INPUT && strstr(oc_context_last_error(ctx), "A·Aᵀ"));
    if (in == OC_MM_FLOAT64 || in == OC_MM_FLOAT32) { /* rounded into a narrower type: not on the device */
        o2 = opts;
        o2.dtype = OC_MATMUL_FLOAT16;
        CHECK(oc_matmul_result(ctx, &pa, &pb, &o2, NULL, NULL, NULL) == OC_ERR_INPUT &&
              strstr(oc_context_last_error(ctx), "convert it on the device"));
    }
    if (in != OC_MM_FLOAT64) { /* promoted to a wider one: on the device, as stored */
        o2 = opts;
        o2.dtype = OC_MATMUL_FLOAT64;
        CHECK_MSG(oc_matmul_result(ctx, &pa, &pb, &o2, NULL, NULL, NULL) == OC_OK, "%s as float64: %s", what,
                  oc_context_last_error(ctx));
    }
    CHECK(cudaMemcpy(c, dc, oc, cudaMemcpyDeviceToHost) == cudaSuccess);
    int untouched = 1;
    for (size_t i = 0; i < oc; ++i) untouched &= c[i] == 0x5A;
    CHECK_MSG(untouched, "%s: a refused product wrote C", what);
    free(c), free(c_host), free(ones);
    cudaFree(da), cudaFree(db), cudaFree(dc);
    free_operands(&o);
    check_clean(ctx, what);
}

/* elem-byte elements of the rows x cols row-major x, transposed (cols x rows). */
static void *transposed_copy(const void *x, int64_t rows, int64_t cols, size_t elem)
{
    unsigned char *t = malloc((size_t)(rows * cols) * elem + 1);
    for (int64_t r = 0; t && r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            memcpy(t + (size_t)(c * rows + r) * elem, (const unsigned char *)x + (size_t)(r * cols + c) * elem, elem);
    return t;
}

/* Device memory holding x (NULL: nothing copied) from byte `skew` of an allocation that
 * starts at *base (cudaFree it). */
static void *on_device(const void *x, size_t bytes, size_t skew, void **base)
{
    *base = NULL;
    if (cudaMalloc(base, bytes + skew + 1) != cudaSuccess) return *base = NULL;
    char *d = (char *)*base + skew;
    if (bytes && x) CHECK(cudaMemcpy(d, x, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    return d;
}

/* The resident plan reads transposed operands where they are, through cuBLASLt's transposes
 * (int8: transposed into its K-contiguous layout only where they are not so already):
 * op(A) = Aᵀ, op(B) = Bᵀ and both against the reference, and A·Aᵀ from A alone, the whole
 * product computed and mirrored, exactly symmetric. With `skewed`, every array starts one
 * element past an allocation's start, as a framework's view may: aligned to its element
 * alone, which the algorithms chosen must read (the plain product included). */
static void check_device_transposes(oc_mm_type in, oc_mm_type out, int64_t k, int skewed)
{
    char what[128];
    const int64_t m = 211, n = 204; /* int8: k a multiple of 16 takes the operands as stored */
    operands o = make_operands(m, n, k, in, out, 0, 555 + (uint64_t)in);
    const size_t es = oc_mm_type_size(in), ia = (size_t)(m * k) * es, ib = (size_t)(k * n) * es,
                 oc = (size_t)(m * n) * oc_mm_type_size(out);
    const size_t skew_in = skewed ? es : 0, skew_out = skewed ? oc_mm_type_size(out) : 0;
    const char *skew_note = skewed ? ", each one element off its allocation" : "";
    void *at = transposed_copy(o.a, m, k, es), *bt = transposed_copy(o.b, k, n, es), *base[7];
    void *da = on_device(o.a, ia, skew_in, &base[0]), *db = on_device(o.b, ib, skew_in, &base[1]);
    void *dat = on_device(at, ia, skew_in, &base[2]), *dbt = on_device(bt, ib, skew_in, &base[3]);
    void *dc = on_device(NULL, oc, skew_out, &base[4]);
    unsigned char *c = malloc(oc), *ones = malloc((size_t)(212 * 212));
    if (!at || !bt || !da || !db || !dat || !dbt || !dc || !c || !ones) {
        CHECK_MSG(0, "%s -> %s transposed in device memory: out of memory", type_name(in), type_name(out));
        return;
    }
    memset(ones, 1, (size_t)(212 * 212));
    const int gpu[3] = {1, 1, 1};
    for (int t = skewed ? 0 : 1; t < 4; ++t) {
        const int ta = t & 1, tb = t >> 1;
        snprintf(what, sizeof what, "%s -> %s in device memory%s%s%s", type_name(in), type_name(out),
                 ta ? ", op(A) = Aᵀ" : "", tb ? ", op(B) = Bᵀ" : "", skew_note);
        oc_matmul_options opts = OC_MATMUL_OPTIONS_INIT;
        opts.dtype = oc_matmul_dtype_of(out);
        opts.transpose_a = ta, opts.transpose_b = tb;
        oc_matmul_array arr[3] = {OC_MATMUL_ARRAY_INIT, OC_MATMUL_ARRAY_INIT, OC_MATMUL_ARRAY_INIT};
        arr[0].data = ta ? dat : da, arr[0].rows = ta ? k : m, arr[0].cols = ta ? m : k;
        arr[1].data = tb ? dbt : db, arr[1].rows = tb ? n : k, arr[1].cols = tb ? k : n;
        arr[2].data = dc, arr[2].rows = m, arr[2].cols = n;
        for (int i = 0; i < 3; ++i) arr[i].gpu = gpu[i], arr[i].dtype = oc_matmul_dtype_of(i == 2 ? out : in);
        CHECK(cudaMemset(dc, 0xA5, oc) == cudaSuccess);
        oc_matmul_stats stats = {.struct_size = sizeof stats};
        const oc_status st = oc_matmul(ctx, &arr[0], &arr[1], &arr[2], &opts, &stats);
        CHECK_MSG(st == OC_OK && stats.tiles == 1 && stats.bytes_h2d == 0, "%s: %s", what, oc_context_last_error(ctx));
        CHECK(cudaMemcpy(c, dc, oc, cudaMemcpyDeviceToHost) == cudaSuccess);
        check_result(&o, c, ones, 0, what);
    }
    free_operands(&o);

    /* A·Aᵀ from A in device memory into C there. */
    snprintf(what, sizeof what, "%s -> %s A·Aᵀ in device memory%s", type_name(in), type_name(out), skew_note);
    const int64_t mg = 212; /* int8: a multiple of 4 */
    operands g = make_operands(mg, mg, k, in, out, 1, 777 + (uint64_t)in);
    const size_t gc = (size_t)(mg * mg) * oc_mm_type_size(out);
    void *dg = on_device(g.a, (size_t)(mg * k) * es, skew_in, &base[5]), *dgc = on_device(NULL, gc, skew_out, &base[6]);
    unsigned char *cg = malloc(gc);
    oc_matmul_array A = OC_MATMUL_ARRAY_INIT, C = OC_MATMUL_ARRAY_INIT;
    A.data = dg, A.rows = mg, A.cols = k, A.dtype = oc_matmul_dtype_of(in), A.gpu = 1;
    C.data = dgc, C.rows = mg, C.cols = mg, C.dtype = oc_matmul_dtype_of(out), C.gpu = 1;
    oc_matmul_options opts = OC_MATMUL_OPTIONS_INIT;
    opts.gram = 1, opts.dtype = C.dtype;
    const oc_status st = dg && dgc && cg ? oc_matmul(ctx, &A, NULL, &C, &opts, NULL) : OC_ERR_NO_MEMORY;
    CHECK_MSG(st == OC_OK, "%s: %s", what, oc_context_last_error(ctx));
    if (st == OC_OK && cudaMemcpy(cg, dgc, gc, cudaMemcpyDeviceToHost) == cudaSuccess) {
        check_result(&g, cg, ones, 0, what);
        const size_t e = oc_mm_type_size(out);
        int symmetric = 1;
        for (int64_t i = 0; i < mg; ++i)
            for (int64_t j = 0; j < i; ++j)
                symmetric &= memcmp(cg + (size_t)(i * mg + j) * e, cg + (size_t)(j * mg + i) * e, e) == 0;
        CHECK_MSG(symmetric, "%s: not exactly symmetric", what);
    }
    free_operands(&g);
    free(at), free(bt), free(c), free(ones), free(cg);
    for (int i = 0; i < 7; ++i) cudaFree(base[i]);
    check_clean(ctx, what);
}

/* A product on the second device's memory leaves the calling thread's current device where
 * it was (a framework's current device is its own), and so does k = 0 into C there, which
 * zeroes C on its own device; where there is one device, nothing. */
static void check_current_device(void)
{
    const char *what = "a product on cuda:1's memory";
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 2) return;
    const int64_t m = 67, n = 36, k = 45;
    operands o = make_operands(m, n, k, OC_MM_FLOAT32, OC_MM_FLOAT32, 0, 4242);
    const size_t ia = (size_t)(m * k) * 4, ib = (size_t)(k * n) * 4, oc = (size_t)(m * n) * 4;
    void *base[3] = {NULL, NULL, NULL};
    CHECK(cudaSetDevice(1) == cudaSuccess);
    void *da = on_device(o.a, ia, 0, &base[0]), *db = on_device(o.b, ib, 0, &base[1]);
    void *dc = on_device(NULL, oc, 0, &base[2]);
    CHECK(cudaSetDevice(0) == cudaSuccess);
    unsigned char *c = malloc(oc), *ones = malloc((size_t)(m * n));
    if (da && db && dc && c && ones) {
        memset(ones, 1, (size_t)(m * n));
        void *mem[3] = {da, db, dc};
        const int gpu[3] = {1, 1, 1};
        oc_matmul_options opts = OC_MATMUL_OPTIONS_INIT;
        oc_matmul_stats stats;
        CHECK_MSG(public_run(&o, mem, gpu, &opts, c, &stats) == OC_OK, "%s: %s", what, oc_context_last_error(ctx));
        int current = -1;
        CHECK(cudaGetDevice(&current) == cudaSuccess);
        CHECK_MSG(current == 0, "%s: the current device is now %d, not 0", what, current);
        check_result(&o, c, ones, 0, what);
        /* k = 0 into C on cuda:1: zeros set on C's device, the current device kept. */
        float dummy = 1;
        oc_matmul_array A = OC_MATMUL_ARRAY_INIT, B = OC_MATMUL_ARRAY_INIT, C = OC_MATMUL_ARRAY_INIT;
        A.dtype = B.dtype = C.dtype = OC_MATMUL_FLOAT32;
        A.data = B.data = &dummy;
        A.rows = m, A.cols = 0, B.rows = 0, B.cols = n, C.rows = m, C.cols = n, C.data = dc, C.gpu = 1;
        CHECK(cudaSetDevice(1) == cudaSuccess && cudaMemset(dc, 0x7f, oc) == cudaSuccess &&
              cudaDeviceSynchronize() == cudaSuccess && cudaSetDevice(0) == cudaSuccess);
        CHECK_MSG(oc_matmul(ctx, &A, &B, &C, &opts, NULL) == OC_OK, "%s, k = 0: %s", what, oc_context_last_error(ctx));
        CHECK(cudaGetDevice(&current) == cudaSuccess);
        CHECK_MSG(current == 0, "%s, k = 0: the current device is now %d, not 0", what, current);
        CHECK(cudaMemcpy(c, dc, oc, cudaMemcpyDeviceToHost) == cudaSuccess);
        int zeros = 1;
        for (size_t i = 0; i < oc; ++i) zeros &= c[i] == 0;
        CHECK_MSG(zeros, "%s, k = 0: C is not zeros", what);
    } else {
        CHECK_MSG(0, "%s: out of memory", what);
    }
    CHECK(cudaSetDevice(0) == cudaSuccess);
    free(c), free(ones);
    for (int i = 0; i < 3; ++i) cudaFree(base[i]);
    free_operands(&o);
    check_clean(ctx, what);
}

/* What the library holds on the device after a resident product is what the context keeps
 * (cuBLASLt's workspace, at most OC_CUDA_KEPT_MAX), and nothing but that; returns it. */
static int64_t check_held_is_kept(const char *what)
{
    const int64_t kept = oc_context_cached_memory_bytes(ctx) - oc_cuda_live_pinned_bytes(),
                  held = oc_cuda_live_device_bytes();
    CHECK_MSG(held == kept && kept >= 0 && kept <= (int64_t)OC_CUDA_KEPT_MAX,
              "%s: %lld device bytes held after the job, the context keeps %lld", what, (long long)held,
              (long long)kept);
    return held;
}

/* A resident product's cuBLASLt workspace stays with the context for its next product: after
 * a product what the process holds on the device is exactly what the context reports kept
 * (at most OC_CUDA_KEPT_MAX), the same products again allocate nothing more, a product on a
 * second device moves the block there, and a release frees it. Each product's result is
 * checked too, since the second of two reads a workspace an earlier job wrote. */
static void check_kept_workspace(void)
{
    static const oc_mm_type types[3][2] = {
        {OC_MM_INT8, OC_MM_INT32}, {OC_MM_BFLOAT16, OC_MM_FLOAT32}, {OC_MM_FLOAT32, OC_MM_FLOAT32}};
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 1;
    const int devices = count > 1 ? 2 : 1;
    const int64_t m = 1024, n = 1024, k = 1024;
    unsigned char *c = malloc((size_t)(m * n) * 4), *ones = malloc((size_t)(m * n));
    if (!c || !ones) {
        CHECK_MSG(0, "the kept workspace: out of memory");
        free(c), free(ones);
        return;
    }
    memset(ones, 1, (size_t)(m * n));
    oc_context_release_cached_memory(ctx);
    int64_t most = 0;
    for (int dev = 0; dev < devices; ++dev)
        for (int round = 0; round < 2; ++round)
            for (int t = 0; t < 3; ++t) {
                char what[128];
                snprintf(what, sizeof what, "the kept workspace, %s on cuda:%d, round %d", type_name(types[t][0]), dev,
                         round + 1);
                operands o = make_operands(m, n, k, types[t][0], types[t][1], 0, 77 + (uint64_t)t);
                const size_t es = oc_mm_type_size(o.in), oc = (size_t)(m * n) * oc_mm_type_size(o.out);
                void *base[3] = {NULL, NULL, NULL};
                CHECK(cudaSetDevice(dev) == cudaSuccess);
                void *mem[3] = {on_device(o.a, (size_t)(m * k) * es, 0, &base[0]),
                                on_device(o.b, (size_t)(k * n) * es, 0, &base[1]), on_device(NULL, oc, 0, &base[2])};
                const int64_t before = oc_cuda_live_device_bytes(); /* the library's allocations alone */
                const int64_t made = oc_cuda_device_bytes_allocated();
                const int gpu[3] = {1, 1, 1};
                oc_matmul_options opts = OC_MATMUL_OPTIONS_INIT;
                opts.dtype = oc_matmul_dtype_of(o.out);
                oc_matmul_stats stats;
                if (mem[0] && mem[1] && mem[2]) {
                    CHECK_MSG(public_run(&o, mem, gpu, &opts, c, &stats) == OC_OK && stats.tiles == 1, "%s: %s", what,
                              oc_context_last_error(ctx));
                    check_result(&o, c, ones, 0, what);
                    const int64_t held = check_held_is_kept(what);
                    /* Round 2 on a device: the blocks of round 1 there serve again. */
                    if (round == 1) {
                        CHECK_MSG(held <= before, "%s: %lld bytes kept, %lld before", what, (long long)held,
                                  (long long)before);
                        /* int8's packing of B among them: a product of microseconds allocates nothing */
                        CHECK_MSG(oc_cuda_device_bytes_allocated() == made, "%s: %lld device bytes allocated", what,
                                  (long long)(oc_cuda_device_bytes_allocated() - made));
                    }
                    if (held > most) most = held;
                } else {
                    CHECK_MSG(0, "%s: out of device memory", what);
                }
                for (int i = 0; i < 3; ++i) cudaFree(base[i]);
                free_operands(&o);
            }
    CHECK(cudaSetDevice(0) == cudaSuccess);
    /* At this size cuBLASLt's algorithms may ask no workspace at all; check_int8_choice keeps
     * one for certain. */
    printf("  the kept workspace: at most %lld bytes kept between products\n", (long long)most);
    check_clean(ctx, "the kept workspace");
    CHECK_MSG(oc_context_cached_memory_bytes(ctx) == 0, "the kept workspace: %lld bytes kept after the release",
              (long long)oc_context_cached_memory_bytes(ctx));
    free(c), free(ones);
}

/* C[i][j] of the int8 product of row-major A (m x k) and B (k x n), or A·Aᵀ when b is NULL. */
static int64_t int8_entry(const int8_t *a, const int8_t *b, int64_t n, int64_t k, int64_t i, int64_t j)
{
    int64_t sum = 0;
    for (int64_t t = 0; t < k; ++t) sum += (int64_t)a[i * k + t] * (b ? b[t * n + j] : a[j * k + t]);
    return sum;
}

/* After a product with B in chunks (c its result), the context keeps the chunks' buffers with
 * the workspace, and A's packing (K not a multiple of 16) too when all of it fits the kept
 * block's limit; the same product again allocates A's packing alone when that was not kept,
 * else nothing, and gives the same bytes (into scratch, oc bytes). */
static void check_chunks_kept(const char *what, const oc_matmul_array *a, const oc_matmul_array *b,
                              const oc_matmul_array *c, const oc_matmul_options *o, const int32_t *result,
                              int32_t *scratch)
{
    const int64_t m = a->rows, n = c->cols, k = a->cols, kpad = (k + 15) / 16 * 16;
    const size_t oc = (size_t)(m * n) * 4;
    const int64_t held = check_held_is_kept(what);
    const int64_t packed_a = k == kpad ? 0 : (m * kpad + OC_POOL_ALIGN - 1) / OC_POOL_ALIGN * OC_POOL_ALIGN;
    CHECK_MSG(held >= 2 * 1024 * kpad, "%s: %lld bytes kept, less than two chunks of 1024 columns", what,
              (long long)held);
    const int a_kept = held >= 2 * 1024 * kpad + packed_a; /* A's packing in the block too */
    const int64_t before = oc_cuda_device_bytes_allocated();
    CHECK(cudaMemset(c->data, 0x7f, oc) == cudaSuccess);
    CHECK_MSG(oc_matmul(ctx, a, b, c, o, NULL) == OC_OK, "%s, again: %s", what, oc_context_last_error(ctx));
    const int64_t allocated = oc_cuda_device_bytes_allocated() - before, want = a_kept ? 0 : packed_a;
    CHECK_MSG(allocated == want, "%s, again: %lld device bytes allocated, not %lld", what, (long long)allocated,
              (long long)want);
    CHECK_MSG(check_held_is_kept(what) == held, "%s, again: the kept block changed", what);
    CHECK(cudaMemcpy(scratch, c->data, oc, cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK_MSG(memcmp(scratch, result, oc) == 0, "%s, again: other bytes", what);
}

/* A large int8 product on device arrays with B packed in chunks of columns while the products
 * run (matmul_cuda_plan.c's b_chunk; the plan says so): row-major B transposed a chunk at a
 * time, with K a multiple of 16 and not (A then packed too), n not a multiple of the chunk
 * (the last chunk 4 columns wide), and A·Aᵀ with K padded (B = Aᵀ re-strided a chunk at a
 * time, C mirrored). Each result: byte-identical to the product with B given as Bᵀ (read as
 * stored when K is a multiple of 16, else re-strided in chunks), and 4096 entries exact
 * against the CPU; A·Aᵀ exactly symmetric. */
static void check_int8_chunks(void)
{
    /* Each chunk's product large enough to be chunked (matmul_cuda_plan.c): m x 1024 x k at
     * least 2^36 multiply-adds. */
    static const int64_t shapes[][3] = {{8192, 4100, 8192}, {8192, 4100, 8200}, {4100, 4100, 16392}};
    for (int i = 0; i < 3; ++i) {
        const int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
        const int gram = i == 2;
        char what[128];
        snprintf(what, sizeof what, "int8 %s %lld x %lld x %lld, B in chunks", gram ? "A·Aᵀ" : "A·B", (long long)m,
                 (long long)n, (long long)k);
        const size_t ia = (size_t)(m * k), ib = (size_t)(k * n), oc = (size_t)(m * n) * 4;
        int8_t *a = malloc(ia), *b = malloc(ib), *bt = malloc(ib);
        int32_t *c = malloc(oc), *c_bt = malloc(oc);
        void *da = NULL, *db = NULL, *dbt = NULL, *dc = NULL;
        if (!a || !b || !bt || !c || !c_bt || cudaMalloc(&da, ia) != cudaSuccess ||
            cudaMalloc(&db, ib) != cudaSuccess || cudaMalloc(&dbt, ib) != cudaSuccess ||
            cudaMalloc(&dc, oc) != cudaSuccess) {
            CHECK_MSG(0, "%s: out of memory", what);
            goto next;
        }
        uint64_t seed = 31 + (uint64_t)i;
        for (size_t e = 0; e < ia; ++e) a[e] = (int8_t)((int)(oc_test_rand(&seed) % 255) - 127);
        for (size_t e = 0; e < ib; ++e) b[e] = (int8_t)((int)(oc_test_rand(&seed) % 255) - 127);
        for (int64_t r = 0; r < k; ++r)
            for (int64_t col = 0; col < n; ++col) bt[col * k + r] = gram ? a[col * k + r] : b[r * n + col];
        CHECK(cudaMemcpy(da, a, ia, cudaMemcpyHostToDevice) == cudaSuccess);
        CHECK(cudaMemcpy(db, b, ib, cudaMemcpyHostToDevice) == cudaSuccess);
        CHECK(cudaMemcpy(dbt, bt, ib, cudaMemcpyHostToDevice) == cudaSuccess);
        for (int given_t = 0; given_t < 2; ++given_t) {
            oc_matmul_array A = OC_MATMUL_ARRAY_INIT, B = OC_MATMUL_ARRAY_INIT, C = OC_MATMUL_ARRAY_INIT;
            A.data = da, A.rows = m, A.cols = k;
            B.data = given_t ? dbt : db, B.rows = given_t ? n : k, B.cols = given_t ? k : n;
            C.data = dc, C.rows = m, C.cols = n;
            A.dtype = B.dtype = OC_MATMUL_INT8, C.dtype = OC_MATMUL_INT32;
            A.gpu = B.gpu = C.gpu = 1;
            oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
            o.transpose_b = given_t;
            /* A·Aᵀ only as such (B NULL): packed in chunks; B given as Aᵀ's bytes is the check. */
            const int as_gram = gram && !given_t;
            o.gram = as_gram;
            char *plan = NULL;
            CHECK(oc_matmul_plan(ctx, &A, as_gram ? NULL : &B, &C, &o, 0, 0, &plan) == OC_OK && plan);
            /* B given as Bᵀ is read as stored unless K needs padding, then re-strided in chunks. */
            const int chunked = !given_t || k % 16 != 0;
            CHECK_MSG(!plan || (strstr(plan, "B in chunks of") != NULL) == chunked, "%s, B %s: plan %s", what,
                      given_t ? "given as Bᵀ" : "row-major", plan ? plan : "");
            free(plan);
            CHECK(cudaMemset(dc, 0x7f, oc) == cudaSuccess);
            CHECK_MSG(oc_matmul(ctx, &A, as_gram ? NULL : &B, &C, &o, NULL) == OC_OK, "%s: %s", what,
                      oc_context_last_error(ctx));
            CHECK(cudaMemcpy(given_t ? c_bt : c, dc, oc, cudaMemcpyDeviceToHost) == cudaSuccess);
            if (!given_t) check_chunks_kept(what, &A, as_gram ? NULL : &B, &C, &o, c, c_bt);
        }
        CHECK_MSG(memcmp(c, c_bt, oc) == 0, "%s: other bytes than with B given as Bᵀ", what);
        int wrong = 0;
        uint64_t pick = 5;
        for (int s = 0; s < 4096 && !wrong; ++s) {
            /* the last chunk's columns and the first rows and columns among the picks */
            const int64_t r = s < 8 ? s : (int64_t)(oc_test_rand(&pick) % (uint64_t)m);
            const int64_t col = s < 8 ? n - 1 - s : (int64_t)(oc_test_rand(&pick) % (uint64_t)n);
            const int64_t want = int8_entry(a, gram ? NULL : b, n, k, r, col);
            CHECK_MSG(!(wrong = c[r * n + col] != want), "%s: C[%lld][%lld] = %d, not %lld", what, (long long)r,
                      (long long)col, c[r * n + col], (long long)want);
        }
        if (gram) {
            int symmetric = 1;
            for (int64_t r = 0; r < n && symmetric; ++r)
                for (int64_t col = 0; col < r && symmetric; ++col) symmetric = c[r * n + col] == c[col * n + r];
            CHECK_MSG(symmetric, "%s: not exactly symmetric", what);
        }
    next:
        cudaFree(da), cudaFree(db), cudaFree(dbt), cudaFree(dc);
        free(a), free(b), free(bt), free(c), free(c_bt);
    }
    check_clean(ctx, "int8's B in chunks");
}

/* k = 0: C is zeros (numpy's empty sum) on the GPU too, in device memory and on the host,
 * A·Aᵀ included. */
static void check_empty_k(void)
{
    const char *what = "k = 0 on the GPU";
    const int64_t m = 37, n = 29;
    float *dc = NULL, *host = malloc((size_t)(m * n) * sizeof(float));
    if (!host || cudaMalloc((void **)&dc, (size_t)(m * n) * sizeof(float)) != cudaSuccess) {
        CHECK_MSG(0, "%s: out of memory", what);
        return;
    }
    float dummy = 1;
    oc_matmul_array A = OC_MATMUL_ARRAY_INIT, B = OC_MATMUL_ARRAY_INIT, C = OC_MATMUL_ARRAY_INIT;
    A.dtype = B.dtype = C.dtype = OC_MATMUL_FLOAT32;
    A.data = B.data = &dummy;
    A.rows = m, A.cols = 0, B.rows = 0, B.cols = n, C.rows = m, C.cols = n;
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.backend = OC_BACKEND_CUDA;
    for (int on_device = 0; on_device < 2; ++on_device) {
        CHECK(cudaMemset(dc, 0x7f, (size_t)(m * n) * sizeof(float)) == cudaSuccess);
        for (int64_t i = 0; i < m * n; ++i) host[i] = 7;
        C.data = on_device ? (void *)dc : (void *)host, C.gpu = on_device;
        CHECK_MSG(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_OK, "%s: %s", what, oc_context_last_error(ctx));
        if (on_device)
            CHECK(cudaMemcpy(host, dc, (size_t)(m * n) * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
        int zeros = 1;
        for (int64_t i = 0; i < m * n; ++i) zeros &= host[i] == 0;
        CHECK_MSG(zeros, "%s: C is not zeros (%s)", what, on_device ? "device memory" : "host memory");
    }
    /* A·Aᵀ of an m x 0 A into host memory: m x m zeros. */
    o.gram = 1;
    C.gpu = 0, C.cols = m;
    float *sq = malloc((size_t)(m * m) * sizeof(float));
    for (int64_t i = 0; sq && i < m * m; ++i) sq[i] = 7;
    C.data = sq;
    CHECK_MSG(sq && oc_matmul(ctx, &A, NULL, &C, &o, NULL) == OC_OK, "%s, A·Aᵀ: %s", what, oc_context_last_error(ctx));
    int zeros = sq != NULL;
    for (int64_t i = 0; sq && i < m * m; ++i) zeros &= sq[i] == 0;
    CHECK_MSG(zeros, "%s, A·Aᵀ: C is not zeros", what);
    free(sq), free(host);
    cudaFree(dc);
    check_clean(ctx, what);
}

/* int8's measured choice of algorithm (matmul_gemm.h): a 4096³ product, large enough to be
 * measured, gives the same bytes with the rate cache off (the heuristic's first algorithm)
 * and on (the fastest candidate, measured and stored there), and again from the choice kept. */
static void check_int8_choice(void)
{
    const char *what = "int8's measured algorithm";
    const int64_t e = 4096;
    const size_t in_bytes = (size_t)(e * e), out_bytes = in_bytes * 4;
    int8_t *h = malloc(in_bytes);
    unsigned char *c_off = malloc(out_bytes), *c_on = malloc(out_bytes);
    void *da = NULL, *db = NULL, *dc = NULL;
    if (!h || !c_off || !c_on || cudaMalloc(&da, in_bytes) != cudaSuccess || cudaMalloc(&db, in_bytes) != cudaSuccess ||
        cudaMalloc(&dc, out_bytes) != cudaSuccess) {
        CHECK_MSG(0, "%s: out of memory", what);
        return;
    }
    uint64_t seed = 99;
    for (size_t i = 0; i < in_bytes; ++i) h[i] = (int8_t)((int)(oc_test_rand(&seed) % 255) - 127);
    CHECK(cudaMemcpy(da, h, in_bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    for (size_t i = 0; i < in_bytes; ++i) h[i] = (int8_t)((int)(oc_test_rand(&seed) % 255) - 127);
    CHECK(cudaMemcpy(db, h, in_bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    oc_matmul_array A = OC_MATMUL_ARRAY_INIT, B = OC_MATMUL_ARRAY_INIT, C = OC_MATMUL_ARRAY_INIT;
    A.data = da, B.data = db, C.data = dc, A.dtype = B.dtype = OC_MATMUL_INT8, C.dtype = OC_MATMUL_INT32;
    A.rows = A.cols = B.rows = B.cols = C.rows = C.cols = e;
    A.gpu = B.gpu = C.gpu = 1;
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    char cache[] = "/tmp/oc_int8_choiceXXXXXX";
    const int fd = mkstemp(cache);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    const char *env = getenv("OUTCORE_COST_CACHE");
    char *was = env ? strdup(env) : NULL;
    unsigned char *out[2] = {c_off, c_on};
    int64_t measuring = 0;
    for (int on = 0; on < 3; ++on) {
        setenv("OUTCORE_COST_CACHE", on ? cache : "off", 1);
        oc_cost_rates_reset();
        CHECK(cudaMemset(dc, 0x7f, out_bytes) == cudaSuccess);
        CHECK_MSG(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_OK, "%s: %s", what, oc_context_last_error(ctx));
        CHECK(cudaMemcpy(out[on ? 1 : 0], dc, out_bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
        if (on) CHECK_MSG(memcmp(c_off, c_on, out_bytes) == 0, "%s: other bytes than the first algorithm's", what);
        /* The measuring call takes the whole workspace, which the context keeps; the call
         * after it, on the algorithm measured, takes that block again. */
        const int64_t held = check_held_is_kept(what);
        if (on == 1) CHECK_MSG(held > 0, "%s: no workspace kept after the measuring call", what);
        if (on == 2)
            CHECK_MSG(held == measuring, "%s: %lld device bytes held, %lld after the measuring call", what,
                      (long long)held, (long long)measuring);
        if (on == 1) measuring = held;
    }
    char line[4096] = "";
    FILE *f = fopen(cache, "r");
    int stored = 0;
    while (f && fgets(line, sizeof line, f)) stored |= strncmp(line, "gpu_int8_algo.4096x4096x4096.w", 30) == 0;
    if (f) fclose(f);
    CHECK_MSG(stored, "%s: no gpu_int8_algo line in the rate cache", what);
    unlink(cache);
    char lock[sizeof cache + 8];
    snprintf(lock, sizeof lock, "%s.lock", cache);
    unlink(lock);
    if (was) setenv("OUTCORE_COST_CACHE", was, 1);
    else unsetenv("OUTCORE_COST_CACHE");
    free(was);
    oc_cost_rates_reset();
    free(h), free(c_off), free(c_on);
    cudaFree(da), cudaFree(db), cudaFree(dc);
    check_clean(ctx, what);
}

int main(void)
{
    char unusable[256] = "";
    if (!oc_mm_backend_cuda.usable(0, unusable, sizeof unusable)) {
        printf("SKIPPED: no usable CUDA device or no cuBLASLt\n");
        oc_test_skip("no usable CUDA device or no cuBLASLt");
        return oc_test_finish();
    }
    if (oc_context_create(&ctx) != OC_OK) return 1;
    check_device_memory(OC_MM_FLOAT32, OC_MM_FLOAT32);
    check_device_memory(OC_MM_INT8, OC_MM_INT32);
    check_device_memory(OC_MM_BFLOAT16, OC_MM_BFLOAT16);
    check_device_memory(OC_MM_FLOAT64, OC_MM_FLOAT64);
    check_device_transposes(OC_MM_FLOAT32, OC_MM_FLOAT32, 1101, 0);
    check_device_transposes(OC_MM_FLOAT64, OC_MM_FLOAT64, 1104, 0);
    check_device_transposes(OC_MM_BFLOAT16, OC_MM_BFLOAT16, 1101, 0);
    check_device_transposes(OC_MM_INT8, OC_MM_INT32, 1104, 0);
    check_device_transposes(OC_MM_INT8, OC_MM_INT32, 1101, 0);
    check_device_transposes(OC_MM_FLOAT32, OC_MM_FLOAT32, 1101, 1);
    check_device_transposes(OC_MM_FLOAT64, OC_MM_FLOAT64, 1104, 1);
    check_device_transposes(OC_MM_BFLOAT16, OC_MM_FLOAT32, 1101, 1);
    check_device_transposes(OC_MM_INT8, OC_MM_INT32, 1104, 1);
    check_current_device();
    check_kept_workspace();
    check_int8_chunks();
    check_int8_choice();
    check_empty_k();
    oc_context_free(ctx);
    return oc_test_finish();
}
