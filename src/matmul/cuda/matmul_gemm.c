/*
 * matmul_gemm.c - cuBLASLt calls of the CUDA matmul backend (matmul_gemm.h: the layouts and
 * the algorithm cache).
 */
#include "matmul/cuda/matmul_gemm.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/threads.h"
#include "core/trace.h"
#include "cost/cost.h"

#define LT_CHECK(call)                                                                                            \
    do {                                                                                                          \
        cublasStatus_t oc_lt_s_ = (call);                                                                         \
        if (oc_lt_s_ != CUBLAS_STATUS_SUCCESS)                                                                    \
            return oc_fail(ctx, oc_lt_s_ == CUBLAS_STATUS_ALLOC_FAILED ? OC_ERR_DEVICE_NO_MEMORY : OC_ERR_DEVICE, \
                           "cuBLASLt: %s: %s", #call, oc_cublaslt_status_name(oc_lt_s_));                         \
    } while (0)

static cudaDataType_t data_type(oc_mm_type t)
{
    switch (t) {
    case OC_MM_FLOAT64:
        return CUDA_R_64F;
    case OC_MM_FLOAT32:
        return CUDA_R_32F;
    case OC_MM_FLOAT16:
        return CUDA_R_16F;
    case OC_MM_BFLOAT16:
        return CUDA_R_16BF;
    case OC_MM_INT8:
        return CUDA_R_8I;
    default:
        return CUDA_R_32I;
    }
}

oc_status oc_mm_gemm_open(oc_context *ctx, const oc_cublaslt_api *lt, const oc_mm_cuda_plan *plan, void *workspace,
                          oc_mm_gemm *g)
{
    memset(g, 0, sizeof *g);
    g->lt = lt;
    g->plan = plan;
    g->workspace = workspace;
    g->workspace_bytes = (size_t)plan->workspace;
    g->ab_type = data_type(plan->in.in_type);
    g->c_type = data_type(plan->acc_type);
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    cudaDataType_t scale = CUDA_R_32F;
    if (plan->in.in_type == OC_MM_FLOAT64) compute = CUBLAS_COMPUTE_64F, scale = CUDA_R_64F;
    else if (plan->in.in_type == OC_MM_FLOAT32 && plan->in.tf32) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    else if (plan->in.in_type == OC_MM_INT8) compute = CUBLAS_COMPUTE_32I, scale = CUDA_R_32I;
    LT_CHECK(lt->create(&g->handle));
    LT_CHECK(lt->desc_create(&g->desc, compute, scale));
    /* The first operand is the B panel, the second the A panel (matmul_gemm.h); a resident
     * plan's transposed operands are cuBLASLt's transposes (int8: always "TN", packed so). */
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    if (plan->in.in_type != OC_MM_INT8) {
        ta = plan->in.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
        tb = plan->in.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    }
    LT_CHECK(lt->desc_set(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_CHECK(lt->desc_set(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LT_CHECK(lt->pref_create(&g->pref));
    const uint64_t ws = g->workspace_bytes;
    LT_CHECK(lt->pref_set(g->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    return OC_OK;
}

/* The layouts and algorithm of a shape: made and chosen on its first tile, then reused. */
static oc_status shape_of(oc_context *ctx, oc_mm_gemm *g, int64_t rows, int64_t cols, int64_t depth,
                          oc_mm_gemm_shape **out)
{
    for (int i = 0; i < g->nshapes; ++i) {
        oc_mm_gemm_shape *s = &g->shape[i];
        if (s->rows == rows && s->cols == cols && s->depth == depth) {
            *out = s;
            return OC_OK;
        }
    }
    if (g->nshapes == OC_MM_GEMM_SHAPES)
        return oc_fail(ctx, OC_ERR_INTERNAL, "matmul: more than %d tile shapes", OC_MM_GEMM_SHAPES);
    oc_mm_gemm_shape *s = &g->shape[g->nshapes];
    memset(s, 0, sizeof *s);
    s->rows = rows, s->cols = cols, s->depth = depth;
    g->nshapes++; /* counted now, so that close destroys whatever layouts follow */
    const oc_cublaslt_api *lt = g->lt;
    const uint64_t ldc = (uint64_t)oc_mm_cuda_ldc(g->plan, cols);
    if (g->plan->in.in_type == OC_MM_INT8) {
        /* Cᵀ (ldc x rows) = Btᵀ · A: Bt is ldc x kpad stored as kpad x ldc, A rows x kpad as kpad x rows. */
        const uint64_t kpad = (uint64_t)((depth + 15) / 16 * 16);
        LT_CHECK(lt->layout_create(&s->la, g->ab_type, kpad, ldc, (int64_t)kpad));
        LT_CHECK(lt->layout_create(&s->lb, g->ab_type, kpad, (uint64_t)rows, (int64_t)kpad));
    } else {
        /* Cᵀ (cols x rows) = Bᵀ (cols x depth, ld cols) · Aᵀ (depth x rows, ld depth); a
         * resident op(B) = Bᵀ is B stored cols x depth (depth x cols column-major, transposed
         * by the operation), op(A) = Aᵀ is A stored depth x rows. */
        if (g->plan->in.tb) LT_CHECK(lt->layout_create(&s->la, g->ab_type, (uint64_t)depth, (uint64_t)cols, depth));
        else LT_CHECK(lt->layout_create(&s->la, g->ab_type, (uint64_t)cols, (uint64_t)depth, cols));
        if (g->plan->in.ta) LT_CHECK(lt->layout_create(&s->lb, g->ab_type, (uint64_t)rows, (uint64_t)depth, rows));
        else LT_CHECK(lt->layout_create(&s->lb, g->ab_type, (uint64_t)depth, (uint64_t)rows, depth));
    }
    LT_CHECK(lt->layout_create(&s->lc, g->c_type, ldc, (uint64_t)rows, (int64_t)ldc));
    cublasLtMatmulHeuristicResult_t found[OC_MM_GEMM_CANDIDATES];
    const int want = g->plan->in.in_type == OC_MM_INT8 ? OC_MM_GEMM_CANDIDATES : 1;
    int nfound = 0;
    double t = oc_now();
    cublasStatus_t r = lt->heuristic(g->handle, g->desc, s->la, s->lb, s->lc, s->lc, g->pref, want, found, &nfound);
    oc_trace_phase(&t, "matmul", "cuBLASLt algorithm");
    if (r != CUBLAS_STATUS_SUCCESS || nfound < 1)
        return oc_fail(ctx, OC_ERR_UNSUPPORTED,
                       "cuBLASLt has no %s algorithm for a %lld x %lld tile with K panels of %lld: %s",
                       oc_mm_cuda_type_name(g->plan->in.in_type), (long long)rows, (long long)cols, (long long)depth,
                       r != CUBLAS_STATUS_SUCCESS ? oc_cublaslt_status_name(r) : "none found");
    s->algo = found[0].algo;
    s->candidates = nfound < want ? nfound : want;
    for (int i = 0; i < s->candidates; ++i) s->candidate[i] = found[i].algo;
    *out = s;
    return OC_OK;
}

/* ---------------------------------------------------------------- int8's measured choice */
/* Below this many multiply-adds a shape keeps the heuristic's first algorithm: measuring
 * would cost more than it could save, and the cache would fill with small shapes. */
#define TUNE_MIN_MACS (1LL << 36)

/* This process's int8 choices (the rate cache holds them across processes). */
#define CHOICES_KEPT 64
static pthread_mutex_t choices_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    int device_cc;
    int64_t rows, cols, depth, workspace; /* what the heuristic's candidates depend on */
    int place;
} choices[CHOICES_KEPT];
static int nchoices;

typedef struct tune_run {
    oc_mm_gemm *g;
    oc_mm_gemm_shape *s;
    const void *a, *b;
    void *acc;
    cudaStream_t stream;
} tune_run;

static cublasStatus_t run_algo(tune_run *t, const cublasLtMatmulAlgo_t *algo)
{
    const int32_t one = 1, zero = 0;
    return t->g->lt->matmul(t->g->handle, t->g->desc, &one, t->b, t->s->la, t->a, t->s->lb, &zero, t->acc, t->s->lc,
                            t->acc, t->s->lc, algo, t->g->workspace, t->g->workspace_bytes, t->stream);
}

/* The place + 1 of the fastest candidate (the best of two timed runs after a warm one), or 0
 * when none ran. The accumulator's contents are left undefined. */
static double measure_candidates(void *arg)
{
    tune_run *t = arg;
    cudaEvent_t ev[2];
    if (cudaEventCreate(&ev[0]) != cudaSuccess || cudaEventCreate(&ev[1]) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    float best = 0;
    int place = 0;
    for (int i = 0; i < t->s->candidates; ++i) {
        if (run_algo(t, &t->s->candidate[i]) != CUBLAS_STATUS_SUCCESS) continue;
        float ms = 0;
        for (int rep = 0; rep < 2; ++rep) {
            float one = 0;
            if (cudaEventRecord(ev[0], t->stream) != cudaSuccess ||
                run_algo(t, &t->s->candidate[i]) != CUBLAS_STATUS_SUCCESS ||
                cudaEventRecord(ev[1], t->stream) != cudaSuccess || cudaEventSynchronize(ev[1]) != cudaSuccess ||
                cudaEventElapsedTime(&one, ev[0], ev[1]) != cudaSuccess) {
                ms = 0;
                break;
            }
            if (rep == 0 || one < ms) ms = one;
        }
        if (ms > 0 && (place == 0 || ms < best)) best = ms, place = i + 1;
    }
    (void)cudaGetLastError();
    cudaEventDestroy(ev[0]);
    cudaEventDestroy(ev[1]);
    return place;
}

/* An int8 shape's algorithm: the fastest candidate as this process or the rate cache knows
 * it, else measured now (t: the shape's first product, not accumulating). */
static void choose_int8(oc_mm_gemm_shape *s, tune_run *t)
{
    s->chosen = 1;
    if (s->candidates < 2 || s->rows * s->cols * s->depth < TUNE_MIN_MACS) return;
    int cc = 0, device = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&cc, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    const int64_t ws = (int64_t)t->g->workspace_bytes;
    int place = 0;
    pthread_mutex_lock(&choices_lock);
    for (int i = 0; i < nchoices; ++i)
        if (choices[i].device_cc == cc && choices[i].rows == s->rows && choices[i].cols == s->cols &&
            choices[i].depth == s->depth && choices[i].workspace == ws)
            place = choices[i].place;
    pthread_mutex_unlock(&choices_lock);
    if (!place) {
        char name[64];
        snprintf(name, sizeof name, "%s%lldx%lldx%lld.w%lld", OC_COST_GPU_INT8_ALGO_FIGURE, (long long)s->rows,
                 (long long)s->cols, (long long)s->depth, (long long)(ws >> 16));
        place = (int)oc_cost_figure(1, name, "int8 algorithm", measure_candidates, t);
        pthread_mutex_lock(&choices_lock);
        if (place > 0 && nchoices < CHOICES_KEPT) {
            choices[nchoices].device_cc = cc, choices[nchoices].rows = s->rows, choices[nchoices].cols = s->cols;
            choices[nchoices].depth = s->depth, choices[nchoices].workspace = ws, choices[nchoices++].place = place;
        }
        pthread_mutex_unlock(&choices_lock);
    }
    if (place >= 1 && place <= s->candidates) s->algo = s->candidate[place - 1];
}

oc_status oc_mm_gemm_run(oc_context *ctx, oc_mm_gemm *g, int64_t rows, int64_t cols, int64_t depth, const void *a,
                         const void *b, void *acc, int accumulate, cudaStream_t stream)
{
    oc_mm_gemm_shape *s = NULL;
    OC_CHECK(ctx, shape_of(ctx, g, rows, cols, depth, &s));
    if (!s->chosen && !accumulate && g->plan->in.in_type == OC_MM_INT8) {
        tune_run t = {g, s, a, b, acc, stream};
        choose_int8(s, &t);
    }
    const double alpha64 = 1.0, beta64 = accumulate;
    const float alpha32 = 1.0f, beta32 = (float)accumulate;
    const int32_t alphai = 1, betai = accumulate;
    const void *alpha = &alpha32, *beta = &beta32;
    if (g->plan->in.in_type == OC_MM_FLOAT64) alpha = &alpha64, beta = &beta64;
    else if (g->plan->in.in_type == OC_MM_INT8) alpha = &alphai, beta = &betai;
    LT_CHECK(g->lt->matmul(g->handle, g->desc, alpha, b, s->la, a, s->lb, beta, acc, s->lc, acc, s->lc, &s->algo,
                           g->workspace, g->workspace_bytes, stream));
    return OC_OK;
}

void oc_mm_gemm_close(oc_mm_gemm *g)
{
    if (!g->lt) return;
    for (int i = 0; i < g->nshapes; ++i) {
        if (g->shape[i].la) g->lt->layout_destroy(g->shape[i].la);
        if (g->shape[i].lb) g->lt->layout_destroy(g->shape[i].lb);
        if (g->shape[i].lc) g->lt->layout_destroy(g->shape[i].lc);
    }
    if (g->pref) g->lt->pref_destroy(g->pref);
    if (g->desc) g->lt->desc_destroy(g->desc);
    if (g->handle) g->lt->destroy(g->handle);
    memset(g, 0, sizeof *g);
}
