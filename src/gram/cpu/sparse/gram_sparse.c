/*
 * gram_sparse.c - the CPU backend's sparse algorithm: whole rows, one at a time per worker,
 * from the column lists of src/gram/cpu/sparse/sparse_index.h (the row's algorithm: sparse_rows.h).
 *
 *   plan (gram/gram_choice.c: the hub columns) -> index (CSR of A, CSC of B, hub words)
 *   task = a block of OC_SPARSE_BLOCK_ROWS rows of A; each worker owns a p-long accumulator
 *     top-k      each row's list straight into the selection's key lists (rows are
 *                independent: no lock, no mirror; A·Aᵀ rows are computed whole)
 *     threshold  each block's pairs, in (row, col) order, to the selection in pieces of
 *                whole rows (oc_select_piece_pairs: a worker's buffer stays small); blocks
 *                run in groups and the caller's thread delivers each group in order
 *                (memory: one group's pairs, or the selection spills them)
 *     dense      each row converted by the dense path's epilogue, into the sink
 * The outputs are the dense path's bytes: scores come from metric.h or the same epilogue,
 * and the keys of select_key.h order them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/error.h"
#include "core/metric.h"
#include "core/threads.h"
#include "gram/backend.h"
#include "gram/gram_choice.h"
#include "gram/select/select.h"
#include "core/isa.h"
#include "gram/cpu/kernels/kernel.h"
#include "gram/cpu/sparse/sparse_rows.h"

#define BLOCKS_PER_GROUP 256 /* threshold: blocks computed before the caller delivers them */

typedef struct sparse_run {
    sparse_job sj;
    sparse_worker *workers;
    int64_t block_base; /* threshold: the group's first block */
    oc_select *select;
} sparse_run;

static int sparse_usable(int device)
{
    (void)device;
    return 1;
}

static oc_status block_task(void *arg, int64_t task, int worker)
{
    sparse_run *run = arg;
    const sparse_job *sj = &run->sj;
    sparse_worker *w = &run->workers[worker];
    const int64_t block = run->block_base + task, n = sj->job->n;
    const int64_t i0 = block * OC_SPARSE_BLOCK_ROWS,
                  end = i0 + OC_SPARSE_BLOCK_ROWS < n ? i0 + OC_SPARSE_BLOCK_ROWS : n;
    const int pairs = run->select && oc_select_get_mode(run->select) == OC_SELECT_PAIRS;
    int64_t piece = i0; /* threshold: the first row not handed over yet */
    w->pcount = 0;
    for (int64_t i = i0; i < end; ++i) {
        const int64_t before = w->pcount;
        /* Only growing the pairs buffers can fail: run_blocks reports it. */
        if (!(pairs && sj->pairs_pass_none) && oc_sparse_row(sj, w, i) != 0) return OC_ERR_NO_MEMORY;
        if (!pairs) continue;
        w->row_pairs[i - i0] = (uint32_t)(w->pcount - before);
        /* The block's rows go over in pieces, so a block of many pairs waits in the
         * selection (which spills past its buffer), not in this worker's buffers. */
        if (w->pcount >= sj->piece_pairs || i + 1 == end) {
            oc_status st = oc_select_add_pairs(run->select, piece, 0, i + 1 - piece, w->row_pairs + (piece - i0),
                                               w->pcols, w->pvals, w->pcount);
            if (st != OC_OK) return st;
            piece = i + 1, w->pcount = 0;
        }
    }
    return OC_OK;
}

static sparse_mode choose_mode(const oc_gram_job *job, const oc_select *sel)
{
    if (job->dense || !sel || !oc_metric_info_of(job->metric)->unshared_worst) return SPARSE_FULL;
    if (oc_select_get_mode(sel) == OC_SELECT_TOPK) return SPARSE_TOPK;
    /* A count of 0 scores 0 under counts, jaccard (non-empty rows) and cosine. */
    const oc_key_kind kind = oc_select_key_kind(sel);
    const uint64_t zero = kind == OC_KEY_F32 ? oc_key_f32(0.0f) : kind == OC_KEY_I32 ? oc_key_i32(0) : 0;
    return oc_select_min_key(sel) <= zero ? SPARSE_FULL : SPARSE_PAIRS;
}

/* The accumulator is read and written at random, a cache line per B row sharing a column:
 * in 2 MiB pages where the system gives them, its TLB misses go. Free with free(). */
static void *zeroed_pages(size_t bytes)
{
    void *ptr = NULL;
    const size_t huge = (size_t)2 << 20;
    if (bytes < huge) return calloc(1, bytes ? bytes : 1);
    if (posix_memalign(&ptr, huge, (bytes + huge - 1) / huge * huge) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    madvise(ptr, (bytes + huge - 1) / huge * huge, MADV_HUGEPAGE);
#endif
    memset(ptr, 0, bytes);
    return ptr;
}

static oc_status alloc_workers(oc_context *ctx, sparse_run *run, int threads, int64_t p)
{
    const sparse_job *sj = &run->sj;
    run->workers = calloc((size_t)threads, sizeof *run->workers);
    if (!run->workers) goto no_memory;
    for (int t = 0; t < threads; ++t) {
        sparse_worker *w = &run->workers[t];
        w->acc = zeroed_pages((size_t)p * sizeof *w->acc);
        w->touched = malloc((size_t)p * sizeof *w->touched);
        w->heap = malloc((size_t)(sj->kept ? sj->kept : 1) * sizeof *w->heap);
        w->sortbuf = malloc((size_t)p * sizeof *w->sortbuf);
        w->sortspare = malloc((size_t)p * sizeof *w->sortspare);
        w->row_pairs = malloc(OC_SPARSE_BLOCK_ROWS * sizeof *w->row_pairs);
        if (!w->acc || !w->touched || !w->heap || !w->sortbuf || !w->sortspare || !w->row_pairs) goto no_memory;
        if (sj->ix->pairs.post_hub) {
            w->touched_hub = malloc((size_t)p * sizeof *w->touched_hub);
            w->touched_pop = malloc((size_t)p * sizeof *w->touched_pop);
            if (!w->touched_hub || !w->touched_pop) goto no_memory;
        }
        if (sj->mode == SPARSE_FULL) {
            w->full = malloc((size_t)p * sizeof *w->full);
            w->out = sj->convert ? malloc((size_t)p * 4) : NULL;
            if (!w->full || (sj->convert && !w->out)) goto no_memory;
        }
    }
    return OC_OK;
no_memory:
    return oc_fail(ctx, OC_ERR_NO_MEMORY, "sparse path: cannot allocate row buffers of %lld columns for %d threads",
                   (long long)p, threads);
}

static void free_workers(sparse_run *run, int threads)
{
    if (!run->workers) return;
    for (int t = 0; t < threads; ++t) {
        sparse_worker *w = &run->workers[t];
        free(w->acc);
        free(w->touched);
        free(w->touched_hub);
        free(w->touched_pop);
        free(w->heap);
        free(w->sortbuf);
        free(w->sortspare);
        free(w->row_pairs);
        free(w->full);
        free(w->out);
        free(w->pcols);
        free(w->pvals);
    }
    free(run->workers);
}

/* A group's progress as the whole job's: the caller's callback sees the blocks of the job. */
typedef struct group_progress {
    oc_progress_fn fn;
    void *user;
    int64_t base, blocks;
    oc_progress_pace pace; /* one for all groups, through report_in_group */
} group_progress;

static void report_in_group(void *user, double done, double total)
{
    const group_progress *g = user;
    (void)total;
    g->fn(g->user, (double)g->base + done, (double)g->blocks);
}

/* Runs the blocks; threshold jobs in groups whose pairs the caller delivers in order. The
 * caller's progress is called through the groups as through one run (about ten times a
 * second, on one pace), and a cancel from it stops the job. */
static oc_status run_blocks(oc_context *ctx, sparse_run *run, int threads, int64_t blocks)
{
    const oc_gram_options *o = run->sj.job->opts;
    const int grouped = run->select && oc_select_get_mode(run->select) == OC_SELECT_PAIRS;
    const int64_t group = grouped ? BLOCKS_PER_GROUP : blocks;
    group_progress report = {.fn = o->progress, .user = o->progress_user, .blocks = blocks};
    report.pace = oc_progress_pace_start(o->progress ? report_in_group : NULL, &report);
    for (int64_t b = 0; b < blocks; b += group) {
        const int64_t count = blocks - b < group ? blocks - b : group;
        run->block_base = report.base = b;
        oc_status st =
            oc_parallel_run(ctx, threads < count ? threads : (int)count, count, block_task, run, NULL, &report.pace);
        if (st != OC_OK && run->select) {
            oc_status inner = oc_select_check(ctx, run->select);
            if (inner != OC_OK) return inner;
        }
        if (st == OC_ERR_NO_MEMORY) return oc_fail(ctx, st, "sparse path: cannot grow the buffers of threshold pairs");
        if (st != OC_OK) return st;
        if (grouped) OC_CHECK(ctx, oc_select_drain(ctx, run->select));
        /* A cancel that came while the group's pairs were delivered. */
        if (oc_cancelled(ctx)) return oc_fail(ctx, OC_ERR_CANCELLED, "cancelled");
    }
    report.base = 0; /* the job's final report: all of it as one group */
    oc_progress_report(&report.pace, (double)blocks, (double)blocks, 1);
    /* A cancel from it, as from any other report. */
    if (oc_cancelled(ctx)) return oc_fail(ctx, OC_ERR_CANCELLED, "cancelled");
    return OC_OK;
}

static oc_status sparse_gram(oc_gram_job *job)
{
    oc_context *ctx = job->ctx;
    const oc_sparse_plan *plan = job->sparse;
    if (!plan) return oc_fail(ctx, OC_ERR_INTERNAL, "sparse path: the job has no plan");
    if (job->n > OC_KEY_MAX_INDEX || job->p > OC_KEY_MAX_INDEX || job->m > INT32_MAX)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "sparse path: at most %lld rows and %lld columns",
                       (long long)OC_KEY_MAX_INDEX, (long long)INT32_MAX);
    int threads = oc_threads_resolve(job->opts->threads);
    const int64_t blocks = (job->n + OC_SPARSE_BLOCK_ROWS - 1) / OC_SPARSE_BLOCK_ROWS;
    if (threads > blocks) threads = (int)blocks;
    if (plan->threads > 0 && threads > plan->threads) threads = plan->threads; /* the host budget's */
    oc_sparse_index ix;
    OC_CHECK(ctx, oc_sparse_index_build(ctx, job->a, job->symmetric ? NULL : job->b, plan->hub_cols, plan->hubs,
                                        threads, &ix));

    sparse_run run = {.select = job->select};
    sparse_job *sj = &run.sj;
    *sj = (sparse_job){.job = job,
                       .ix = &ix,
                       .kernel = oc_cpu_kernel_get(),
                       .mode = choose_mode(job, job->select),
                       .epilogue = oc_cpu_epilogue_kind(job),
                       .elem = oc_dtype_size(job->dtype)};
    sj->convert = !(job->metric == OC_METRIC_COUNTS && job->dtype == OC_DTYPE_INT32);
    oc_status st = OC_OK;
    if (job->select) {
        sj->kind = oc_select_key_kind(job->select);
        OC_CHECK_GOTO(ctx, st, oc_select_begin_rows(ctx, job->select, OC_SPARSE_BLOCK_ROWS), cleanup);
        if (oc_select_get_mode(job->select) == OC_SELECT_TOPK) {
            sj->kept = oc_select_kept(job->select);
            sj->keys = oc_select_topk_keys(job->select);
        } else {
            const uint64_t mk = oc_select_min_key(job->select);
            sj->pairs_pass_none = mk > 0xFFFFFFFFu;
            sj->min_key = (uint32_t)mk;
            sj->piece_pairs = oc_select_piece_pairs(job->select, threads);
        }
    }
    OC_CHECK_GOTO(ctx, st, alloc_workers(ctx, &run, threads, job->p), cleanup);
    OC_CHECK_GOTO(ctx, st, run_blocks(ctx, &run, threads, blocks), cleanup);

    double updates = 0;
    for (int t = 0; t < threads; ++t) updates += run.workers[t].updates;
    const char *modes[] = {"top-k candidates", "threshold candidates", "full rows"};
    job->stats->backend = OC_BACKEND_CPU;
    snprintf(job->stats->backend_desc, sizeof job->stats->backend_desc, "cpu sparse %d thread%s, %s", threads,
             threads == 1 ? "" : "s", modes[sj->mode]);
    if (job->select) snprintf(job->stats->select_desc, sizeof job->stats->select_desc, "cpu (sparse rows)");
    job->stats->bit_macs_computed = updates;
    job->stats->threads = threads;
    job->stats->tiles = blocks;
cleanup:
    free_workers(&run, threads);
    oc_sparse_index_free(&ix);
    return st;
}

const oc_backend_vtbl oc_backend_cpu_sparse = {OC_BACKEND_ABI, "cpu-sparse", sparse_usable, sparse_gram, 0, NULL};
