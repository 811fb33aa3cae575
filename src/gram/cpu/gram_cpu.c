/*
 * gram_cpu.c - the CPU backend: cache-blocked, multi-threaded Gram tiles on the micro-kernel
 * that src/core/isa.c chose.
 *
 * Blocking (BLIS order, without packing: rows are already contiguous, 64-byte aligned and
 * zero padded, which is all the kernels need):
 *
 *   task = one output tile (I, J) of T x T rows       (for A·Aᵀ only tiles with J >= I)
 *     for each K block of KC words                    (long rows: the A tile's block stays in L2)
 *       for each B micro-panel of NR rows             (NR x KC words: stays in L1 while ...)
 *         kernel: for each A micro-panel of MR rows   (... it meets every A micro-panel of the tile)
 *           MR x NR x KC += into the tile's uint32 accumulator
 *     epilogue (metric, dtype; the same ISA's, kernel.h) into the worker's tile buffer, then
 *     the dense sink, or the top-k / threshold selection (src/gram/select/select.h), which the
 *     worker runs on the tile while it is still in its caches (jaccard top-k takes the
 *     counts themselves once the tile's lists have floors: no epilogue, see select_topk.c).
 *
 * With T = 240 and KC = 512 words the A tile's K block is 960 KiB (half the 2 MiB L2 of the
 * machines this was tuned on) and a B micro-panel of 6 rows is 24 KiB (half a 48 KiB L1).
 * In a diagonal tile, micro-tiles wholly below the diagonal are skipped: the sink reads only
 * the upper part of such a tile and mirrors it.
 *
 * Tasks are tiles handed out by oc_parallel_run in row-major order, so the workers share the
 * A tile of the current row in the L3 cache; each worker owns its accumulator and output
 * buffers, and tiles never overlap in the sink, so no task takes a lock.
 *
 * Panels (file-backed inputs, matrix.h): the tasks read rows from cj->a_rows and b_rows, the
 * resident matrix itself or a panel of whole tiles loaded from the file. The tiles are
 * ordered panel pair by panel pair (A panel I, B panel J; J >= I for A·Aᵀ), row-major inside
 * a pair, and each pair's tiles run on all threads once both panels are loaded. Resident
 * inputs make one pair that covers everything: the order and the work of an in-memory job.
 * Panels share the host budget with what the job keeps (gram_cpu_panels.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/text_buf.h"
#include "core/threads.h"
#include "gram/backend.h"
#include "gram/gram_resume.h"
#include "gram/select/select.h"
#include "gram/cpu/gram_cpu_panels.h"
#include "core/isa.h"
#include "gram/cpu/kernels/kernel.h"
#include "gram/cpu/gram_cpu.h"

#define TILE_DEFAULT 240   /* a multiple of every ISA's MR and NR (4 x 6, 2 x 3, 4 x 4) */
#define TILE_MIN_AUTO 24   /* the planner does not shrink tiles below this for balance */
#define K_BLOCK_WORDS 512  /* see the top comment; kernel.h needs K_BLOCK_WORDS * 64 < 2^32 */
#define TASKS_PER_THREAD 4 /* enough tiles for dynamic scheduling to even out the threads */

_Static_assert(K_BLOCK_WORDS % OC_KERNEL_K_WORDS == 0 && K_BLOCK_WORDS * 64ull < (1ull << 32),
               "kernel.h: kw is a multiple of 8 words and one call's counts fit 32 bits");

typedef struct cpu_worker {
    uint32_t *acc;   /* T x T accumulator, row stride T */
    void *out;       /* T x T converted tile (NULL when counts go out as they are) */
    double bit_macs; /* what this worker's kernel calls did */
    char pad[64];    /* keeps workers' counters on separate cache lines */
} cpu_worker;

typedef struct cpu_job {
    const oc_gram_job *job;
    const uint64_t *a_rows; /* rows a_row0.. of A: a resident matrix's bits or a panel */
    const uint64_t *b_rows; /* likewise for B */
    int64_t a_row0, b_row0;
    int64_t task_base; /* threshold jobs run in groups of row blocks: the group's first task */
    const oc_cpu_kernel *kernel;
    oc_epilogue_kind epilogue; /* used when the result is not the int32 counts themselves */
    int64_t tile;              /* T */
    int64_t tiles_j;           /* tiles along p */
    int32_t *task_tiles;       /* (I, J) per task */
    cpu_worker *workers;
} cpu_job;

static int cpu_usable(int device)
{
    (void)device;
    return 1;
}

/* Tiles of edge t for this job. */
static int64_t count_tasks(const oc_gram_job *job, int64_t t)
{
    int64_t ti = (job->n + t - 1) / t, tj = (job->p + t - 1) / t;
    return job->symmetric ? ti * (ti + 1) / 2 : ti * tj;
}

/* The tile edge: forced by opts->tile, else TILE_DEFAULT halved while the job has too few
 * tiles to keep every thread busy. */
static int64_t choose_tile(const oc_gram_job *job, int threads)
{
    /* A resumed job keeps the tiles its journal counts. */
    if (oc_resume_tile_edge(job->resume) > 0) return oc_resume_tile_edge(job->resume);
    if (job->opts->tile > 0) {
        /* A tile larger than the result is the whole result: do not allocate for more. */
        int64_t whole = job->n > job->p ? job->n : job->p;
        return job->opts->tile < whole ? job->opts->tile : whole;
    }
    int64_t t = TILE_DEFAULT;
    while (t / 2 >= TILE_MIN_AUTO && count_tasks(job, t) < (int64_t)TASKS_PER_THREAD * threads) t /= 2;
    return t;
}

/* What the epilogue makes of the counts: the job's metric in its result dtype. */
oc_epilogue_kind oc_cpu_epilogue_kind(const oc_gram_job *job)
{
    switch (job->metric) {
    case OC_METRIC_COUNTS:
        break; /* uint16; int32 counts are the accumulator itself */
    case OC_METRIC_JACCARD:
        return OC_EPILOGUE_JACCARD;
    case OC_METRIC_COSINE:
        return OC_EPILOGUE_COSINE;
    case OC_METRIC_HAMMING:
        return job->dtype == OC_DTYPE_UINT16 ? OC_EPILOGUE_HAMMING_U16 : OC_EPILOGUE_HAMMING_I32;
    case OC_METRIC_COUNT:
        break; /* not a metric: oc_gram checked the job's */
    }
    return OC_EPILOGUE_COUNTS_U16;
}

static oc_status compute_tile(cpu_job *cj, int64_t i0, int64_t j0, int worker)
{
    const oc_gram_job *job = cj->job;
    const oc_cpu_kernel *k = cj->kernel;
    cpu_worker *w = &cj->workers[worker];
    const int64_t t = cj->tile, ld = t;
    const int64_t rows = job->n - i0 < t ? job->n - i0 : t, cols = job->p - j0 < t ? job->p - j0 : t;
    const int diagonal = job->symmetric && i0 == j0;
    const int64_t lda = job->a->words_per_row, ldb = job->b->words_per_row;
    int64_t pairs = 0; /* row pairs the kernel computed in the first K block (every block alike) */

    memset(w->acc, 0, (size_t)(rows * ld) * sizeof *w->acc);
    for (int64_t k0 = 0; k0 < lda; k0 += K_BLOCK_WORDS) {
        const int64_t kw = lda - k0 < K_BLOCK_WORDS ? lda - k0 : K_BLOCK_WORDS;
        for (int64_t jr = 0; jr < cols; jr += k->nr) {
            const int nr = (int)(cols - jr < k->nr ? cols - jr : k->nr);
            const uint64_t *b = cj->b_rows + (j0 + jr - cj->b_row0) * ldb + k0;
            /* One call for the tile's rows against this B micro-panel. In a diagonal tile
             * it stops after the micro-tile holding the panel's last column: rows below
             * it only get further below, the mirror's half. */
            const int64_t below = (jr + nr - 1) / k->mr * k->mr + k->mr;
            const int64_t strip = diagonal && below < rows ? below : rows;
            k->fn(cj->a_rows + (i0 - cj->a_row0) * lda + k0, lda, b, ldb, kw, (int)strip, nr, w->acc + jr, ld);
            if (k0 == 0) pairs += strip * nr;
        }
    }
    w->bit_macs += (double)pairs * (double)lda * 64.0;

    /* int32 counts are the accumulator itself (every count <= m <= INT32_MAX, checked). */
    const void *result = w->acc;
    /* Jaccard top-k selects from the counts once the tile's lists have floors: only the
     * elements that may enter a list get a score (select_topk.c), not every one. */
    if (job->select && !job->dense && job->pop_a && job->pop_b &&
        oc_select_tile_counts(job->select, worker, i0, j0, rows, cols, w->acc, ld, job->pop_a + i0, job->pop_b + j0))
        return OC_OK;
    if (w->out) {
        /* counts never read the popcounts, and have none; every popcount and count is <= m */
        k->epilogue(cj->epilogue, w->acc, ld, job->pop_a ? job->pop_a + i0 : NULL, job->pop_b ? job->pop_b + j0 : NULL,
                    rows, cols, job->m, w->out, ld);
        result = w->out;
    }
    if (job->dense) oc_dense_sink_store(job->dense, i0, j0, rows, cols, result, ld);
    if (job->select) return oc_select_tile(job->select, worker, i0, j0, rows, cols, result, ld);
    return OC_OK;
}

/* One task: a tile, unless a resumed job's journal has it already. */
static oc_status gram_tile(void *arg, int64_t task, int worker)
{
    cpu_job *cj = arg;
    const oc_gram_job *job = cj->job;
    task += cj->task_base;
    const int64_t I = cj->task_tiles[2 * task], J = cj->task_tiles[2 * task + 1];
    if (job->resume && oc_resume_skip(job->resume, I, J)) return OC_OK;
    /* Tasks do not write ctx: a failure's message is the selection's (select_failure). */
    oc_status st = compute_tile(cj, I * cj->tile, J * cj->tile, worker);
    if (st == OC_OK && job->resume) oc_resume_tile_done(job->resume, job, I, J);
    return st;
}

/* Progress of one group of tasks as a part of the whole job, on one pace for all groups. */
typedef struct group_progress {
    const oc_gram_options *opts;
    double before, total;
    oc_progress_pace pace; /* reports through report_group */
} group_progress;

static void report_group(void *user, double done, double total)
{
    (void)total;
    const group_progress *g = user;
    g->opts->progress(g->opts->progress_user, g->before + done, g->total);
}

/* A task's failure inside the selection left its message there (tasks do not write ctx). */
static oc_status select_failure(oc_context *ctx, oc_select *sel, oc_status st)
{
    oc_status inner = oc_select_check(ctx, sel);
    return inner != OC_OK ? inner : st;
}

/* Runs tasks [first, first + count) on up to `threads` threads, progress counted on from gp. */
static oc_status run_range_once(oc_context *ctx, cpu_job *cj, int threads, int64_t first, int64_t count,
                                const int64_t *weights, group_progress *gp)
{
    const oc_gram_job *job = cj->job;
    cj->task_base = first;
    oc_status st =
        oc_parallel_run(ctx, threads < count ? threads : (int)count, count, gram_tile, cj, weights + first, &gp->pace);
    if (st != OC_OK) return job->select ? select_failure(ctx, job->select, st) : st;
    for (int64_t k = first; k < first + count; ++k) gp->before += (double)weights[k];
    return OC_OK;
}

/* Runs tasks [first, first + count); a resumable job runs them in groups and checkpoints its
 * journal between groups, where no tile is in flight (gram_resume.h). */
static oc_status run_range(oc_context *ctx, cpu_job *cj, int threads, int64_t first, int64_t count,
                           const int64_t *weights, group_progress *gp)
{
    const oc_gram_job *job = cj->job;
    if (!job->resume) return run_range_once(ctx, cj, threads, first, count, weights, gp);
    const int64_t group = oc_resume_group_tiles(job->resume, threads);
    const int pairs = job->select && oc_select_get_mode(job->select) == OC_SELECT_PAIRS;
    for (int64_t done = 0; done < count; done += group) {
        oc_status st =
            run_range_once(ctx, cj, threads, first + done, count - done < group ? count - done : group, weights, gp);
        /* Cancelled (Ctrl-C): every tile that finished goes on record before the job stops. */
        if (st == OC_ERR_CANCELLED && !pairs) (void)oc_resume_checkpoint(ctx, job->resume, job, 1);
        if (st != OC_OK) return st;
        /* A threshold job's pairs are on record only once drained: its caller checkpoints. */
        if (!pairs) OC_CHECK(ctx, oc_resume_checkpoint(ctx, job->resume, job, 0));
    }
    return OC_OK;
}

/* Threshold pairs delivered in order, then on record for a resumable job. */
static oc_status drain_pairs(oc_context *ctx, const oc_gram_job *job)
{
    OC_CHECK(ctx, oc_select_drain(ctx, job->select));
    return job->resume ? oc_resume_checkpoint(ctx, job->resume, job, 0) : OC_OK;
}

/* Runs one panel pair's tasks. Threshold pairs must leave in row order from the caller's
 * thread: when B is one panel, the pair runs in groups of whole row blocks (enough tiles per
 * group to keep every thread busy), and the caller delivers each group's pairs before the
 * next group starts, so pairs wait in memory (or spill) for one group at most. With several
 * B panels the rows are complete only after the last one: run_tasks drains then. */
static oc_status run_pair(oc_context *ctx, cpu_job *cj, int threads, const oc_cpu_panel_plan *pp, int64_t first,
                          int64_t end, const int64_t *weights, group_progress *gp)
{
    const oc_gram_job *job = cj->job;
    if (!job->select || oc_select_get_mode(job->select) != OC_SELECT_PAIRS || pp->b_count > 1)
        return run_range(ctx, cj, threads, first, end - first, weights, gp);
    const int64_t want = job->resume ? oc_resume_group_tiles(job->resume, threads) : 32 * (int64_t)threads;
    for (int64_t task = first; task < end;) {
        int64_t count = 0;
        /* A row block's tiles are consecutive, all of them in this pair (B is one panel). */
        for (int64_t b = cj->task_tiles[2 * task]; task + count < end && count < want; ++b)
            count += job->symmetric ? cj->tiles_j - b : cj->tiles_j;
        OC_CHECK(ctx, run_range(ctx, cj, threads, task, count, weights, gp));
        OC_CHECK(ctx, drain_pairs(ctx, job));
        task += count;
    }
    return OC_OK;
}

/* Loads the panels pair by pair and runs their tiles. */
static oc_status run_tasks(oc_context *ctx, cpu_job *cj, int threads, const oc_cpu_panel_plan *pp,
                           const int64_t *pair_first, const int64_t *weights, uint64_t *a_buf, uint64_t *b_buf,
                           int64_t ntasks)
{
    const oc_gram_job *job = cj->job;
    double total = 0;
    for (int64_t k = 0; k < ntasks; ++k) total += (double)weights[k];
    group_progress gp = {.opts = job->opts, .total = total};
    gp.pace = oc_progress_pace_start(job->opts->progress ? report_group : NULL, &gp);
    const int pairs_out = job->select && oc_select_get_mode(job->select) == OC_SELECT_PAIRS;
    int64_t pair = 0;
    cj->a_rows = job->a->bits;
    cj->b_rows = job->b->bits;
    for (int64_t pi = 0; pi < pp->a_count; ++pi) {
        const int64_t a0 = pi * pp->a_rows, an = job->n - a0 < pp->a_rows ? job->n - a0 : pp->a_rows;
        if (pp->a_file) {
            OC_CHECK(ctx, oc_matrix_load_rows_parallel(ctx, job->a, a0, an, a_buf, threads));
            cj->a_rows = a_buf;
            cj->a_row0 = a0;
        }
        for (int64_t pj = job->symmetric ? pi : 0; pj < pp->b_count; ++pj, ++pair) {
            const int64_t b0 = pj * pp->b_rows, bn = job->p - b0 < pp->b_rows ? job->p - b0 : pp->b_rows;
            if (job->symmetric && pj == pi) {
                cj->b_rows = cj->a_rows;
                cj->b_row0 = cj->a_row0;
            } else if (job->symmetric ? pp->a_file : pp->b_file) {
                /* A·Aᵀ's column panel, or B's panel. */
                OC_CHECK(ctx, oc_matrix_load_rows_parallel(ctx, job->b, b0, bn, b_buf, threads));
                cj->b_rows = b_buf;
                cj->b_row0 = b0;
            }
            OC_CHECK(ctx, run_pair(ctx, cj, threads, pp, pair_first[pair], pair_first[pair + 1], weights, &gp));
        }
        if (pairs_out && pp->b_count > 1) OC_CHECK(ctx, drain_pairs(ctx, job));
    }
    gp.before = 0; /* the job's final report: all of it as one group */
    oc_progress_report(&gp.pace, total, total, 1);
    return OC_OK;
}

static oc_status cpu_gram(oc_gram_job *job)
{
    oc_context *ctx = job->ctx;
    oc_status st = OC_OK;
    const oc_cpu_kernel *kernel = oc_cpu_kernel_get();
    int threads = oc_threads_resolve(job->opts->threads);
    cpu_job cj = {.job = job, .kernel = kernel, .epilogue = oc_cpu_epilogue_kind(job)};
    int64_t *weights = NULL, *pair_first = NULL;
    uint64_t *a_buf = NULL, *b_buf = NULL;
    oc_cpu_panel_plan pp = {0};

    /* The kernels accumulate in uint32, and int32 results must hold every count. */
    if (job->m > (int64_t)UINT32_MAX || (job->dtype == OC_DTYPE_INT32 && job->m > INT32_MAX))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "%s has %lld columns: the CPU backend counts at most %lld (%s results)", job->a->name,
                       (long long)job->m, job->dtype == OC_DTYPE_INT32 ? (long long)INT32_MAX : (long long)UINT32_MAX,
                       oc_dtype_name(job->dtype));

    cj.tile = choose_tile(job, threads);
    const int64_t t = cj.tile, tiles_i = (job->n + t - 1) / t;
    cj.tiles_j = (job->p + t - 1) / t;
    const int64_t ntasks = count_tasks(job, t);
    if (threads > ntasks) threads = (int)ntasks;

    int64_t tile_elems;
    if (!oc_mul_i64(t, t, &tile_elems) || tile_elems > INT64_MAX / 8 || t > INT32_MAX || tiles_i > INT32_MAX ||
        cj.tiles_j > INT32_MAX)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "tile edge %lld does not fit this job (too large, or too many tiles)", (long long)t);
    OC_CHECK(ctx, oc_cpu_plan_panels(ctx, job, t, threads, &pp));
    const int64_t npairs = job->symmetric ? pp.a_count * (pp.a_count + 1) / 2 : pp.a_count * pp.b_count;
    cj.task_tiles = malloc((size_t)ntasks * 2 * sizeof *cj.task_tiles);
    weights = malloc((size_t)ntasks * sizeof *weights);
    pair_first = malloc((size_t)(npairs + 1) * sizeof *pair_first);
    cj.workers = calloc((size_t)threads, sizeof *cj.workers);
    if (!cj.task_tiles || !weights || !pair_first || !cj.workers) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cpu backend: cannot allocate the plan of %lld tiles", (long long)ntasks);
        goto cleanup;
    }
    if (pp.a_bytes) a_buf = aligned_alloc(64, (size_t)pp.a_bytes);
    if (pp.b_bytes) b_buf = aligned_alloc(64, (size_t)pp.b_bytes);
    if ((pp.a_bytes && !a_buf) || (pp.b_bytes && !b_buf)) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cpu backend: cannot allocate row panels of %lld and %lld bytes",
                     (long long)pp.a_bytes, (long long)pp.b_bytes);
        goto cleanup;
    }
    const int convert = oc_cpu_tile_converts(job);
    const size_t tile_bytes = ((size_t)tile_elems * 4 + 63) / 64 * 64;
    for (int i = 0; i < threads; ++i) {
        cj.workers[i].acc = aligned_alloc(64, tile_bytes);
        cj.workers[i].out = convert ? aligned_alloc(64, tile_bytes) : NULL;
        if (!cj.workers[i].acc || (convert && !cj.workers[i].out)) {
            st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cpu backend: cannot allocate %zu-byte tile buffers for %d threads",
                         tile_bytes, threads);
            goto cleanup;
        }
    }
    oc_cpu_order_tasks(job, &pp, t, cj.task_tiles, weights, pair_first);

    if (job->select) OC_CHECK_GOTO(ctx, st, oc_select_begin(ctx, job->select, t, threads), cleanup);
    if (job->resume) OC_CHECK_GOTO(ctx, st, oc_resume_begin(ctx, job->resume, job, t), cleanup);
    OC_CHECK_GOTO(ctx, st, run_tasks(ctx, &cj, threads, &pp, pair_first, weights, a_buf, b_buf, ntasks), cleanup);

    double macs = 0;
    for (int i = 0; i < threads; ++i) macs += cj.workers[i].bit_macs;
    const char *note = oc_cpu_isa_note();
    job->stats->backend = OC_BACKEND_CPU;
    snprintf(job->stats->backend_desc, sizeof job->stats->backend_desc, "cpu %s %d thread%s%s%s%s", kernel->name,
             threads, threads == 1 ? "" : "s", *note ? " (" : "", note, *note ? ")" : "");
    job->stats->bit_macs_computed = macs;
    job->stats->threads = threads;
    if (job->select) snprintf(job->stats->select_desc, sizeof job->stats->select_desc, "cpu");
    job->stats->tiles = ntasks;

cleanup:
    if (cj.workers)
        for (int i = 0; i < threads; ++i) {
            free(cj.workers[i].acc);
            free(cj.workers[i].out);
        }
    free(cj.workers);
    free(cj.task_tiles);
    free(weights);
    free(pair_first);
    free(a_buf);
    free(b_buf);
    return st;
}

/* The CPU plan: the kernel, the tile edge, the tasks the threads share, and the row panels
 * under the host budget (one pair when the inputs are in memory). */
static oc_status cpu_plan(oc_gram_job *job, int json, char **out)
{
    oc_context *ctx = job->ctx;
    const int asked = oc_threads_resolve(job->opts->threads);
    const int64_t t = choose_tile(job, asked), tasks = count_tasks(job, t);
    /* cpu_gram runs no more workers than tiles. */
    const int threads = asked > tasks ? (int)tasks : asked;
    const char *isa = oc_cpu_kernel_get()->name;
    oc_cpu_panel_plan pp;
    OC_CHECK(ctx, oc_cpu_plan_panels(ctx, job, t, threads, &pp));
    oc_text text = {0};
    if (json) {
        oc_text_printf(&text,
                       "{\"where\": \"cpu\", \"kernel\": \"%s\", \"threads\": %d, \"tile\": %lld, \"tiles\": %lld, "
                       "\"host_budget\": %lld, \"panel_rows_a\": %lld, \"panels_a\": %lld, \"panel_rows_b\": %lld, "
                       "\"panels_b\": %lld, \"panel_bytes\": %lld, \"tile_buffer_bytes\": %lld}\n",
                       isa, threads, (long long)t, (long long)tasks, (long long)job->host_budget, (long long)pp.a_rows,
                       (long long)pp.a_count, (long long)pp.b_rows, (long long)pp.b_count,
                       (long long)(pp.a_bytes + pp.b_bytes), (long long)pp.tile_bytes);
    } else {
        oc_text_printf(&text, "plan for cpu (%s kernels)\n  tiles    %lld x %lld rows: %lld tiles%s\n", isa,
                       (long long)t, (long long)t, (long long)tasks, job->symmetric ? " (upper triangle)" : "");
        if (pp.a_file || pp.b_file)
            oc_text_printf(&text,
                           "  host     budget %.1f MiB: inputs read from their files in panels of %lld (A) and %lld "
                           "(B) rows, %lld x %lld panels, %.1f MiB of panel buffers\n",
                           (double)job->host_budget / 1048576.0, (long long)pp.a_rows, (long long)pp.b_rows,
                           (long long)pp.a_count, (long long)pp.b_count, (double)(pp.a_bytes + pp.b_bytes) / 1048576.0);
        else
            oc_text_printf(&text, "  host     budget %.1f MiB: the inputs are in memory\n",
                           (double)job->host_budget / 1048576.0);
        if (pp.tile_bytes)
            oc_text_printf(&text, "  tiles    %.1f MiB of the budget for the workers' tile buffers\n",
                           (double)pp.tile_bytes / 1048576.0);
        if (threads < asked) oc_text_printf(&text, "  threads  %d workers (one per tile: %d asked)\n", threads, asked);
        else oc_text_printf(&text, "  threads  %d workers\n", threads);
    }
    return oc_text_finish(ctx, &text, out);
}

const oc_backend_vtbl oc_backend_cpu = {OC_BACKEND_ABI, "cpu", cpu_usable, cpu_gram, 0, cpu_plan};
