/*
 * bench_gram_cuda.cu - the CUDA engine's rates, with cuBLASLt int8 GEMM on the same 0/1 data
 * as the reference measured in the same run.
 *
 *   kernel   A·Aᵀ n=32768 m=524288, the b1 kernel alone on one whole-matrix tile (upper
 *            triangle of CTAs), counts kept on the device; popc kernel on m/8 for scale
 *   cublas   cublasLtMatmul int8 TN, CUBLAS_COMPUTE_32I, int32 out, on the same matrix
 *            unpacked to one byte per bit (n x k int8; k = m, 16 GiB, when memory allows)
 *   e2e      oc_gram of the kernel case into host memory (upload, compute, download, mirror)
 *   kernel-200k  the b1 kernel alone as for kernel, at the out-of-core case's row length
 *            (n=32768 m=200000): the in-core rate the out-of-core job can reach at its K
 *   ooc      oc_gram n=100000 m=200000 under --gpu-mem 2G, output discarded on the device:
 *            the planner's choice twice, then tiles of 8192 and of 4096 forced
 *   dense    oc_gram n=65536 m=65536 int32 counts into host memory (16 GiB): D2H rate, with
 *            the default sink threads and with 8 (OUTCORE_CUDA_SINKS=8), each once with no
 *            cached pinned staging ("cold": the job pins its own, as a process's first job
 *            does) and once right after the same job ("warm": it reuses that staging)
 *   file     the dense job into /dev/shm and into a file on disk (.npy)
 * The host part (with kernel, cublas or e2e) measures what the copy paths are built on:
 * pinned copies, pinning and registering host memory, the sinks' row copies on 1..14 threads.
 *
 * Rates: raw = bit-MACs the kernels did / time; effective = n·p·m / time (A·Aᵀ computes only
 * the upper triangle, so effective is about twice raw). cuBLASLt MAC/s count one int8
 * multiply-add per bit pair, the same unit as effective. Usage: bench_gram_cuda [parts...]
 * (default: kernel cublas e2e ooc dense). Exit status 1 if any check fails.
 */
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern "C" {
#include "core/error.h"
#include "core/gpu_arch.h"
#include "matrix/matrix.h"
#include "core/threads.h"
#include "engine/sink.h"
}
#include "engine/cuda/device.h"
#include "gram/cuda/gram_b1.cuh"
#include "bench_check.h"
#include "gram/cuda/gram_popc.cuh"

static int failures = 0;

#define CKO(ctx, call)                                                                                 \
    do {                                                                                               \
        if ((call) != OC_OK) {                                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, oc_context_last_error(ctx)); \
            exit(1);                                                                                   \
        }                                                                                              \
    } while (0)

typedef struct row {
    char name[48];
    double seconds, raw, effective, extra;
    char note[96];
} row;
static row rows[48];
static int nrows = 0;

static void add_row(const char *name, double seconds, double raw, double effective, double extra, const char *note)
{
    if (nrows == (int)(sizeof rows / sizeof rows[0])) {
        printf("bench_gram_cuda: more than %d rows\n", nrows);
        exit(1);
    }
    row *r = &rows[nrows++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->seconds = seconds;
    r->raw = raw;
    r->effective = effective;
    r->extra = extra;
    snprintf(r->note, sizeof r->note, "%s", note);
    printf("%-28s %9.4f s  raw %7.3f P  eff %7.3f P  %s\n", name, seconds, raw / 1e15, effective / 1e15, note);
    fflush(stdout);
}

/* ---------------------------------------------------------------- data */
typedef struct fill_arg {
    oc_matrix *m;
    int64_t full_words;
    int64_t block;
    uint64_t seed;
} fill_arg;

static oc_status fill_rows(void *arg, int64_t task, int worker)
{
    (void)worker;
    fill_arg *f = (fill_arg *)arg;
    int64_t r0 = task * f->block, r1 = r0 + f->block < f->m->rows ? r0 + f->block : f->m->rows;
    uint64_t s = f->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(task + 1));
    for (int64_t i = r0; i < r1; ++i) {
        uint64_t *w = f->m->bits + i * f->m->words_per_row;
        for (int64_t k = 0; k < f->m->words_per_row; ++k) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            w[k] = k < f->full_words ? s : 0;
        }
    }
    return OC_OK;
}

/* A random 0/1 matrix of density 1/2 (cols a multiple of 64). */
static oc_matrix *random_matrix(oc_context *ctx, int64_t rows, int64_t cols, uint64_t seed)
{
    oc_matrix *m = NULL;
    CKO(ctx, oc_matrix_alloc(ctx, rows, cols, "A", &m));
    fill_arg f = {m, cols / 64, 256, seed};
    CKO(ctx, oc_parallel_run(ctx, 0 + oc_threads_resolve(0), (rows + 255) / 256, fill_rows, &f, NULL, NULL));
    return m;
}

/* One byte per bit for cuBLASLt: row i, column j of the packed layout (byte j/8, bit 7-j%8). */
__global__ void unpack_bits(const uint64_t *bits, int64_t words, int64_t rows, int64_t k, int8_t *out)
{
    int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t total = rows * (k / 8);
    for (; idx < total; idx += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = idx / (k / 8), byte = idx % (k / 8);
        unsigned char v = ((const unsigned char *)(bits + i * words))[byte];
        uint64_t packed = 0;
        for (int b = 0; b < 8; ++b) packed |= (uint64_t)((v >> (7 - b)) & 1) << (8 * b);
        *(uint64_t *)(out + i * k + byte * 8) = packed;
    }
}

static double median3(double a, double b, double c)
{
    return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

static int32_t host_count(const oc_matrix *a, int64_t i, int64_t j)
{
    int64_t c = 0;
    for (int64_t w = 0; w < a->words_per_row; ++w)
        c += __builtin_popcountll(a->bits[i * a->words_per_row + w] & a->bits[j * a->words_per_row + w]);
    return (int32_t)c;
}

/* ---------------------------------------------------------------- parts */
typedef struct put_arg {
    oc_dense_sink sink;
    const char *src;
    int64_t rows_per_task, cols;
} put_arg;

static oc_status put_rows(void *arg, int64_t task, int worker)
{
    (void)worker;
    const put_arg *p = (const put_arg *)arg;
    oc_dense_sink_put(&p->sink, task * p->rows_per_task, 0, p->rows_per_task, p->cols,
                      p->src + task * p->rows_per_task * p->cols * 4, p->cols);
    return OC_OK;
}

/* What the copy paths cost on this host: pinning (cudaHostAlloc), registering malloc'd
 * memory already faulted in (cudaHostRegister / Unregister), and the sinks' row copies from
 * a pinned slot into pageable memory (oc_dense_sink_put, 4 MiB per task, 16 KiB rows). */
static void bench_copy_paths(oc_context *ctx, void *pin, size_t bytes)
{
    double t0 = oc_now();
    void *p2;
    CK(cudaHostAlloc(&p2, 256u << 20, cudaHostAllocPortable));
    double alloc = oc_now() - t0;
    CK(cudaFreeHost(p2));
    char *dst = (char *)malloc(bytes);
    memset(dst, 0, bytes);
    t0 = oc_now();
    CK(cudaHostRegister(dst, bytes, cudaHostRegisterPortable));
    double reg = oc_now() - t0;
    t0 = oc_now();
    CK(cudaHostUnregister(dst));
    double unreg = oc_now() - t0;
    printf(
        "host: cudaHostAlloc 256 MiB %.3f s (%.1f GB/s); cudaHostRegister 1 GiB %.3f s (%.1f GB/s), unregister %.3f s\n",
        alloc, (256 << 20) / alloc / 1e9, reg, bytes / reg / 1e9, unreg);
    put_arg p = {{dst, 4096, 4, 0}, (const char *)pin, 256, 4096};
    const int threads[] = {1, 4, 8, 14};
    printf("host: sink row copies pinned -> pageable (non-temporal):");
    for (int k = 0; k < 4; ++k) {
        CKO(ctx, oc_parallel_run(ctx, threads[k], (int64_t)(bytes / (4u << 20)), put_rows, &p, NULL, NULL));
        t0 = oc_now();
        CKO(ctx, oc_parallel_run(ctx, threads[k], (int64_t)(bytes / (4u << 20)), put_rows, &p, NULL, NULL));
        printf(" %d thr %.1f GB/s%s", threads[k], bytes / (oc_now() - t0) / 1e9, k < 3 ? "," : "\n");
    }
    free(dst);
}

/* The host-side rates the pipeline is built on: pinned copies each way, and one core's
 * memcpy into pinned memory; plus the row popcounts oc_gram computes before any backend. */
static void bench_host(oc_context *ctx, const oc_matrix *a)
{
    size_t bytes = 1ull << 30;
    void *pin, *dev;
    CK(cudaHostAlloc(&pin, bytes, cudaHostAllocPortable));
    CK(cudaMalloc(&dev, bytes));
    memset(pin, 1, bytes);
    double t0 = oc_now();
    CK(cudaMemcpy(dev, pin, bytes, cudaMemcpyHostToDevice));
    double h2d = oc_now() - t0;
    t0 = oc_now();
    CK(cudaMemcpy(pin, dev, bytes, cudaMemcpyDeviceToHost));
    double d2h = oc_now() - t0;
    t0 = oc_now();
    memcpy(pin, a->bits, bytes);
    double cpy = oc_now() - t0;
    int64_t *pops = (int64_t *)malloc((size_t)a->rows * 8);
    t0 = oc_now();
    oc_matrix_row_popcounts(NULL, a, 0, pops);
    double pc = oc_now() - t0;
    printf("host: pinned H2D %.1f GB/s, pinned D2H %.1f GB/s, memcpy into pinned (1 core) %.1f GB/s, "
           "row popcounts of A (%.2f GB) %.3f s\n",
           bytes / h2d / 1e9, bytes / d2h / 1e9, bytes / cpy / 1e9, a->rows * a->words_per_row * 8 / 1e9, pc);
    free(pops);
    bench_copy_paths(ctx, pin, bytes);
    CK(cudaFree(dev));
    CK(cudaFreeHost(pin));
}

static double kernel_raw_rate = 0, kernel_eff_rate = 0;

static void bench_kernel(oc_context *ctx, oc_cuda_device *dev, const oc_matrix *a, uint64_t **d_a, int32_t **d_out)
{
    const int64_t n = a->rows, m = a->cols;
    size_t abytes = (size_t)(n * a->words_per_row * 8), obytes = (size_t)(n * n) * 4;
    int64_t *pop64 = (int64_t *)malloc((size_t)n * 8);
    int32_t *pop32 = (int32_t *)malloc((size_t)n * 4);
    oc_matrix_row_popcounts(NULL, a, 0, pop64);
    for (int64_t i = 0; i < n; ++i) pop32[i] = (int32_t)pop64[i];
    int32_t *d_pop;
    CK(cudaMalloc((void **)d_a, abytes));
    CK(cudaMalloc((void **)&d_pop, (size_t)n * 4));
    CK(cudaMalloc((void **)d_out, obytes));
    CK(cudaMemcpy(*d_a, a->bits, abytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_pop, pop32, (size_t)n * 4, cudaMemcpyHostToDevice));
    oc_gram_tile t = {*d_a,   *d_a, a->words_per_row, (int)n,         (int)n, d_pop, d_pop,
                      *d_out, n,    OC_METRIC_COUNTS, OC_DTYPE_INT32, 1};
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    double macs = 0;
    char note[96];
    typedef oc_status (*b1_fn)(oc_context *, oc_cuda_device *, const oc_gram_tile *, cudaStream_t, double *);
    struct {
        const char *name, *row;
        b1_fn fn;
    } kernels[2] = {{"b1", "kernel b1 (device only)", oc_cuda_gram_b1},
                    {"wgmma", "kernel b1 wgmma (device only)", oc_cuda_gram_wgmma}};
    /* The wgmma kernel where the device is Hopper (sm_90a code in the build). */
    const int nk = dev->cc == 90 ? 2 : 1;
    for (int kk = 0; kk < nk; ++kk) {
        double times[3];
        CK(cudaMemset(*d_out, 0xff, obytes)); /* a kernel that writes nothing fails the check below */
        CKO(ctx, kernels[kk].fn(ctx, dev, &t, dev->compute, &macs)); /* warm-up */
        CK(cudaStreamSynchronize(dev->compute));
        for (int r = 0; r < 3; ++r) {
            CK(cudaEventRecord(e0, dev->compute));
            CKO(ctx, kernels[kk].fn(ctx, dev, &t, dev->compute, &macs));
            CK(cudaEventRecord(e1, dev->compute));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            times[r] = ms / 1e3;
        }
        double sec = median3(times[0], times[1], times[2]);
        if (kk == nk - 1) { /* the kernel jobs run by default: wgmma on sm_90, else b1 */
            kernel_raw_rate = macs / sec;
            kernel_eff_rate = (double)n * n * m / sec;
        }
        snprintf(note, sizeof note, "%s n=%lld m=%lld, runs %.4f %.4f %.4f s", kernels[kk].name, (long long)n,
                 (long long)m, times[0], times[1], times[2]);
        add_row(kernels[kk].row, sec, macs / sec, (double)n * n * m / sec, 0, note);

        /* Spot check against the CPU definition on pairs of the upper triangle. */
        int32_t got;
        int bad = 0;
        for (int s = 0; s < 256; ++s) {
            int64_t i = (s * 7919) % n, j = i + (s * 104729) % (n - i);
            CK(cudaMemcpy(&got, *d_out + i * n + j, 4, cudaMemcpyDeviceToHost));
            bad += host_count(a, i, j) != got;
        }
        if (bad) {
            printf("  kernel %s: %d of 256 sampled counts wrong\n", kernels[kk].name, bad);
            failures++;
        }
    }

    /* popc on an eighth of K, for scale. */
    t.words = a->words_per_row / 64 * 8; /* an eighth, in whole 512-bit rows (the popc kernel's unit) */
    CKO(ctx, oc_cuda_gram_popc(ctx, dev, &t, dev->compute, &macs));
    CK(cudaEventRecord(e0, dev->compute));
    CKO(ctx, oc_cuda_gram_popc(ctx, dev, &t, dev->compute, &macs));
    CK(cudaEventRecord(e1, dev->compute));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    snprintf(note, sizeof note, "popc CUDA cores, n=%lld m=%lld", (long long)n, (long long)(t.words * 64));
    add_row("kernel popc (device only)", ms / 1e3, macs / (ms / 1e3), (double)n * n * t.words * 64 / (ms / 1e3), 0,
            note);
    CK(cudaFree(d_pop));
    free(pop64);
    free(pop32);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
}

static void bench_cublas(const oc_matrix *a, const uint64_t *d_a)
{
    const int64_t n = a->rows;
    size_t free_b, total_b;
    CK(cudaMemGetInfo(&free_b, &total_b));
    /* k = m when n*k int8 plus the int32 result fit with 2 GiB to spare; else the largest
     * multiple of 4096 that does (rates are per MAC, so k only sets the run time). */
    int64_t k = a->cols;
    while (k > 4096 && (double)n * k + (double)n * n * 4 + (2.0 * (1 << 30)) > (double)free_b) k /= 2;
    int8_t *d_i8;
    int32_t *d_c;
    CK(cudaMalloc((void **)&d_i8, (size_t)(n * k)));
    CK(cudaMalloc((void **)&d_c, (size_t)(n * n) * 4));
    unpack_bits<<<132 * 8, 256>>>(d_a, a->words_per_row, n, k, d_i8);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());

    cublasLtHandle_t lt;
    CKL(cublasLtCreate(&lt));
    cublasLtMatmulDesc_t op;
    CKL(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32I, CUDA_R_32I));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CKL(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CKL(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    /* Column-major: A is k x n (each packed row of A is a column), C = Aᵀ·A is n x n. */
    cublasLtMatrixLayout_t la, lc;
    CKL(cublasLtMatrixLayoutCreate(&la, CUDA_R_8I, (uint64_t)k, (uint64_t)n, k));
    CKL(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32I, (uint64_t)n, (uint64_t)n, n));
    size_t ws_bytes = 64 << 20;
    void *ws;
    CK(cudaMalloc(&ws, ws_bytes));
    cublasLtMatmulPreference_t pref;
    CKL(cublasLtMatmulPreferenceCreate(&pref));
    CKL(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                             sizeof ws_bytes));
    /* The heuristic's first choice is not always the fastest for this shape: time each
     * candidate once and keep the best, so the reference is cuBLASLt at its best. */
    cublasLtMatmulHeuristicResult_t heur[8];
    int found = 0;
    CKL(cublasLtMatmulAlgoGetHeuristic(lt, op, la, la, lc, lc, pref, 8, heur, &found));
    if (!found) {
        printf("cuBLASLt: no int8 algorithm for this shape\n");
        failures++;
        return;
    }
    int32_t alpha = 1, beta = 0;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    int best = 0;
    double best_ms = 1e30;
    for (int h = 0; h < found; ++h) {
        CK(cudaEventRecord(e0));
        if (cublasLtMatmul(lt, op, &alpha, d_i8, la, d_i8, la, &beta, d_c, lc, d_c, lc, &heur[h].algo, ws, ws_bytes,
                           0) != CUBLAS_STATUS_SUCCESS)
            continue;
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        printf("  cuBLASLt candidate %d: %.4f s\n", h, ms / 1e3);
        if (ms < best_ms) {
            best_ms = ms;
            best = h;
        }
    }
    double times[3];
    for (int r = 0; r < 3; ++r) {
        CK(cudaEventRecord(e0));
        CKL(cublasLtMatmul(lt, op, &alpha, d_i8, la, d_i8, la, &beta, d_c, lc, d_c, lc, &heur[best].algo, ws, ws_bytes,
                           0));
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        times[r] = ms / 1e3;
    }
    double sec = median3(times[0], times[1], times[2]);
    double rate = (double)n * n * k / sec;
    char note[96];
    snprintf(note, sizeof note, "int8 TN COMPUTE_32I n=%lld k=%lld%s", (long long)n, (long long)k,
             k < a->cols ? " (k reduced to fit)" : "");
    add_row("cuBLASLt int8 GEMM", sec, rate, rate, 0, note);
    if (kernel_eff_rate > 0)
        printf("  ratio b1 effective / cuBLASLt: %.2fx, raw / cuBLASLt: %.2fx\n", kernel_eff_rate / rate,
               kernel_raw_rate / rate);

    /* The same counts as the CPU definition where k = m. */
    if (k == a->cols) {
        int bad = 0;
        for (int smp = 0; smp < 64; ++smp) {
            int64_t i = (smp * 7919) % n, j = i + (smp * 104729) % (n - i);
            int32_t x;
            CK(cudaMemcpy(&x, d_c + j * n + i, 4, cudaMemcpyDeviceToHost));
            bad += x != host_count(a, i, j);
        }
        if (bad) {
            printf("  cuBLASLt disagrees with the CPU on %d of 64 samples\n", bad);
            failures++;
        }
    }
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
    cublasLtDestroy(lt);
    CK(cudaFree(ws));
    CK(cudaFree(d_i8));
    CK(cudaFree(d_c));
}

/* oc_gram through the whole pipeline; prints and records the row. */
static void bench_job(oc_context *ctx, const char *name, const oc_matrix *a, int64_t gpu_mem, int64_t tile,
                      oc_output *out)
{
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = OC_BACKEND_CUDA;
    o.gpu_mem_bytes = gpu_mem;
    o.tile = tile;
    oc_gram_stats s = {.struct_size = sizeof s};
    CKO(ctx, oc_gram(ctx, a, NULL, &o, out, &s));
    char note[96];
    snprintf(note, sizeof note, "%lld tiles, dev peak %.2f/%.2f GiB, H2D %.1f GB, D2H %.1f GB = %.1f GB/s",
             (long long)s.tiles, s.dev_peak_bytes / 1073741824.0, s.dev_budget_bytes / 1073741824.0, s.bytes_h2d / 1e9,
             s.bytes_d2h / 1e9, s.bytes_d2h / 1e9 / s.seconds);
    add_row(name, s.seconds, s.bit_macs_computed / s.seconds, s.bit_macs_effective / s.seconds, s.bytes_d2h / s.seconds,
            note);
    if (s.dev_peak_bytes > s.dev_budget_bytes) {
        printf("  %s: peak device memory above the budget\n", name);
        failures++;
    }
}

/* Spot check of a dense A·Aᵀ result against the CPU definition, both triangles. */
static int cuda_host_matches(const oc_matrix *a, const int32_t *c)
{
    int64_t n = a->rows;
    int bad = 0;
    for (int s = 0; s < 256; ++s) {
        int64_t i = (s * 7919ll) % n, j = (s * 104729ll + 17) % n;
        bad += c[i * n + j] != host_count(a, i, j);
    }
    if (bad) printf("  dense result: %d of 256 sampled counts wrong\n", bad);
    return bad == 0;
}

static int want(int argc, char **argv, const char *part)
{
    if (argc <= 1) return strcmp(part, "file") != 0 && strcmp(part, "kernel-200k") != 0;
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], part) == 0) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    oc_context *ctx;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    if (oc_cuda_device_count() == 0) {
        printf("SKIPPED: no usable CUDA device\n");
        return 77;
    }
    oc_cuda_device dev;
    CKO(ctx, oc_cuda_device_open(ctx, 0, &dev));
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    printf("device: %s (sm_%d, %d SMs, %.1f GiB), date %s\n", dev.name, dev.cc, dev.sm_count,
           dev.total_mem / 1073741824.0, date);

    if (want(argc, argv, "kernel") || want(argc, argv, "cublas") || want(argc, argv, "e2e")) {
        oc_matrix *a = random_matrix(ctx, 32768, 524288, 1);
        uint64_t *d_a = NULL;
        int32_t *d_out = NULL;
        bench_host(ctx, a);
        if (want(argc, argv, "kernel")) bench_kernel(ctx, &dev, a, &d_a, &d_out);
        if (want(argc, argv, "cublas")) {
            if (!d_a) {
                CK(cudaMalloc((void **)&d_a, (size_t)(a->rows * a->words_per_row * 8)));
                CK(cudaMemcpy(d_a, a->bits, (size_t)(a->rows * a->words_per_row * 8), cudaMemcpyHostToDevice));
            }
            bench_cublas(a, d_a);
        }
        CK(cudaFree(d_a));
        CK(cudaFree(d_out));
        if (want(argc, argv, "e2e")) {
            size_t bytes = (size_t)(a->rows * a->rows) * 4;
            int32_t *host = (int32_t *)malloc(bytes);
            memset(host, 0, bytes); /* fault the pages in: the rate is the pipeline's, not the kernel's page faults */
            oc_output out = OC_OUTPUT_INIT;
            out.data = host;
            bench_job(ctx, "end to end (host memory)", a, 0, 0, &out);
            oc_output discard = OC_OUTPUT_INIT;
            discard.kind = OC_OUTPUT_DISCARD;
            bench_job(ctx, "pipeline, output discarded", a, 0, 0, &discard);
            free(host);
        }
        oc_matrix_free(a);
    }
    if (want(argc, argv, "kernel-200k")) {
        oc_matrix *a = random_matrix(ctx, 32768, 200000, 4);
        uint64_t *d_a = NULL;
        int32_t *d_out = NULL;
        bench_kernel(ctx, &dev, a, &d_a, &d_out);
        CK(cudaFree(d_a));
        CK(cudaFree(d_out));
        oc_matrix_free(a);
    }
    if (want(argc, argv, "ooc")) {
        oc_matrix *a = random_matrix(ctx, 100000, 200000, 2);
        oc_output discard = OC_OUTPUT_INIT;
        discard.kind = OC_OUTPUT_DISCARD;
        const char *names[4] = {"out of core, --gpu-mem 2G", "out of core, again", "out of core, tile 8192",
                                "out of core, tile 4096"};
        const int64_t tiles[4] = {0, 0, 8192, 4096};
        /* The reference: the same job with no budget (A resident on the device), best of two. */
        bench_job(ctx, "in core, same job (no --gpu-mem)", a, 0, 0, &discard);
        bench_job(ctx, "in core, again", a, 0, 0, &discard);
        const double in_core = rows[nrows - 1].raw > rows[nrows - 2].raw ? rows[nrows - 1].raw : rows[nrows - 2].raw;
        for (int k = 0; k < 4; ++k) {
            bench_job(ctx, names[k], a, 2ll << 30, tiles[k], &discard);
            printf("  out-of-core raw rate / the same job in core: %.0f%%\n", 100.0 * rows[nrows - 1].raw / in_core);
            if (kernel_raw_rate > 0)
                printf("  out-of-core raw rate / in-core kernel raw rate: %.0f%%\n",
                       100.0 * rows[nrows - 1].raw / kernel_raw_rate);
        }
        oc_matrix_free(a);
    }
    if (want(argc, argv, "dense") || want(argc, argv, "file")) {
        oc_matrix *a = random_matrix(ctx, 65536, 65536, 3);
        if (want(argc, argv, "dense")) {
            size_t bytes = (size_t)(a->rows * a->rows) * 4;
            int32_t *host = (int32_t *)malloc(bytes);
            memset(host, 0, bytes);
            oc_output out = OC_OUTPUT_INIT;
            out.data = host;
            const char *names[4] = {"dense int32 -> host, cold", "dense int32 -> host, warm", "dense, 8 sinks, cold",
                                    "dense, 8 sinks, warm"};
            for (int k = 0; k < 4; ++k) {
                if (k == 2) setenv("OUTCORE_CUDA_SINKS", "8", 1);
                if (k % 2 == 0) oc_context_release_cached_memory(ctx);
                memset(host, k % 2 ? 0xff : 0, bytes); /* a stale result cannot pass the check */
                bench_job(ctx, names[k], a, 0, 0, &out);
                if (!cuda_host_matches(a, host)) failures++;
            }
            unsetenv("OUTCORE_CUDA_SINKS");
            free(host);
        }
        if (want(argc, argv, "file")) {
            oc_output out = OC_OUTPUT_INIT;
            out.kind = OC_OUTPUT_FILE;
            out.path = "/dev/shm/outcore_bench.npy";
            bench_job(ctx, "dense int32 -> /dev/shm .npy", a, 0, 0, &out);
            remove(out.path);
            out.path = "outcore_bench.npy";
            bench_job(ctx, "dense int32 -> disk .npy", a, 0, 0, &out);
            remove(out.path);
        }
        oc_matrix_free(a);
    }
    oc_cuda_device_close(&dev);

    printf("\n| case | seconds | raw P bit-MAC/s | effective P bit-MAC/s | note |\n|---|---|---|---|---|\n");
    for (int i = 0; i < nrows; ++i)
        printf("| %s | %.4f | %.3f | %.3f | %s |\n", rows[i].name, rows[i].seconds, rows[i].raw / 1e15,
               rows[i].effective / 1e15, rows[i].note);
    oc_context_free(ctx);
    return failures ? 1 : 0;
}
