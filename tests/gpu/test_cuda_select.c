/*
 * test_cuda_select.c - top-k and threshold on the GPU, exactly against the CPU backend.
 *
 * The CPU results are checked against brute force by tests/test_select.c; here every GPU
 * result must equal them bit for bit: every metric and dtype, A·Aᵀ and A·Bᵀ, k = 1, 10, the
 * device limit 128, 200 (selected on the host from copied tiles), k > p; thresholds at 0, in
 * the middle and at the top of the metric's range; forced tiles of 256 (several tiles per row, diagonal
 * and off-diagonal) and the planner's choice; a small budget (streamed panels); both device
 * kernels (b1 and popc). Matrices have few columns and low density: many ties. Exits 77
 * without a usable GPU. OUTCORE_TEST_QUICK=1 (sanitizers) runs a reduced grid, =2 less.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "outcore.h"

typedef struct pairs_buf {
    int64_t count, cap;
    int64_t *rows, *cols;
    uint32_t *bits;
    size_t elem;
} pairs_buf;

static int collect(void *user, const int64_t *rows, const int64_t *cols, const void *scores, int64_t count)
{
    pairs_buf *p = user;
    if (p->count + count > p->cap) {
        p->cap = (p->count + count) * 2 + 16;
        p->rows = realloc(p->rows, (size_t)p->cap * sizeof *p->rows);
        p->cols = realloc(p->cols, (size_t)p->cap * sizeof *p->cols);
        p->bits = realloc(p->bits, (size_t)p->cap * sizeof *p->bits);
    }
    for (int64_t i = 0; i < count; ++i) {
        p->rows[p->count + i] = rows[i];
        p->cols[p->count + i] = cols[i];
        uint32_t v = 0;
        memcpy(&v, (const char *)scores + i * (int64_t)p->elem, p->elem);
        p->bits[p->count + i] = v;
    }
    p->count += count;
    return 0;
}

typedef struct run_cfg {
    oc_backend backend;
    int64_t tile, gpu_mem;
} run_cfg;

static oc_status run_topk(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, oc_metric metric, oc_dtype dtype,
                          int64_t k, run_cfg cfg, int64_t *idx, void *sc, oc_gram_stats *stats)
{
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = cfg.backend, o.metric = metric, o.dtype = dtype, o.topk = k, o.tile = cfg.tile, o.gpu_mem_bytes = cfg.gpu_mem;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_TOPK, out.indices = idx, out.scores = sc;
    return oc_gram(ctx, a, b, &o, &out, stats);
}

static oc_status run_pairs(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, oc_metric metric, oc_dtype dtype,
                           double t, run_cfg cfg, pairs_buf *p)
{
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = cfg.backend, o.metric = metric, o.dtype = dtype, o.use_threshold = 1, o.threshold = t, o.tile = cfg.tile,
    o.gpu_mem_bytes = cfg.gpu_mem;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_PAIRS, out.pairs = collect, out.pairs_user = p;
    return oc_gram(ctx, a, b, &o, &out, NULL);
}

static void free_pairs(pairs_buf *p)
{
    free(p->rows);
    free(p->cols);
    free(p->bits);
}

static void compare_case(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, int64_t n, int64_t p, int quick,
                         const char *label)
{
    static const struct {
        oc_metric metric;
        oc_dtype dtype;
        double mid;
    } outs[] = {{OC_METRIC_COUNTS, OC_DTYPE_INT32, 3}, {OC_METRIC_COUNTS, OC_DTYPE_UINT16, 3},
                {OC_METRIC_JACCARD, OC_DTYPE_FLOAT32, 0.3}, {OC_METRIC_COSINE, OC_DTYPE_FLOAT32, 0.45},
                {OC_METRIC_HAMMING, OC_DTYPE_INT32, 5}, {OC_METRIC_HAMMING, OC_DTYPE_UINT16, 5}};
    const int64_t ks[] = {1, 10, 128, 200, p + 2};
    const run_cfg gpus[] = {{OC_BACKEND_CUDA, 256, 0}, {OC_BACKEND_CUDA, 0, 0}, {OC_BACKEND_CUDA, 256, 24 << 20}};
    const run_cfg cpu = {OC_BACKEND_CPU, 0, 0};
    const char *kernel = getenv("OUTCORE_CUDA_KERNEL");
    const int b1 = kernel && strcmp(kernel, "b1") == 0;
    for (size_t o = 0; o < sizeof outs / sizeof *outs; ++o) {
        if (quick && o % 2) continue;
        if (quick > 1 && outs[o].metric != OC_METRIC_JACCARD) continue;
        size_t elem = oc_dtype_size(outs[o].dtype);
        for (size_t kk = 0; kk < sizeof ks / sizeof *ks; ++kk) {
            int64_t k = ks[kk];
            if (quick > 1 && k != 10) continue;
            int64_t *ci = malloc((size_t)(n * k) * 8), *gi = malloc((size_t)(n * k) * 8);
            void *cs = malloc((size_t)(n * k) * 4), *gs = malloc((size_t)(n * k) * 4);
            CHECK(run_topk(ctx, a, b, outs[o].metric, outs[o].dtype, k, cpu, ci, cs, NULL) == OC_OK);
            for (size_t g = 0; g < sizeof gpus / sizeof *gpus; ++g) {
                if (quick && g > 0) continue;
                oc_gram_stats st = {.struct_size = sizeof st};
                oc_status s = run_topk(ctx, a, b, outs[o].metric, outs[o].dtype, k, gpus[g], gi, gs, &st);
                CHECK_MSG(s == OC_OK, "%s top-%lld: %s", label, (long long)k, oc_context_last_error(ctx));
                CHECK_MSG(s != OC_OK || st.backend == OC_BACKEND_CUDA, "%s: ran on the CPU", label);
                CHECK_MSG(memcmp(ci, gi, (size_t)(n * k) * 8) == 0 && memcmp(cs, gs, (size_t)(n * k) * elem) == 0,
                          "%s %s/%s top-%lld tile %lld budget %lld: GPU differs from CPU (%s)", label,
                          oc_metric_name(outs[o].metric), oc_dtype_name(outs[o].dtype), (long long)k,
                          (long long)gpus[g].tile, (long long)gpus[g].gpu_mem, st.select_desc);
                if (k > 128 && k < p) CHECK(strstr(st.select_desc, "host") != NULL);
                if (k <= 128) CHECK(strncmp(st.select_desc, "device", 6) == 0);
                /* With the b1 kernel every tile is fused into the kernel's epilogue. */
                long long fused = 0, tiles = 0;
                if (k <= 128 && b1)
                    CHECK_MSG(sscanf(st.select_desc, "device, %lld of %lld tiles fused", &fused, &tiles) == 2 && fused > 0 &&
                                  fused == tiles,
                              "%s top-%lld: expected every tile fused (%s)", label, (long long)k, st.select_desc);
            }
            free(ci), free(gi), free(cs), free(gs);
        }
        /* The top of the metric's range: no pair passes but identical rows (1.0) or full
         * overlaps (m columns); thresholds outside the range are refused. */
        int is_float = outs[o].metric == OC_METRIC_JACCARD || outs[o].metric == OC_METRIC_COSINE;
        const double ts[] = {0, outs[o].mid, is_float ? 1.0 : (double)oc_matrix_cols(a)};
        for (size_t ti = 0; ti < 3; ++ti) {
            if (quick > 1 && ti != 1) continue;
            pairs_buf c = {.elem = elem};
            CHECK(run_pairs(ctx, a, b, outs[o].metric, outs[o].dtype, ts[ti], cpu, &c) == OC_OK);
            for (size_t g = 0; g < sizeof gpus / sizeof *gpus; ++g) {
                if (quick && g > 0) continue;
                pairs_buf d = {.elem = elem};
                oc_status s = run_pairs(ctx, a, b, outs[o].metric, outs[o].dtype, ts[ti], gpus[g], &d);
                CHECK_MSG(s == OC_OK, "%s threshold %g: %s", label, ts[ti], oc_context_last_error(ctx));
                CHECK_MSG(c.count == d.count && (c.count == 0 || (memcmp(c.rows, d.rows, (size_t)c.count * 8) == 0 &&
                                                                  memcmp(c.cols, d.cols, (size_t)c.count * 8) == 0 &&
                                                                  memcmp(c.bits, d.bits, (size_t)c.count * 4) == 0)),
                          "%s %s/%s threshold %g tile %lld: GPU %lld pairs, CPU %lld, or they differ", label,
                          oc_metric_name(outs[o].metric), oc_dtype_name(outs[o].dtype), ts[ti], (long long)gpus[g].tile,
                          (long long)d.count, (long long)c.count);
                free_pairs(&d);
            }
            free_pairs(&c);
        }
    }
}

static oc_matrix *random_matrix(oc_context *ctx, int64_t rows, int64_t m, int permille, uint64_t *seed)
{
    unsigned char *d = malloc((size_t)(rows * m));
    for (int64_t i = 0; i < rows * m; ++i) d[i] = (int)(oc_test_rand(seed) % 1000) < permille;
    oc_matrix *a = NULL;
    if (oc_matrix_from_dense(ctx, d, rows, m, m, &a) != OC_OK) a = NULL;
    free(d);
    return a;
}

int main(void)
{
    if (oc_cuda_device_count() == 0) {
        oc_test_skip("no usable CUDA device");
        return oc_test_finish();
    }
    /* OUTCORE_TEST_QUICK=2 (racecheck, the slowest tool): jaccard, k = 10 and the middle
     * threshold of A·Aᵀ only. */
    const char *qv = getenv("OUTCORE_TEST_QUICK");
    int quick = qv ? (atoi(qv) > 1 ? 2 : 1) : 0;
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    uint64_t seed = 0xC0FFEE;
    /* b1 with the default buckets (fused tiles rarely overflow), with buckets of one and
     * three entries (most fused tiles overflow and are selected by the dense pass: both
     * paths, and tiles of either kind in one job), and popc (nothing fused). */
    const char *kernels[] = {"b1", "b1", "b1", "popc"}, *buckets[] = {NULL, "1", "3", NULL};
    for (int kern = 0; kern < (quick ? 2 : 4); ++kern) {
        setenv("OUTCORE_CUDA_KERNEL", kernels[kern], 1);
        if (buckets[kern]) setenv("OUTCORE_CUDA_SELECT_BUCKET", buckets[kern], 1);
        else unsetenv("OUTCORE_CUDA_SELECT_BUCKET");
        /* A·Aᵀ over 3 tiles of 256 (the last partial), and A·Bᵀ of unequal sizes. */
        oc_matrix *a = random_matrix(ctx, 700, 40, 120, &seed), *b = random_matrix(ctx, 530, 40, 150, &seed);
        oc_matrix *s = random_matrix(ctx, 37, 1100, 80, &seed);
        CHECK(a && b && s);
        if (a && b && s) {
            char label[64];
            const char *bk = buckets[kern] ? buckets[kern] : "default";
            snprintf(label, sizeof label, "%s (buckets %s) A·Aᵀ 700", kernels[kern], bk);
            compare_case(ctx, a, NULL, 700, 700, quick, label);
            if (quick < 2) {
                snprintf(label, sizeof label, "%s (buckets %s) A·Bᵀ 700x530", kernels[kern], bk);
                compare_case(ctx, a, b, 700, 530, quick, label);
                snprintf(label, sizeof label, "%s (buckets %s) small, long rows", kernels[kern], bk);
                compare_case(ctx, s, NULL, 37, 37, quick, label);
            }
        }
        oc_matrix_free(a);
        oc_matrix_free(b);
        oc_matrix_free(s);
    }
    unsetenv("OUTCORE_CUDA_KERNEL");
    unsetenv("OUTCORE_CUDA_SELECT_BUCKET");
    oc_context_free(ctx);
    return oc_test_finish();
}
