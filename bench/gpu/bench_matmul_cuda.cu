/*
 * bench_matmul_cuda.cu - the CUDA matmul backend (oc_mm_backend_cuda) out of core against
 * cuBLASLt in core on the same product.
 *
 *   bench_matmul_cuda [M N K [TYPE [GPU_MEM_MIB]]]
 *       TYPE: float64 float32 tf32 float16 bfloat16 int8 (default float32)
 *       GPU_MEM_MIB: the backend's device budget (default a quarter of the operands and
 *       result, so that the product runs in many tiles and K panels)
 *
 * Rows of the table:
 *   outcore      the backend, operands and result in host memory, read_panel and write_tile
 *                copying rows (the job layer's in-memory case); the second of two runs, so
 *                that handles and pinned staging are warm
 *   cuBLASLt     one cublasLtMatmul over the whole product resident on the device, the
 *                fastest of the heuristic's first 8 candidates (the in-core ceiling)
 *   + transfers  the same with the operands uploaded and the result downloaded from
 *                pageable host memory (what an in-core caller pays when the data is on the host)
 * The rate is multiply-adds x 2 per second (FLOP/s; OP/s for int8).
 *
 * MATMUL_RESIDENT=1 runs the resident mode instead: A, B and C in device memory, the product
 * through oc_matmul as a caller with arrays on the GPU runs it (wall time of the call), against
 * cuBLASLt's fastest candidate in core on its own copy of the same matrices: after a first call,
 * eight pairs of one call of each, alternating which goes first; the best of each, and the
 * median of the pairs' ratios (calls drift with the GPU's clocks under sustained load; a
 * pair's two calls see the same).
 *
 * MATMUL_B_TRANSPOSED=1 (with MATMUL_RESIDENT) gives B as Bᵀ stored n x k (transpose_b): for
 * int8 the layout cuBLASLt's integer kernels read, so that no transpose is timed; B's bytes
 * are those of the reference's int8 operand.
 *
 * MATMUL_CANDIDATES=1 prints the time of each cuBLASLt candidate of the in-core reference;
 * MATMUL_INT8_NN=1 asks cuBLASLt for int8 in the "NN" form (B as stored) instead of "TN".
 *
 * MATMUL_TILE forces the tile edge (the plan's otherwise).
 *
 * MATMUL_PINNED=1 (out of core) puts A, B and C in page-locked host memory and gives the
 * backend their addresses (panel_memory, tile_memory), as the job layer does for a caller's
 * pinned arrays: panels are uploaded and tiles downloaded in place, with no staging copy
 * through host memory, so the job meets the PCIe link's limit rather than the host's.
 *
 * MATMUL_DEVICE_SETS="0;0,1" runs the scaling mode instead: operands generated row by row
 * from one pattern (any K without its memory), the product on each device set in turn, its
 * rate against the first set's times the device count, and whether its bytes equal the
 * first set's.
 */
#include <cublasLt.h>
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_fill.h"

#include "bench_check.h"

/* The bench target does not carry the library's OC_HAVE_CUDA, which declares the table. */
#ifndef OC_HAVE_CUDA
#define OC_HAVE_CUDA 1
#endif
extern "C" {
#include "matmul/matmul_dtype.h"
#include "matmul/matmul_job.h"
#include "mem/host_budget.h"
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct host_io {
    const char *a, *b;
    char *c;
    /* Generated operands (the scaling runs): row r of A and of B is the pattern from element
     * (r * VIRTUAL_STEP) % VIRTUAL_ROWS on, so that K of any depth needs no memory. */
    const char *pattern;
} host_io;

#define VIRTUAL_ROWS (1 << 20)
#define VIRTUAL_STEP 7919

static oc_status read_rows(const oc_matmul_job *job, oc_mm_operand which, int64_t row0, int64_t rows, int64_t col0,
                           int64_t cols, void *dst)
{
    const host_io *io = (const host_io *)job->io;
    const size_t es = oc_mm_type_size(job->in_type);
    const int64_t ld = which == OC_MM_A ? job->k : job->n;
    const char *src = which == OC_MM_A ? io->a : io->b;
    if (io->pattern) {
        for (int64_t r = 0; r < rows; ++r)
            memcpy((char *)dst + (size_t)(r * cols) * es,
                   io->pattern + (size_t)((row0 + r) * VIRTUAL_STEP % VIRTUAL_ROWS + col0) * es, (size_t)cols * es);
        return OC_OK;
    }
    for (int64_t r = 0; r < rows; ++r)
        memcpy((char *)dst + (size_t)(r * cols) * es, src + (size_t)((row0 + r) * ld + col0) * es, (size_t)cols * es);
    return OC_OK;
}

static oc_status write_rows(const oc_matmul_job *job, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                            const void *tile, int64_t ld)
{
    const host_io *io = (const host_io *)job->io;
    const size_t es = oc_mm_type_size(job->out_type);
    for (int64_t r = 0; r < rows; ++r)
        memcpy(io->c + (size_t)((row0 + r) * job->n + col0) * es, (const char *)tile + (size_t)(r * ld) * es,
               (size_t)cols * es);
    return OC_OK;
}

/* MATMUL_PINNED: where panels and tiles lie in the page-locked operands (rows of ld). */
static const void *pinned_panel(const oc_matmul_job *job, oc_mm_operand which, int64_t row0, int64_t col0, int64_t *ld)
{
    const host_io *io = (const host_io *)job->io;
    const size_t es = oc_mm_type_size(job->in_type);
    *ld = which == OC_MM_A ? job->k : job->n;
    return (which == OC_MM_A ? io->a : io->b) + (size_t)(row0 * *ld + col0) * es;
}

static void *pinned_tile(const oc_matmul_job *job, int64_t row0, int64_t col0, int64_t *ld)
{
    const host_io *io = (const host_io *)job->io;
    *ld = job->n;
    return io->c + (size_t)(row0 * job->n + col0) * oc_mm_type_size(job->out_type);
}

typedef struct type_case {
    const char *name;
    oc_mm_type in, out;
    int tf32;
    cudaDataType_t ab, c;
    cublasComputeType_t compute;
    cudaDataType_t scale;
} type_case;

static const type_case cases[] = {
    {"float64", OC_MM_FLOAT64, OC_MM_FLOAT64, 0, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F},
    {"float32", OC_MM_FLOAT32, OC_MM_FLOAT32, 0, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F},
    {"tf32", OC_MM_FLOAT32, OC_MM_FLOAT32, 1, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F},
    {"float16", OC_MM_FLOAT16, OC_MM_FLOAT32, 0, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F},
    {"bfloat16", OC_MM_BFLOAT16, OC_MM_FLOAT32, 0, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F},
    {"int8", OC_MM_INT8, OC_MM_INT32, 0, CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, CUDA_R_32I},
};

/* Small integers in every type's bytes: 0 or 1 of the type (the rate does not depend on them).
 * The first BENCH_FILL_BLOCK elements are drawn; each later block repeats them rotated by its own
 * offset, so that filling matrices of many GB takes seconds, not minutes. */
static void fill(char *p, int64_t count, oc_mm_type t, uint64_t seed)
{
    const size_t es = oc_mm_type_size(t);
    for (int64_t i = 0; i < count && i < BENCH_FILL_BLOCK; ++i) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        const int one = (seed >> 40) & 1;
        char *e = p + (size_t)i * es;
        memset(e, 0, es);
        if (!one) continue;
        switch (t) {
        case OC_MM_FLOAT64:
            *(double *)e = 1.0;
            break;
        case OC_MM_FLOAT32:
            *(float *)e = 1.0f;
            break;
        case OC_MM_FLOAT16:
            *(uint16_t *)e = 0x3c00;
            break;
        case OC_MM_BFLOAT16:
            *(uint16_t *)e = 0x3f80;
            break;
        default:
            *(int8_t *)e = 1;
            break;
        }
    }
    bench_fill_repeat(p, count, es);
}

/* cuBLASLt in core on the same matrices: the operands uploaded, the heuristic's candidates,
 * the fastest of them (ref_search), one call of a candidate (ref_call), the result downloaded. */
typedef struct reference {
    size_t bytes_a, bytes_b, bytes_c, ws_bytes;
    void *da, *db, *dc, *ws;
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulPreference_t pref;
    cublasLtMatmulHeuristicResult_t heur[8];
    int found, best;
    double one64, zero64;
    float one32, zero32;
    int32_t onei, zeroi;
    const void *alpha, *beta;
    double up; /* the uploads' seconds, from pageable memory */
} reference;

/* Returns 0 (r->found: the heuristic's candidates, perhaps none), or -1 when the product does
 * not fit the device. */
static int ref_open(reference *r, const type_case *tc, int64_t m, int64_t n, int64_t k, const char *a, const char *b)
{
    memset(r, 0, sizeof *r);
    const size_t ia = oc_mm_type_size(tc->in), oa = oc_mm_type_size(tc->out);
    r->bytes_a = (size_t)(m * k) * ia, r->bytes_b = (size_t)(k * n) * ia, r->bytes_c = (size_t)(m * n) * oa;
    /* MATMUL_WORKSPACE_MIB: the workspace cuBLASLt may ask for (default 32 MiB). */
    r->ws_bytes = getenv("MATMUL_WORKSPACE_MIB") ? (size_t)atoll(getenv("MATMUL_WORKSPACE_MIB")) << 20 : 32u << 20;
    size_t free_b, total_b;
    CK(cudaMemGetInfo(&free_b, &total_b));
    if (r->bytes_a + r->bytes_b + r->bytes_c + r->ws_bytes + (512u << 20) > free_b) return -1;
    CK(cudaMalloc(&r->da, r->bytes_a));
    CK(cudaMalloc(&r->db, r->bytes_b));
    CK(cudaMalloc(&r->dc, r->bytes_c));
    if (r->ws_bytes) CK(cudaMalloc(&r->ws, r->ws_bytes));
    CKL(cublasLtCreate(&r->lt));
    CKL(cublasLtMatmulDescCreate(&r->op, tc->compute, tc->scale));
    /* Row-major C = A·B as column-major Cᵀ = Bᵀ·Aᵀ; int8 in its TN form (the bytes of B read
     * as Bᵀ stored k-major: the same work on other numbers). */
    const int i8 = tc->in == OC_MM_INT8 && !getenv("MATMUL_INT8_NN");
    cublasOperation_t ta = i8 ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    CKL(cublasLtMatmulDescSetAttribute(r->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CKL(cublasLtMatmulDescSetAttribute(r->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (i8) CKL(cublasLtMatrixLayoutCreate(&r->la, tc->ab, (uint64_t)k, (uint64_t)n, k));
    else CKL(cublasLtMatrixLayoutCreate(&r->la, tc->ab, (uint64_t)n, (uint64_t)k, n));
    CKL(cublasLtMatrixLayoutCreate(&r->lb, tc->ab, (uint64_t)k, (uint64_t)m, k));
    CKL(cublasLtMatrixLayoutCreate(&r->lc, tc->c, (uint64_t)n, (uint64_t)m, n));
    CKL(cublasLtMatmulPreferenceCreate(&r->pref));
    CKL(cublasLtMatmulPreferenceSetAttribute(r->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &r->ws_bytes,
                                             sizeof r->ws_bytes));
    CKL(cublasLtMatmulAlgoGetHeuristic(r->lt, r->op, r->la, r->lb, r->lc, r->lc, r->pref, 8, r->heur, &r->found));
    r->one64 = 1, r->one32 = 1, r->onei = 1;
    r->alpha = &r->one32, r->beta = &r->zero32;
    if (tc->scale == CUDA_R_64F) r->alpha = &r->one64, r->beta = &r->zero64;
    if (tc->scale == CUDA_R_32I) r->alpha = &r->onei, r->beta = &r->zeroi;
    const double t0 = now();
    CK(cudaMemcpy(r->da, a, r->bytes_a, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(r->db, b, r->bytes_b, cudaMemcpyHostToDevice));
    r->up = now() - t0;
    return 0;
}

/* One call of candidate h, synchronized: its seconds, or a negative value when it fails. */
static double ref_call(reference *r, int h)
{
    CK(cudaDeviceSynchronize());
    const double t0 = now();
    if (cublasLtMatmul(r->lt, r->op, r->alpha, r->db, r->la, r->da, r->lb, r->beta, r->dc, r->lc, r->dc, r->lc,
                       &r->heur[h].algo, r->ws, r->ws_bytes, 0) != CUBLAS_STATUS_SUCCESS)
        return -1;
    CK(cudaDeviceSynchronize());
    return now() - t0;
}

/* The fastest of up to 8 candidates (3 for long products), the second of two runs of each
 * (the first warms it up); its seconds, and r->best. */
static double ref_search(reference *r, int64_t m, int64_t n, int64_t k)
{
    const double flop = 2.0 * (double)m * (double)n * (double)k;
    const int tries = flop > 5e13 && r->found > 3 ? 3 : r->found;
    double best = 1e30;
    for (int h = 0; h < tries; ++h) {
        if (ref_call(r, h) < 0) continue;
        const double secs = ref_call(r, h);
        if (secs >= 0 && secs < best) best = secs, r->best = h;
        if (getenv("MATMUL_CANDIDATES"))
            printf("cuBLASLt candidate %d of %d: %.4f s, workspace %zu B\n", h, r->found, secs,
                   r->heur[h].workspaceSize);
    }
    return best < 1e30 ? best : -1;
}

/* The result downloaded into c (its seconds), and everything given back. */
static double ref_close(reference *r, char *c)
{
    const double t0 = now();
    CK(cudaMemcpy(c, r->dc, r->bytes_c, cudaMemcpyDeviceToHost));
    const double down = now() - t0;
    cublasLtMatmulPreferenceDestroy(r->pref);
    cublasLtMatrixLayoutDestroy(r->la);
    cublasLtMatrixLayoutDestroy(r->lb);
    cublasLtMatrixLayoutDestroy(r->lc);
    cublasLtMatmulDescDestroy(r->op);
    cublasLtDestroy(r->lt);
    CK(cudaFree(r->da));
    CK(cudaFree(r->db));
    CK(cudaFree(r->dc));
    if (r->ws) CK(cudaFree(r->ws));
    return down;
}

/* cuBLASLt in core: the fastest candidate's seconds; *with_copies adds the uploads and the
 * download from pageable memory. Negative when the product does not fit the device. */
static double in_core(const type_case *tc, int64_t m, int64_t n, int64_t k, const char *a, const char *b, char *c,
                      double *with_copies)
{
    reference r;
    if (ref_open(&r, tc, m, n, k, a, b) != 0) return -1;
    const double best = r.found ? ref_search(&r, m, n, k) : -1;
    *with_copies = best + r.up + ref_close(&r, c);
    return best;
}

/* MATMUL_PINNED's floor: the job's own upload and download byte counts copied between the
 * page-locked operands and result and the device, in pieces of 256 MiB, uploads and downloads
 * each alone and then both at once on two streams (what the link gives a job that moves those
 * bytes; the uploads cycle over A and B). */
typedef struct link_times {
    double up, down, both;
} link_times;

static double link_copies(const char *src0, size_t src_bytes, size_t up, char *dst0, size_t dst_bytes, size_t down,
                          void *dev_up, void *dev_down, cudaStream_t su, cudaStream_t sd)
{
    size_t piece = 256u << 20;
    if (src_bytes < piece) piece = src_bytes;
    if (dst_bytes < piece) piece = dst_bytes;
    CK(cudaDeviceSynchronize());
    const double t = now();
    for (size_t done = 0, at = 0; done < up; done += piece, at = (at + piece) % src_bytes) {
        const size_t bytes = up - done < piece ? up - done : piece;
        const size_t from = at + bytes <= src_bytes ? at : 0;
        CK(cudaMemcpyAsync(dev_up, src0 + from, bytes, cudaMemcpyHostToDevice, su));
    }
    for (size_t done = 0, at = 0; done < down; done += piece, at = (at + piece) % dst_bytes) {
        const size_t bytes = down - done < piece ? down - done : piece;
        const size_t to = at + bytes <= dst_bytes ? at : 0;
        CK(cudaMemcpyAsync(dst0 + to, dev_down, bytes, cudaMemcpyDeviceToHost, sd));
    }
    CK(cudaDeviceSynchronize());
    return now() - t;
}

static link_times link_floor(const host_io *io, size_t bytes_a, size_t bytes_c, size_t up, size_t down)
{
    void *dev_up = NULL, *dev_down = NULL;
    cudaStream_t su, sd;
    CK(cudaMalloc(&dev_up, 256u << 20));
    CK(cudaMalloc(&dev_down, 256u << 20));
    CK(cudaMemset(dev_down, 0, 256u << 20));
    CK(cudaStreamCreateWithFlags(&su, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&sd, cudaStreamNonBlocking));
    link_times lt;
    (void)link_copies(io->a, bytes_a, up / 8, io->c, bytes_c, down / 8, dev_up, dev_down, su, sd); /* warm */
    lt.up = link_copies(io->a, bytes_a, up, io->c, bytes_c, 0, dev_up, dev_down, su, sd);
    lt.down = link_copies(io->a, bytes_a, 0, io->c, bytes_c, down, dev_up, dev_down, su, sd);
    lt.both = link_copies(io->a, bytes_a, up, io->c, bytes_c, down, dev_up, dev_down, su, sd);
    CK(cudaStreamDestroy(su));
    CK(cudaStreamDestroy(sd));
    CK(cudaFree(dev_up));
    CK(cudaFree(dev_down));
    return lt;
}

#define RESIDENT_PAIRS 8

static int by_value(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median_of(double *v, int count)
{
    qsort(v, (size_t)count, sizeof v[0], by_value);
    return count % 2 ? v[count / 2] : 0.5 * (v[count / 2 - 1] + v[count / 2]);
}

typedef struct resident_times {
    double first;             /* outcore's first call */
    double ours, ours_median; /* the best and the median of the paired calls */
    double ref, ref_median;   /* cuBLASLt's fastest candidate over the same pairs */
    double ratio_median;      /* the median over the pairs of cuBLASLt's / outcore's seconds */
    int same;                 /* -1: the two read different B; else the results' bytes equal */
} resident_times;

/* The resident mode: oc_matmul on A, B and C in device memory (gpu = 1), a first call, then
 * RESIDENT_PAIRS pairs of one oc_matmul call and one call of cuBLASLt's fastest candidate on
 * its own copy of the operands, the order inside a pair alternating, so that both see the
 * same clocks as the GPU warms. Returns 0, 1 on a failure, 2 when the reference does not
 * fit; outcore's result into c (host). */
static int resident(const type_case *tc, int64_t m, int64_t n, int64_t k, const char *a, const char *b, char *c,
                    oc_matmul_stats *stats, resident_times *rt)
{
    const size_t ia = oc_mm_type_size(tc->in), oa = oc_mm_type_size(tc->out);
    const size_t bytes_a = (size_t)(m * k) * ia, bytes_b = (size_t)(k * n) * ia, bytes_c = (size_t)(m * n) * oa;
    void *da, *db, *dc;
    CK(cudaMalloc(&da, bytes_a));
    CK(cudaMalloc(&db, bytes_b));
    CK(cudaMalloc(&dc, bytes_c));
    CK(cudaMemcpy(da, a, bytes_a, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b, bytes_b, cudaMemcpyHostToDevice));
    oc_matmul_array A = OC_MATMUL_ARRAY_INIT, B = OC_MATMUL_ARRAY_INIT, C = OC_MATMUL_ARRAY_INIT;
    A.data = da, A.dtype = oc_matmul_dtype_of(tc->in), A.rows = m, A.cols = k, A.gpu = 1;
    B.data = db, B.dtype = A.dtype, B.rows = k, B.cols = n, B.gpu = 1;
    C.data = dc, C.dtype = oc_matmul_dtype_of(tc->out), C.rows = m, C.cols = n, C.gpu = 1;
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.tf32 = tc->tf32, o.dtype = C.dtype;
    const int b_transposed = getenv("MATMUL_B_TRANSPOSED") != NULL;
    if (b_transposed) /* B's bytes read as Bᵀ stored n x k, as the reference reads int8's */
        B.rows = n, B.cols = k, o.transpose_b = 1;
    oc_context *ctx;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    char *plan = NULL;
    if (oc_matmul_plan(ctx, &A, &B, &C, &o, 0, 0, &plan) == OC_OK) printf("%s", plan);
    free(plan);
    int rc = 1;
    reference r;
    double ours[RESIDENT_PAIRS], ref[RESIDENT_PAIRS], ratio[RESIDENT_PAIRS];
    stats->struct_size = sizeof *stats;
    double t0 = now();
    if (oc_matmul(ctx, &A, &B, &C, &o, stats) != OC_OK) goto failed;
    rt->first = now() - t0;
    if (ref_open(&r, tc, m, n, k, a, b) != 0) {
        rc = 2;
        goto done;
    }
    if (!r.found || ref_search(&r, m, n, k) < 0) {
        rc = 2;
        goto closed;
    }
    for (int i = 0; i < RESIDENT_PAIRS; ++i) {
        if (i % 2) ref[i] = ref_call(&r, r.best);
        t0 = now();
        if (oc_matmul(ctx, &A, &B, &C, &o, stats) != OC_OK) goto failed_open;
        ours[i] = now() - t0;
        if (i % 2 == 0) ref[i] = ref_call(&r, r.best);
        if (ref[i] < 0) goto failed_open;
        ratio[i] = ref[i] / ours[i];
    }
    rt->ratio_median = median_of(ratio, RESIDENT_PAIRS);
    rt->ours_median = median_of(ours, RESIDENT_PAIRS), rt->ours = ours[0];
    rt->ref_median = median_of(ref, RESIDENT_PAIRS), rt->ref = ref[0];
    rc = 0;
closed:
    CK(cudaMemcpy(c, dc, bytes_c, cudaMemcpyDeviceToHost));
    {
        /* The reference reads int8's B as Bᵀ stored, the floats' as B: compare where the two
         * agree. */
        char *theirs = (char *)malloc(bytes_c);
        if (!theirs) {
            fprintf(stderr, "out of host memory\n");
            exit(1);
        }
        ref_close(&r, theirs);
        rt->same = (tc->in == OC_MM_INT8) == b_transposed ? memcmp(theirs, c, bytes_c) == 0 : -1;
        free(theirs);
    }
    goto done;
failed_open:
    ref_close(&r, c);
failed:
    fprintf(stderr, "oc_matmul or cuBLASLt failed: %s\n", oc_context_last_error(ctx));
done:
    oc_context_free(ctx);
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dc));
    return rc;
}

/* Several GPUs: the product with generated operands on each device set of sets ("0;0,1"),
 * its seconds, its rate against the first set's times the device count, and the same bytes
 * on every set. */
static int scaling(const type_case *tc, int64_t m, int64_t n, int64_t k, const char *sets)
{
    const size_t ia = oc_mm_type_size(tc->in), oa = oc_mm_type_size(tc->out);
    const size_t bytes_c = (size_t)(m * n) * oa;
    const int64_t wide = k > n ? k : n;
    host_io io = {NULL, NULL, (char *)malloc(bytes_c), (const char *)malloc((size_t)(VIRTUAL_ROWS + wide) * ia)};
    char *first = (char *)malloc(bytes_c);
    if (!io.c || !io.pattern || !first) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    fill((char *)io.pattern, VIRTUAL_ROWS + wide, tc->in, 3);
    oc_context *ctx;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    const double flop = 2.0 * (double)m * (double)n * (double)k;
    double one = 0;
    int first_nd = 0, rc = 0;
    printf("%-10s %-24s %-12s %10s %10s %10s  %s\n", "case", "m x n x k", "devices", "seconds", "TFLOP/s", "scaling",
           "bytes");
    for (const char *p = sets; *p;) {
        int devices[16], nd = 0;
        while (*p && *p != ';' && nd < 16) {
            devices[nd++] = (int)strtol(p, (char **)&p, 10);
            if (*p == ',') ++p;
        }
        if (*p == ';') ++p;
        oc_matmul_job job;
        memset(&job, 0, sizeof job);
        job.ctx = ctx, job.m = m, job.n = n, job.k = k, job.in_type = tc->in, job.out_type = tc->out;
        job.tf32 = tc->tf32, job.read_panel = read_rows, job.write_tile = write_rows, job.io = &io;
        job.devices = devices, job.ndevices = nd, job.host_mem_bytes = oc_host_budget_resolve(0);
        memset(io.c, 0, bytes_c);
        if (oc_mm_backend_cuda.run(&job) != OC_OK) {
            fprintf(stderr, "run: %s\n", oc_context_last_error(ctx));
            return 1;
        }
        const double secs = job.stats.seconds;
        const char *same = "first";
        if (!first_nd) {
            memcpy(first, io.c, bytes_c);
            one = secs, first_nd = nd;
        } else if (memcmp(first, io.c, bytes_c) == 0) {
            same = "the same as the first";
        } else {
            same = "DIFFERENT from the first";
            rc = 1;
        }
        char devs[64], dims[64];
        int used = 0;
        for (int i = 0; i < nd && used < 60; ++i)
            used += snprintf(devs + used, 64 - used, "%s%d", i ? "," : "", devices[i]);
        snprintf(dims, sizeof dims, "%lld x %lld x %lld", (long long)m, (long long)n, (long long)k);
        printf("%-10s %-24s %-12s %10.3f %10.2f %9.1f%%  %s\n", tc->name, dims, devs, secs, flop / secs / 1e12,
               100.0 * one * first_nd / (secs * nd), same);
        fflush(stdout);
    }
    oc_context_free(ctx);
    free(io.c), free((void *)io.pattern), free(first);
    return rc;
}

/* A crash prints where it happened (the benchmark runs on lent hosts without a debugger). */
static void on_fault(int sig)
{
    void *frames[64];
    const int n = backtrace(frames, 64);
    const char head[] = "bench_matmul_cuda: fatal signal; backtrace:\n";
    (void)!write(2, head, sizeof head - 1);
    backtrace_symbols_fd(frames, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

int main(int argc, char **argv)
{
    signal(SIGSEGV, on_fault);
    signal(SIGBUS, on_fault);
    setvbuf(stdout, NULL, _IOLBF, 0);
    const int64_t m = argc > 1 ? atoll(argv[1]) : 16384, n = argc > 2 ? atoll(argv[2]) : 16384,
                  k = argc > 3 ? atoll(argv[3]) : 16384;
    const char *type = argc > 4 ? argv[4] : "float32";
    const type_case *tc = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        if (strcmp(cases[i].name, type) == 0) tc = &cases[i];
    if (!tc || m <= 0 || n <= 0 || k <= 0) {
        fprintf(stderr,
                "usage: bench_matmul_cuda [M N K [float64|float32|tf32|float16|bfloat16|int8 [GPU_MEM_MIB]]]\n");
        return 2;
    }
    char unusable[256] = "";
    if (!oc_mm_backend_cuda.usable(0, unusable, sizeof unusable)) {
        printf("SKIPPED: no usable CUDA device or no cuBLASLt\n");
        return 0;
    }
    if (getenv("MATMUL_DEVICE_SETS")) return scaling(tc, m, n, k, getenv("MATMUL_DEVICE_SETS"));
    const size_t ia = oc_mm_type_size(tc->in), oa = oc_mm_type_size(tc->out);
    const size_t bytes_a = (size_t)(m * k) * ia, bytes_b = (size_t)(k * n) * ia, bytes_c = (size_t)(m * n) * oa;
    const int64_t gpu_mem = argc > 5 ? atoll(argv[5]) << 20 : (int64_t)((bytes_a + bytes_b + bytes_c) / 4 + (64 << 20));
    host_io io = {NULL, NULL, NULL, NULL}; /* no pattern: the operands below are real */
    const int pinned = getenv("MATMUL_PINNED") != NULL && !getenv("MATMUL_RESIDENT");
    if (pinned) {
        void *pa = NULL, *pb = NULL, *pc = NULL;
        if (cudaHostAlloc(&pa, bytes_a, cudaHostAllocDefault) != cudaSuccess ||
            cudaHostAlloc(&pb, bytes_b, cudaHostAllocDefault) != cudaSuccess ||
            cudaHostAlloc(&pc, bytes_c, cudaHostAllocDefault) != cudaSuccess) {
            fprintf(stderr, "out of page-locked host memory\n");
            return 1;
        }
        io.a = (const char *)pa, io.b = (const char *)pb, io.c = (char *)pc;
    } else {
        io.a = (char *)malloc(bytes_a), io.b = (char *)malloc(bytes_b), io.c = (char *)malloc(bytes_c);
    }
    if (!io.a || !io.b || !io.c) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    fill((char *)io.a, m * k, tc->in, 1);
    fill((char *)io.b, k * n, tc->in, 2);
    const double flop = 2.0 * (double)m * (double)n * (double)k;
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    char dims[64];
    snprintf(dims, sizeof dims, "%lld x %lld x %lld", (long long)m, (long long)n, (long long)k);
    if (getenv("MATMUL_RESIDENT")) {
        oc_matmul_stats st;
        resident_times rt;
        const int rc = resident(tc, m, n, k, io.a, io.b, io.c, &st, &rt);
        if (rc == 2) printf("cuBLASLt in core: the product does not fit the device (or has no algorithm)\n");
        if (rc) return 1;
        printf("\n%-22s %-26s %-24s %10s %12s  %s\n", "case", "device", "m x n x k", "seconds", "TFLOP/s", "note");
        printf("%-22s %-26.26s %-24s %10.4f %12.2f  %s, wall of the oc_matmul call, best of %d paired calls "
               "(median %.4f s; the first call %.4f s), %lld tile%s, H2D %lld B, D2H %lld B\n",
               "outcore resident", prop.name, dims, rt.ours, flop / rt.ours / 1e12, tc->name, RESIDENT_PAIRS,
               rt.ours_median, rt.first, (long long)st.tiles, st.tiles == 1 ? "" : "s", (long long)st.bytes_h2d,
               (long long)st.bytes_d2h);
        printf("%-22s %-26.26s %-24s %10.4f %12.2f  %s, resident, the heuristic's fastest candidate, best of the "
               "same %d pairs (median %.4f s)\n",
               "cuBLASLt in core", prop.name, dims, rt.ref, flop / rt.ref / 1e12, tc->name, RESIDENT_PAIRS,
               rt.ref_median);
        if (rt.same >= 0) {
            printf("outcore resident and cuBLASLt in core: %s\n", rt.same ? "the same bytes" : "DIFFERENT results");
            if (!rt.same) return 1;
        }
        printf("ratio outcore resident / cuBLASLt in core: best %.3f, median of the %d pairs' ratios %.3f\n",
               rt.ref / rt.ours, RESIDENT_PAIRS, rt.ratio_median);
        free((void *)io.a), free((void *)io.b), free(io.c);
        return 0;
    }
    oc_context *ctx;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    oc_matmul_job job;
    memset(&job, 0, sizeof job);
    job.ctx = ctx, job.m = m, job.n = n, job.k = k, job.in_type = tc->in, job.out_type = tc->out, job.tf32 = tc->tf32;
    job.read_panel = read_rows, job.write_tile = write_rows, job.io = &io, job.gpu_mem_bytes = gpu_mem;
    if (pinned) job.panel_memory = pinned_panel, job.tile_memory = pinned_tile;
    if (getenv("MATMUL_TILE")) job.tile = atoll(getenv("MATMUL_TILE"));
    job.host_mem_bytes = oc_host_budget_resolve(0); /* as the job layer resolves an unset --host-mem */
    char *plan = NULL;
    if (oc_mm_backend_cuda.plan(&job, 0, &plan) != OC_OK) {
        fprintf(stderr, "plan: %s\n", oc_context_last_error(ctx));
        return 1;
    }
    printf("%s", plan);
    free(plan);
    double secs = 0;
    for (int rep = 0; rep < 2; ++rep) {
        if (oc_mm_backend_cuda.run(&job) != OC_OK) {
            fprintf(stderr, "run: %s\n", oc_context_last_error(ctx));
            return 1;
        }
        secs = job.stats.seconds;
    }
    printf("\n%-22s %-26s %-24s %10s %12s  %s\n", "case", "device", "m x n x k", "seconds", "TFLOP/s", "note");
    char note[160];
    snprintf(note, sizeof note, "%s, --gpu-mem %lld MiB, %lld tiles, H2D %.2f GB, D2H %.2f GB, %s", tc->name,
             (long long)(gpu_mem >> 20), (long long)job.stats.tiles, (double)job.stats.bytes_to_device / 1e9,
             (double)job.stats.bytes_from_device / 1e9,
             pinned ? "page-locked operands and result" : "pageable operands and result");
    printf("%-22s %-26.26s %-24s %10.4f %12.2f  %s\n", "outcore out of core", prop.name, dims, secs, flop / secs / 1e12,
           note);
    /* The operands hold 0 and 1: every sum is an integer up to k, exact in every output type,
     * so the float results must match cuBLASLt's to the byte (int8 runs in core on other
     * numbers: see in_core). */
    char *ours = (char *)malloc(bytes_c);
    if (!ours) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    memcpy(ours, io.c, bytes_c);
    double copies = 0, incore = in_core(tc, m, n, k, io.a, io.b, io.c, &copies);
    if (incore > 0 && tc->in != OC_MM_INT8) {
        const int same = memcmp(ours, io.c, bytes_c) == 0;
        printf("outcore and cuBLASLt in core: %s\n", same ? "the same bytes" : "DIFFERENT results");
        if (!same) return 1;
    }
    free(ours);
    if (pinned) {
        /* After the comparison: the copies below overwrite C. */
        const link_times lt =
            link_floor(&io, bytes_a, bytes_c, (size_t)job.stats.bytes_to_device, (size_t)job.stats.bytes_from_device);
        printf("the link, the job's bytes between the same page-locked buffers and the device: H2D %.2f GB alone "
               "%.4f s (%.1f GB/s), D2H %.2f GB alone %.4f s (%.1f GB/s), both at once %.4f s; outcore's job / "
               "both at once: %.2f\n",
               (double)job.stats.bytes_to_device / 1e9, lt.up, (double)job.stats.bytes_to_device / 1e9 / lt.up,
               (double)job.stats.bytes_from_device / 1e9, lt.down, (double)job.stats.bytes_from_device / 1e9 / lt.down,
               lt.both, lt.both / secs);
    }
    if (incore > 0) {
        printf("%-22s %-26.26s %-24s %10.4f %12.2f  %s, resident, best of the heuristic's candidates\n",
               "cuBLASLt in core", prop.name, dims, incore, flop / incore / 1e12, tc->name);
        printf("%-22s %-26.26s %-24s %10.4f %12.2f  %s, %s uploads and download\n", "  + transfers", prop.name, dims,
               copies, flop / copies / 1e12, tc->name, pinned ? "page-locked" : "pageable");
        printf("ratio outcore / cuBLASLt in core: %.2f\n", incore / secs);
    } else {
        printf("cuBLASLt in core: the product does not fit the device (or has no algorithm)\n");
    }
    oc_context_free(ctx);
    if (pinned) {
        cudaFreeHost((void *)io.a), cudaFreeHost((void *)io.b), cudaFreeHost(io.c);
    } else {
        free((void *)io.a), free((void *)io.b), free(io.c);
    }
    return 0;
}
