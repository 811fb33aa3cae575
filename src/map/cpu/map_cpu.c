/*
 * map_cpu.c - map on the CPU: the element-wise result cut into contiguous parts, a few per
 * thread, each part evaluated block by block (map_cpu_eval.h) straight into the output;
 * reductions in map_cpu_reduce.c.
 *
 * Threads: the context's worker pool (core/workers.h) and the calling thread run the parts
 * through oc_workers_split, which returns when all are done. The calling thread alone
 * reports progress (the callback's contract). Parts hold no lock: each writes its own range.
 */
#include "map/cpu/map_cpu.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/context.h"
#include "core/error.h"
#include "core/threads.h"
#include "map/cpu/map_cpu_ops.h"
#include "mem/host_budget.h"

/* Parts per thread at least: enough that a slow thread (a busy core) does not hold up the
 * end. And parts of at most PART_BLOCKS blocks, taken in order: the threads then sweep the
 * arrays together and the last parts are short, which ran faster than four contiguous parts
 * per thread (bench/RESULTS.md). */
#define PARTS_PER_THREAD 4
#define PART_BLOCKS 16

int oc_map_cpu_tick(oc_map_cpu_job *job, int64_t n)
{
    long long done = atomic_fetch_add(&job->done, n) + n;
    if (atomic_load(&job->failed)) return 1;
    if (!pthread_equal(pthread_self(), job->caller)) return 0;
    if (oc_cancelled(job->ctx)) {
        atomic_store(&job->failed, 3);
        return 1;
    }
    /* An input cut while it is read gives zeros from there on: stop, rather than write a
     * whole output that oc_map_run will refuse ("changed while being read"). */
    for (int k = 0; k < job->m->n_inputs; k++)
        if (oc_mapped_file_faulted(&job->m->inputs[k].file)) {
            atomic_store(&job->failed, 4);
            return 1;
        }
    if (oc_progress_report(&job->pace, (double)done, (double)job->m->count, 0) && oc_cancelled(job->ctx)) {
        atomic_store(&job->failed, 3);
        return 1;
    }
    return 0;
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22 /* Linux 5.14 */
#define MADV_POPULATE_WRITE 23
#endif

static void populate(const unsigned char *data, size_t elem, int64_t begin, int64_t end, int advice)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)(data + begin * (int64_t)elem) & ~(page - 1);
    uintptr_t hi = ((uintptr_t)(data + end * (int64_t)elem) + page - 1) & ~(page - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, advice);
}

/* Maps the pages of the next stretch of a part (file inputs read in place, a file output) in
 * one call each before the loops touch them: a file mapping otherwise takes a fault per
 * page (a few per 64 KiB when reading), which on tmpfs and the page cache costs more than
 * the arithmetic of a memory-bound expression. Kernels before 5.14 refuse the advice; the
 * faults then happen as before. */
static void populate_stretch(const oc_map_plan *m, unsigned char *out, int64_t begin, int64_t end)
{
    for (int k = 0; k < m->n_inputs; k++) {
        const oc_map_bound *b = &m->inputs[k];
        if (b->used && b->same_shape && b->path) populate(b->data, oc_mt_size(b->type), begin, end, MADV_POPULATE_READ);
    }
    if (m->out_is_file) populate(out, oc_mt_size(m->out_type), begin, end, MADV_POPULATE_WRITE);
}

/* Page mappings are dropped in aligned 2 MiB stretches of the address: the most that one fault
 * maps (a page-table entry for a 2 MiB folio, which dropping any page of it unmaps whole, or
 * a large folio's or a fault-around window's small pages, all within the 2 MiB of page table
 * that holds the faulting page). */
#define RELEASE_ALIGN ((uintptr_t)2 << 20)

/* Drops the pages of elements [begin, end) of an array of count elements at data, rounded
 * outward to RELEASE_ALIGN (behind: the end rounded down instead), within the array's pages. */
static void release_pages(const unsigned char *data, size_t elem, int64_t count, int64_t begin, int64_t end, int behind)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t first = (uintptr_t)data & ~(page - 1);
    const uintptr_t last = ((uintptr_t)(data + count * (int64_t)elem) + page - 1) & ~(page - 1);
    uintptr_t lo = (uintptr_t)(data + begin * (int64_t)elem) & ~(RELEASE_ALIGN - 1);
    uintptr_t hi = (uintptr_t)(data + end * (int64_t)elem);
    hi = behind ? hi & ~(RELEASE_ALIGN - 1) : (hi + RELEASE_ALIGN - 1) & ~(RELEASE_ALIGN - 1);
    if (lo < first) lo = first; /* the mapping need not be aligned so */
    if (hi > last) hi = last;
    if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* Why outward: the inputs are read-only shared mappings of their files (a cut input's tail:
 * an anonymous mapping of zeros, map_guard.c), so a page dropped while another thread still
 * reads it comes back from the page cache (or as zeros) unchanged, only a fault later; every
 * page a thread's faults mapped then lies in what its own release drops once it is done with
 * them, so none stays mapped behind the threads. Rounding inward instead kept every page that
 * two ranges share, and with it, where the kernel maps a 2 MiB folio or a fault-around window
 * at a time, what the neighbour's later faults mapped there: hundreds of MiB over a large job.
 * The output is a shared mapping of its file: the kernel moves a dropped page's dirty state to
 * the page cache (flushing the TLBs first, so that a write racing the drop on another thread
 * lands there too, or faults the page back), which writes it back; a caller's memory is never
 * touched. */
static void release(const oc_map_plan *m, unsigned char *out, int64_t begin, int64_t end, int behind)
{
    if (end <= begin) return;
    for (int k = 0; k < m->n_inputs; k++) {
        const oc_map_bound *b = &m->inputs[k];
        if (b->used && b->same_shape && b->path)
            release_pages(b->data, oc_mt_size(b->type), m->count, begin, end, behind);
    }
    if (out && m->out_is_file) release_pages(out, oc_mt_size(m->out_type), m->count, begin, end, behind);
}

void oc_map_cpu_release(const oc_map_plan *m, unsigned char *out, int64_t begin, int64_t end)
{
    release(m, out, begin, end, 0);
}

void oc_map_cpu_release_behind(const oc_map_plan *m, unsigned char *out, int64_t begin, int64_t end)
{
    release(m, out, begin, end, 1);
}

typedef struct elementwise {
    oc_map_cpu_job *job;
    unsigned char *out;
    int64_t per_part;
    /* Evaluators no part uses now: a part takes one and gives it back, so there are never
     * more than the threads that run parts at once, however many parts there are. */
    pthread_mutex_t lock;
    oc_map_eval **idle;
    int nidle;
    /* job->release: the parts done, the first part not done, and the element before which the
     * pages are dropped (under lock) */
    unsigned char *done;
    int low;
    int64_t released;
} elementwise;

static oc_map_eval *take_eval(elementwise *w)
{
    oc_map_eval *ev = NULL;
    pthread_mutex_lock(&w->lock);
    if (w->nidle > 0) ev = w->idle[--w->nidle];
    pthread_mutex_unlock(&w->lock);
    return ev ? ev : oc_map_eval_create(w->job->m);
}

static void give_eval(elementwise *w, oc_map_eval *ev)
{
    pthread_mutex_lock(&w->lock);
    w->idle[w->nidle++] = ev;
    pthread_mutex_unlock(&w->lock);
}

/* When the pages are dropped (job->release): marks the part done and drops the pages before
 * the first part not done. Not each part's own range: the threads take the parts in order,
 * and a part that dropped the pages and 2 MiB stretches it shares with its neighbours took
 * them from under a neighbour that still read or wrote there, to be faulted back (slower, as
 * bench/RESULTS.md measured). Before that
 * part nothing is read or written any more, and a fault there or after it maps nothing
 * outside its own stretch, which stays. A part that ends LAG_PARTS or more ahead of it (a
 * thread that stalls, on a busy machine or on a write fault of the output, holds it back)
 * drops its own range too, so that what the threads hold stays bounded. */
#define LAG_PARTS(threads) ((threads) + 1)

static void part_done(elementwise *w, int part, int parts)
{
    if (!w->done) return;
    const oc_map_plan *m = w->job->m;
    int64_t from, to;
    pthread_mutex_lock(&w->lock);
    w->done[part] = 1;
    const int lagging = part - w->low >= LAG_PARTS(w->job->threads);
    while (w->low < parts && w->done[w->low]) w->low++;
    from = w->released;
    to = (int64_t)w->low * w->per_part;
    if (to > m->count) to = m->count;
    if (to > from) w->released = to;
    pthread_mutex_unlock(&w->lock);
    if (to > from) oc_map_cpu_release_behind(m, w->out, from, to);
    if (lagging) {
        int64_t begin = (int64_t)part * w->per_part, end = begin + w->per_part;
        oc_map_cpu_release(m, w->out, begin, end < m->count ? end : m->count);
    }
}

/* Elements between two releases of the pages a long part has read. */
#define RELEASE_EVERY (64 * OC_MAP_BLOCK)

static void elementwise_part(void *arg, int part, int parts)
{
    elementwise *w = arg;
    oc_map_cpu_job *job = w->job;
    const oc_map_plan *m = job->m;
    int64_t begin = (int64_t)part * w->per_part, end = begin + w->per_part;
    if (end > m->count) end = m->count;
    /* A job that failed or was cancelled skips its parts left: each would otherwise still
     * compute a block, and fault in its stretch of the output, before it looked. */
    if (oc_map_cpu_tick(job, 0)) {
        part_done(w, part, parts);
        return;
    }
    oc_map_eval *ev = begin < end ? take_eval(w) : NULL;
    if (!ev) {
        if (begin < end) atomic_store(&job->failed, 1);
        part_done(w, part, parts);
        return;
    }
    const size_t osize = oc_mt_size(m->out_type);
    const int same = m->out_type == m->expr_type;
    oc_map_cast_loop cast = same ? NULL : oc_map_cpu_cast(m->expr_type, m->out_type);
    int error = 0;
    int64_t released = begin;
    for (int64_t s = begin; s < end; s += OC_MAP_BLOCK) {
        int64_t n = end - s < OC_MAP_BLOCK ? end - s : OC_MAP_BLOCK;
        if ((s - begin) % RELEASE_EVERY == 0)
            populate_stretch(m, w->out, s, end - s < RELEASE_EVERY ? end : s + RELEASE_EVERY);
        unsigned char *dst = w->out + s * (int64_t)osize;
        const void *r = oc_map_eval_block(ev, s, n, same ? dst : NULL, &error);
        if (cast) cast(dst, r, (size_t)n);
        else if (r != dst) memcpy(dst, r, (size_t)n * osize);
        if (error) {
            atomic_store(&job->failed, 2);
            break;
        }
        /* a long part (one thread's only one) drops its pages behind it as it goes */
        if (job->release && s + n - released >= RELEASE_EVERY) {
            oc_map_cpu_release_behind(m, w->out, released, s + n);
            released = s + n;
        }
        if (oc_map_cpu_tick(job, n)) break;
    }
    give_eval(w, ev);
    part_done(w, part, parts);
}

static oc_status job_status(oc_map_cpu_job *job)
{
    oc_context *ctx = job->ctx;
    switch (atomic_load(&job->failed)) {
    case 0:
        return OC_OK;
    case 1:
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory for the map evaluator's buffers");
    case 2:
        return oc_fail(ctx, OC_ERR_INPUT, "integers to negative integer powers are not allowed (as in numpy)");
    case 4:
        return oc_fail(ctx, OC_ERR_INPUT, "an input changed while being read"); /* oc_map_run says which */
    default:
        return oc_fail(ctx, OC_ERR_CANCELLED, "cancelled");
    }
}

/* The job's final report (done == total) unless it failed, then its status. */
static oc_status job_end(oc_map_cpu_job *job)
{
    if (!atomic_load(&job->failed)) oc_progress_report(&job->pace, (double)job->m->count, (double)job->m->count, 1);
    return job_status(job);
}

static oc_status map_cpu_run(oc_context *ctx, const oc_map_plan *m, void *out, oc_map_stats *stats)
{
    oc_map_cpu_job job = {.ctx = ctx,
                          .m = m,
                          .caller = pthread_self(),
                          .pace = oc_progress_pace_start(m->opts.progress, m->opts.progress_user)};
    job.threads = oc_threads_resolve(m->opts.threads);
    /* No more threads than blocks: a small job is not worth waking the pool for. */
    int64_t blocks = (m->count + OC_MAP_BLOCK - 1) / OC_MAP_BLOCK;
    if (blocks < job.threads) job.threads = blocks > 0 ? (int)blocks : 1;
    if (job.threads > 1) OC_CHECK(ctx, oc_context_workers(ctx, job.threads - 1, &job.workers));
    int64_t in_bytes = 0;
    for (int k = 0; k < m->n_inputs; k++)
        if (m->inputs[k].used) in_bytes += m->inputs[k].count * (int64_t)oc_mt_size(m->inputs[k].type);
    job.release = in_bytes > oc_host_budget_resolve(m->opts.host_mem_bytes);
    stats->backend = OC_BACKEND_CPU;
    snprintf(stats->backend_desc, sizeof stats->backend_desc, "cpu %d thread%s", job.threads,
             job.threads == 1 ? "" : "s");
    stats->threads = job.threads;
    if (m->reduce != OC_MAP_REDUCE_NONE) {
        OC_CHECK(ctx, oc_map_cpu_reduce(&job, out));
        return job_end(&job);
    }
    int64_t parts = job.threads == 1 ? 1 : job.threads * PARTS_PER_THREAD;
    if (job.threads > 1 && blocks / PART_BLOCKS > parts) parts = blocks / PART_BLOCKS;
    if (parts > blocks) parts = blocks;
    if (parts > INT_MAX) parts = INT_MAX;
    /* Parts start on block boundaries, so every block but the last is whole. */
    elementwise w = {.job = &job,
                     .out = out,
                     .per_part = (blocks + parts - 1) / parts * OC_MAP_BLOCK,
                     .lock = PTHREAD_MUTEX_INITIALIZER};
    /* As many as run parts at once: the job's threads, even where the context's pool has grown
     * past them (oc_workers_split_max keeps to them). */
    w.idle = calloc((size_t)job.threads, sizeof *w.idle);
    if (job.release) w.done = calloc((size_t)parts, 1);
    if (!w.idle || (job.release && !w.done)) {
        free(w.idle);
        free(w.done);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory for the map evaluator's buffers");
    }
    if (job.workers) oc_workers_split_max(job.workers, (int)parts, job.threads, elementwise_part, &w);
    else
        for (int p = 0; p < (int)parts; p++) elementwise_part(&w, p, (int)parts);
    /* what the parts left (all of it after a failure) */
    if (job.release) oc_map_cpu_release(m, out, w.released, m->count);
    for (int i = 0; i < w.nidle; i++) oc_map_eval_free(w.idle[i]);
    free(w.idle);
    free(w.done);
    return job_end(&job);
}

const oc_map_backend oc_map_backend_cpu = {.name = "cpu", .run = map_cpu_run};
