/*
 * engine_worker.c - the device worker: one device, the plan's buffers, the tile loop
 * (engine.h says what orders the device work; engine_panels.c where the panels come from;
 * engine_upload.h and engine_sinks.h how rows go up and results come down).
 *
 * Memory: the worker's pool (the device budget and the pinned host budget of the plan)
 * holds every device buffer and both pinned rings; nothing is allocated per tile. Events:
 * panel_loaded[slot] after a panel's upload; panel_free[2 * slot + c] after the last kernel
 * on compute stream c that read the slot; out_done[slot] after a tile's kernels; out_free
 * [slot] after the last download out of the slot or the job's consumption of it.
 * Threads: the caller's (the driving thread) enqueues everything; the context's pool runs
 * the upload copies (with it) and the sink deliveries.
 */
#include "engine/cuda/engine_worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/threads.h"
#include "core/trace.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/panel_exchange.h"
#include "mem/staging.h"

oc_status oc_engine_worker_open(oc_context *ctx, int index, oc_engine_worker **out)
{
    oc_engine_worker *w = calloc(1, sizeof *w);
    if (!w) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the device worker");
    w->ctx = ctx;
    pthread_mutex_init(&w->upload_lock, NULL);
    oc_status st = oc_cuda_device_open(ctx, index, &w->dev);
    if (st != OC_OK) {
        oc_engine_worker_close(w);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    *out = w;
    return OC_OK;
}

oc_cuda_device *oc_engine_worker_device(oc_engine_worker *w) { return &w->dev; }
void *const *oc_engine_worker_out_slots(const oc_engine_worker *w) { return w->out; }
const oc_engine_counts *oc_engine_worker_counts(const oc_engine_worker *w) { return &w->counts; }
void oc_engine_worker_fail_at(oc_engine_worker *w, int64_t tile) { w->fail_at = tile; }
void oc_engine_worker_exchange(oc_engine_worker *w, oc_panel_exchange *x) { w->exchange = x; }
void oc_engine_worker_window(oc_engine_worker *w, const oc_engine_window *window) { w->window = window; }

/* The worker's tiles of the window: the order's tiles index, index + devices, ... below its
 * window's tiles. */
static int64_t window_tiles(const oc_engine_worker *w)
{
    const oc_engine_window *win = w->window;
    if (!win || w->queue_index >= win->tiles) return 0;
    return (win->tiles - w->queue_index + win->devices - 1) / win->devices;
}

/* The counts of the worker's window tile t, in pieces of OC_ENGINE_COUNTS_PIECE tiles: the
 * first in the set-up, behind the panel slots in their allocation, each other when the first
 * slice of its first tile is enqueued (run_window), while the device runs the slices before
 * it. In one piece, before the first tile, the window's counts held each part's tiles back;
 * in growing pieces of 1, 2, 4, then 8 tiles the device waited for the third and fourth
 * pieces (bench/RESULTS.md, "Tiles split on K"). */
#define OC_ENGINE_COUNTS_PIECE 8

/* The window tiles of the piece that starts at tile t. */
static int64_t counts_piece_tiles(const oc_engine_worker *w, int64_t t)
{
    return w->windowed - t < OC_ENGINE_COUNTS_PIECE ? w->windowed - t : OC_ENGINE_COUNTS_PIECE;
}

/* The piece at `at` holds the counts of window tiles [t, t + n). */
static void place_counts(oc_engine_worker *w, int64_t t, int64_t n, char *at)
{
    for (int64_t i = 0; i < n; ++i) w->partial_at[t + i] = (int32_t *)(at + w->partial_stride * (size_t)i);
    w->partial_pieces++;
}

static oc_status window_counts(oc_engine_worker *w, int64_t t, int32_t **counts)
{
    oc_context *ctx = w->ctx;
    if (!w->partial_at[t]) {
        const int64_t n = counts_piece_tiles(w, t);
        double t0 = oc_now();
        char *piece;
        OC_CHECK(ctx, oc_pool_alloc(ctx, w->dev.pool, w->partial_stride * (size_t)n, "the counts of tiles split on K",
                                    (void **)&piece));
        place_counts(w, t, n, piece);
        w->partial_seconds += oc_now() - t0;
    }
    *counts = w->partial_at[t];
    return OC_OK;
}

void oc_engine_worker_share(oc_engine_worker *w, const int64_t *order, oc_scheduler *queue, int index)
{
    w->shared_order = order;
    w->queue = queue;
    w->queue_index = index;
}

static oc_status create_events(oc_context *ctx, cudaEvent_t **ev, int count)
{
    *ev = calloc((size_t)count, sizeof **ev);
    if (!*ev) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate %d events", count);
    /* Timing off: these only order work, and timed events cost more to record. */
    for (int i = 0; i < count; ++i) CUDA_CHECK(ctx, cudaEventCreateWithFlags(&(*ev)[i], cudaEventDisableTiming));
    return OC_OK;
}

static void destroy_events(cudaEvent_t *ev, int count)
{
    for (int i = 0; ev && i < count; ++i)
        if (ev[i]) (void)cudaEventDestroy(ev[i]);
    free(ev);
}

/* Each ring is one pinned allocation, of the size a cached block has when that covers the
 * need without passing the host budget (no pinning then), else of the need. */
static size_t ring_bytes(oc_context *ctx, int64_t need, int64_t limit)
{
    return oc_cuda_staging_fit(ctx, (size_t)need, (size_t)(limit > 0 ? limit : 0));
}

/* A slot's place in its allocation: whole pool units, so every slot starts aligned. */
static size_t slot_stride(int64_t bytes) { return ((size_t)bytes + OC_POOL_ALIGN - 1) / OC_POOL_ALIGN * OC_POOL_ALIGN; }

oc_status oc_engine_worker_setup(oc_engine_worker *w, const oc_engine_plan *plan, const oc_engine_job *job)
{
    oc_context *ctx = w->ctx;
    const oc_tile_plan *tp = &plan->tiles;
    w->plan = *plan;
    w->job = *job;
    w->streams = job->two_streams ? 2 : 1;
    /* OUTCORE_TRACE: each step of a worker's set-up, as "outcore cuda:D setup: STEP s". */
    char who[32];
    snprintf(who, sizeof who, "cuda:%d setup", w->dev.index);
    double t = oc_now();
    oc_mem_ops ops = oc_cuda_mem_ops(ctx);
    OC_CHECK(ctx, oc_pool_create(ctx, &ops, w->dev.index, plan->device_budget, job->gpu_mem_mode, plan->host_budget,
                                 &w->dev.pool));
    w->ready = 1;

    int ns = tp->panel_slots, no = tp->out_slots;
    w->panel = calloc((size_t)ns, sizeof *w->panel);
    w->out = calloc((size_t)no, sizeof *w->out);
    if (!w->panel || !w->out) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the worker's slot tables");
    /* The panel slots are one device allocation, and the output slots another: each
     * allocation costs its own driver calls to make, to map for the other devices and to free,
     * and one allocation a slot cost several times two in all (bench/RESULTS.md, "one
     * allocation per kind of slot"). */
    const size_t panel_stride = slot_stride(tp->panel_bytes), out_stride = slot_stride(tp->out_bytes);
    /* Tiles split on K: the window tiles' counts come in pieces (window_counts), the first
     * behind the panel slots in their allocation: in one of its own it lengthened each part's
     * set-up (bench/RESULTS.md, "one allocation fewer"). */
    if (w->window && !(tp->resident && w->exchange && w->queue && job->partial))
        return oc_fail(ctx, OC_ERR_INTERNAL, "tiles split on K need resident panels shared through an exchange");
    int64_t first_counts = 0;
    if (w->window) {
        w->windowed = window_tiles(w);
        w->partial_at = calloc((size_t)(w->windowed > 0 ? w->windowed : 1), sizeof *w->partial_at);
        if (!w->partial_at) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the worker's slice tables");
        w->partial_stride = slot_stride(tp->tile * tp->tile * 4);
        first_counts = counts_piece_tiles(w, 0);
    }
    char *panels = NULL, *outs = NULL;
    OC_CHECK(ctx,
             oc_pool_alloc(ctx, w->dev.pool, panel_stride * (size_t)ns + w->partial_stride * (size_t)first_counts,
                           first_counts ? "the row panels and the first counts of tiles split on K" : "the row panels",
                           (void **)&panels));
    OC_CHECK(ctx, oc_pool_alloc(ctx, w->dev.pool, out_stride * (size_t)no, "the output tiles", (void **)&outs));
    for (int s = 0; s < ns; ++s) w->panel[s] = panels + panel_stride * (size_t)s;
    for (int s = 0; s < no; ++s) w->out[s] = outs + out_stride * (size_t)s;
    if (first_counts > 0) place_counts(w, 0, first_counts, panels + panel_stride * (size_t)ns);
    OC_CHECK(ctx, create_events(ctx, &w->panel_loaded, ns));
    OC_CHECK(ctx, create_events(ctx, &w->panel_free, 2 * ns));
    OC_CHECK(ctx, create_events(ctx, &w->out_done, no));
    OC_CHECK(ctx, create_events(ctx, &w->out_free, no));
    if (tp->resident) {
        CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&w->peer, cudaStreamNonBlocking));
        w->placed = calloc((size_t)ns, 1);
        if (!w->placed) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the worker's slot table");
    }
    /* Tiles split on K: the slices' events and marks. */
    int64_t partial_slices = 0;
    if (w->window) {
        const int S = w->window->slices;
        OC_CHECK(ctx, create_events(ctx, &w->slice_loaded, ns * S));
        w->slice_placed = calloc((size_t)(ns * S), 1);
        if (!w->slice_placed) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the worker's slice tables");
        partial_slices = w->windowed * (S - 1);
    }
    if (oc_tracing()) OC_CHECK(ctx, oc_engine_trace_open(ctx, tp->ntiles + partial_slices, &w->trace));
    oc_trace_phase(&t, who, "device memory and events");

    oc_workers *pool_threads;
    OC_CHECK(ctx, oc_context_workers(ctx, plan->workers, &pool_threads));
    oc_trace_phase(&t, who, "threads");
    oc_workers_limit_tasks(pool_threads, plan->sinks);
    int64_t h2d_need = oc_staging_bytes(plan->h2d_slots, plan->h2d_slot_bytes);
    int64_t d2h_need = plan->d2h_slots ? oc_staging_bytes(plan->d2h_slots, plan->d2h_slot_bytes) : 0;
    size_t h2d_bytes = ring_bytes(ctx, h2d_need, plan->host_budget - d2h_need);
    OC_CHECK(ctx, oc_engine_upload_open(ctx, w->dev.pool, plan, h2d_bytes, pool_threads, &w->upload));
    oc_trace_phase(&t, who, "upload ring");
    if (job->dense && plan->d2h_slots > 0) {
        size_t d2h_bytes = ring_bytes(ctx, d2h_need, plan->host_budget - (int64_t)h2d_bytes);
        OC_CHECK(ctx, oc_engine_sinks_open(ctx, w->dev.pool, plan, d2h_bytes, w->dev.index, job->dense,
                                           job->host_mirror, pool_threads, &w->sinks));
        oc_trace_phase(&t, who, "sinks");
    }
    /* Its share of the exchange's panels goes up from now on: set up first, a part's selection
     * delayed its first tile, which waited for its first panels anyway (bench/RESULTS.md).
     * The order is the shared one, known before any part set up. */
    if (tp->resident && w->exchange && w->queue) {
        OC_CHECK(ctx, oc_engine_prestage_begin(w, w->shared_order, tp->ntiles));
        oc_trace_phase(&t, who, "uploads started");
    }
    return OC_OK;
}

void oc_engine_worker_give_up(oc_engine_worker *w)
{
    if (!w) return;
    if (w->prestage) (void)oc_engine_prestage_finish(w, OC_ERR_CANCELLED);
    /* Never started: each of its panels goes back to no one (a waiting device takes it). */
    else if (w->exchange && !w->prestage_started) oc_panel_exchange_abandon(w->exchange, w->queue_index);
}

/* ---------------------------------------------------------------- results */
/* The tile's blocks to the destination through the sinks, then frees its output slot. */
static oc_status download_tile(oc_engine_worker *w, const oc_engine_tile *t)
{
    oc_context *ctx = w->ctx;
    oc_engine_block blocks[2] = {{t->out, t->I * w->plan.tiles.tile, t->J * w->plan.tiles.tile, t->rows, t->cols}};
    int nblocks = w->job.blocks ? w->job.blocks(w->job.user, t, blocks) : 1;
    size_t pitch = (size_t)(w->plan.tiles.tile * (int64_t)w->job.dense->elem_size);
    CUDA_CHECK(ctx, cudaStreamWaitEvent(w->dev.d2h, w->out_done[t->out_slot], 0));
    for (int b = 0; b < nblocks; ++b)
        OC_CHECK(ctx, oc_engine_sinks_download(ctx, w->sinks, blocks[b].src, pitch, blocks[b].i0, blocks[b].j0,
                                               blocks[b].rows, blocks[b].cols, w->dev.d2h, &w->counts.bytes_d2h,
                                               &w->counts.acquire_seconds));
    CUDA_CHECK(ctx, cudaEventRecord(w->out_free[t->out_slot], w->dev.d2h));
    return OC_OK;
}

/* ---------------------------------------------------------------- the tile loop */
/* Enqueues tile t of the order: waits for its panels and output slot, the job's kernels,
 * then the events that free what it read and wrote. */
static oc_status compute_tile(oc_engine_worker *w, oc_panel_cache *cache, int64_t t, int64_t I, int64_t J,
                              oc_engine_tile *tile)
{
    oc_context *ctx = w->ctx;
    const oc_tile_plan *tp = &w->plan.tiles;
    int sa, sb;
    if (w->fail_at == t + 1)
        return oc_fail(ctx, OC_ERR_DEVICE, "cuda:%d: injected launch failure at tile %lld (OUTCORE_FAULT_DEVICE)",
                       w->dev.index, (long long)(t + 1));
    OC_CHECK(ctx, oc_engine_place_tile(w, cache, I, J, &sa, &sb));
    int o = (int)(t % tp->out_slots), c = (int)(t % w->streams);
    cudaStream_t stream = c ? w->dev.compute2 : w->dev.compute;
    CUDA_CHECK(ctx, cudaStreamWaitEvent(stream, w->panel_loaded[sa], 0));
    CUDA_CHECK(ctx, cudaStreamWaitEvent(stream, w->panel_loaded[sb], 0));
    CUDA_CHECK(ctx, cudaStreamWaitEvent(stream, w->out_free[o], 0));
    *tile = (oc_engine_tile){.t = t,
                             .I = I,
                             .J = J,
                             .rows = (int)oc_tile_panel_rows(tp, w->job.a->rows, I),
                             .cols = (int)oc_tile_panel_rows(tp, w->job.b->rows, J),
                             .panel_a = w->panel[sa],
                             .panel_b = w->panel[sb],
                             .out = w->out[o],
                             .out_slot = o,
                             .stream = stream};
    if (t < w->windowed) { /* the last slice of a window tile (run_window) */
        OC_CHECK(ctx, window_counts(w, t, &tile->partial));
        tile->k0 = w->window->bounds[w->window->slices - 1];
    }
    if (w->trace) OC_CHECK(ctx, oc_engine_trace_tile_begin(ctx, w->trace, t, stream));
    OC_CHECK(ctx, w->job.compute(w->job.user, tile, &w->counts.bit_macs));
    if (w->trace) OC_CHECK(ctx, oc_engine_trace_tile_end(ctx, w->trace, t, stream));
    w->counts.tiles++;
    CUDA_CHECK(ctx, cudaEventRecord(w->out_done[o], stream));
    CUDA_CHECK(ctx, cudaEventRecord(w->panel_free[2 * sa + c], stream));
    if (sb != sa) CUDA_CHECK(ctx, cudaEventRecord(w->panel_free[2 * sb + c], stream));
    return OC_OK;
}

/* Tiles split on K (engine.h: oc_engine_window): every slice but the last of each of the
 * worker's window tiles (its first `windowed` tiles), slice by slice, each as soon as its
 * slices of both panels are here; a tile's slices run on the compute stream its last one
 * will (compute_tile), so they follow each other there. */
static oc_status run_window(oc_engine_worker *w, oc_tile_source *src)
{
    oc_context *ctx = w->ctx;
    const oc_tile_plan *tp = &w->plan.tiles;
    const oc_engine_window *win = w->window;
    const int side_b = w->job.symmetric ? 0 : 1;
    for (int s = 0; s + 1 < win->slices; ++s)
        for (int64_t t = 0; t < w->windowed; ++t) {
            if (oc_cancelled(ctx)) return oc_fail(ctx, OC_ERR_CANCELLED, "cancelled before the first whole tile");
            if (oc_scheduler_aborted(w->queue) >= 0) return OC_OK;
            int64_t I, J;
            int sa, sb;
            oc_tile_source_tile(src, t, &I, &J);
            OC_CHECK(ctx, oc_engine_place_slice(w, oc_tile_panel_key(0, I), s, &sa));
            OC_CHECK(ctx, oc_engine_place_slice(w, oc_tile_panel_key(side_b, J), s, &sb));
            cudaStream_t stream = t % w->streams ? w->dev.compute2 : w->dev.compute;
            CUDA_CHECK(ctx, cudaStreamWaitEvent(stream, w->slice_loaded[sa * win->slices + s], 0));
            CUDA_CHECK(ctx, cudaStreamWaitEvent(stream, w->slice_loaded[sb * win->slices + s], 0));
            oc_engine_tile tile = {.t = t,
                                   .I = I,
                                   .J = J,
                                   .rows = (int)oc_tile_panel_rows(tp, w->job.a->rows, I),
                                   .cols = (int)oc_tile_panel_rows(tp, w->job.b->rows, J),
                                   .panel_a = w->panel[sa],
                                   .panel_b = w->panel[sb],
                                   .out_slot = -1,
                                   .stream = stream,
                                   .k0 = win->bounds[s]};
            OC_CHECK(ctx, window_counts(w, t, &tile.partial));
            const int64_t traced = tp->ntiles + s * w->windowed + t;
            if (w->trace) OC_CHECK(ctx, oc_engine_trace_tile_begin(ctx, w->trace, traced, stream));
            OC_CHECK(ctx, w->job.partial(w->job.user, &tile, win->bounds[s], win->bounds[s + 1], &w->counts.bit_macs));
            if (w->trace) OC_CHECK(ctx, oc_engine_trace_tile_end(ctx, w->trace, traced, stream));
        }
    return OC_OK;
}

/* A resumable job's checkpoint (engine.h: delivered): tile (I, J) was enqueued; every
 * deliver_every tiles, and at the end (I < 0), waits until the device and the sinks have
 * delivered every tile so far and hands them to the job. */
static oc_status deliver_checkpoint(oc_engine_worker *w, int64_t *pending, int64_t *count, int64_t I, int64_t J)
{
    oc_context *ctx = w->ctx;
    if (I >= 0) {
        pending[2 * *count] = I;
        pending[2 * *count + 1] = J;
        if (++*count < w->job.deliver_every) return OC_OK;
    }
    if (*count == 0) return OC_OK;
    CUDA_CHECK(ctx, cudaStreamSynchronize(w->dev.compute));
    CUDA_CHECK(ctx, cudaStreamSynchronize(w->dev.compute2));
    CUDA_CHECK(ctx, cudaStreamSynchronize(w->dev.d2h));
    if (w->sinks) OC_CHECK(ctx, oc_engine_sinks_drain(ctx, w->sinks));
    oc_status st = w->job.delivered(w->job.user, pending, *count);
    *count = 0;
    return st;
}

/* Progress, about ten times a second (`last`: the final report): tiles done by every worker
 * of the job. */
static void report_progress(oc_engine_worker *w, oc_progress_pace *pace, int64_t done, int last)
{
    if (!last && !oc_progress_due(pace)) return;
    if (w->queue) done = oc_scheduler_done(w->queue, -1);
    oc_progress_report(pace, (double)done, (double)w->plan.tiles.ntiles, last);
}

/* The tile loop over the worker's tiles (its plan's order, or the groups it takes).
 * `delivered` (a resumable job: room for deliver_every tiles) collects the tiles since the
 * last checkpoint; tiles the job's `skip` names were done by an earlier run. */
static oc_status run_tiles(oc_engine_worker *w, oc_panel_cache *cache, oc_tile_source *src, int64_t *delivered)
{
    oc_context *ctx = w->ctx;
    oc_status st = OC_OK;
    oc_progress_pace pace = oc_progress_pace_start(w->job.progress, w->job.progress_user);
    int64_t prefetched = 0; /* the worker's tiles up to this one have their panels placed */
    int64_t ndelivered = 0;
    /* Pacing (several workers): a tile is claimed only when the device has finished the one
     * PACE tiles before it. A job whose tiles never make this thread wait (selection fused
     * in the kernel, nothing to download) would otherwise enqueue as fast as it can claim and
     * take most of the queue before the other workers start (two halves of one device split a
     * top-k job's tiles very unevenly). */
    if (w->queue)
        for (; w->npace < OC_ENGINE_PACE; ++w->npace)
            CUDA_CHECK(ctx, cudaEventCreateWithFlags(&w->pace[w->npace], cudaEventDisableTiming));
    for (int64_t t = 0;; ++t) {
        if (w->npace && t >= OC_ENGINE_PACE) CUDA_CHECK(ctx, cudaEventSynchronize(w->pace[t % OC_ENGINE_PACE]));
        if (!oc_tile_source_has(src, t)) break;
        if (oc_cancelled(ctx))
            return oc_fail(ctx, OC_ERR_CANCELLED, "cancelled after %lld of %lld tiles", (long long)t,
                           (long long)w->plan.tiles.ntiles);
        /* Another device failed: the job ends with its error, so stop here. */
        if (w->queue && oc_scheduler_aborted(w->queue) >= 0) return OC_OK;
        oc_engine_tile tile;
        int64_t I, J;
        oc_tile_source_tile(src, t, &I, &J);
        if (w->job.skip && w->job.skip(w->job.user, I, J)) {
            if (prefetched < t) prefetched = t; /* a tile passed by needs no panels */
            if (w->queue) oc_scheduler_complete(w->queue, w->queue_index, 1);
            continue;
        }
        OC_CHECK(ctx, compute_tile(w, cache, t, I, J, &tile));
        OC_CHECK(ctx, oc_engine_prefetch(w, cache, src, t, &prefetched));
        int consumed = 0;
        if (w->job.consume) {
            consumed = w->job.consume(w->job.user, &tile, w->dev.d2h, w->out_free[tile.out_slot], &st);
            if (st != OC_OK) return st;
        }
        if (!consumed && w->sinks) OC_CHECK(ctx, download_tile(w, &tile));
        if (delivered) OC_CHECK(ctx, deliver_checkpoint(w, delivered, &ndelivered, tile.I, tile.J));
        if (w->npace) CUDA_CHECK(ctx, cudaEventRecord(w->pace[t % OC_ENGINE_PACE], tile.stream));
        if (w->queue) oc_scheduler_complete(w->queue, w->queue_index, 1);
        report_progress(w, &pace, t + 1, 0);
    }
    if (w->job.finish) OC_CHECK(ctx, w->job.finish(w->job.user, w->dev.d2h));
    CUDA_CHECK(ctx, cudaStreamSynchronize(w->dev.compute));
    CUDA_CHECK(ctx, cudaStreamSynchronize(w->dev.compute2));
    CUDA_CHECK(ctx, cudaStreamSynchronize(w->dev.d2h));
    if (w->sinks) OC_CHECK(ctx, oc_engine_sinks_drain(ctx, w->sinks));
    if (delivered) OC_CHECK(ctx, deliver_checkpoint(w, delivered, &ndelivered, -1, -1));
    return OC_OK;
}

oc_status oc_engine_worker_run(oc_engine_worker *w)
{
    oc_context *ctx = w->ctx;
    const oc_tile_plan *tp = &w->plan.tiles;
    double t0 = oc_now();
    oc_status st = OC_OK;
    oc_panel_cache cache = {0};
    int64_t *delivered = NULL; /* a resumable job's tiles since its checkpoint */
    int64_t maxp = tp->panels_a > tp->panels_b ? tp->panels_a : tp->panels_b;
    oc_tile_source src = {
        .order = w->shared_order, .queue = w->queue, .index = w->queue_index, .base = w->window ? w->window->tiles : 0};
    int64_t *own = NULL;
    if (w->queue) {
        src.mine = own = malloc((size_t)(tp->ntiles ? tp->ntiles : 1) * sizeof *own);
        /* Its window tiles first (engine.h: oc_engine_window), then what it claims. */
        for (int64_t t = 0; own && t < w->windowed; ++t) own[src.count++] = w->queue_index + t * w->window->devices;
    } else {
        src.order = own = oc_engine_plan_order(&w->plan, w->job.symmetric, w->job.seeded_order);
        src.count = tp->ntiles;
    }
    if (!own) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the tile order (%lld tiles)", (long long)tp->ntiles);
        goto cleanup;
    }
    OC_CHECK_GOTO(ctx, st, oc_panel_cache_init(ctx, &cache, tp->panel_slots, 2 * maxp), cleanup);
    if (w->trace) OC_CHECK_GOTO(ctx, st, oc_engine_trace_begin(ctx, w->trace, w->dev.compute), cleanup);
    if (w->job.delivered && w->job.deliver_every > 0) {
        delivered = malloc((size_t)w->job.deliver_every * 2 * sizeof *delivered);
        if (!delivered) {
            st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the list of delivered tiles");
            goto cleanup;
        }
    }
    if (tp->resident && !w->prestage_started)
        OC_CHECK_GOTO(ctx, st, oc_engine_prestage_begin(w, w->queue ? w->shared_order : src.order, tp->ntiles),
                      cleanup);
    if (w->windowed > 0) OC_CHECK_GOTO(ctx, st, run_window(w, &src), cleanup);
    if (w->job.prepare) OC_CHECK_GOTO(ctx, st, w->job.prepare(w->job.user), cleanup);
    OC_CHECK_GOTO(ctx, st, run_tiles(w, &cache, &src, delivered), cleanup);
    report_progress(w, &(oc_progress_pace){.fn = w->job.progress, .user = w->job.progress_user}, tp->ntiles, 1);

cleanup:
    if (w->prestage) st = oc_engine_prestage_finish(w, st);
    else oc_engine_worker_give_up(w); /* failed before its uploads started: nobody waits for its panels */
    /* The other workers stop after their current tile: the job has failed. */
    if (st != OC_OK && w->queue) oc_scheduler_abort(w->queue, w->queue_index);
    oc_panel_cache_free(&cache);
    free(delivered);
    free(own);
    w->counts.run_seconds = oc_now() - t0;
    return st;
}

void oc_engine_worker_trace(const oc_engine_worker *w)
{
    if (!w->trace) return;
    const oc_tile_plan *tp = &w->plan.tiles;
    fprintf(stderr,
            "outcore cuda: tile %lld, %lld tiles, %d panel slots%s, %lld uploads; plan: kernels %.4f s, cost %.4f s; "
            "kernels busy %.4f s (summed per tile, on %d stream%s); staging %.4f s on %d threads (of which slot waits "
            "%.4f s); %.2f GB from the host, %.2f GB from other devices; %s waited %.4f s for panels; %d sinks, %d D2H "
            "slots of %.2f MiB (slot waits %.4f s)\n",
            (long long)tp->tile, (long long)tp->ntiles, tp->panel_slots, tp->resident ? " (resident)" : "",
            (long long)tp->panel_loads, tp->kernel_seconds, tp->cost_seconds, oc_engine_trace_kernel_seconds(w->trace),
            w->streams, w->streams > 1 ? "s" : "", w->counts.upload_seconds, w->plan.copy_threads,
            w->counts.stage_wait_seconds, w->counts.bytes_h2d / 1e9, w->counts.bytes_peer / 1e9,
            tp->resident ? "uploaded ahead on their own thread;" : "on the driving thread;",
            w->counts.panel_wait_seconds, w->plan.sinks, w->plan.d2h_slots, w->plan.d2h_slot_bytes / 1048576.0,
            w->counts.acquire_seconds);
    oc_engine_trace_busy(w->trace);
    if (w->windowed > 0)
        fprintf(
            stderr,
            "outcore cuda: split on K: %lld window tiles, their counts in %d pieces (the first with the panels), the "
            "others allocated in %.4f s\n",
            (long long)w->windowed, w->partial_pieces, w->partial_seconds);
}

void oc_engine_worker_quiesce(oc_engine_worker *w)
{
    if (!w || !w->dev.pool || cudaSetDevice(w->dev.index) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    (void)cudaDeviceSynchronize();
    (void)cudaGetLastError();
    if (w->sinks) (void)oc_engine_sinks_drain(NULL, w->sinks);
}

void oc_engine_worker_close(oc_engine_worker *w)
{
    if (!w) return;
    /* OUTCORE_TRACE: each step, as "outcore cuda:D close: STEP s". */
    char who[32];
    snprintf(who, sizeof who, "cuda:%d close", w->dev.index);
    double t = oc_now();
    if (w->dev.pool) {
        /* Every enqueued copy and kernel must finish before its buffers go back. */
        (void)cudaDeviceSynchronize();
        (void)cudaGetLastError();
        oc_trace_phase(&t, who, "device idle");
    }
    oc_engine_sinks_close(w->sinks);
    oc_engine_upload_close(w->upload);
    oc_trace_phase(&t, who, "staging rings");
    if (w->ready) {
        const oc_tile_plan *tp = &w->plan.tiles;
        destroy_events(w->panel_loaded, tp->panel_slots);
        destroy_events(w->panel_free, 2 * tp->panel_slots);
        destroy_events(w->out_done, tp->out_slots);
        destroy_events(w->out_free, tp->out_slots);
        if (w->window) destroy_events(w->slice_loaded, tp->panel_slots * w->window->slices);
    }
    free(w->slice_placed);
    free(w->partial_at);
    for (int i = 0; i < w->npace; ++i) (void)cudaEventDestroy(w->pace[i]);
    if (w->peer) (void)cudaStreamDestroy(w->peer);
    free(w->placed);
    oc_engine_trace_close(w->trace);
    oc_trace_phase(&t, who, "events");
    oc_cuda_device_close(&w->dev); /* frees the pool: every device and pinned buffer */
    oc_trace_phase(&t, who, "device memory and streams");
    free(w->panel);
    free(w->out);
    pthread_mutex_destroy(&w->upload_lock);
    free(w);
}
