/*
 * gram_cuda.c - the CUDA Gram pipeline: panels in, tiles computed, tiles out.
 *
 * One driving thread (the caller's) walks the tile order of the plan (src/exec/tile_plan.h)
 * and only enqueues work; sink threads deliver finished tiles to the destination.
 *
 *   host A rows --memcpy (helper threads)--> pinned H2D slot --cudaMemcpyAsync [h2d]--> panel slot
 *   panel slots --kernel [compute]--> output slot (tile | mirror) --cudaMemcpy2DAsync [d2h]--> pinned D2H slot
 *   pinned D2H slot --sink thread: oc_dense_sink_put (whole rows)--> destination
 *
 * For A·Aᵀ the mirror kernel (gram_mirror.cu) writes, next to each tile in its output slot,
 * the block the tile stands for at (J, I) (for a diagonal tile: the whole symmetric block),
 * so the sinks copy only whole rows; the host's transposed scatter (oc_dense_sink_store)
 * ran at about 1 GB/s per core and bounded the dense job. Only when the budget cannot hold
 * output slots twice the size does the plan leave the mirror to the host.
 *
 * Why pinned staging rather than page-locking A or the destination (cudaHostRegister), as
 * measured on the lent H100 (bench/RESULTS.md): registering large ranges runs at about
 * 20 GB/s plus the unregistering, and DMA into registered 4 KiB pages of a 16 GiB
 * destination ran at 32 GB/s against 46 GB/s through the staging ring and 14 sink threads;
 * for out-of-core panels the registration (0.13 s per 2.5 GB) cost more than the staging
 * it saved.
 *
 * Asynchronous calls: every copy and kernel is enqueued on one of the device's streams
 * (h2d, compute, compute2, d2h; top-k and threshold selection on its own, select_cuda.h)
 * and returns at once. Consecutive tiles alternate between the two compute streams (one
 * only when a selection reads dense tiles that it cannot fuse into the kernel), so the
 * next tile's CTAs fill the SMs the last wave of a tile leaves idle; nothing else orders
 * two tiles' kernels. What orders them (all events are recorded by the driving thread, so
 * "the last record" is well defined):
 *   - a panel upload waits (on h2d) for panel_free[slot][c] of both compute streams c,
 *     recorded after the last kernel on c that read the slot's previous panel;
 *   - a kernel waits (on its compute stream) for panel_loaded[] of both its panels and for
 *     out_free[slot], recorded after the last D2H copy out of its output slot or after the
 *     selection of its last tile (output slot t % 2 of tile t lives on compute stream
 *     t % 2, so two kernels never share one);
 *   - the D2H copies wait (on d2h) for out_done[slot], recorded after the kernel;
 *   - the host waits (cudaEventSynchronize) for h2d_pin_free[k] before it refills pinned
 *     H2D slot k, and a sink thread waits for d2h_pin_ready[k] before it reads D2H slot k.
 * Nothing is allocated per tile: every buffer and event comes from the plan at start.
 *
 * Pinned staging is two rings, one pinned allocation each (upload slots, download slots),
 * that outlive the job in the device layer's cache (device.c): a later job with the same
 * or smaller staging pins nothing.
 *
 * Host threads and locks: one mutex (pipeline.lock) guards the D2H queue, the busy flags
 * of the pinned D2H slots and the sinks' error; there is no other lock, so there is no
 * lock order. The driving thread blocks only for a free pinned slot (H2D: on its event;
 * D2H: on the condition variable a sink signals), which bounds how far it runs ahead.
 * Progress and cancellation are handled on the driving thread, between tiles.
 */
#include "cuda/gram_cuda.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"
#include "exec/sink.h"
#include "exec/tile_plan.h"
#include "cuda/cuda_check.h"
#include "cuda/device.h"
#include "cuda/gram_b1.cuh"
#include "cuda/gram_mirror.cuh"
#include "cuda/gram_popc.cuh"
#include "cuda/row_popc.cuh"
#include "cuda/select_cuda.h"

#define TILE_GRANULARITY 256          /* the b1 kernel's CTA is 128 x 256 */
#define HEADROOM (256LL << 20)        /* left to the CUDA context and libraries */
#define DEFAULT_HOST_MEM (1LL << 30)  /* pinned staging when --host-mem is not given */
/* Upload slots of 8 MiB keep the link busy (0.15 ms per copy at 55 GB/s against tens of
 * microseconds of issue) and take a quarter of the pinning of 32 MiB ones, which a process's
 * first job pays before its first upload (about 2 GB/s on the lent machines). */
#define MAX_STAGING_SLOT (8LL << 20)
/* D2H slots are many (one per sink thread and four more), so each stays small: a job that
 * finds no cached staging pins it at about 2.5 GB/s on the lent H100's host. */
#define MAX_D2H_SLOT (4LL << 20)
#define MAX_SINKS 16
#define H2D_SLOTS 2
#define STAGING_ALIGN 4096            /* slots start on pages: the copy engine's best case */
/* The b1 kernel's rate per SM, measured on the lent H100 (3.37 P bit-MAC/s on 132 SMs, one
 * CTA each): the planner's kernel model. On another device only its ratio to the transfer
 * rates is off, by that device's clock. */
#define B1_RATE_PER_SM 2.55e13

typedef enum { KERNEL_B1, KERNEL_POPC } kernel_kind;

/* Threads that stage panel rows into pinned memory with the driving thread. They live for
 * the job: starting threads for every 16 MiB slot cost about as much as the copy itself
 * (the staging ran at 18 GB/s on 8 threads so). The driving thread posts a copy, takes
 * part 0 itself and waits until every worker has done its part. */
typedef struct copy_pool {
    pthread_mutex_t lock;
    pthread_cond_t go, done;
    pthread_t *threads;
    int workers;               /* started, besides the driving thread */
    int64_t generation;        /* one per posted copy */
    int pending;               /* workers still copying the current one */
    int stop;
    unsigned char *dst;
    const unsigned char *src;
    int64_t bytes;
} copy_pool;

typedef struct d2h_chunk {
    int slot;
    int64_t i0, j0, rows, cols;
} d2h_chunk;

typedef struct pipeline {
    oc_gram_job *job;
    oc_context *ctx;
    oc_cuda_device dev;
    oc_tile_plan plan;
    kernel_kind kernel;
    int64_t words, row_bytes, elem;
    oc_cuda_select *select;    /* top-k / threshold selection on the device (select_cuda.h) */

    /* device */
    uint64_t **panel;
    cudaEvent_t *panel_loaded;
    cudaEvent_t *panel_free;   /* two per slot: [2 * slot + compute stream] */
    int streams;               /* compute streams the tiles alternate between: 1 or 2 */
    void **out;
    cudaEvent_t *out_done, *out_free;
    int pops;                  /* the metric needs row popcounts: each panel slot counts its rows' */

    int gpu_mirror;            /* A·Aᵀ into a dense destination, mirrors made on the device */
    int host_mirror;           /* A·Aᵀ into a dense destination, mirrors made by the sinks */

    /* pinned staging */
    int64_t h2d_slot_bytes, d2h_slot_bytes; /* usable bytes of a slot */
    int64_t h2d_stride, d2h_stride;         /* slot to slot in its ring */
    unsigned char *h2d_ring, *d2h_ring;     /* one pinned allocation each */
    unsigned char *h2d_pin[H2D_SLOTS];
    cudaEvent_t h2d_pin_free[H2D_SLOTS];
    int h2d_next;
    int d2h_slots;
    unsigned char **d2h_pin;
    cudaEvent_t *d2h_pin_ready;
    int copy_threads;
    copy_pool copier;
    int copier_ready;          /* its lock and conditions exist */
    double upload_seconds;     /* host time spent staging panels (OUTCORE_TRACE) */
    double stage_wait_seconds; /* of which waiting for a pinned H2D slot to be free */
    double acquire_seconds;    /* host time spent waiting for a free D2H slot */
    cudaEvent_t *kernel_ev;    /* OUTCORE_TRACE: timed events around each tile's kernels */
    cudaEvent_t trace_begin;   /* OUTCORE_TRACE: recorded when the tiles phase starts */

    /* sink threads: everything below is guarded by lock */
    pthread_mutex_t lock;
    pthread_cond_t work, slot_freed;
    int sync_ready;
    pthread_t *sinks;
    int nsinks;
    d2h_chunk *queue;          /* ring of d2h_slots entries */
    int q_head, q_count;
    int *slot_busy;
    int d2h_next;
    int stop;
    oc_status sink_status;
    char sink_message[256];
} pipeline;

/* ---------------------------------------------------------------- sink threads */
static void *sink_main(void *arg)
{
    pipeline *pl = arg;
    cudaError_t set = cudaSetDevice(pl->dev.index); /* the runtime's current device is per thread */
    pthread_mutex_lock(&pl->lock);
    for (;;) {
        while (pl->q_count == 0 && !pl->stop) pthread_cond_wait(&pl->work, &pl->lock);
        if (pl->q_count == 0) break;
        d2h_chunk c = pl->queue[pl->q_head];
        pl->q_head = (pl->q_head + 1) % pl->d2h_slots;
        pl->q_count--;
        pthread_mutex_unlock(&pl->lock);

        cudaError_t e = set != cudaSuccess ? set : cudaEventSynchronize(pl->d2h_pin_ready[c.slot]);
        if (e == cudaSuccess && pl->sink_status == OC_OK) {
            if (pl->host_mirror) oc_dense_sink_store(pl->job->dense, c.i0, c.j0, c.rows, c.cols, pl->d2h_pin[c.slot], c.cols);
            else oc_dense_sink_put(pl->job->dense, c.i0, c.j0, c.rows, c.cols, pl->d2h_pin[c.slot], c.cols);
        }

        pthread_mutex_lock(&pl->lock);
        if (e != cudaSuccess && pl->sink_status == OC_OK) {
            pl->sink_status = oc_cuda_status(e);
            snprintf(pl->sink_message, sizeof pl->sink_message, "waiting for the copy of tile rows %lld.. : %s",
                     (long long)c.i0, cudaGetErrorString(e));
        }
        pl->slot_busy[c.slot] = 0;
        pthread_cond_broadcast(&pl->slot_freed);
    }
    pthread_mutex_unlock(&pl->lock);
    return NULL;
}

static oc_status sink_error(pipeline *pl)
{
    oc_context *ctx = pl->ctx;
    return oc_fail(ctx, pl->sink_status, "cuda:%d: %s", pl->dev.index, pl->sink_message);
}

/* A free pinned D2H slot, waiting for a sink to release one. */
static oc_status d2h_acquire(pipeline *pl, int *slot)
{
    pthread_mutex_lock(&pl->lock);
    for (;;) {
        if (pl->sink_status != OC_OK) {
            pthread_mutex_unlock(&pl->lock);
            return sink_error(pl);
        }
        for (int k = 0; k < pl->d2h_slots; ++k) {
            int s = (pl->d2h_next + k) % pl->d2h_slots;
            if (!pl->slot_busy[s]) {
                pl->slot_busy[s] = 1;
                pl->d2h_next = (s + 1) % pl->d2h_slots;
                *slot = s;
                pthread_mutex_unlock(&pl->lock);
                return OC_OK;
            }
        }
        pthread_cond_wait(&pl->slot_freed, &pl->lock);
    }
}

static void d2h_submit(pipeline *pl, d2h_chunk c)
{
    pthread_mutex_lock(&pl->lock);
    pl->queue[(pl->q_head + pl->q_count) % pl->d2h_slots] = c;
    pl->q_count++;
    pthread_cond_signal(&pl->work);
    pthread_mutex_unlock(&pl->lock);
}

/* Stops the sinks after they drained the queue; returns their first error when `report`
 * (an error path that already recorded its own message passes 0). */
static oc_status sinks_join(pipeline *pl, int report)
{
    if (!pl->sync_ready) return OC_OK;
    pl->sync_ready = 0;
    pthread_mutex_lock(&pl->lock);
    pl->stop = 1;
    pthread_cond_broadcast(&pl->work);
    pthread_mutex_unlock(&pl->lock);
    for (int i = 0; i < pl->nsinks; ++i) pthread_join(pl->sinks[i], NULL);
    pl->nsinks = 0;
    return pl->sink_status == OC_OK || !report ? OC_OK : sink_error(pl);
}

/* ---------------------------------------------------------------- panel staging threads */
/* Part `part` of `parts` of the posted copy, with non-temporal stores (the pinned slot is
 * read by the copy engine, not by this core). */
static void copy_share(const copy_pool *cp, int part, int parts)
{
    int64_t per = (cp->bytes + parts - 1) / parts, off = part * per;
    if (off >= cp->bytes) return;
    int64_t len = cp->bytes - off < per ? cp->bytes - off : per;
    oc_dense_sink row = {.base = (char *)cp->dst + off, .ld = len, .elem_size = 1};
    oc_dense_sink_put(&row, 0, 0, 1, len, cp->src + off, len);
}

typedef struct copy_worker {
    copy_pool *cp;
    int part;
} copy_worker;

static void *copy_main(void *arg)
{
    copy_worker *w = arg;
    copy_pool *cp = w->cp;
    int part = w->part;
    free(w);
    int64_t seen = 0;
    pthread_mutex_lock(&cp->lock);
    for (;;) {
        while (cp->generation == seen && !cp->stop) pthread_cond_wait(&cp->go, &cp->lock);
        if (cp->stop) break;
        seen = cp->generation;
        pthread_mutex_unlock(&cp->lock);
        copy_share(cp, part, cp->workers + 1);
        pthread_mutex_lock(&cp->lock);
        if (--cp->pending == 0) pthread_cond_signal(&cp->done);
    }
    pthread_mutex_unlock(&cp->lock);
    return NULL;
}

/* Starts up to `threads` - 1 workers; fewer (even none) only make the copies slower. */
static void copy_pool_start(pipeline *pl, int threads)
{
    copy_pool *cp = &pl->copier;
    pthread_mutex_init(&cp->lock, NULL);
    pthread_cond_init(&cp->go, NULL);
    pthread_cond_init(&cp->done, NULL);
    pl->copier_ready = 1;
    cp->threads = threads > 1 ? calloc((size_t)(threads - 1), sizeof *cp->threads) : NULL;
    for (int i = 0; cp->threads && i < threads - 1; ++i) {
        copy_worker *w = malloc(sizeof *w);
        if (!w) break;
        *w = (copy_worker){cp, i + 1};
        pthread_mutex_lock(&cp->lock); /* a worker reads cp->workers for its share */
        int rc = pthread_create(&cp->threads[i], NULL, copy_main, w);
        if (rc == 0) cp->workers++;
        pthread_mutex_unlock(&cp->lock);
        if (rc != 0) {
            free(w);
            break;
        }
    }
}

static void copy_pool_stop(pipeline *pl)
{
    copy_pool *cp = &pl->copier;
    if (!pl->copier_ready) return;
    pthread_mutex_lock(&cp->lock);
    cp->stop = 1;
    pthread_cond_broadcast(&cp->go);
    pthread_mutex_unlock(&cp->lock);
    for (int i = 0; i < cp->workers; ++i) pthread_join(cp->threads[i], NULL);
    free(cp->threads);
    pthread_cond_destroy(&cp->go);
    pthread_cond_destroy(&cp->done);
    pthread_mutex_destroy(&cp->lock);
    pl->copier_ready = 0;
}

/* dst <- src on the driving thread and the workers; returns when all is copied. */
static void copy_pool_run(pipeline *pl, unsigned char *dst, const unsigned char *src, int64_t bytes)
{
    copy_pool *cp = &pl->copier;
    if (cp->workers == 0 || bytes < (1 << 20)) {
        memcpy(dst, src, (size_t)bytes);
        return;
    }
    pthread_mutex_lock(&cp->lock);
    cp->dst = dst, cp->src = src, cp->bytes = bytes;
    cp->pending = cp->workers;
    cp->generation++;
    pthread_cond_broadcast(&cp->go);
    pthread_mutex_unlock(&cp->lock);
    copy_share(cp, 0, cp->workers + 1);
    pthread_mutex_lock(&cp->lock);
    while (cp->pending > 0) pthread_cond_wait(&cp->done, &cp->lock);
    pthread_mutex_unlock(&cp->lock);
}

/* ---------------------------------------------------------------- set-up */
static oc_status choose_kernel(pipeline *pl)
{
    oc_context *ctx = pl->ctx;
    const char *force = getenv("OUTCORE_CUDA_KERNEL");
    if (force && *force) {
        if (strcmp(force, "b1") == 0) pl->kernel = KERNEL_B1;
        else if (strcmp(force, "popc") == 0) pl->kernel = KERNEL_POPC;
        else return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "OUTCORE_CUDA_KERNEL=%s: expected b1 or popc", force);
        if (pl->kernel == KERNEL_B1 && pl->dev.cc < 80)
            return oc_fail(ctx, OC_ERR_UNSUPPORTED, "OUTCORE_CUDA_KERNEL=b1: cuda:%d (%s, sm_%d) has no 1-bit tensor cores",
                           pl->dev.index, pl->dev.name, pl->dev.cc);
        return OC_OK;
    }
    pl->kernel = pl->dev.cc >= 80 ? KERNEL_B1 : KERNEL_POPC;
    return OC_OK;
}

static oc_status resolve_budget(pipeline *pl, int64_t *budget)
{
    oc_context *ctx = pl->ctx;
    const oc_gram_options *o = pl->job->opts;
    int64_t total = (int64_t)pl->dev.total_mem, avail = (int64_t)pl->dev.free_mem_at_open - HEADROOM;
    if (o->gpu_mem_bytes > 0) {
        if (o->gpu_mem_bytes > total - HEADROOM)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "--gpu-mem %.1f MiB exceeds what cuda:%d (%s) can give: %.1f MiB in all, less %lld MiB kept for "
                           "the CUDA context and libraries",
                           o->gpu_mem_bytes / 1048576.0, pl->dev.index, pl->dev.name, total / 1048576.0, HEADROOM >> 20);
        *budget = o->gpu_mem_bytes;
        return OC_OK;
    }
    /* The default never takes the whole card: a fraction of what is free, less headroom. */
    int64_t b = (int64_t)(o->gpu_mem_fraction * (double)pl->dev.free_mem_at_open);
    *budget = b < avail ? b : avail;
    if (*budget <= 0)
        return oc_fail(ctx, OC_ERR_DEVICE_NO_MEMORY, "cuda:%d has only %.1f MiB free: nothing left for a budget",
                       pl->dev.index, pl->dev.free_mem_at_open / 1048576.0);
    return OC_OK;
}

/* Timing off: these events only order work, and timed events cost more to record. Events
 * that host threads wait on block (sleep) instead of spinning: a dozen spinning sink and
 * copy threads would take the cores the copies need. */
static oc_status create_events(oc_context *ctx, cudaEvent_t *ev, int count, int host_waits)
{
    unsigned flags = cudaEventDisableTiming | (host_waits ? cudaEventBlockingSync : 0);
    for (int i = 0; i < count; ++i) CUDA_CHECK(ctx, cudaEventCreateWithFlags(&ev[i], flags));
    return OC_OK;
}

static void destroy_events(cudaEvent_t *ev, int count)
{
    if (!ev) return;
    for (int i = 0; i < count; ++i)
        if (ev[i]) (void)cudaEventDestroy(ev[i]);
}

/* OUTCORE_TRACE=1 prints the time of each phase and the pipeline's choices to stderr: a
 * diagnostic for benchmarks. */
static int tracing(void)
{
    static int on = -1;
    if (on < 0) on = getenv("OUTCORE_TRACE") != NULL;
    return on;
}

static oc_status setup(pipeline *pl)
{
    oc_context *ctx = pl->ctx;
    oc_gram_job *job = pl->job;
    const oc_gram_options *o = job->opts;
    int64_t budget = 0;
    OC_CHECK(resolve_budget(pl, &budget));
    int64_t host_budget = o->host_mem_bytes > 0 ? o->host_mem_bytes : DEFAULT_HOST_MEM;
    oc_mem_ops ops = oc_cuda_mem_ops();
    OC_CHECK(oc_pool_create(ctx, &ops, pl->dev.index, budget, o->gpu_mem_mode, host_budget, &pl->dev.pool));

    /* Every metric but counts reads the rows' popcounts: 4 more bytes per panel row. */
    pl->pops = job->metric != OC_METRIC_COUNTS;
    oc_tile_plan_input in = {.n = job->n, .p = job->p, .row_bytes = pl->row_bytes + (pl->pops ? 4 : 0),
                             .elem_size = pl->elem + oc_cuda_select_extra_elem_bytes(job),
                             .symmetric = job->symmetric, .keep_output = job->dense != NULL,
                             .mirror_output = job->symmetric && job->dense != NULL, .budget = budget,
                             .budget_given = job->opts->gpu_mem_bytes > 0,
                             .fixed_bytes = oc_cuda_select_fixed_bytes(job),
                             .out_edge_bytes = oc_cuda_select_edge_bytes(job, pl->kernel == KERNEL_B1), .tile = o->tile,
                             .granularity = TILE_GRANULARITY};
    /* Selection on the device orders its updates on its own stream; the tiles may then
     * overlap on two, except when the selection reads dense tiles it cannot keep apart
     * (the popc kernel, or k past the device lists: one stream). */
    pl->streams = !job->select || oc_cuda_select_can_fuse(job, pl->kernel == KERNEL_B1) ? 2 : 1;
    in.overlap_tiles = pl->streams == 2;
    if (pl->kernel == KERNEL_B1) {
        /* One 128 x 256 CTA per SM over K rounded up to its 1024-bit blocks (gram_b1.cu). */
        double bits = (double)((pl->words * 64 + 1023) / 1024 * 1024);
        in.cta_rows = 128;
        in.cta_cols = 256;
        in.concurrent_ctas = pl->dev.sm_count;
        in.cta_seconds = 128.0 * 256.0 * bits / B1_RATE_PER_SM;
    }
    OC_CHECK(oc_tile_plan_make(ctx, &in, &pl->plan));
    const oc_tile_plan *plan = &pl->plan;
    pl->gpu_mirror = plan->mirror_output;
    pl->host_mirror = job->symmetric && job->dense != NULL && !plan->mirror_output;


    int ns = plan->panel_slots, no = plan->out_slots;
    pl->panel = calloc((size_t)ns, sizeof *pl->panel);
    pl->panel_loaded = calloc((size_t)ns, sizeof *pl->panel_loaded);
    pl->panel_free = calloc((size_t)(2 * ns), sizeof *pl->panel_free);
    pl->out = calloc((size_t)no, sizeof *pl->out);
    pl->out_done = calloc((size_t)no, sizeof *pl->out_done);
    pl->out_free = calloc((size_t)no, sizeof *pl->out_free);
    if (!pl->panel || !pl->panel_loaded || !pl->panel_free || !pl->out || !pl->out_done || !pl->out_free)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the pipeline's slot tables");
    for (int s = 0; s < ns; ++s)
        OC_CHECK(oc_pool_alloc(ctx, pl->dev.pool, (size_t)plan->panel_bytes, "a row panel", (void **)&pl->panel[s]));
    for (int s = 0; s < no; ++s)
        OC_CHECK(oc_pool_alloc(ctx, pl->dev.pool, (size_t)plan->out_bytes, "an output tile", &pl->out[s]));
    if (job->select)
        OC_CHECK(oc_cuda_select_open(ctx, &pl->dev, job, plan->tile, pl->out, plan->out_slots, pl->kernel == KERNEL_B1,
                                     &pl->select));
    OC_CHECK(create_events(ctx, pl->panel_loaded, ns, 0));
    OC_CHECK(create_events(ctx, pl->panel_free, 2 * ns, 0));
    OC_CHECK(create_events(ctx, pl->out_done, no, 0));
    OC_CHECK(create_events(ctx, pl->out_free, no, 0));

    if (tracing()) {
        pl->kernel_ev = calloc((size_t)(2 * plan->ntiles), sizeof *pl->kernel_ev);
        if (!pl->kernel_ev) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the trace's kernel events");
        for (int64_t i = 0; i < 2 * plan->ntiles; ++i) CUDA_CHECK(ctx, cudaEventCreate(&pl->kernel_ev[i]));
        CUDA_CHECK(ctx, cudaEventCreate(&pl->trace_begin));
    }

    /* Pinned staging: two H2D slots (one fills while the other uploads) and, for a kept
     * result, D2H slots for the sink threads, all within the host budget. Row copies scale
     * with cores (on the lent H100's host 8 threads copy 44 GB/s, 14 threads 56 GB/s, the
     * PCIe rate): all cores but the driving thread's and one for the system
     * (OUTCORE_CUDA_SINKS=N overrides). A sink holds one slot while it copies; four more
     * keep the copy engine busy meanwhile. With the staging cached between jobs, 14 sinks
     * beat 8 on the dense 65536 x 65536 job there (44.5 against 43-44 GB/s over the job)
     * and tie when the job pins its own (39-41 GB/s). Panel uploads take half the cores
     * (at most 8) beside the sinks, and as many as sinks would when the result stays on the
     * device (OUTCORE_CUDA_COPY_THREADS=N overrides). */
    int cores = oc_cpu_cores();
    int sinks = cores - 2 < 1 ? 1 : (cores - 2 > MAX_SINKS ? MAX_SINKS : cores - 2);
    pl->copy_threads = job->dense ? (cores / 2 < 1 ? 1 : (cores / 2 > 8 ? 8 : cores / 2)) : sinks;
    const char *force_sinks = getenv("OUTCORE_CUDA_SINKS"), *force_copy = getenv("OUTCORE_CUDA_COPY_THREADS");
    if (force_sinks && *force_sinks) {
        sinks = atoi(force_sinks);
        if (sinks < 1 || sinks > 4 * MAX_SINKS)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "OUTCORE_CUDA_SINKS=%s: expected 1 to %d", force_sinks, 4 * MAX_SINKS);
    }
    if (force_copy && *force_copy) {
        pl->copy_threads = atoi(force_copy);
        if (pl->copy_threads < 1 || pl->copy_threads > 4 * MAX_SINKS)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "OUTCORE_CUDA_COPY_THREADS=%s: expected 1 to %d", force_copy,
                           4 * MAX_SINKS);
    }
    copy_pool_start(pl, pl->copy_threads);
    pl->nsinks = job->dense ? sinks : 0;
    pl->d2h_slots = job->dense ? pl->nsinks + 4 : 0;
    int64_t share = host_budget / (H2D_SLOTS + pl->d2h_slots);
    if (share > MAX_STAGING_SLOT) share = MAX_STAGING_SLOT;
    int64_t panel_total = plan->panel_bytes;
    pl->h2d_slot_bytes = share < panel_total ? share / pl->row_bytes * pl->row_bytes : panel_total;
    if (pl->h2d_slot_bytes < pl->row_bytes) pl->h2d_slot_bytes = pl->row_bytes;
    pl->h2d_stride = (pl->h2d_slot_bytes + STAGING_ALIGN - 1) / STAGING_ALIGN * STAGING_ALIGN;
    if (job->dense) {
        int64_t out_row = plan->tile * pl->elem;
        int64_t d2h_share = share < MAX_D2H_SLOT ? share : MAX_D2H_SLOT;
        pl->d2h_slot_bytes = d2h_share < plan->out_bytes ? d2h_share / out_row * out_row : plan->out_bytes;
        if (pl->d2h_slot_bytes < out_row) pl->d2h_slot_bytes = out_row;
        pl->d2h_stride = (pl->d2h_slot_bytes + STAGING_ALIGN - 1) / STAGING_ALIGN * STAGING_ALIGN;
    }

    /* Each ring is one pinned allocation, of the size a cached ring has when that covers
     * the need without passing the host budget (no pinning then), else of the need. */
    int64_t h2d_need = H2D_SLOTS * pl->h2d_stride, d2h_need = pl->d2h_slots * pl->d2h_stride;
    size_t h2d_bytes = oc_cuda_staging_fit((size_t)h2d_need, (size_t)(host_budget - d2h_need > 0 ? host_budget - d2h_need : 0));
    OC_CHECK(oc_pool_host_alloc(ctx, pl->dev.pool, h2d_bytes, "the pinned upload ring", (void **)&pl->h2d_ring));
    for (int k = 0; k < H2D_SLOTS; ++k) pl->h2d_pin[k] = pl->h2d_ring + k * pl->h2d_stride;
    OC_CHECK(create_events(ctx, pl->h2d_pin_free, H2D_SLOTS, 1));

    if (job->dense) {
        int64_t left = host_budget - (int64_t)h2d_bytes;
        size_t d2h_bytes = oc_cuda_staging_fit((size_t)d2h_need, (size_t)(left > 0 ? left : 0));
        pl->d2h_pin = calloc((size_t)pl->d2h_slots, sizeof *pl->d2h_pin);
        pl->d2h_pin_ready = calloc((size_t)pl->d2h_slots, sizeof *pl->d2h_pin_ready);
        pl->queue = calloc((size_t)pl->d2h_slots, sizeof *pl->queue);
        pl->slot_busy = calloc((size_t)pl->d2h_slots, sizeof *pl->slot_busy);
        pl->sinks = calloc((size_t)pl->nsinks, sizeof *pl->sinks);
        if (!pl->d2h_pin || !pl->d2h_pin_ready || !pl->queue || !pl->slot_busy || !pl->sinks)
            return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the pipeline's staging tables");
        OC_CHECK(oc_pool_host_alloc(ctx, pl->dev.pool, d2h_bytes, "the pinned download ring", (void **)&pl->d2h_ring));
        for (int k = 0; k < pl->d2h_slots; ++k) pl->d2h_pin[k] = pl->d2h_ring + k * pl->d2h_stride;
        OC_CHECK(create_events(ctx, pl->d2h_pin_ready, pl->d2h_slots, 1));
        int want = pl->nsinks;
        pl->nsinks = 0;
        pl->sync_ready = 1;
        for (int i = 0; i < want; ++i) {
            int rc = pthread_create(&pl->sinks[i], NULL, sink_main, pl);
            if (rc != 0) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot start sink thread %d of %d (error %d)", i + 1, want, rc);
            pl->nsinks++;
        }
    }
    return OC_OK;
}

/* ---------------------------------------------------------------- per tile */
/* The row popcounts of the panel in `slot`, behind its rows. */
static int32_t *panel_pops(const pipeline *pl, int slot)
{
    return (int32_t *)((char *)pl->panel[slot] + pl->plan.tile * pl->row_bytes);
}

static oc_status load_panel(pipeline *pl, int side, int64_t index, int slot)
{
    oc_context *ctx = pl->ctx;
    const oc_matrix *m = side == 0 ? pl->job->a : pl->job->b;
    int64_t rows = oc_tile_panel_rows(&pl->plan, m->rows, index);
    /* A file-backed matrix (no bits) is read straight into the pinned slots, whole rows each. */
    const unsigned char *src =
        oc_matrix_resident(m) ? (const unsigned char *)(m->bits + index * pl->plan.tile * pl->words) : NULL;
    unsigned char *dst = (unsigned char *)pl->panel[slot];
    int64_t bytes = rows * pl->row_bytes;
    double t0 = oc_now();
    /* The slot's previous panel may still be read by kernels enqueued earlier, on either
     * compute stream (an event never recorded is complete). */
    CUDA_CHECK(ctx, cudaStreamWaitEvent(pl->dev.h2d, pl->panel_free[2 * slot], 0));
    CUDA_CHECK(ctx, cudaStreamWaitEvent(pl->dev.h2d, pl->panel_free[2 * slot + 1], 0));
    for (int64_t off = 0; off < bytes; off += pl->h2d_slot_bytes) {
        int64_t len = bytes - off < pl->h2d_slot_bytes ? bytes - off : pl->h2d_slot_bytes;
        int k = pl->h2d_next;
        pl->h2d_next = (k + 1) % H2D_SLOTS;
        double w0 = oc_now();
        CUDA_CHECK(ctx, cudaEventSynchronize(pl->h2d_pin_free[k]));
        pl->stage_wait_seconds += oc_now() - w0;
        /* Pageable rows into pinned memory on several cores: one core copies about 10 GB/s,
         * less than the link's 55 GB/s. */
        if (src) copy_pool_run(pl, pl->h2d_pin[k], src + off, len);
        else
            OC_CHECK(oc_matrix_load_rows(ctx, m, index * pl->plan.tile + off / pl->row_bytes, len / pl->row_bytes,
                                         (uint64_t *)pl->h2d_pin[k]));
        CUDA_CHECK(ctx, cudaMemcpyAsync(dst + off, pl->h2d_pin[k], (size_t)len, cudaMemcpyHostToDevice, pl->dev.h2d));
        CUDA_CHECK(ctx, cudaEventRecord(pl->h2d_pin_free[k], pl->dev.h2d));
    }
    if (pl->pops)
        OC_CHECK(oc_cuda_row_popcounts(ctx, &pl->dev, pl->panel[slot], pl->words, (int)rows, panel_pops(pl, slot),
                                       pl->dev.h2d));
    CUDA_CHECK(ctx, cudaEventRecord(pl->panel_loaded[slot], pl->dev.h2d));
    pl->job->stats->bytes_h2d += bytes;
    pl->upload_seconds += oc_now() - t0;
    return OC_OK;
}

static oc_status place_panel(pipeline *pl, oc_panel_cache *cache, int side, int64_t index, int64_t keep, int *slot)
{
    oc_context *ctx = pl->ctx;
    int load;
    *slot = oc_panel_cache_place(cache, oc_tile_panel_key(side, index), keep, &load);
    if (load) OC_CHECK(load_panel(pl, side, index, *slot));
    return OC_OK;
}

/* Copies the rows x cols block at `src` (rows plan->tile elements apart) on the device to
 * C(i0, j0) through pinned slots and the sink threads. Enqueued on the d2h stream after
 * whatever it already waits for. */
static oc_status download_block(pipeline *pl, const char *src, int64_t i0, int64_t j0, int64_t rows, int64_t cols)
{
    oc_context *ctx = pl->ctx;
    size_t pitch = (size_t)(pl->plan.tile * pl->elem), width = (size_t)(cols * pl->elem);
    pl->job->stats->bytes_d2h += rows * (int64_t)width;
    int64_t chunk_rows = pl->d2h_slot_bytes / (int64_t)width;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
        int64_t nr = rows - r0 < chunk_rows ? rows - r0 : chunk_rows;
        int k = 0;
        double t0 = oc_now();
        OC_CHECK(d2h_acquire(pl, &k));
        pl->acquire_seconds += oc_now() - t0;
        cudaError_t e = cudaMemcpy2DAsync(pl->d2h_pin[k], width, src + (size_t)r0 * pitch, pitch, width, (size_t)nr,
                                          cudaMemcpyDeviceToHost, pl->dev.d2h);
        if (e == cudaSuccess) e = cudaEventRecord(pl->d2h_pin_ready[k], pl->dev.d2h);
        if (e != cudaSuccess) {
            pthread_mutex_lock(&pl->lock);
            pl->slot_busy[k] = 0;
            pthread_mutex_unlock(&pl->lock);
            CUDA_CHECK(ctx, e);
        }
        d2h_submit(pl, (d2h_chunk){k, i0 + r0, j0, nr, cols});
    }
    return OC_OK;
}

/* Everything output slot o holds for tile (I, J) to the destination, then frees the slot.
 * For A·Aᵀ the slot's second half holds the mirror: the whole symmetric block of a
 * diagonal tile (sent instead of the tile), or the block at (J, I). */
static oc_status download_tile(pipeline *pl, int o, int64_t I, int64_t J, int64_t rows, int64_t cols)
{
    oc_context *ctx = pl->ctx;
    const oc_tile_plan *plan = &pl->plan;
    const char *tile = pl->out[o], *mirror = tile + plan->tile * plan->tile * pl->elem;
    int64_t i0 = I * plan->tile, j0 = J * plan->tile;
    CUDA_CHECK(ctx, cudaStreamWaitEvent(pl->dev.d2h, pl->out_done[o], 0));
    if (pl->gpu_mirror && I == J) {
        OC_CHECK(download_block(pl, mirror, i0, j0, rows, cols));
    } else {
        OC_CHECK(download_block(pl, tile, i0, j0, rows, cols));
        if (pl->gpu_mirror) OC_CHECK(download_block(pl, mirror, j0, i0, cols, rows));
    }
    CUDA_CHECK(ctx, cudaEventRecord(pl->out_free[o], pl->dev.d2h));
    return OC_OK;
}

/* Panels of tile (I, J) not yet on the device. */
static int tile_uploads(const oc_panel_cache *cache, int side_b, int64_t I, int64_t J)
{
    int64_t ka = oc_tile_panel_key(0, I), kb = oc_tile_panel_key(side_b, J);
    return (cache->key_slot[ka] < 0) + (kb != ka && cache->key_slot[kb] < 0);
}

/* Places both panels of tile (I, J), uploading what is not resident. */
static oc_status place_tile(pipeline *pl, oc_panel_cache *cache, int64_t I, int64_t J, int *sa, int *sb)
{
    oc_context *ctx = pl->ctx;
    int side_b = pl->job->symmetric ? 0 : 1;
    int64_t ka = oc_tile_panel_key(0, I), kb = oc_tile_panel_key(side_b, J);
    OC_CHECK(place_panel(pl, cache, 0, I, kb, sa));
    if (kb != ka) OC_CHECK(place_panel(pl, cache, side_b, J, ka, sb));
    else *sb = *sa;
    return OC_OK;
}

/* The tile order of fused top-k of A·Aᵀ when every panel is resident: each diagonal tile
 * (which seeds its panel's lists) comes one column before the first tile that needs its
 * floors, so no tile waits for the selection of the tile just before it; except (0,1),
 * which comes before D2: while panel 2 is still being uploaded (the driving thread waits
 * for it at D2) the GPU then has (0,1) to run instead of nothing:
 *   D0, D1, (0,1), D2, D3, (0,2), (1,2), D4, (0,3), (1,3), (2,3), ... */
static void seeded_order(int64_t panels, int64_t *order)
{
    int64_t t = 0;
    for (int64_t d = 0; d < panels && d < 3; ++d) {
        order[2 * t] = order[2 * t + 1] = d, t++;
        if (d == 1) order[2 * t] = 0, order[2 * t + 1] = 1, t++;
    }
    for (int64_t j = 2; j < panels; ++j) {
        if (j + 1 < panels) order[2 * t] = order[2 * t + 1] = j + 1, t++;
        for (int64_t i = 0; i < j; ++i) order[2 * t] = i, order[2 * t + 1] = j, t++;
    }
}

static oc_status run_tiles(pipeline *pl)
{
    oc_context *ctx = pl->ctx;
    oc_gram_job *job = pl->job;
    const oc_tile_plan *plan = &pl->plan;
    oc_status st = OC_OK;
    oc_panel_cache cache;
    int64_t maxp = plan->panels_a > plan->panels_b ? plan->panels_a : plan->panels_b;
    int64_t *order = malloc((size_t)plan->ntiles * 2 * sizeof *order);
    if (!order) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the tile order (%lld tiles)", (long long)plan->ntiles);
    st = oc_panel_cache_init(ctx, &cache, plan->panel_slots, 2 * maxp);
    if (st != OC_OK) {
        free(order);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    if (plan->resident && oc_cuda_select_seeds_first(pl->select)) seeded_order(plan->panels_a, order);
    else oc_tile_plan_order(plan, job->symmetric, order);
    const oc_gram_options *o = job->opts;
    double last_progress = oc_now();
    if (pl->kernel_ev) CUDA_CHECK_GOTO(ctx, cudaEventRecord(pl->trace_begin, pl->dev.compute));

    int64_t prefetched = 0; /* tiles up to this one have their panels placed */
    const int side_b = job->symmetric ? 0 : 1;
    for (int64_t t = 0; t < plan->ntiles; ++t) {
        if (oc_cancelled(ctx)) {
            st = oc_fail(ctx, OC_ERR_CANCELLED, "cancelled after %lld of %lld tiles", (long long)t, (long long)plan->ntiles);
            goto cleanup;
        }
        int64_t I = order[2 * t], J = order[2 * t + 1];
        int sa, sb;
        OC_CHECK_GOTO(place_tile(pl, &cache, I, J, &sa, &sb));
        int out_slot = (int)(t % plan->out_slots), c = (int)(t % pl->streams);
        cudaStream_t stream = c ? pl->dev.compute2 : pl->dev.compute;
        CUDA_CHECK_GOTO(ctx, cudaStreamWaitEvent(stream, pl->panel_loaded[sa], 0));
        CUDA_CHECK_GOTO(ctx, cudaStreamWaitEvent(stream, pl->panel_loaded[sb], 0));
        CUDA_CHECK_GOTO(ctx, cudaStreamWaitEvent(stream, pl->out_free[out_slot], 0));

        oc_gram_tile tile = {.a = pl->panel[sa], .b = pl->panel[sb], .words = pl->words,
                             .rows = (int)oc_tile_panel_rows(plan, job->n, I), .cols = (int)oc_tile_panel_rows(plan, job->p, J),
                             .pop_a = pl->pops ? panel_pops(pl, sa) : NULL, .pop_b = pl->pops ? panel_pops(pl, sb) : NULL,
                             .out = pl->out[out_slot], .ld = plan->tile, .metric = job->metric, .dtype = job->dtype,
                             .upper_only = job->symmetric && I == J};
        double macs = 0, again = 0;
        if (pl->select) OC_CHECK_GOTO(oc_cuda_select_tile_begin(pl->select, t, out_slot, I, J, &tile, stream));
        if (pl->kernel_ev) CUDA_CHECK_GOTO(ctx, cudaEventRecord(pl->kernel_ev[2 * t], stream));
        if (pl->kernel == KERNEL_B1) OC_CHECK_GOTO(oc_cuda_gram_b1(ctx, &pl->dev, &tile, stream, &macs));
        else OC_CHECK_GOTO(oc_cuda_gram_popc(ctx, &pl->dev, &tile, stream, &macs));
        if (tile.select != OC_TILE_DENSE) {
            /* The dense pass a fused tile needs when a bucket overflowed; it returns at once
             * otherwise (its bit-MACs are not counted). */
            oc_gram_tile dense = tile;
            dense.select = OC_TILE_DENSE;
            dense.run_if = tile.over;
            OC_CHECK_GOTO(oc_cuda_gram_b1(ctx, &pl->dev, &dense, stream, &again));
        }
        if (pl->gpu_mirror)
            OC_CHECK_GOTO(oc_cuda_gram_mirror(ctx, &pl->dev, tile.out, (char *)tile.out + plan->tile * plan->tile * pl->elem,
                                              tile.rows, tile.cols, plan->tile, (int)pl->elem, I == J, stream));
        if (pl->kernel_ev) CUDA_CHECK_GOTO(ctx, cudaEventRecord(pl->kernel_ev[2 * t + 1], stream));
        job->stats->bit_macs_computed += macs;
        job->stats->tiles++;
        CUDA_CHECK_GOTO(ctx, cudaEventRecord(pl->out_done[out_slot], stream));
        CUDA_CHECK_GOTO(ctx, cudaEventRecord(pl->panel_free[2 * sa + c], stream));
        if (sb != sa) CUDA_CHECK_GOTO(ctx, cudaEventRecord(pl->panel_free[2 * sb + c], stream));
        /* The next tiles' panels go up now: what follows may block this thread (a selection
         * waiting for its pairs, a sink for a free slot), and an upload issued only after it
         * would leave the GPU waiting for the panel (a panel of 6144 rows of 200000 bits takes
         * longer to upload than a tile to compute). With every panel resident nothing is
         * evicted, so the uploads run up to three tiles ahead, one tile's uploads per tile (a
         * burst would keep this thread staging while the GPU waits for the next kernel);
         * streaming panels, one tile, so that the cache sees the placements in the plan's
         * order (each tile's own placement then finds its panels placed). */
        for (int64_t ahead = plan->resident ? 3 : 1, issued = 0; prefetched < t + ahead && prefetched + 1 < plan->ntiles;
             ++prefetched) {
            int64_t nI = order[2 * prefetched + 2], nJ = order[2 * prefetched + 3];
            int na, nb, need = tile_uploads(&cache, side_b, nI, nJ);
            if (need && issued) break;
            issued += need;
            OC_CHECK_GOTO(place_tile(pl, &cache, nI, nJ, &na, &nb));
        }
        if (pl->select)
            OC_CHECK_GOTO(oc_cuda_select_tile_done(pl->select, &tile, out_slot, stream, pl->dev.d2h, pl->out_free[out_slot]));
        if (job->dense) OC_CHECK_GOTO(download_tile(pl, out_slot, I, J, tile.rows, tile.cols));

        double now = oc_now();
        if (o->progress && now - last_progress >= 0.1) {
            o->progress(o->progress_user, (double)(t + 1), (double)plan->ntiles);
            last_progress = now;
        }
    }
    if (pl->select) OC_CHECK_GOTO(oc_cuda_select_finish(pl->select, pl->dev.d2h));
    CUDA_CHECK_GOTO(ctx, cudaStreamSynchronize(pl->dev.compute));
    CUDA_CHECK_GOTO(ctx, cudaStreamSynchronize(pl->dev.compute2));
    CUDA_CHECK_GOTO(ctx, cudaStreamSynchronize(pl->dev.d2h));
    if (o->progress) o->progress(o->progress_user, (double)plan->ntiles, (double)plan->ntiles);

cleanup:
    oc_panel_cache_free(&cache);
    free(order);
    return st;
}

/* ---------------------------------------------------------------- the job */
static void trace(double *t, const char *phase)
{
    double now = oc_now();
    if (tracing()) fprintf(stderr, "outcore cuda: %-10s %8.4f s\n", phase, now - *t);
    *t = now;
}

typedef struct busy_span {
    double start, end;
    int64_t tile;
} busy_span;

static int by_start(const void *a, const void *b)
{
    double x = ((const busy_span *)a)->start, y = ((const busy_span *)b)->start;
    return x < y ? -1 : x > y;
}

/* When the GPU computed, from the timed events around each tile's kernels (selection
 * included) on both compute streams, relative to the start of the tiles phase: the first
 * kernel's start, the last one's end, the time at least one tile's kernels ran, and the
 * longest gaps with none (named by the tile that ended them). Idle gaps say the GPU was
 * starved; a busy time above the kernel model says the kernels ran slower than on one
 * large tile. */
static void trace_busy(pipeline *pl)
{
    int64_t n = pl->plan.ntiles;
    busy_span *sp = malloc((size_t)n * sizeof *sp);
    if (!sp) return;
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
        float a = 0, b = 0;
        if (cudaEventElapsedTime(&a, pl->trace_begin, pl->kernel_ev[2 * i]) != cudaSuccess ||
            cudaEventElapsedTime(&b, pl->trace_begin, pl->kernel_ev[2 * i + 1]) != cudaSuccess)
            continue;
        sp[m++] = (busy_span){a / 1e3, b / 1e3, i};
    }
    (void)cudaGetLastError();
    if (m == 0) {
        free(sp);
        return;
    }
    qsort(sp, (size_t)m, sizeof *sp, by_start);
    enum { TOP = 5 };
    busy_span gap[TOP] = {{0, 0, -1}, {0, 0, -1}, {0, 0, -1}, {0, 0, -1}, {0, 0, -1}};
    double busy = 0, idle = 0, cur0 = sp[0].start, cur1 = sp[0].end, last = sp[0].end;
    for (int64_t i = 1; i <= m; ++i) {
        if (i < m && sp[i].start <= cur1) {
            if (sp[i].end > cur1) cur1 = sp[i].end;
            continue;
        }
        busy += cur1 - cur0;
        if (cur1 > last) last = cur1;
        if (i == m) break;
        double g = sp[i].start - cur1;
        idle += g;
        for (int k = 0; k < TOP; ++k)
            if (g > gap[k].end - gap[k].start) {
                memmove(&gap[k + 1], &gap[k], (TOP - 1 - k) * sizeof *gap);
                gap[k] = (busy_span){cur1, sp[i].start, sp[i].tile};
                break;
            }
        cur0 = sp[i].start, cur1 = sp[i].end;
    }
    fprintf(stderr,
            "outcore cuda: GPU busy %.4f s of the span %.4f-%.4f s after the tiles phase began (idle inside %.4f s); "
            "longest gaps (ms before tile):",
            busy, sp[0].start, last, idle);
    for (int k = 0; k < TOP && gap[k].tile >= 0; ++k)
        fprintf(stderr, " %.2f@%lld", 1e3 * (gap[k].end - gap[k].start), (long long)gap[k].tile);
    fprintf(stderr, "\n");
    free(sp);
}

/* The pipeline's choices and where its time went (OUTCORE_TRACE). */
static void trace_pipeline(pipeline *pl)
{
    if (!tracing()) return;
    double kernels = 0;
    for (int64_t i = 0; pl->kernel_ev && i < pl->plan.ntiles; ++i) {
        float ms = 0;
        if (cudaEventElapsedTime(&ms, pl->kernel_ev[2 * i], pl->kernel_ev[2 * i + 1]) == cudaSuccess) kernels += ms / 1e3;
    }
    (void)cudaGetLastError();
    fprintf(stderr,
            "outcore cuda: tile %lld, %lld tiles, %d panel slots%s, %lld uploads; plan: kernels %.4f s, cost %.4f s; "
            "kernels busy %.4f s (summed per tile, on %d stream%s); staging %.4f s on %d threads (of which slot waits "
            "%.4f s); %d sinks, %d D2H slots of %.2f MiB, mirror on the %s (slot waits %.4f s)\n",
            (long long)pl->plan.tile, (long long)pl->plan.ntiles, pl->plan.panel_slots, pl->plan.resident ? " (resident)" : "",
            (long long)pl->plan.panel_loads, pl->plan.kernel_seconds, pl->plan.cost_seconds, kernels, pl->streams,
            pl->streams > 1 ? "s" : "", pl->upload_seconds, pl->copier.workers + 1, pl->stage_wait_seconds, pl->nsinks,
            pl->d2h_slots, pl->d2h_slot_bytes / 1048576.0, pl->gpu_mirror ? "device" : pl->host_mirror ? "host" : "-",
            pl->acquire_seconds);
    if (pl->select) {
        int64_t fused, over;
        oc_cuda_select_counts(pl->select, &fused, &over);
        double wait, work;
        oc_cuda_select_host_seconds(pl->select, &wait, &work);
        fprintf(stderr,
                "outcore cuda: selection: %lld of %lld tiles fused in the kernel, %lld overflowed; host waited %.4f s for "
                "threshold pairs, handled them in %.4f s\n",
                (long long)fused, (long long)pl->plan.ntiles, (long long)over, wait, work);
    }
    if (pl->kernel_ev) trace_busy(pl);
}

static void teardown(pipeline *pl)
{
    (void)sinks_join(pl, 0);
    copy_pool_stop(pl);
    oc_cuda_select_close(pl->select);
    if (pl->dev.pool) {
        /* Every enqueued copy and kernel must finish before its buffers go back. */
        (void)cudaDeviceSynchronize();
        (void)cudaGetLastError();
    }
    destroy_events(pl->panel_loaded, pl->plan.panel_slots);
    destroy_events(pl->panel_free, 2 * pl->plan.panel_slots);
    destroy_events(pl->out_done, pl->plan.out_slots);
    destroy_events(pl->out_free, pl->plan.out_slots);
    destroy_events(pl->h2d_pin_free, H2D_SLOTS);
    destroy_events(pl->d2h_pin_ready, pl->d2h_slots);
    destroy_events(pl->kernel_ev, pl->kernel_ev ? 2 * pl->plan.ntiles : 0);
    destroy_events(&pl->trace_begin, pl->trace_begin ? 1 : 0);
    oc_cuda_device_close(&pl->dev); /* frees the pool: every device and pinned buffer */
    free(pl->panel);
    free(pl->panel_loaded);
    free(pl->panel_free);
    free(pl->out);
    free(pl->out_done);
    free(pl->out_free);
    free(pl->d2h_pin);
    free(pl->d2h_pin_ready);
    free(pl->queue);
    free(pl->slot_busy);
    free(pl->sinks);
    free(pl->kernel_ev);
    pthread_cond_destroy(&pl->work);
    pthread_cond_destroy(&pl->slot_freed);
    pthread_mutex_destroy(&pl->lock);
}

oc_status oc_cuda_gram(oc_gram_job *job)
{
    oc_context *ctx = job->ctx;
    oc_status st = OC_OK;
    double t = oc_now();
    if (job->m >= (1LL << 31))
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "the CUDA kernels count in 32 bits: %lld columns is too many (at most %lld)",
                       (long long)job->m, (1LL << 31) - 1);
    pipeline *pl = calloc(1, sizeof *pl);
    if (!pl) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the pipeline state");
    pl->job = job;
    pl->ctx = ctx;
    pl->words = job->a->words_per_row;
    pl->row_bytes = pl->words * 8;
    pl->elem = (int64_t)oc_dtype_size(job->dtype);
    pthread_mutex_init(&pl->lock, NULL);
    pthread_cond_init(&pl->work, NULL);
    pthread_cond_init(&pl->slot_freed, NULL);

    OC_CHECK_GOTO(oc_cuda_device_open(ctx, job->opts->device, &pl->dev));
    OC_CHECK_GOTO(choose_kernel(pl));
    trace(&t, "open");
    OC_CHECK_GOTO(setup(pl));
    trace(&t, "setup");
    OC_CHECK_GOTO(run_tiles(pl));
    trace(&t, "tiles");
    trace_pipeline(pl);
    OC_CHECK_GOTO(sinks_join(pl, 1));
    trace(&t, "sinks");

cleanup:
    oc_gram_stats *s = job->stats;
    s->backend = OC_BACKEND_CUDA;
    snprintf(s->backend_desc, sizeof s->backend_desc, "cuda:%d %.48s %s", pl->dev.index, pl->dev.name,
             pl->kernel == KERNEL_B1 ? "b1-mma"
             : pl->dev.cc >= 80      ? "popc"
                                     : "popc (no b1 mma before sm_80)");
    if (pl->dev.pool) {
        oc_pool_stats ps;
        oc_pool_get_stats(pl->dev.pool, &ps);
        s->dev_budget_bytes = ps.budget;
        s->dev_peak_bytes = ps.peak;
        s->dev_current_bytes = ps.current;
        s->dev_allocations = ps.allocations;
    }
    teardown(pl);
    trace(&t, "teardown");
    free(pl);
    return st;
}
