/*
 * test_select.c - top-k and threshold outputs against brute force, exactly.
 *
 * Random 0/1 matrices with few columns and low density make many equal scores, so the tie
 * rules (lower column first; for A·Aᵀ the row itself excluded, each pair once with i < j)
 * decide much of every answer. Every metric and dtype, A·Aᵀ and A·Bᵀ, k = 1, a middle k and
 * k > p, thresholds at 0, in the middle and above the maximum, run under several thread
 * counts and forced tile edges (with the pair buffer forced small so that pairs spill to
 * the temporary file), on the CPU backend. The reference sorts every row's candidates with a
 * comparator written from the documented rules, not from select_key.h. Also: the CRC-32
 * combination the .npz writer relies on.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "outcore.h"
#include "core/metric.h"
#include "io/crc32.h"

typedef struct sel_case {
    const char *name;
    int64_t n, p; /* p == 0: A·Aᵀ */
    int64_t m;
    double density;
} sel_case;

static const sel_case cases[] = {
    {"one row", 1, 0, 9, 0.3},
    {"tiny", 7, 0, 11, 0.2},
    {"ties", 53, 0, 13, 0.15},
    {"A·Bᵀ ties", 41, 29, 10, 0.2},
    {"several tiles", 131, 0, 40, 0.1},
    {"several tiles A·Bᵀ", 97, 143, 70, 0.12},
    /* Dense rows of equal length: many pairs share a jaccard score through different counts
     * and popcounts, which the pre-test on counts (select_topk.c) must all let through. */
    {"dense jaccard ties", 150, 0, 96, 0.5},
    {"dense jaccard ties A·Bᵀ", 90, 120, 64, 0.5},
};

/* The exact score as a double (float32 scores are the float the library must produce). */
static double score(oc_metric metric, int64_t c, int64_t pa, int64_t pb)
{
    switch (metric) {
    case OC_METRIC_JACCARD: return oc_metric_jaccard(c, pa, pb);
    case OC_METRIC_COSINE: return oc_metric_cosine(c, pa, pb);
    case OC_METRIC_HAMMING: return (double)oc_metric_hamming(c, pa, pb);
    default: return (double)c;
    }
}

static double stored(oc_dtype dtype, const void *v, int64_t i)
{
    switch (dtype) {
    case OC_DTYPE_FLOAT32: return ((const float *)v)[i];
    case OC_DTYPE_UINT16: return ((const uint16_t *)v)[i];
    default: return ((const int32_t *)v)[i];
    }
}

typedef struct ref_data {
    int64_t n, p, m;
    int symmetric;
    double *s; /* n x p scores */
    oc_metric metric;
} ref_data;

static const ref_data *sort_ref;
static int64_t sort_row;

/* Best first: score descending (hamming ascending), then the lower column. */
static int better_first(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    double sa = sort_ref->s[sort_row * sort_ref->p + a], sb = sort_ref->s[sort_row * sort_ref->p + b];
    if (sa != sb) return (sort_ref->metric == OC_METRIC_HAMMING) == (sa < sb) ? -1 : 1;
    return a < b ? -1 : 1;
}

static int passes(const ref_data *r, double v, double t)
{
    if (r->metric == OC_METRIC_HAMMING) return v <= t;
    if (r->metric == OC_METRIC_JACCARD || r->metric == OC_METRIC_COSINE) return (float)v >= (float)t;
    return v >= t;
}

typedef struct collected {
    int64_t count, cap;
    int64_t *rows, *cols;
    double *values;
    oc_dtype dtype;
    int calls;
} collected;

static int collect(void *user, const int64_t *rows, const int64_t *cols, const void *scores, int64_t count)
{
    collected *c = user;
    c->calls++;
    if (c->count + count > c->cap) {
        c->cap = (c->count + count) * 2;
        c->rows = realloc(c->rows, (size_t)c->cap * sizeof *c->rows);
        c->cols = realloc(c->cols, (size_t)c->cap * sizeof *c->cols);
        c->values = realloc(c->values, (size_t)c->cap * sizeof *c->values);
    }
    for (int64_t i = 0; i < count; ++i) {
        c->rows[c->count + i] = rows[i];
        c->cols[c->count + i] = cols[i];
        c->values[c->count + i] = stored(c->dtype, scores, i);
    }
    c->count += count;
    return 0;
}

static void check_topk(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const ref_data *r, oc_dtype dtype,
                       int64_t k, int threads, int64_t tile, const char *name)
{
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU, o.metric = r->metric, o.dtype = dtype, o.threads = threads, o.tile = tile, o.topk = k;
    int64_t *idx = malloc((size_t)(r->n * k) * sizeof *idx);
    void *sc = malloc((size_t)(r->n * k) * 4);
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_TOPK, out.indices = idx, out.scores = sc;
    oc_status st = oc_gram(ctx, a, b, &o, &out, NULL);
    CHECK_MSG(st == OC_OK, "%s top-%lld: %s", name, (long long)k, oc_context_last_error(ctx));
    int64_t *cand = malloc((size_t)r->p * sizeof *cand);
    int bad = 0;
    for (int64_t i = 0; i < r->n && st == OC_OK && !bad; ++i) {
        int64_t nc = 0;
        for (int64_t j = 0; j < r->p; ++j)
            if (!(r->symmetric && j == i)) cand[nc++] = j;
        sort_ref = r, sort_row = i;
        qsort(cand, (size_t)nc, sizeof *cand, better_first);
        for (int64_t t = 0; t < k && !bad; ++t) {
            int64_t want = t < nc ? cand[t] : -1;
            double want_score = t < nc ? r->s[i * r->p + want] : 0.0;
            if (idx[i * k + t] != want || stored(dtype, sc, i * k + t) != want_score) {
                CHECK_MSG(0, "%s top-%lld threads %d tile %lld: row %lld slot %lld is (%lld, %g), expected (%lld, %g)", name,
                          (long long)k, threads, (long long)tile, (long long)i, (long long)t, (long long)idx[i * k + t],
                          stored(dtype, sc, i * k + t), (long long)want, want_score);
                bad = 1;
            }
        }
    }
    CHECK(!bad);
    free(cand);
    free(idx);
    free(sc);
}

static void check_pairs(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const ref_data *r, oc_dtype dtype,
                        double t, int threads, int64_t tile, const char *name)
{
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU, o.metric = r->metric, o.dtype = dtype, o.threads = threads, o.tile = tile;
    o.use_threshold = 1, o.threshold = t;
    collected c = {.dtype = dtype};
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_PAIRS, out.pairs = collect, out.pairs_user = &c;
    oc_gram_stats stats = {.struct_size = sizeof stats};
    oc_status st = oc_gram(ctx, a, b, &o, &out, &stats);
    CHECK_MSG(st == OC_OK, "%s threshold %g: %s", name, t, oc_context_last_error(ctx));
    int64_t at = 0;
    int bad = 0;
    for (int64_t i = 0; i < r->n && !bad; ++i)
        for (int64_t j = r->symmetric ? i + 1 : 0; j < r->p && !bad; ++j) {
            double v = r->s[i * r->p + j];
            if (!passes(r, v, t)) continue;
            if (at >= c.count || c.rows[at] != i || c.cols[at] != j || c.values[at] != v) {
                CHECK_MSG(0, "%s threshold %g threads %d tile %lld: pair %lld is (%lld, %lld, %g), expected (%lld, %lld, %g)",
                          name, t, threads, (long long)tile, (long long)at, at < c.count ? (long long)c.rows[at] : -1,
                          at < c.count ? (long long)c.cols[at] : -1, at < c.count ? c.values[at] : 0.0, (long long)i,
                          (long long)j, v);
                bad = 1;
            }
            at++;
        }
    if (!bad) CHECK_EQ_I64(c.count, at);
    CHECK_EQ_I64(stats.pairs, c.count);
    free(c.rows);
    free(c.cols);
    free(c.values);
}

static void run_case(oc_context *ctx, const sel_case *sc, uint64_t *seed)
{
    int symmetric = sc->p == 0;
    int64_t n = sc->n, p = symmetric ? n : sc->p, m = sc->m;
    unsigned char *da = malloc((size_t)(n * m)), *db = malloc((size_t)(p * m));
    for (int64_t i = 0; i < n * m; ++i) da[i] = (oc_test_rand(seed) % 1000) < sc->density * 1000;
    if (symmetric) memcpy(db, da, (size_t)(n * m));
    else
        for (int64_t i = 0; i < p * m; ++i) db[i] = (oc_test_rand(seed) % 1000) < sc->density * 1000;
    oc_matrix *a = NULL, *b = NULL;
    CHECK(oc_matrix_from_dense(ctx, da, n, m, m, &a) == OC_OK);
    if (!symmetric) CHECK(oc_matrix_from_dense(ctx, db, p, m, m, &b) == OC_OK);

    int64_t *pa = calloc((size_t)n, sizeof *pa), *pb = calloc((size_t)p, sizeof *pb);
    int64_t *cnt = calloc((size_t)(n * p), sizeof *cnt);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t x = 0; x < m; ++x) pa[i] += da[i * m + x];
    for (int64_t j = 0; j < p; ++j)
        for (int64_t x = 0; x < m; ++x) pb[j] += db[j * m + x];
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < p; ++j)
            for (int64_t x = 0; x < m; ++x) cnt[i * p + j] += da[i * m + x] & db[j * m + x];

    const int thread_counts[] = {1, 2, 3};
    const int64_t tiles[] = {0, 8, 24};
    for (size_t o = 0; o < OC_TEST_OUTPUT_COUNT; ++o) {
        ref_data r = {.n = n, .p = p, .m = m, .symmetric = symmetric, .metric = oc_test_outputs[o].metric};
        r.s = malloc((size_t)(n * p) * sizeof *r.s);
        double max = 0;
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < p; ++j) {
                r.s[i * p + j] = score(r.metric, cnt[i * p + j], pa[i], pb[j]);
                if (r.s[i * p + j] > max) max = r.s[i * p + j];
            }
        char name[160];
        snprintf(name, sizeof name, "%s %s/%s", sc->name, oc_metric_name(r.metric), oc_dtype_name(oc_test_outputs[o].dtype));
        const int64_t ks[] = {1, 4, p + 3};
        int is_float = r.metric == OC_METRIC_JACCARD || r.metric == OC_METRIC_COSINE;
        /* 0, a middle value (integers for counts and hamming), and the top of the metric's
         * range or just above the largest score (thresholds outside the range are refused). */
        const double ts[] = {0.0, is_float ? 0.25 : (double)(m / 6), is_float ? 1.0 : max + 1 > m ? (double)m : max + 1};
        for (size_t ti = 0; ti < 3; ++ti)
            for (size_t tt = 0; tt < 3; ++tt) {
                /* Every combination for the first output; a diagonal of the grid for the rest
                 * keeps the run short while each setting still meets every metric. */
                if (o > 0 && ti != tt) continue;
                for (size_t kk = 0; kk < 3; ++kk)
                    check_topk(ctx, a, b, &r, oc_test_outputs[o].dtype, ks[kk], thread_counts[ti], tiles[tt], name);
                for (size_t th = 0; th < 3; ++th)
                    check_pairs(ctx, a, b, &r, oc_test_outputs[o].dtype, ts[th], thread_counts[ti], tiles[tt], name);
            }
        free(r.s);
    }
    oc_matrix_free(a);
    oc_matrix_free(b);
    free(da);
    free(db);
    free(pa);
    free(pb);
    free(cnt);
}

/* Bad selection arguments fail before any work, with a message. */
static void check_bad_arguments(oc_context *ctx)
{
    unsigned char d[4] = {1, 0, 1, 1};
    oc_matrix *a = NULL;
    CHECK(oc_matrix_from_dense(ctx, d, 2, 2, 2, &a) == OC_OK);
    int64_t idx[4];
    float sc[4];
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_TOPK, out.indices = idx, out.scores = sc;
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    CHECK(oc_gram(ctx, a, NULL, &o, &out, NULL) == OC_ERR_INVALID_ARGUMENT); /* TOPK without topk */
    o.topk = 2, o.use_threshold = 1;
    CHECK(oc_gram(ctx, a, NULL, &o, &out, NULL) == OC_ERR_INVALID_ARGUMENT);
    o.topk = 0, o.threshold = NAN;
    out.kind = OC_OUTPUT_PAIRS, out.pairs = collect;
    CHECK(oc_gram(ctx, a, NULL, &o, &out, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "NaN") != NULL);
    o.threshold = 1;
    out.kind = OC_OUTPUT_MEMORY, out.data = sc;
    CHECK(oc_gram(ctx, a, NULL, &o, &out, NULL) == OC_ERR_INVALID_ARGUMENT);
    out.kind = OC_OUTPUT_FILE, out.path = "pairs.npy";
    CHECK(oc_gram(ctx, a, NULL, &o, &out, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), ".mtx") != NULL);
    oc_matrix_free(a);
}

static void check_crc(void)
{
    unsigned char buf[3000];
    uint64_t seed = 99;
    for (size_t i = 0; i < sizeof buf; ++i) buf[i] = (unsigned char)oc_test_rand(&seed);
    CHECK(oc_crc32_update(0, "123456789", 9) == 0xCBF43926u); /* the standard check value */
    const size_t splits[] = {0, 1, 7, 1500, 2999, 3000};
    uint32_t whole = oc_crc32_update(0, buf, sizeof buf);
    for (size_t s = 0; s < sizeof splits / sizeof *splits; ++s) {
        size_t k = splits[s];
        uint32_t a = oc_crc32_update(0, buf, k), b = oc_crc32_update(0, buf + k, sizeof buf - k);
        CHECK_MSG(oc_crc32_combine(a, b, sizeof buf - k) == whole, "crc32 combine at split %zu", k);
    }
}

int main(void)
{
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    check_crc();
    check_bad_arguments(ctx);
    uint64_t seed = 0x5e1ec7;
    for (int spill = 0; spill < 2; ++spill) {
        /* The second round forces every chunk of pairs through the spill file. */
        if (spill) setenv("OUTCORE_PAIRS_BUFFER", "1", 1);
        for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c) run_case(ctx, &cases[c], &seed);
    }
    unsetenv("OUTCORE_PAIRS_BUFFER");
    oc_context_free(ctx);
    return oc_test_finish();
}
