/*
 * matmul_gemm.c - cuBLASLt calls of the CUDA matmul backend (matmul_gemm.h: the layouts and
 * the algorithm cache).
 */
#include "matmul/cuda/matmul_gemm.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/threads.h"
#include "core/trace.h"
#include "cost/cost.h"
#include "core/process/fork_locks.h"
#include "matmul/matmul_dtype.h"

#define LT_CHECK(ctx, call)                                                                                         \
    do {                                                                                                            \
        cublasStatus_t oc_lt_s_ = (call);                                                                           \
        if (oc_lt_s_ != CUBLAS_STATUS_SUCCESS)                                                                      \
            return oc_fail((ctx), oc_lt_s_ == CUBLAS_STATUS_ALLOC_FAILED ? OC_ERR_DEVICE_NO_MEMORY : OC_ERR_DEVICE, \
                           "cuBLASLt: %s: %s", #call, oc_cublaslt_status_name(oc_lt_s_));                           \
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
    g->workspace_bytes = g->workspace_held = (size_t)plan->workspace;
    g->ab_type = data_type(plan->in.in_type);
    g->c_type = data_type(plan->acc_type);
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    cudaDataType_t scale = CUDA_R_32F;
    if (plan->in.in_type == OC_MM_FLOAT64) compute = CUBLAS_COMPUTE_64F, scale = CUDA_R_64F;
    else if (plan->in.in_type == OC_MM_FLOAT32 && plan->in.tf32) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    else if (plan->in.in_type == OC_MM_INT8) compute = CUBLAS_COMPUTE_32I, scale = CUDA_R_32I;
    LT_CHECK(ctx, lt->create(&g->handle));
    LT_CHECK(ctx, lt->desc_create(&g->desc, compute, scale));
    /* The first operand is the B panel, the second the A panel (matmul_gemm.h); a resident
     * plan's transposed operands are cuBLASLt's transposes (int8: always "TN", packed so). */
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    if (plan->in.in_type != OC_MM_INT8) {
        ta = plan->in.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
        tb = plan->in.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    }
    LT_CHECK(ctx, lt->desc_set(g->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_CHECK(ctx, lt->desc_set(g->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    LT_CHECK(ctx, lt->pref_create(&g->pref));
    const uint64_t ws = g->workspace_bytes;
    LT_CHECK(ctx, lt->pref_set(g->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    return OC_OK;
}

/* ---------------------------------------------------------------- the heuristic's answers */
/* This process's answers of the heuristic, per device and shape: asking costs about a tenth
 * of a millisecond, which a product of a few milliseconds on resident operands feels. An
 * algorithm is plain data (cuBLASLt's documentation: it may be kept and used again with the
 * same library), and the answer depends only on what the key holds. Replaced round robin
 * when full. */
#define KNOWN_KEPT 64
typedef struct known_shape {
    int used, device;
    oc_mm_type in_type, acc_type;
    int tf32, ta, tb;
    int64_t rows, cols, depth, ldc, workspace;
    int align[3];
    oc_mm_gemm_answer answer;
    int place; /* int8: the measured fastest candidate's place + 1; 0 not measured */
} known_shape;
static pthread_mutex_t known_lock = PTHREAD_MUTEX_INITIALIZER;
OC_FORK_LOCK(known_lock, OC_FORK_RANK_CUDA, NULL)
static known_shape known[KNOWN_KEPT];
static int known_next;

static int same_key(const known_shape *a, const known_shape *b)
{
    return a->used && a->device == b->device && a->in_type == b->in_type && a->acc_type == b->acc_type &&
           a->tf32 == b->tf32 && a->ta == b->ta && a->tb == b->tb && a->rows == b->rows && a->cols == b->cols &&
           a->depth == b->depth && a->ldc == b->ldc && a->workspace == b->workspace && a->align[0] == b->align[0] &&
           a->align[1] == b->align[1] && a->align[2] == b->align[2];
}

/* The accumulator's row stride for a product `cols` wide: the caller's (c_ld), else the
 * plan's. */
static int64_t ldc_of(const oc_mm_gemm *g, int64_t cols) { return g->c_ld ? g->c_ld : oc_mm_cuda_ldc(g->plan, cols); }

/* The key of shape s of g (answer and place left empty). */
static known_shape key_of(const oc_mm_gemm *g, const oc_mm_gemm_shape *s)
{
    known_shape k = {.used = 1,
                     .device = -1,
                     .in_type = g->plan->in.in_type,
                     .acc_type = g->plan->acc_type,
                     .tf32 = g->plan->in.tf32,
                     .ta = g->plan->in.ta,
                     .tb = g->plan->in.tb,
                     .rows = s->rows,
                     .cols = s->cols,
                     .depth = s->depth,
                     .ldc = ldc_of(g, s->cols),
                     .workspace = (int64_t)g->workspace_bytes};
    if (cudaGetDevice(&k.device) != cudaSuccess) (void)cudaGetLastError();
    memcpy(k.align, s->align, sizeof k.align);
    return k;
}

/* Whether the key is known: *out filled (answer and place) when it is. */
static int known_find(const known_shape *key, known_shape *out)
{
    int found = 0;
    pthread_mutex_lock(&known_lock);
    for (int i = 0; i < KNOWN_KEPT && !found; ++i)
        if (same_key(&known[i], key)) *out = known[i], found = 1;
    pthread_mutex_unlock(&known_lock);
    return found;
}

/* Keeps entry e (a new key, or a known key's measured place). */
static void known_keep(const known_shape *e)
{
    pthread_mutex_lock(&known_lock);
    int at = -1;
    for (int i = 0; i < KNOWN_KEPT && at < 0; ++i)
        if (same_key(&known[i], e)) at = i;
    if (at < 0) at = known_next, known_next = (known_next + 1) % KNOWN_KEPT;
    known[at] = *e;
    pthread_mutex_unlock(&known_lock);
}

/* The alignment of p in bytes, at most 256 (what cuBLASLt assumes unless told less). */
static int alignment_of(const void *p)
{
    int a = 1;
    while (a < 256 && ((uintptr_t)p & (uintptr_t)(2 * a - 1)) == 0) a *= 2;
    return a;
}

/* The layouts and algorithm of a shape: made and chosen on its first tile, then reused. The
 * operands' alignment is part of the shape: a caller's device memory may start anywhere,
 * and the heuristic, told how aligned they are, offers only algorithms that read them. */
static oc_status shape_of(oc_context *ctx, oc_mm_gemm *g, int64_t rows, int64_t cols, int64_t depth, const void *a,
                          const void *b, const void *acc, oc_mm_gemm_shape **out)
{
    const int align[3] = {alignment_of(b), alignment_of(a), alignment_of(acc)}; /* cuBLASLt's A, B, C */
    for (int i = 0; i < g->nshapes; ++i) {
        oc_mm_gemm_shape *s = &g->shape[i];
        if (s->rows == rows && s->cols == cols && s->depth == depth && !memcmp(s->align, align, sizeof align)) {
            *out = s;
            return OC_OK;
        }
    }
    if (g->nshapes == OC_MM_GEMM_SHAPES)
        return oc_fail(ctx, OC_ERR_INTERNAL, "matmul: more than %d tile shapes", OC_MM_GEMM_SHAPES);
    oc_mm_gemm_shape *s = &g->shape[g->nshapes];
    memset(s, 0, sizeof *s);
    s->rows = rows, s->cols = cols, s->depth = depth;
    memcpy(s->align, align, sizeof align);
    g->nshapes++; /* counted now, so that close destroys whatever layouts follow */
    const oc_cublaslt_api *lt = g->lt;
    /* The tile's columns (int8: padded to a multiple of 4) and the accumulator's row stride. */
    const uint64_t cols_pad = (uint64_t)oc_mm_cuda_ldc(g->plan, cols);
    const int64_t ldc = ldc_of(g, cols);
    if (g->plan->in.in_type == OC_MM_INT8) {
        /* Cᵀ (cols_pad x rows) = Btᵀ · A: Bt is cols_pad x kpad stored as kpad x cols_pad, A
         * rows x kpad as kpad x rows. */
        const uint64_t kpad = (uint64_t)((depth + 15) / 16 * 16);
        LT_CHECK(ctx, lt->layout_create(&s->la, g->ab_type, kpad, cols_pad, (int64_t)kpad));
        LT_CHECK(ctx, lt->layout_create(&s->lb, g->ab_type, kpad, (uint64_t)rows, (int64_t)kpad));
    } else {
        /* Cᵀ (cols x rows) = Bᵀ (cols x depth, ld cols) · Aᵀ (depth x rows, ld depth); a
         * resident op(B) = Bᵀ is B stored cols x depth (depth x cols column-major, transposed
         * by the operation), op(A) = Aᵀ is A stored depth x rows. */
        if (g->plan->in.tb)
            LT_CHECK(ctx, lt->layout_create(&s->la, g->ab_type, (uint64_t)depth, (uint64_t)cols, depth));
        else LT_CHECK(ctx, lt->layout_create(&s->la, g->ab_type, (uint64_t)cols, (uint64_t)depth, cols));
        if (g->plan->in.ta) LT_CHECK(ctx, lt->layout_create(&s->lb, g->ab_type, (uint64_t)rows, (uint64_t)depth, rows));
        else LT_CHECK(ctx, lt->layout_create(&s->lb, g->ab_type, (uint64_t)depth, (uint64_t)rows, depth));
    }
    LT_CHECK(ctx, lt->layout_create(&s->lc, g->c_type, cols_pad, (uint64_t)rows, ldc));
    known_shape k = key_of(g, s);
    if (known_find(&k, &k)) {
        s->answer = k.answer;
        const int at = k.place >= 1 && k.place <= k.answer.candidates ? k.place - 1 : 0;
        s->algo = k.answer.candidate[at], s->algo_workspace = k.answer.workspace[at];
        s->chosen = k.place > 0;
        *out = s;
        return OC_OK;
    }
    static const cublasLtMatmulPreferenceAttributes_t align_attr[3] = {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                                       CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                                       CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES};
    for (int i = 0; i < 3; ++i) {
        const uint32_t v = (uint32_t)align[i];
        LT_CHECK(ctx, lt->pref_set(g->pref, align_attr[i], &v, sizeof v));
    }
    const uint32_t vd = (uint32_t)align[2];
    LT_CHECK(ctx, lt->pref_set(g->pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &vd, sizeof vd));
    cublasLtMatmulHeuristicResult_t found[OC_MM_GEMM_CANDIDATES];
    const int want = g->plan->in.in_type == OC_MM_INT8 ? OC_MM_GEMM_CANDIDATES : 1;
    int nfound = 0;
    double t = oc_now();
    cublasStatus_t r = lt->heuristic(g->handle, g->desc, s->la, s->lb, s->lc, s->lc, g->pref, want, found, &nfound);
    oc_trace_phase(&t, "matmul", "cuBLASLt algorithm");
    if (r != CUBLAS_STATUS_SUCCESS || nfound < 1)
        return oc_fail(ctx, OC_ERR_UNSUPPORTED,
                       "cuBLASLt has no %s algorithm for a %lld x %lld tile with K panels of %lld: %s",
                       oc_mm_type_name(g->plan->in.in_type), (long long)rows, (long long)cols, (long long)depth,
                       r != CUBLAS_STATUS_SUCCESS ? oc_cublaslt_status_name(r) : "none found");
    s->algo = found[0].algo, s->algo_workspace = found[0].workspaceSize;
    s->answer.candidates = nfound < want ? nfound : want;
    for (int i = 0; i < s->answer.candidates; ++i)
        s->answer.candidate[i] = found[i].algo, s->answer.workspace[i] = found[i].workspaceSize;
    k.answer = s->answer;
    k.place = 0;
    known_keep(&k);
    *out = s;
    return OC_OK;
}

/* ---------------------------------------------------------------- int8's measured choice */

typedef struct tune_run {
    oc_mm_gemm *g;
    oc_mm_gemm_shape *s;
    const void *a, *b;
    void *acc;
    cudaStream_t stream;
} tune_run;

/* acc = alpha a·b + beta acc for shape s with algo: the one cuBLASLt call of this file. */
static cublasStatus_t lt_matmul(const oc_mm_gemm *g, const oc_mm_gemm_shape *s, const cublasLtMatmulAlgo_t *algo,
                                const void *alpha, const void *a, const void *b, const void *beta, void *acc,
                                cudaStream_t stream)
{
    return g->lt->matmul(g->handle, g->desc, alpha, b, s->la, a, s->lb, beta, acc, s->lc, acc, s->lc, algo,
                         g->workspace, g->workspace_held, stream);
}

static cublasStatus_t run_algo(tune_run *t, const cublasLtMatmulAlgo_t *algo)
{
    const int32_t one = 1, zero = 0;
    return lt_matmul(t->g, t->s, algo, &one, t->a, t->b, &zero, t->acc, t->stream);
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
    const oc_mm_gemm_answer *ans = &t->s->answer;
    for (int i = 0; i < ans->candidates; ++i) {
        if (run_algo(t, &ans->candidate[i]) != CUBLAS_STATUS_SUCCESS) continue;
        float ms = 0;
        for (int rep = 0; rep < 2; ++rep) {
            float one = 0;
            if (cudaEventRecord(ev[0], t->stream) != cudaSuccess ||
                run_algo(t, &ans->candidate[i]) != CUBLAS_STATUS_SUCCESS ||
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

/* Whether an int8 shape is large enough, with a choice to make, that its candidates are
 * measured. */
static int worth_measuring(const oc_mm_gemm_shape *s)
{
    return s->answer.candidates >= 2 && s->rows * s->cols * s->depth >= OC_MM_TUNE_MIN_MACS;
}

/* An int8 shape's algorithm: the fastest candidate as the rate cache knows it, else measured
 * now (t: the shape's first product, not accumulating), and kept in this process's answers. */
static void choose_int8(oc_mm_gemm_shape *s, tune_run *t)
{
    s->chosen = 1;
    if (!worth_measuring(s)) return;
    const int64_t ws = (int64_t)t->g->workspace_bytes;
    const int least = s->align[0] < s->align[1] ? (s->align[0] < s->align[2] ? s->align[0] : s->align[2])
                                                : (s->align[1] < s->align[2] ? s->align[1] : s->align[2]);
    char name[80], aligned[16] = "";
    if (least < 256) snprintf(aligned, sizeof aligned, ".a%d", least); /* other candidates */
    snprintf(name, sizeof name, "%s%lldx%lldx%lld.w%lld%s", OC_COST_GPU_INT8_ALGO_FIGURE, (long long)s->rows,
             (long long)s->cols, (long long)s->depth, (long long)(ws >> 16), aligned);
    const int place = (int)oc_cost_figure(1, name, "int8 algorithm", measure_candidates, t);
    if (place < 1 || place > s->answer.candidates) return;
    s->algo = s->answer.candidate[place - 1], s->algo_workspace = s->answer.workspace[place - 1];
    known_shape k = key_of(t->g, s);
    if (known_find(&k, &k)) {
        k.place = place;
        known_keep(&k);
    }
}

/* Whether shape s of g measures its int8 candidates on its first product. */
static int to_measure(const oc_mm_gemm *g, const oc_mm_gemm_shape *s)
{
    return g->plan->in.in_type == OC_MM_INT8 && !s->chosen && worth_measuring(s);
}

oc_status oc_mm_gemm_workspace_need(oc_context *ctx, oc_mm_gemm *g, int64_t rows, int64_t cols, int64_t depth,
                                    const void *a, const void *b, const void *acc, size_t *need)
{
    oc_mm_gemm_shape *s = NULL;
    OC_CHECK(ctx, shape_of(ctx, g, rows, cols, depth, a, b, acc, &s));
    *need = to_measure(g, s) ? g->workspace_bytes : s->algo_workspace;
    return OC_OK;
}

void oc_mm_gemm_use_workspace(oc_mm_gemm *g, void *p, size_t bytes)
{
    g->workspace = p;
    g->workspace_held = bytes;
}

oc_status oc_mm_gemm_run(oc_context *ctx, oc_mm_gemm *g, int64_t rows, int64_t cols, int64_t depth, const void *a,
                         const void *b, void *acc, int accumulate, cudaStream_t stream)
{
    oc_mm_gemm_shape *s = NULL;
    OC_CHECK(ctx, shape_of(ctx, g, rows, cols, depth, a, b, acc, &s));
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
    if (s->algo_workspace > g->workspace_held)
        return oc_fail(ctx, OC_ERR_INTERNAL, "matmul: an algorithm asks %zu bytes of workspace, %zu given",
                       s->algo_workspace, g->workspace_held);
    LT_CHECK(ctx, lt_matmul(g, s, &s->algo, alpha, a, b, beta, acc, stream));
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
