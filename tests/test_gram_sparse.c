/*
 * test_gram_sparse.c - the sparse algorithm against the dense one, byte for byte.
 *
 * One table of matrix cases (shapes, densities, empty rows and columns, hub columns, A·Bᵀ
 * with different sparsity of A and B) runs every output: dense results of every metric and
 * dtype, top-k (k = 1, a few, more than the columns) and threshold pairs (thresholds a count
 * of 0 passes and ones it does not), under 1 and 2 threads and several hub splits
 * (OUTCORE_SPARSE_HUBS: none, the predicted one, a few, 64 (one hub word whole: the pair
 * lists of sparse_index.h), more than 64). The dense algorithm
 * is the reference, run once per output for all of those: it is itself held to a direct
 * reference (and to the same bytes under every thread count) by test_cpu_gram.c and the case
 * table. The runner
 * takes a case and an output and compares the two algorithms, so it joins a case table
 * shared with other backends by calling run_case per entry.
 * Also: auto picks dense on dense data, and bad options fail with a message.
 *
 * argv[1] and argv[2], when given, are PART and PARTS: the cases whose place in the table is
 * PART modulo PARTS, and with part 0 the checks of auto and of bad options. ctest runs the
 * table as two tests of their own, side by side; without arguments everything runs.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gram_cases.h"
#include "harness.h"
#include "outcore.h"
#include "core/abi/struct_version.h"

typedef struct sparse_case {
    const char *name;
    int64_t n, p; /* p == 0: A·Aᵀ */
    int64_t m;
    double density_a, density_b;
    double empty_rows; /* share of rows left empty */
    int64_t hub_cols;  /* columns set in hub_share of the rows */
    double hub_share;
    int64_t empty_cols; /* the last columns hold nothing */
} sparse_case;

static const sparse_case cases[] = {
    {"one row", 1, 0, 5, 0.5, 0, 0, 0, 0, 0},
    {"tiny", 7, 0, 9, 0.3, 0, 0.2, 0, 0, 2},
    {"random 1%", 300, 0, 500, 0.01, 0, 0, 0, 0, 0},
    {"random 5% empty rows", 257, 0, 300, 0.05, 0, 0.3, 0, 0, 50},
    {"random 20%", 130, 0, 200, 0.2, 0, 0.1, 0, 0, 0},
    {"hubs", 400, 0, 1000, 0.003, 0, 0.1, 5, 0.4, 100},
    {"many hubs", 300, 0, 700, 0.002, 0, 0.05, 90, 0.15, 0},
    {"all empty", 20, 0, 30, 0.0, 0, 1.0, 0, 0, 0},
    {"A·Bᵀ", 150, 90, 400, 0.01, 0.05, 0.1, 3, 0.3, 20},
    {"A·Bᵀ sparse A dense B", 60, 200, 100, 0.002, 0.3, 0.2, 0, 0, 0},
    {"A·Bᵀ empty B rows", 80, 70, 300, 0.02, 0.01, 0.5, 2, 0.5, 0},
    {"more rows than a block", 700, 0, 2000, 0.002, 0, 0.2, 4, 0.3, 0},
    /* The hub sweep's pruning: rows that are mostly hubs share them with most other rows,
     * many score alike (ties at the k-th score), some share only hubs. */
    {"hub-only rows, ties", 500, 0, 400, 0.001, 0, 0.1, 6, 0.5, 0},
    {"dense hubs, rare columns", 600, 0, 3000, 0.002, 0, 0.05, 12, 0.35, 0},
    {"A·Bᵀ hubs, ties", 200, 240, 300, 0.003, 0.003, 0.1, 8, 0.45, 0},
};

/* A share in [0, 1] as the bound a 64-bit random number falls under with that probability
 * (1 itself is past every uint64_t: converting it would be undefined). */
static uint64_t share_bound(double share)
{
    return share >= 1.0 ? UINT64_MAX : (uint64_t)(share * 18446744073709551615.0);
}

static unsigned char *make_bytes(const sparse_case *c, int64_t rows, double density, uint64_t *seed)
{
    unsigned char *d = calloc((size_t)(rows * c->m), 1);
    if (!d) return NULL;
    const uint64_t t = share_bound(density);
    const uint64_t te = share_bound(c->empty_rows);
    const uint64_t th = share_bound(c->hub_share);
    const int64_t live = c->m - c->empty_cols;
    for (int64_t i = 0; i < rows; ++i) {
        if (c->empty_rows >= 1.0 || oc_test_rand(seed) < te) continue;
        for (int64_t j = 0; j < live; ++j) {
            uint64_t r = oc_test_rand(seed);
            d[i * c->m + j] = j < c->hub_cols ? r < th : r < t;
        }
    }
    return d;
}

/* The bytes as CSR, read through oc_matrix_from_csr: the C API's sparse input. */
static oc_matrix *to_matrix(oc_context *ctx, const unsigned char *d, int64_t rows, int64_t m)
{
    int64_t *ptr = malloc((size_t)(rows + 1) * sizeof *ptr), *idx = malloc((size_t)(rows * m + 1) * sizeof *idx);
    oc_matrix *out = NULL;
    ptr[0] = 0;
    for (int64_t i = 0; i < rows; ++i) {
        ptr[i + 1] = ptr[i];
        for (int64_t j = 0; j < m; ++j)
            if (d[i * m + j]) idx[ptr[i + 1]++] = j;
    }
    CHECK(oc_matrix_from_csr(ctx, rows, m, ptr, idx, &out) == OC_OK);
    free(ptr);
    free(idx);
    return out;
}

typedef struct pairs_buf {
    int64_t n, cap;
    int64_t *rows, *cols;
    unsigned char *vals;
    size_t elem;
} pairs_buf;

static int collect(void *user, const int64_t *rows, const int64_t *cols, const void *scores, int64_t count)
{
    pairs_buf *b = user;
    if (b->n + count > b->cap) {
        b->cap = (b->n + count) * 2;
        b->rows = realloc(b->rows, (size_t)b->cap * sizeof *b->rows);
        b->cols = realloc(b->cols, (size_t)b->cap * sizeof *b->cols);
        b->vals = realloc(b->vals, (size_t)b->cap * b->elem);
    }
    memcpy(b->rows + b->n, rows, (size_t)count * sizeof *rows);
    memcpy(b->cols + b->n, cols, (size_t)count * sizeof *cols);
    memcpy(b->vals + b->n * b->elem, scores, (size_t)count * b->elem);
    b->n += count;
    return 0;
}

/* What one run produced. */
typedef struct result {
    oc_status st;
    void *dense;
    int64_t *indices;
    void *scores;
    pairs_buf pairs;
    oc_algorithm ran;
} result;

typedef enum out_kind { OUT_DENSE, OUT_TOPK, OUT_PAIRS } out_kind;

static result run(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, oc_gram_options o, out_kind kind, int64_t n,
                  int64_t p)
{
    result r = {0};
    size_t elem = oc_dtype_size(oc_gram_result_dtype(o.metric, o.dtype));
    oc_output out = OC_OUTPUT_INIT;
    oc_gram_stats stats = {.struct_size = sizeof stats};
    if (kind == OUT_DENSE) {
        r.dense = calloc((size_t)(n * p), elem);
        out.data = r.dense;
    } else if (kind == OUT_TOPK) {
        out.kind = OC_OUTPUT_TOPK;
        r.indices = calloc((size_t)(n * o.topk), sizeof *r.indices);
        r.scores = calloc((size_t)(n * o.topk), elem);
        out.indices = r.indices;
        out.scores = r.scores;
    } else {
        out.kind = OC_OUTPUT_PAIRS;
        r.pairs.elem = elem;
        out.pairs = collect;
        out.pairs_user = &r.pairs;
    }
    r.st = oc_gram(ctx, a, b, &o, &out, &stats);
    r.ran = stats.algorithm;
    return r;
}

static void result_free(result *r)
{
    free(r->dense);
    free(r->indices);
    free(r->scores);
    free(r->pairs.rows);
    free(r->pairs.cols);
    free(r->pairs.vals);
}

static int same(const result *x, const result *y, out_kind kind, int64_t n, int64_t p, int64_t k, size_t elem)
{
    if (x->st != OC_OK || y->st != OC_OK) return 0;
    if (kind == OUT_DENSE) return memcmp(x->dense, y->dense, (size_t)(n * p) * elem) == 0;
    if (kind == OUT_TOPK)
        return memcmp(x->indices, y->indices, (size_t)(n * k) * sizeof *x->indices) == 0 &&
               memcmp(x->scores, y->scores, (size_t)(n * k) * elem) == 0;
    return x->pairs.n == y->pairs.n &&
           (x->pairs.n == 0 || (memcmp(x->pairs.rows, y->pairs.rows, (size_t)x->pairs.n * 8) == 0 &&
                                memcmp(x->pairs.cols, y->pairs.cols, (size_t)x->pairs.n * 8) == 0 &&
                                memcmp(x->pairs.vals, y->pairs.vals, (size_t)x->pairs.n * elem) == 0));
}

/* The sparse runs of every output: the thread counts with the predicted hub split, then the
 * forced splits (OUTCORE_SPARSE_HUBS: none, a few, one hub word whole, more than 64), then
 * threshold pairs handed over in the smallest pieces of rows and every one spilled
 * (OUTCORE_PAIRS_BUFFER=1: a block of more than 4096 pairs comes in several pieces). */
typedef struct sparse_run {
    const char *hubs; /* "": the split the planner predicts */
    int threads;
    const char *pairs_buffer; /* NULL: the default */
} sparse_run;
static const sparse_run sparse_runs[] = {{"", 1, NULL},   {"", 2, NULL},   {"0", 1, NULL}, {"3", 1, NULL},
                                         {"64", 1, NULL}, {"70", 1, NULL}, {"", 2, "1"}};

/* One output of one case: the dense algorithm once (its result depends on neither the hub
 * split nor the thread count), then the sparse one under each of sparse_runs, bytes compared. */
static void compare(oc_context *ctx, const sparse_case *c, const oc_matrix *a, const oc_matrix *b, oc_gram_options o,
                    out_kind kind, const char *what)
{
    const int64_t n = c->n, p = c->p ? c->p : c->n;
    size_t elem = oc_dtype_size(oc_gram_result_dtype(o.metric, o.dtype));
    o.algorithm = OC_ALGORITHM_DENSE;
    o.threads = 1;
    result d = run(ctx, a, b, o, kind, n, p);
    CHECK_MSG(d.st == OC_OK, "%s %s dense: %s", c->name, what, oc_context_last_error(ctx));
    CHECK_MSG(d.ran == OC_ALGORITHM_DENSE, "%s %s: the dense algorithm did not run", c->name, what);
    o.algorithm = OC_ALGORITHM_SPARSE;
    for (size_t r = 0; r < sizeof sparse_runs / sizeof *sparse_runs; ++r) {
        setenv("OUTCORE_SPARSE_HUBS", sparse_runs[r].hubs, 1);
        if (sparse_runs[r].pairs_buffer) setenv("OUTCORE_PAIRS_BUFFER", sparse_runs[r].pairs_buffer, 1);
        o.threads = sparse_runs[r].threads;
        result s = run(ctx, a, b, o, kind, n, p);
        unsetenv("OUTCORE_PAIRS_BUFFER");
        CHECK_MSG(s.st == OC_OK, "%s %s sparse, %d threads, hubs '%s': %s", c->name, what, o.threads,
                  sparse_runs[r].hubs, oc_context_last_error(ctx));
        CHECK_MSG(s.ran == OC_ALGORITHM_SPARSE, "%s %s, %d threads, hubs '%s': the sparse algorithm did not run",
                  c->name, what, o.threads, sparse_runs[r].hubs);
        CHECK_MSG(same(&d, &s, kind, n, p, o.topk, elem),
                  "%s %s, %d threads, hubs '%s': sparse and dense results differ", c->name, what, o.threads,
                  sparse_runs[r].hubs);
        result_free(&s);
    }
    unsetenv("OUTCORE_SPARSE_HUBS");
    result_free(&d);
}

static void run_case(oc_context *ctx, const sparse_case *c)
{
    uint64_t seed = 0x9E3779B97F4A7C15ull ^ (uint64_t)(c->n * 131 + c->m);
    unsigned char *da = make_bytes(c, c->n, c->density_a, &seed);
    unsigned char *db = c->p ? make_bytes(c, c->p, c->density_b, &seed) : NULL;
    oc_matrix *a = to_matrix(ctx, da, c->n, c->m), *b = c->p ? to_matrix(ctx, db, c->p, c->m) : NULL;
    const int64_t p = c->p ? c->p : c->n;
    const int64_t ks[] = {1, p < 4 ? p : 4, p}; /* p: every column, the most K the library takes */
    for (int out = 0; out < GRAM_OUTPUT_COUNT; ++out) {
        oc_gram_options o = OC_GRAM_OPTIONS_INIT;
        o.metric = gram_outputs[out].metric;
        o.dtype = gram_outputs[out].dtype;
        if (o.dtype == OC_DTYPE_UINT16 && c->m >= 65536) continue;
        char what[128];
        snprintf(what, sizeof what, "%s/%s dense", oc_metric_name(o.metric), oc_dtype_name(o.dtype));
        compare(ctx, c, a, b, o, OUT_DENSE, what);
        for (int t = 0; t < 3; ++t) {
            oc_gram_options ok = o;
            ok.topk = ks[t];
            snprintf(what, sizeof what, "%s/%s top-%lld", oc_metric_name(o.metric), oc_dtype_name(o.dtype),
                     (long long)ks[t]);
            compare(ctx, c, a, b, ok, OUT_TOPK, what);
        }
        const int fractional = o.metric == OC_METRIC_JACCARD || o.metric == OC_METRIC_COSINE;
        const double thresholds[] = {0.0, fractional ? 0.2 : 1.0, fractional ? 0.5 : 2.0, fractional ? 1.0 : 5.0};
        for (int t = 0; t < 4; ++t) {
            oc_gram_options ot = o;
            ot.use_threshold = 1;
            ot.threshold = thresholds[t];
            snprintf(what, sizeof what, "%s/%s threshold %g", oc_metric_name(o.metric), oc_dtype_name(o.dtype),
                     thresholds[t]);
            compare(ctx, c, a, b, ot, OUT_PAIRS, what);
        }
    }
    oc_matrix_free(a);
    oc_matrix_free(b);
    free(da);
    free(db);
}

/* auto keeps dense data on the dense path, and takes the sparse one where it wins by far. */
static void check_auto(oc_context *ctx)
{
    const sparse_case dense = {"dense", 200, 0, 2000, 0.5, 0, 0, 0, 0, 0};
    const sparse_case sparse = {"sparse", 3000, 0, 20000, 0.0003, 0, 0, 0, 0, 0};
    const sparse_case *both[] = {&dense, &sparse};
    for (int k = 0; k < 2; ++k) {
        uint64_t seed = 7;
        unsigned char *d = make_bytes(both[k], both[k]->n, both[k]->density_a, &seed);
        oc_matrix *a = to_matrix(ctx, d, both[k]->n, both[k]->m);
        oc_gram_options o = OC_GRAM_OPTIONS_INIT;
        o.metric = OC_METRIC_JACCARD;
        o.topk = 5;
        result r = run(ctx, a, NULL, o, OUT_TOPK, both[k]->n, both[k]->n);
        CHECK_MSG(r.st == OC_OK, "auto %s: %s", both[k]->name, oc_context_last_error(ctx));
        CHECK_MSG(r.ran == (k == 0 ? OC_ALGORITHM_DENSE : OC_ALGORITHM_SPARSE), "auto on %s data ran %s", both[k]->name,
                  oc_algorithm_name(r.ran));
        result_free(&r);
        oc_matrix_free(a);
        free(d);
    }
}

static void check_bad_options(oc_context *ctx)
{
    unsigned char d[4] = {1, 0, 0, 1};
    oc_matrix *a = NULL;
    CHECK(oc_matrix_from_dense(ctx, d, 2, 2, 2, &a) == OC_OK);
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.algorithm = (oc_algorithm)7;
    result r = run(ctx, a, NULL, o, OUT_DENSE, 2, 2);
    CHECK(r.st == OC_ERR_INVALID_ARGUMENT && strstr(oc_context_last_error(ctx), "algorithm") != NULL);
    for (int i = 0; i < OC_ALGORITHM_COUNT; ++i) /* the message lists every name */
        CHECK_MSG(strstr(oc_context_last_error(ctx), oc_algorithm_name((oc_algorithm)i)), "%s",
                  oc_context_last_error(ctx));
    result_free(&r);
    o.algorithm = OC_ALGORITHM_SPARSE;
    o.backend = OC_BACKEND_CUDA;
    r = run(ctx, a, NULL, o, OUT_DENSE, 2, 2);
    CHECK(r.st != OC_OK);
    result_free(&r);
    /* Version 1 of the structs (options before `algorithm`, stats before `host_budget_bytes`)
     * still works: auto, and stats written only within their size. */
    oc_gram_options v1 = OC_GRAM_OPTIONS_INIT;
    v1.struct_size = offsetof(oc_gram_options, algorithm);
    v1.algorithm = (oc_algorithm)99; /* past the caller's struct: never read */
    int32_t counts[4];
    oc_output mem = OC_OUTPUT_INIT;
    mem.data = counts;
    oc_gram_stats st1;
    memset(&st1, 0x5A, sizeof st1);
    st1.struct_size = offsetof(oc_gram_stats, host_budget_bytes);
    CHECK_MSG(oc_gram(ctx, a, NULL, &v1, &mem, &st1) == OC_OK, "version 1 options: %s", oc_context_last_error(ctx));
    CHECK(counts[0] == 1 && counts[1] == 0 && counts[3] == 1 && st1.seconds >= 0);
    CHECK(((unsigned char *)&st1)[offsetof(oc_gram_stats, host_budget_bytes)] == 0x5A);
    /* Version 2 (before `resume`) has version 3's size as its compiler made it (resume took
     * its padding): read as version 3, whose resume is 0 from OC_GRAM_OPTIONS_INIT. The
     * offset of `resume` itself is no version's size. */
    oc_gram_options v2 = OC_GRAM_OPTIONS_INIT;
    v2.struct_size = OC_STRUCT_VERSION_SIZE(oc_gram_options, resume);
    CHECK(v2.struct_size == offsetof(oc_gram_options, devices));
    memset(counts, 0, sizeof counts);
    CHECK_MSG(oc_gram(ctx, a, NULL, &v2, &mem, NULL) == OC_OK, "version 2 options: %s", oc_context_last_error(ctx));
    CHECK(counts[0] == 1 && counts[1] == 0 && counts[3] == 1);
    v2.struct_size = offsetof(oc_gram_options, resume);
    CHECK(oc_gram(ctx, a, NULL, &v2, &mem, NULL) == OC_ERR_INVALID_ARGUMENT);
    /* Version 4 (before `use_min_score`) with version 4 stats (before `threads`): a minimum
     * score past the caller's struct is never read (it would refuse a dense job), nor
     * the threads written past its stats. */
    oc_gram_options v4 = OC_GRAM_OPTIONS_INIT;
    v4.struct_size = offsetof(oc_gram_options, use_min_score);
    v4.use_min_score = 1;
    oc_gram_stats st4;
    memset(&st4, 0x5A, sizeof st4);
    st4.struct_size = offsetof(oc_gram_stats, threads);
    memset(counts, 0, sizeof counts);
    CHECK_MSG(oc_gram(ctx, a, NULL, &v4, &mem, &st4) == OC_OK, "version 4 options: %s", oc_context_last_error(ctx));
    CHECK(counts[0] == 1 && counts[1] == 0 && counts[3] == 1);
    CHECK(((unsigned char *)&st4)[offsetof(oc_gram_stats, threads)] == 0x5A);
    /* Version 5 stats (before `phases`): the threads written, the phases not. */
    oc_gram_stats st5;
    memset(&st5, 0x5A, sizeof st5);
    st5.struct_size = offsetof(oc_gram_stats, phases);
    CHECK_MSG(oc_gram(ctx, a, NULL, &v4, &mem, &st5) == OC_OK, "version 5 stats: %s", oc_context_last_error(ctx));
    CHECK(st5.threads >= 1);
    CHECK(((unsigned char *)&st5)[offsetof(oc_gram_stats, phases)] == 0x5A);
    /* Version 6 stats (before `predicted_seconds`): the phases written, the prediction not. */
    oc_gram_stats st6;
    memset(&st6, 0x5A, sizeof st6);
    st6.struct_size = offsetof(oc_gram_stats, predicted_seconds);
    CHECK_MSG(oc_gram(ctx, a, NULL, &v4, &mem, &st6) == OC_OK, "version 6 stats: %s", oc_context_last_error(ctx));
    CHECK(st6.phases.compute >= 0 && st6.phases.compute < 1e6);
    CHECK(((unsigned char *)&st6)[offsetof(oc_gram_stats, predicted_seconds)] == 0x5A);
    oc_gram_stats st7 = {.struct_size = sizeof st7};
    CHECK_MSG(oc_gram(ctx, a, NULL, &v4, &mem, &st7) == OC_OK, "version 7 stats: %s", oc_context_last_error(ctx));
    CHECK_MSG(st7.predicted_seconds > 0, "predicted_seconds %g", st7.predicted_seconds);
    v1.struct_size = offsetof(oc_gram_options, algorithm) - 8;
    CHECK(oc_gram(ctx, a, NULL, &v1, &mem, NULL) == OC_ERR_INVALID_ARGUMENT);
    oc_algorithm parsed;
    CHECK(oc_algorithm_parse("sparse", &parsed) == OC_OK && parsed == OC_ALGORITHM_SPARSE);
    CHECK(oc_algorithm_parse("fast", &parsed) == OC_ERR_INVALID_ARGUMENT);
    oc_matrix_free(a);
}

typedef struct progress_seen {
    oc_context *ctx;
    int calls;
    double last_done, last_total;
} progress_seen;

static void cancel_on_report(void *user, double done, double total)
{
    progress_seen *s = user;
    s->calls++;
    s->last_done = done, s->last_total = total;
    oc_context_cancel(s->ctx);
}

static void count_reports(void *user, double done, double total)
{
    progress_seen *s = user;
    CHECK(done >= s->last_done && done <= total);
    s->calls++;
    s->last_done = done, s->last_total = total;
}

/* A threshold job on the sparse algorithm reports its progress over the job's blocks, ending
 * at all of them, and a cancel from its callback stops it, as on every other path (its
 * pairs come in groups of blocks, which the reports used to follow: one job of a group gave
 * one report, after all its work, and a cancel from it was not answered). */
static void check_threshold_progress(oc_context *ctx)
{
    uint64_t seed = 11;
    const sparse_case c = {"progress", 700, 0, 2000, 0.002, 0, 0.2, 4, 0.3, 0};
    const int64_t rows = c.n;
    unsigned char *d = make_bytes(&c, rows, c.density_a, &seed);
    oc_matrix *a = to_matrix(ctx, d, rows, c.m);
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.algorithm = OC_ALGORITHM_SPARSE;
    o.backend = OC_BACKEND_CPU;
    o.use_threshold = 1;
    o.threshold = 1;
    progress_seen seen = {.ctx = ctx};
    o.progress = count_reports, o.progress_user = &seen;
    result r = run(ctx, a, NULL, o, OUT_PAIRS, rows, rows);
    CHECK_MSG(r.st == OC_OK && r.ran == OC_ALGORITHM_SPARSE, "%s", oc_context_last_error(ctx));
    CHECK(seen.calls >= 1 && seen.last_done == seen.last_total && seen.last_total >= 1);
    result_free(&r);
    progress_seen cancel = {.ctx = ctx};
    o.progress = cancel_on_report, o.progress_user = &cancel;
    r = run(ctx, a, NULL, o, OUT_PAIRS, rows, rows);
    CHECK_MSG(r.st == OC_ERR_CANCELLED && cancel.calls >= 1, "status %d after %d reports", (int)r.st, cancel.calls);
    result_free(&r);
    oc_matrix_free(a);
    free(d);
}

int main(int argc, char **argv)
{
    long part = 0, parts = 1;
    char *end1 = NULL, *end2 = NULL;
    if (argc == 3) {
        part = strtol(argv[1], &end1, 10);
        parts = strtol(argv[2], &end2, 10);
    }
    if ((argc != 1 && argc != 3) || (argc == 3 && (*end1 || *end2 || parts < 1 || part < 0 || part >= parts))) {
        fprintf(stderr, "usage: %s [PART PARTS]\n", argv[0]);
        return 2;
    }
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    for (size_t c = (size_t)part; c < sizeof cases / sizeof *cases; c += (size_t)parts) run_case(ctx, &cases[c]);
    if (part == 0) {
        check_auto(ctx);
        check_bad_options(ctx);
        check_threshold_progress(ctx);
    }
    oc_context_free(ctx);
    return oc_test_finish();
}
