/*
 * gram_choice.c - the dense/sparse prediction (see gram_choice.h).
 *
 * The dense path's kernel rates come from the cost model's table (cost.h: measured and cached
 * per machine, or its defaults), and on a GPU its whole prediction. The sparse path's
 * per-operation costs below are seconds per operation on one core, fitted to a 2-core AVX-512
 * machine (bench/RESULTS.md, "sparse path" and "the sparse path's prediction"): the
 * choice needs them right within a factor of a few, since the two predictions differ by
 * orders of magnitude wherever it matters, and the job's reported prediction within 2x. Dense data never reaches the column counts: above MAX_SPARSE_DENSITY the
 * sparse path cannot win (every row pair shares columns), and counting would cost a pass
 * over every set bit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/text_buf.h"
#include "core/error.h"
#include "core/dtype.h"
#include "core/metric.h"
#include "core/threads.h"
#include "gram/gram_choice.h"
#include "gram/sparse_memory.h"

#define MAX_SPARSE_DENSITY 0.02
#define SAMPLE_ROWS 4096       /* rows whose popcounts estimate the density when none are known */
#define SAMPLE_WORDS (1 << 19) /* ... and at most this many 64-bit words of them (4 MiB) */
#define SAMPLE_MIN_ROWS 256
#define COST_PAIR_UPDATE 1.5e-9    /* one scattered increment of a row's accumulator, and its candidate */
#define COST_PAIR_UPDATE_TOPK 6e-9 /* ... when the candidate then competes for the row's top-k list */
#define COST_HUB_WORD 0.5e-9       /* one hub word of one row pair: AND, popcount, the candidate test */
#define HUB_SWEEP_PRUNED 0.05      /* share of hub pairs a size-filtered sweep visits (top-k, threshold) */
#define COST_SPARSE_ROW 8.5e-7     /* per row: lists, sorting a row's pairs, clearing */
#define COST_ONE 4.0e-8            /* per set bit: the column lists built from the packed rows */
#define COST_ROW_ONE 2.3e-7        /* per set bit of a row: reaching its column's list (a cache miss) */
#define COST_FULL_ELEMENT 6.0e-9   /* sparse: a result element of a full row (dense output, hamming) */
#define COST_COLUMN 1.0e-7         /* per column: its count, weight and place in the sorted plan (one thread) */
/* Bytes of the plan's tables per column: A's count and the weight with its index (B's count
 * on top for A·Bᵀ). */
#define COLUMN_TABLE_BYTES (8 + 16)
#define MIB 1048576.0
#define COST_DENSE_ELEMENT 0.4e-9 /* dense: a result element through the epilogue and selection */

/* Whether the sparse path can restrict itself to pairs that share a column: the selection
 * drops every pair with a count of 0 (except jaccard's empty pairs, which it lists
 * directly). Dense output and hamming need every element of every row. */
static int needs_full_rows(const oc_gram_job *job)
{
    const oc_gram_options *o = job->opts;
    if (!o->topk && !o->use_threshold) return 1;
    if (!oc_metric_info_of(job->metric)->unshared_worst) return 1;
    return o->use_threshold && o->threshold <= 0.0;
}

/* Whether the hub sweep of a top-k or threshold job stops early (by popcount, sparse_rows.h). */
static int sweep_prunes(oc_metric metric)
{
    switch (metric) {
    case OC_METRIC_JACCARD:
    case OC_METRIC_COSINE:
        return 1;
    case OC_METRIC_COUNTS:
    case OC_METRIC_HAMMING:
    case OC_METRIC_COUNT:
        break;
    }
    return 0;
}

/* Rows holding at least one of the columns, the columns taken as independent. */
static double rows_with_any(double rows, double miss_product) { return rows * (1.0 - miss_product); }

typedef struct col_weight {
    double w;
    uint32_t col;
} col_weight;

static int by_weight_desc(const void *x, const void *y)
{
    const col_weight *a = x, *b = y;
    if (a->w != b->w) return a->w < b->w ? 1 : -1;
    return a->col < b->col ? -1 : a->col > b->col;
}

/* The hub split minimising the predicted sparse time; fills the plan's sparse fields. */
static oc_status plan_hubs(oc_context *ctx, const oc_gram_job *job, const int64_t *ca, const int64_t *cb,
                           oc_sparse_plan *plan, double threads)
{
    const int64_t m = job->m;
    col_weight *cw = malloc((size_t)m * sizeof *cw);
    if (!cw) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the column weights of %lld columns", (long long)m);
    double total = 0;
    for (int64_t j = 0; j < m; ++j) {
        cw[j] = (col_weight){(double)ca[j] * (double)cb[j], (uint32_t)j};
        total += cw[j].w;
        plan->ones_a += (double)ca[j];
        plan->ones_b += (double)cb[j];
    }
    qsort(cw, (size_t)m, sizeof *cw, by_weight_desc);
    /* Top-k and threshold jobs of jaccard and cosine sweep the hub rows by popcount and stop
     * where no score can pass (sparse_rows.h): they visit a small share of the hub pairs. */
    const int pruned = !needs_full_rows(job) && sweep_prunes(job->metric);
    const double hub_word = COST_HUB_WORD * (pruned ? HUB_SWEEP_PRUNED : 1.0);
    const double pair_update = job->opts->topk > 0 ? COST_PAIR_UPDATE_TOPK : COST_PAIR_UPDATE;
    double best = INFINITY, rest = total, miss_a = 1.0, miss_b = 1.0;
    int64_t best_h = 0;
    for (int64_t h = 0; h <= OC_SPARSE_MAX_HUBS && h <= m; ++h) {
        double ra = rows_with_any((double)job->n, miss_a), rb = rows_with_any((double)job->p, miss_b);
        double cost = rest * pair_update + ra * rb * (double)((h + 63) / 64) * hub_word;
        if (cost < best) {
            best = cost, best_h = h;
            plan->pair_updates = rest, plan->hub_rows_a = ra, plan->hub_rows_b = rb;
        }
        if (h == m || cw[h].w == 0) break;
        rest -= cw[h].w;
        miss_a *= 1.0 - (double)ca[cw[h].col] / (double)job->n;
        miss_b *= 1.0 - (double)cb[cw[h].col] / (double)job->p;
    }
    /* Tests force the split (any count gives the same bytes; hubs past 64 take a second word). */
    int64_t h = 0;
    const int forced = oc_env_whole("OUTCORE_SPARSE_HUBS", 0, OC_SPARSE_MAX_HUBS, &h);
    if (forced < 0) {
        free(cw);
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "OUTCORE_SPARSE_HUBS=%s: expected a whole number from 0 to %d",
                       getenv("OUTCORE_SPARSE_HUBS"), OC_SPARSE_MAX_HUBS);
    }
    if (forced) {
        int64_t usable = 0;
        while (usable < m && usable < OC_SPARSE_MAX_HUBS && cw[usable].w > 0) usable++;
        best_h = h < 0 ? 0 : h < usable ? h : usable;
    }
    plan->hubs = best_h;
    for (int64_t h = 0; h < best_h; ++h) {
        plan->hub_ones_a += (double)ca[cw[h].col];
        plan->hub_ones_b += (double)cb[cw[h].col];
    }
    if (best_h > 0) {
        plan->hub_cols = malloc((size_t)best_h * sizeof *plan->hub_cols);
        if (!plan->hub_cols) {
            free(cw);
            return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the hub list");
        }
        for (int64_t h = 0; h < best_h; ++h) plan->hub_cols[h] = cw[h].col;
    }
    free(cw);
    double rows = (double)job->n, elements = needs_full_rows(job) ? rows * (double)job->p : 0.0;
    plan->sparse_seconds = (best + (plan->ones_a + plan->ones_b) * COST_ONE + plan->ones_a * COST_ROW_ONE +
                            rows * COST_SPARSE_ROW + elements * COST_FULL_ELEMENT) /
                               threads +
                           (double)m * COST_COLUMN;
    return OC_OK;
}

/* Bytes of an input held in memory: its packed bits and its column lists. */
static double held_bytes(const oc_matrix *m)
{
    double bytes = m->bits ? (double)m->rows * (double)m->words_per_row * 8.0 : 0.0;
    if (m->csr_ptr) bytes += 8.0 * (double)(m->rows + 1) + 4.0 * (double)m->csr_ptr[m->rows];
    return bytes;
}

/* The sparse path's share of the host budget: half of what the budget leaves after the
 * inputs held in memory and the top-k lists, as the dense CPU path's panels take (the other
 * half is the selection's). Sets plan->threads to the workers whose row buffers fit there
 * beside the index (at most `threads`, one per block of rows; 0 when not one fits) and
 * plan->peak_bytes to their peak (of one worker when none fits); returns the share and, in
 * *least_budget, the budget that holds one worker. */
static double fit_threads(const oc_gram_job *job, oc_sparse_plan *plan, int threads, double *least_budget)
{
    const oc_sparse_sizes sizes = {.rows_a = job->n,
                                   .rows_b = job->symmetric ? 0 : job->p,
                                   .cols = job->m,
                                   .hubs = plan->hubs,
                                   .ones_a = plan->ones_a,
                                   .ones_b = plan->ones_b,
                                   .hub_ones_a = plan->hub_ones_a,
                                   .hub_ones_b = plan->hub_ones_b,
                                   .full_rows = needs_full_rows(job),
                                   .kept = job->opts->topk > 0 ? job->opts->topk + 1 : 0,
                                   .block_rows = OC_SPARSE_BLOCK_ROWS};
    int t = threads;
    double resident = held_bytes(job->a) + (job->symmetric ? 0.0 : held_bytes(job->b));
    if (job->opts->topk > 0) resident += (double)job->n * (double)(job->opts->topk + 1) * 8.0;
    const double share = job->host_budget > 0 ? ((double)job->host_budget - resident) / 2 : INFINITY;
    while (t > 0 && oc_sparse_peak_bytes(&sizes, t) > share) --t;
    plan->threads = t;
    plan->peak_bytes = oc_sparse_peak_bytes(&sizes, t > 0 ? t : 1);
    *least_budget = resident + 2 * oc_sparse_peak_bytes(&sizes, 1);
    return share;
}

/* The bytes of the sparse path's tables of every column. */
static double column_table_bytes(const oc_gram_job *job)
{
    return (double)job->m * (double)(COLUMN_TABLE_BYTES + (job->symmetric ? 0 : 8));
}

oc_status oc_gram_sparse_tables_check(oc_context *ctx, const oc_gram_job *job)
{
    const double column_bytes = column_table_bytes(job);
    if (job->host_budget <= 0 || column_bytes <= (double)job->host_budget / 2) return OC_OK;
    return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                   "the sparse algorithm's tables of %lld columns take %.3g GB, more than half the host budget of "
                   "%.3g GB: use --algorithm dense (or auto), or raise --host-mem",
                   (long long)job->m, column_bytes / 1e9, (double)job->host_budget / 1e9);
}

oc_status oc_gram_choose_algorithm(oc_context *ctx, const oc_gram_job *job, const oc_cost_rates *rates,
                                   double gpu_dense_seconds, oc_sparse_plan *plan)
{
    const int gpu = gpu_dense_seconds >= 0;
    memset(plan, 0, sizeof *plan);
    plan->sparse_seconds = plan->dense_seconds = -1;
    const oc_algorithm want = job->opts->algorithm;
    char names[64];
    if ((unsigned)want >= OC_ALGORITHM_COUNT)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "unknown algorithm %d (%s)", (int)want,
                       oc_names_text(OC_NAMES_ALGORITHMS, names, sizeof names));
    if (want == OC_ALGORITHM_SPARSE && job->opts->backend == OC_BACKEND_CUDA)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "the sparse algorithm runs on the CPU: drop --backend cuda, or "
                       "choose --algorithm dense or auto");
    const double threads = oc_threads_resolve(job->opts->threads);
    const double n = (double)job->n, p = (double)job->p, m = (double)job->m;
    const double pairs = job->symmetric ? n * (n + 1) / 2 : n * p;
    /* The table's CPU rate is of all its cores; the job may use fewer threads. */
    const double core_rate = rates->cpu[OC_COST_BIT_MAC] / (rates->cpu_cores > 0 ? rates->cpu_cores : 1);
    plan->dense_seconds = gpu ? gpu_dense_seconds : pairs * (m / core_rate + COST_DENSE_ELEMENT) / threads;
    if (want == OC_ALGORITHM_DENSE) {
        oc_snprintf(plan->explain, sizeof plan->explain, "dense (asked); predicted %.3g s", plan->dense_seconds);
        return OC_OK;
    }
    /* A file-backed input reaches the sparse path only as a lists copy (matrix.h), which
     * oc_gram makes when the sparse algorithm is asked for; auto does not build one. */
    if (job->opts->backend == OC_BACKEND_CUDA) { /* asked for the GPU: auto keeps the job there */
        oc_snprintf(plan->explain, sizeof plan->explain,
                    "dense: --backend cuda (the sparse algorithm runs on the CPU); dense predicted %.3g s",
                    plan->dense_seconds);
        return OC_OK;
    }
    if (oc_matrix_file_backed(job->a) || oc_matrix_file_backed(job->b)) {
        oc_snprintf(plan->explain, sizeof plan->explain,
                    "dense: an input is read from its file in panels (--host-mem); --algorithm sparse reads it "
                    "into row lists first; dense predicted %.3g s",
                    plan->dense_seconds);
        return OC_OK;
    }

    /* The sparse path's plan holds tables of every column: past half the host budget they are
     * refused, and auto keeps the dense path, which holds nothing per column (a matrix of 2^31
     * columns and a few ones). */
    const double column_bytes = column_table_bytes(job);
    if (job->host_budget > 0 && column_bytes > (double)job->host_budget / 2) {
        if (want == OC_ALGORITHM_SPARSE) return oc_gram_sparse_tables_check(ctx, job);
        oc_snprintf(plan->explain, sizeof plan->explain,
                    "dense: the sparse path's tables of %lld columns (%.3g GB) exceed half the host budget; dense "
                    "predicted %.3g s",
                    (long long)job->m, column_bytes / 1e9, plan->dense_seconds);
        return OC_OK;
    }
    /* The density from the row popcounts when the job has them; else the column counts
     * answer it (the matrix is then sparse enough to walk, or the walk stops early). */
    int64_t *ca = malloc((size_t)job->m * sizeof *ca), *cb = job->symmetric ? ca : malloc((size_t)job->m * sizeof *cb);
    if (!ca || !cb) {
        free(ca);
        if (cb != ca) free(cb);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the column counts of %lld columns", (long long)job->m);
    }
    oc_status st = OC_OK;
    double ones = 0;
    if (job->pop_a) {
        for (int64_t i = 0; i < job->n; ++i) ones += (double)job->pop_a[i];
    } else if (job->a->csr_ptr) {
        ones = (double)job->a->csr_ptr[job->n];
    } else if (want == OC_ALGORITHM_AUTO) {
        /* Counts jobs (and GPU jobs, which count on the device) have no popcounts here: a
         * sample of evenly spaced rows estimates the density without a pass over A, which
         * would cost as much as a short GPU job. Long rows are sampled fewer (a sample of
         * thousands of long rows took as long as a whole large GPU job); the
         * estimate only chooses an algorithm, both give the same bytes. */
        const int64_t words = job->a->words_per_row;
        int64_t rows = words > 0 ? SAMPLE_WORDS / words : SAMPLE_ROWS;
        rows = rows < SAMPLE_MIN_ROWS ? SAMPLE_MIN_ROWS : rows > SAMPLE_ROWS ? SAMPLE_ROWS : rows;
        const int64_t step = job->n > rows ? job->n / rows : 1;
        double sampled = 0;
        for (int64_t i = 0; i < job->n; i += step, sampled += 1)
            for (int64_t w = 0; w < words; ++w) ones += __builtin_popcountll(job->a->bits[i * words + w]);
        ones *= n / sampled;
    }
    double density = ones / (n * m);
    if (want == OC_ALGORITHM_AUTO && density > MAX_SPARSE_DENSITY) {
        oc_snprintf(plan->explain, sizeof plan->explain,
                    "dense: density %.3g is above %.3g, where the sparse path cannot win; dense predicted %.3g s",
                    density, MAX_SPARSE_DENSITY, plan->dense_seconds);
        goto cleanup;
    }
    /* The plan's tables alone cost m * COST_COLUMN (one thread): where that outlasts the dense
     * path, auto takes it without building them. */
    if (want == OC_ALGORITHM_AUTO && m * COST_COLUMN > plan->dense_seconds) {
        oc_snprintf(plan->explain, sizeof plan->explain,
                    "dense: the sparse path's plan of %lld columns alone (%.3g s) outlasts the dense path's %.3g s",
                    (long long)job->m, m * COST_COLUMN, plan->dense_seconds);
        goto cleanup;
    }
    oc_matrix_col_counts(job->a, ca);
    if (!job->symmetric) oc_matrix_col_counts(job->b, cb);
    OC_CHECK_GOTO(ctx, st, plan_hubs(ctx, job, ca, cb, plan, threads), cleanup);
    density = plan->ones_a / (n * m);
    /* The index and the workers' row buffers within the budget: fewer workers, else the
     * dense path (which holds a tile a worker), or a refusal of the sparse one asked for. */
    const int64_t blocks = (job->n + OC_SPARSE_BLOCK_ROWS - 1) / OC_SPARSE_BLOCK_ROWS;
    const int most = threads > (double)blocks ? (int)(blocks > 0 ? blocks : 1) : (int)threads;
    double least = 0;
    const double share = fit_threads(job, plan, most, &least);
    const int budget_capped = plan->threads < most;
    if (plan->threads == 0) {
        if (want == OC_ALGORITHM_SPARSE) {
            st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                         "the sparse algorithm needs %.1f MiB for its index of the rows and one worker's row buffers, "
                         "more than the %.1f MiB the host budget of %.1f MiB leaves it (half, after the inputs held "
                         "in memory and the top-k lists): use --algorithm dense (or auto), or raise --host-mem to at "
                         "least %.0fM",
                         plan->peak_bytes / MIB, share > 0 ? share / MIB : 0.0, (double)job->host_budget / MIB,
                         ceil(least / MIB));
            goto cleanup;
        }
        oc_snprintf(plan->explain, sizeof plan->explain,
                    "dense: the sparse path's index and one worker's row buffers (%.1f MiB) exceed the %.1f MiB the "
                    "host budget leaves them; dense predicted %.3g s",
                    plan->peak_bytes / MIB, share > 0 ? share / MIB : 0.0, plan->dense_seconds);
        goto cleanup;
    }
    /* The prediction's parallel part on the workers that run. */
    const double serial = m * COST_COLUMN;
    plan->sparse_seconds = (plan->sparse_seconds - serial) * threads / plan->threads + serial;
    plan->use_sparse = want == OC_ALGORITHM_SPARSE || plan->sparse_seconds < plan->dense_seconds;
    oc_snprintf(
        plan->explain, sizeof plan->explain,
        "%s%s: predicted sparse %.3g s (density %.3g, %.3g pair updates, %lld hub columns in ~%.0f x %.0f rows, "
        "%d thread%s%s), dense %.3g s (%s)",
        plan->use_sparse ? "sparse" : "dense", want == OC_ALGORITHM_SPARSE ? " (asked)" : "", plan->sparse_seconds,
        density, plan->pair_updates, (long long)plan->hubs, plan->hub_rows_a, plan->hub_rows_b, plan->threads,
        plan->threads == 1 ? "" : "s", budget_capped ? ", as many as the host budget holds" : "", plan->dense_seconds,
        gpu ? "gpu" : "cpu");
cleanup:
    free(ca);
    if (cb != ca) free(cb);
    return st;
}

void oc_sparse_plan_free(oc_sparse_plan *plan)
{
    if (!plan) return;
    free(plan->hub_cols);
    plan->hub_cols = NULL;
}
