/*
 * gram_runner.c - runs the case table on one backend against the reference (gram_cases.h).
 *
 * For each row the backend takes: the bytes of A (and B), the exact counts once, then for
 * each output of the row's mask one job: the reference's answer, the backend's answer in
 * buffers filled with a byte no result has (so an element never written shows up), and a
 * byte comparison of the two (dense: the whole n x ld buffer, padding included; top-k:
 * indices and scores; threshold: count, rows, cols and score bytes). The first difference
 * is printed.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gram_cases.h"
#include "gram_reference.h"
#include "harness.h"

#define POISON 0xA5

int gram_test_quick(void)
{
    const char *q = getenv("OUTCORE_TEST_QUICK");
    int v = q ? atoi(q) : 0;
    return v <= 0 ? 0 : v > 1 ? 2 : 1;
}

void gram_pairs_add(gram_pairs *p, const int64_t *rows, const int64_t *cols, const void *values, int64_t count)
{
    if (p->failed || count <= 0) return;
    if (p->count + count > p->cap) {
        int64_t cap = (p->count + count) * 2 + 16;
        int64_t *r = realloc(p->rows, (size_t)cap * sizeof *r);
        if (r) p->rows = r;
        int64_t *c = realloc(p->cols, (size_t)cap * sizeof *c);
        if (c) p->cols = c;
        unsigned char *v = realloc(p->values, (size_t)cap * p->elem);
        if (v) p->values = v;
        if (!r || !c || !v) {
            p->failed = 1;
            return;
        }
        p->cap = cap;
    }
    memcpy(p->rows + p->count, rows, (size_t)count * sizeof *rows);
    memcpy(p->cols + p->count, cols, (size_t)count * sizeof *cols);
    memcpy(p->values + (size_t)p->count * p->elem, values, (size_t)count * p->elem);
    p->count += count;
}

void gram_pairs_free(gram_pairs *p)
{
    free(p->rows);
    free(p->cols);
    free(p->values);
    p->rows = p->cols = NULL;
    p->values = NULL;
    p->count = p->cap = 0;
}

void gram_job_options(const gram_job *job, oc_gram_options *o)
{
    *o = (oc_gram_options)OC_GRAM_OPTIONS_INIT;
    o->metric = job->metric;
    o->dtype = job->dtype;
    if (job->row->kind == GRAM_TOPK) o->topk = job->k;
    if (job->row->kind == GRAM_THRESHOLD) o->use_threshold = 1, o->threshold = job->threshold;
}

static int collect_pairs(void *user, const int64_t *rows, const int64_t *cols, const void *scores, int64_t count)
{
    gram_pairs_add(user, rows, cols, scores, count);
    return 0;
}

oc_status gram_job_run_oc_gram(oc_context *ctx, const gram_job *job, const oc_gram_options *opts, gram_result *res,
                               const char *label)
{
    oc_output out = OC_OUTPUT_INIT;
    switch (job->row->kind) {
    case GRAM_DENSE:
        out.kind = OC_OUTPUT_MEMORY, out.data = res->dense, out.ld = job->ld;
        break;
    case GRAM_TOPK:
        out.kind = OC_OUTPUT_TOPK, out.indices = res->indices, out.scores = res->scores;
        break;
    case GRAM_THRESHOLD:
        out.kind = OC_OUTPUT_PAIRS, out.pairs = collect_pairs, out.pairs_user = &res->pairs;
        break;
    }
    res->stats = (oc_gram_stats){.struct_size = sizeof res->stats};
    oc_status st = oc_gram(ctx, job->a, job->b, opts, &out, &res->stats);
    if (st == OC_OK && job->row->kind == GRAM_THRESHOLD)
        CHECK_MSG(res->stats.pairs == res->pairs.count, "%s: stats.pairs %lld, %lld pairs delivered", label,
                  (long long)res->stats.pairs, (long long)res->pairs.count);
    return st;
}

/* The first element where got and want differ, for the message of a failed comparison. */
static int64_t first_difference(const void *got, const void *want, int64_t count, size_t es)
{
    if (count <= 0 || memcmp(got, want, (size_t)count * es) == 0) return -1;
    for (int64_t i = 0; i < count; ++i)
        if (memcmp((const char *)got + (size_t)i * es, (const char *)want + (size_t)i * es, es) != 0) return i;
    return -1;
}

static void compare(const gram_job *job, const gram_result *got, const gram_result *want, const char *label)
{
    const size_t es = oc_dtype_size(job->dtype);
    int64_t at = -1;
    switch (job->row->kind) {
    case GRAM_DENSE:
        at = first_difference(got->dense, want->dense, job->n * job->ld, es);
        CHECK_MSG(at < 0, "%s: differs from the reference at (%lld, %lld)", label, (long long)(at / job->ld),
                  (long long)(at % job->ld));
        break;
    case GRAM_TOPK:
        at = first_difference(got->indices, want->indices, job->n * job->k, sizeof(int64_t));
        if (at < 0) at = first_difference(got->scores, want->scores, job->n * job->k, es);
        CHECK_MSG(at < 0, "%s: row %lld slot %lld is column %lld, the reference says %lld (or the scores differ)",
                  label, (long long)(at / job->k), (long long)(at % job->k), at < 0 ? 0LL : (long long)got->indices[at],
                  at < 0 ? 0LL : (long long)want->indices[at]);
        break;
    case GRAM_THRESHOLD: {
        const gram_pairs *g = &got->pairs, *w = &want->pairs;
        CHECK_MSG(!g->failed && !w->failed, "%s: out of memory collecting pairs", label);
        int64_t common = g->count < w->count ? g->count : w->count;
        at = first_difference(g->rows, w->rows, common, sizeof(int64_t));
        int64_t c = first_difference(g->cols, w->cols, common, sizeof(int64_t));
        int64_t v = first_difference(g->values, w->values, common, es);
        if (at < 0 || (c >= 0 && c < at)) at = c;
        if (at < 0 || (v >= 0 && v < at)) at = v;
        if (at < 0 && g->count != w->count) at = common;
        CHECK_MSG(
            at < 0,
            "%s: %lld pairs, the reference %lld; first difference at pair %lld (%lld, %lld), reference (%lld, %lld)",
            label, (long long)g->count, (long long)w->count, (long long)at,
            at >= 0 && at < g->count ? (long long)g->rows[at] : -1LL,
            at >= 0 && at < g->count ? (long long)g->cols[at] : -1LL,
            at >= 0 && at < w->count ? (long long)w->rows[at] : -1LL,
            at >= 0 && at < w->count ? (long long)w->cols[at] : -1LL);
        break;
    }
    }
}

/* Buffers of the job's size, filled with POISON; 0 when out of memory. */
static int result_alloc(const gram_job *job, gram_result *r)
{
    const size_t es = oc_dtype_size(job->dtype);
    memset(r, 0, sizeof *r);
    r->pairs.elem = es;
    if (job->row->kind == GRAM_DENSE) {
        size_t bytes = (size_t)(job->n * job->ld) * es;
        r->dense = malloc(bytes + 1);
        if (!r->dense) return 0;
        memset(r->dense, POISON, bytes);
    } else if (job->row->kind == GRAM_TOPK) {
        r->indices = malloc((size_t)(job->n * job->k) * sizeof *r->indices + 1);
        r->scores = malloc((size_t)(job->n * job->k) * es + 1);
        if (!r->indices || !r->scores) return 0;
        memset(r->indices, POISON, (size_t)(job->n * job->k) * sizeof *r->indices);
        memset(r->scores, POISON, (size_t)(job->n * job->k) * es);
    }
    return 1;
}

static void result_free(gram_result *r)
{
    free(r->dense);
    free(r->indices);
    free(r->scores);
    gram_pairs_free(&r->pairs);
}

static int reference(const gram_job *job, const gram_exact *e, gram_result *want)
{
    switch (job->row->kind) {
    case GRAM_DENSE:
        gram_ref_dense(e, job->metric, job->dtype, want->dense, job->ld);
        return 1;
    case GRAM_TOPK:
        return gram_ref_topk(e, job->metric, job->dtype, job->k, want->indices, want->scores);
    case GRAM_THRESHOLD:
        gram_ref_pairs(e, job->metric, job->dtype, job->threshold, &want->pairs);
        return !want->pairs.failed;
    }
    return 0;
}

static void describe(const gram_job *job, const gram_backend *be, char *buf, size_t size)
{
    const gram_case *r = job->row;
    char what[64] = "dense";
    if (r->kind == GRAM_TOPK) snprintf(what, sizeof what, "top-%lld", (long long)job->k);
    if (r->kind == GRAM_THRESHOLD) snprintf(what, sizeof what, "threshold %g", job->threshold);
    snprintf(buf, size, "%s %lldx%lldx%lld [%s] %s/%s %s%s", r->name, (long long)job->n, (long long)job->p,
             (long long)job->m, be->name, oc_metric_name(job->metric), oc_dtype_name(job->dtype), what,
             r->pairs_buffer ? " spilled" : "");
}

/* One output of a row on one backend, compared with the reference's answer. */
static void run_job(oc_context *ctx, const gram_backend *be, const gram_job *job, const gram_result *want)
{
    char label[GRAM_LABEL_SIZE];
    describe(job, be, label, sizeof label);
    gram_result got;
    int ok = result_alloc(job, &got);
    CHECK_MSG(ok, "%s: out of memory", label);
    if (ok) {
        char buffer[32];
        if (job->row->pairs_buffer) {
            snprintf(buffer, sizeof buffer, "%lld", (long long)job->row->pairs_buffer);
            setenv("OUTCORE_PAIRS_BUFFER", buffer, 1);
        }
        oc_status st = be->run(be, ctx, job, &got, label);
        if (job->row->pairs_buffer) unsetenv("OUTCORE_PAIRS_BUFFER");
        CHECK_MSG(st == OC_OK, "%s: %s: %s", label, oc_status_string(st), oc_context_last_error(ctx));
        if (st == OC_OK) compare(job, &got, want, label);
    }
    result_free(&got);
}

/* Whether the backend runs the row at this quick level, and with which outputs. */
static unsigned row_outputs(const gram_case *row, const gram_backend *be, int quick)
{
    if (row->backends && !(row->backends & be->kind)) return 0;
    if (be->selection_only && row->kind == GRAM_DENSE) return 0;
    if (quick > row->quick) return 0;
    unsigned mask = row->outputs ? row->outputs : GRAM_ALL_OUTPUTS;
    if (quick) mask &= GRAM_QUICK_OUTPUTS;
    if (row->m >= 65536) mask &= ~(unsigned)(GRAM_COUNTS_U16 | GRAM_HAMMING_U16); /* refused by design */
    return mask;
}

/* One row on every backend that takes it: the bits and the exact counts once, then each
 * output on each backend. jobs[b] counts the jobs of backend b. */
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Per backend: jobs run, jobs that failed, seconds in them (reference excluded). */
typedef struct backend_tally {
    int64_t jobs, failed;
    double seconds;
} backend_tally;

static void run_row(oc_context *ctx, const gram_backend *const *backends, int count, const gram_case *row, int quick,
                    backend_tally *tally)
{
    unsigned masks[GRAM_MAX_BACKENDS], any = 0;
    for (int b = 0; b < count; ++b) any |= masks[b] = row_outputs(row, backends[b], quick);
    if (!any) return;
    const int symmetric = row->p == 0;
    unsigned kinds = 0;
    for (int b = 0; b < count; ++b) kinds |= backends[b]->kind;
    const int64_t cap = row->cpu_rows && !(kinds & GRAM_ON_CUDA) ? row->cpu_rows : INT64_MAX;
    const int64_t n = row->n < cap ? row->n : cap, p = symmetric ? n : row->p < cap ? row->p : cap, m = row->m;
    uint64_t seed = gram_case_seed(row);
    unsigned char *da = gram_case_bytes(row, n, &seed);
    unsigned char *db = symmetric ? da : gram_case_bytes(row, p, &seed);
    oc_matrix *a = NULL, *b = NULL;
    gram_exact e = {0};
    CHECK_MSG(da && db, "%s: out of memory", row->name);
    if (!da || !db) goto done;
    CHECK_MSG(gram_ref_exact(da, db, n, p, m, symmetric, &e), "%s: out of memory", row->name);
    if (!e.c) goto done;
    CHECK_EQ_I64(oc_matrix_from_dense(ctx, da, n, m, m, &a), OC_OK);
    if (!symmetric) CHECK_EQ_I64(oc_matrix_from_dense(ctx, db, p, m, m, &b), OC_OK);
    if (!a || (!symmetric && !b)) goto done;

    for (int o = 0; o < GRAM_OUTPUT_COUNT; ++o) {
        if (!(any & (1u << o))) continue;
        gram_job job = {.row = row,
                        .a = a,
                        .b = b,
                        .bytes_a = da,
                        .bytes_b = db,
                        .n = n,
                        .p = p,
                        .m = m,
                        .metric = gram_outputs[o].metric,
                        .dtype = gram_outputs[o].dtype,
                        .ld = p + row->pad,
                        .serial = (row - gram_cases) * GRAM_OUTPUT_COUNT + o};
        job.k = row->k == GRAM_K_ALL_COLUMNS ? p : row->k;
        const int is_float = job.metric == OC_METRIC_JACCARD || job.metric == OC_METRIC_COSINE;
        job.threshold = is_float ? row->threshold : round(row->threshold * (double)m);
        gram_result want;
        int ok = result_alloc(&job, &want) && reference(&job, &e, &want);
        CHECK_MSG(ok, "%s: out of memory for the reference", row->name);
        for (int k = 0; ok && k < count; ++k)
            if (masks[k] & (1u << o)) {
                const int before = oc_test_failures;
                const double t0 = now();
                run_job(ctx, backends[k], &job, &want);
                tally[k].seconds += now() - t0;
                tally[k].jobs++;
                tally[k].failed += oc_test_failures != before;
            }
        result_free(&want);
    }
done:
    gram_ref_free(&e);
    oc_matrix_free(a);
    oc_matrix_free(b);
    if (db != da) free(db);
    free(da);
}

int64_t gram_cases_run(oc_context *ctx, const gram_backend *const *backends, int count, int quick)
{
    backend_tally tally[GRAM_MAX_BACKENDS] = {{0}};
    int64_t total = 0;
    assert(count > 0 && count <= GRAM_MAX_BACKENDS);
    for (int r = 0; r < gram_case_count; ++r) run_row(ctx, backends, count, &gram_cases[r], quick, tally);
    for (int b = 0; b < count; ++b) {
        printf("%-24s %5lld jobs %6.2f s  %s\n", backends[b]->name, (long long)tally[b].jobs, tally[b].seconds,
               tally[b].failed ? "FAILED"
               : tally[b].jobs ? "all exact"
                               : "none run");
        total += tally[b].jobs;
    }
    return total;
}
