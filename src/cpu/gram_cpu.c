/*
 * gram_cpu.c - the CPU backend: cache-blocked, multi-threaded Gram tiles on the micro-kernel
 * that src/cpu/isa.c chose.
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
 *     the dense sink, or the top-k / threshold selection (src/exec/select.h), which the
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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/threads.h"
#include "exec/backend.h"
#include "exec/select.h"
#include "cpu/isa.h"
#include "cpu/gram_cpu.h"

#define TILE_DEFAULT 240      /* a multiple of every ISA's MR and NR (4 x 6, 2 x 3, 4 x 4) */
#define TILE_MIN_AUTO 24      /* the planner does not shrink tiles below this for balance */
#define K_BLOCK_WORDS 512     /* see the top comment; kernel.h needs K_BLOCK_WORDS * 64 < 2^32 */
#define TASKS_PER_THREAD 4    /* enough tiles for dynamic scheduling to even out the threads */

_Static_assert(K_BLOCK_WORDS % OC_KERNEL_K_WORDS == 0 && K_BLOCK_WORDS * 64ull < (1ull << 32),
               "kernel.h: kw is a multiple of 8 words and one call's counts fit 32 bits");

typedef struct cpu_worker {
    uint32_t *acc;          /* T x T accumulator, row stride T */
    void *out;              /* T x T converted tile (NULL when counts go out as they are) */
    double bit_macs;        /* what this worker's kernel calls did */
    char pad[64];           /* keeps workers' counters on separate cache lines */
} cpu_worker;

typedef struct cpu_job {
    const oc_gram_job *job;
    int64_t task_base;      /* threshold jobs run in groups of row blocks: the group's first task */
    const oc_cpu_kernel *kernel;
    oc_epilogue_kind epilogue;  /* used when the result is not the int32 counts themselves */
    int64_t tile;           /* T */
    int64_t tiles_j;        /* tiles along p */
    int32_t *task_tiles;    /* (I, J) per task */
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
    case OC_METRIC_JACCARD: return OC_EPILOGUE_JACCARD;
    case OC_METRIC_COSINE: return OC_EPILOGUE_COSINE;
    case OC_METRIC_HAMMING: return job->dtype == OC_DTYPE_UINT16 ? OC_EPILOGUE_HAMMING_U16 : OC_EPILOGUE_HAMMING_I32;
    default: return OC_EPILOGUE_COUNTS_U16; /* int32 counts are the accumulator itself */
    }
}

static oc_status gram_tile(void *arg, int64_t task, int worker)
{
    cpu_job *cj = arg;
    const oc_gram_job *job = cj->job;
    const oc_cpu_kernel *k = cj->kernel;
    cpu_worker *w = &cj->workers[worker];
    const int64_t t = cj->tile, ld = t;
    task += cj->task_base;
    const int64_t i0 = cj->task_tiles[2 * task] * t, j0 = cj->task_tiles[2 * task + 1] * t;
    const int64_t rows = job->n - i0 < t ? job->n - i0 : t, cols = job->p - j0 < t ? job->p - j0 : t;
    const int diagonal = job->symmetric && i0 == j0;
    const int64_t lda = job->a->words_per_row, ldb = job->b->words_per_row;
    int64_t pairs = 0; /* row pairs the kernel computed in the first K block (every block alike) */

    memset(w->acc, 0, (size_t)(rows * ld) * sizeof *w->acc);
    for (int64_t k0 = 0; k0 < lda; k0 += K_BLOCK_WORDS) {
        const int64_t kw = lda - k0 < K_BLOCK_WORDS ? lda - k0 : K_BLOCK_WORDS;
        for (int64_t jr = 0; jr < cols; jr += k->nr) {
            const int nr = (int)(cols - jr < k->nr ? cols - jr : k->nr);
            const uint64_t *b = job->b->bits + (j0 + jr) * ldb + k0;
            /* One call for the tile's rows against this B micro-panel. In a diagonal tile
             * it stops after the micro-tile holding the panel's last column: rows below
             * it only get further below, the mirror's half. */
            const int64_t below = (jr + nr - 1) / k->mr * k->mr + k->mr;
            const int64_t strip = diagonal && below < rows ? below : rows;
            k->fn(job->a->bits + i0 * lda + k0, lda, b, ldb, kw, (int)strip, nr, w->acc + jr, ld);
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

/* Progress of one group of tasks as a part of the whole job. */
typedef struct group_progress {
    const oc_gram_options *opts;
    double before, total;
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

/* Runs the tasks. Threshold pairs must leave in row order from the caller's thread, so
 * those jobs run in groups of whole row blocks (enough tiles per group to keep every thread
 * busy), and the caller delivers each group's pairs before the next group starts: pairs wait
 * in memory (or spill) for one group at most. */
static oc_status run_tasks(oc_context *ctx, cpu_job *cj, int threads, int64_t tiles_i, int64_t ntasks,
                           const int64_t *weights)
{
    const oc_gram_job *job = cj->job;
    const oc_gram_options *o = job->opts;
    oc_status st = OC_OK;
    if (!job->select || oc_select_get_mode(job->select) != OC_SELECT_PAIRS) {
        st = oc_parallel_run(ctx, threads, ntasks, gram_tile, cj, weights, o->progress, o->progress_user);
        return st != OC_OK && job->select ? select_failure(ctx, job->select, st) : st;
    }
    double total = 0;
    for (int64_t t = 0; t < ntasks; ++t) total += (double)weights[t];
    group_progress gp = {.opts = o, .total = total};
    const int64_t want = 32 * (int64_t)threads;
    int64_t task = 0;
    for (int64_t b = 0; b < tiles_i;) {
        int64_t count = 0;
        for (; b < tiles_i && count < want; ++b) count += job->symmetric ? cj->tiles_j - b : cj->tiles_j;
        cj->task_base = task;
        st = oc_parallel_run(ctx, threads < count ? threads : (int)count, count, gram_tile, cj, weights + task,
                             o->progress ? report_group : NULL, &gp);
        if (st != OC_OK) return select_failure(ctx, job->select, st);
        OC_CHECK(oc_select_drain(ctx, job->select));
        for (int64_t t = task; t < task + count; ++t) gp.before += (double)weights[t];
        task += count;
    }
    return OC_OK;
}

static oc_status cpu_gram(oc_gram_job *job)
{
    oc_context *ctx = job->ctx;
    oc_status st = OC_OK;
    const oc_cpu_kernel *kernel = oc_cpu_kernel_get();
    int threads = oc_threads_resolve(job->opts->threads);
    cpu_job cj = {.job = job, .kernel = kernel, .epilogue = oc_cpu_epilogue_kind(job)};
    int64_t *weights = NULL;

    /* The kernels accumulate in uint32, and int32 results must hold every count. */
    if (job->m > (int64_t)UINT32_MAX ||
        (job->dtype == OC_DTYPE_INT32 && job->m > INT32_MAX))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s has %lld columns: the CPU backend counts at most %lld (%s results)",
                       job->a->name, (long long)job->m,
                       job->dtype == OC_DTYPE_INT32 ? (long long)INT32_MAX : (long long)UINT32_MAX,
                       oc_dtype_name(job->dtype));

    cj.tile = choose_tile(job, threads);
    const int64_t t = cj.tile, tiles_i = (job->n + t - 1) / t;
    cj.tiles_j = (job->p + t - 1) / t;
    const int64_t ntasks = count_tasks(job, t);
    if (threads > ntasks) threads = (int)ntasks;

    int64_t tile_elems;
    if (!oc_mul_i64(t, t, &tile_elems) || tile_elems > INT64_MAX / 8 || t > INT32_MAX || tiles_i > INT32_MAX ||
        cj.tiles_j > INT32_MAX)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "tile edge %lld does not fit this job (too large, or too many tiles)",
                       (long long)t);
    cj.task_tiles = malloc((size_t)ntasks * 2 * sizeof *cj.task_tiles);
    weights = malloc((size_t)ntasks * sizeof *weights);
    cj.workers = calloc((size_t)threads, sizeof *cj.workers);
    if (!cj.task_tiles || !weights || !cj.workers) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cpu backend: cannot allocate the plan of %lld tiles", (long long)ntasks);
        goto cleanup;
    }
    const int convert = !(job->metric == OC_METRIC_COUNTS && job->dtype == OC_DTYPE_INT32);
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

    /* Row-major tile order; progress weights are the tiles' computed areas. */
    int64_t task = 0;
    for (int64_t ti = 0; ti < tiles_i; ++ti)
        for (int64_t tj = job->symmetric ? ti : 0; tj < cj.tiles_j; ++tj, ++task) {
            int64_t rows = job->n - ti * t < t ? job->n - ti * t : t;
            int64_t cols = job->p - tj * t < t ? job->p - tj * t : t;
            cj.task_tiles[2 * task] = (int32_t)ti;
            cj.task_tiles[2 * task + 1] = (int32_t)tj;
            weights[task] = (job->symmetric && ti == tj) ? rows * (cols + 1) / 2 : rows * cols;
        }

    if (job->select) OC_CHECK_GOTO(oc_select_begin(ctx, job->select, t, threads));
    OC_CHECK_GOTO(run_tasks(ctx, &cj, threads, tiles_i, ntasks, weights));

    double macs = 0;
    for (int i = 0; i < threads; ++i) macs += cj.workers[i].bit_macs;
    const char *note = oc_cpu_isa_note();
    job->stats->backend = OC_BACKEND_CPU;
    snprintf(job->stats->backend_desc, sizeof job->stats->backend_desc, "cpu %s %d thread%s%s%s%s", kernel->name,
             threads, threads == 1 ? "" : "s", *note ? " (" : "", note, *note ? ")" : "");
    job->stats->bit_macs_computed = macs;
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
    return st;
}

const oc_backend_vtbl oc_backend_cpu = {OC_BACKEND_ABI, "cpu", cpu_usable, cpu_gram, NULL, 0};
