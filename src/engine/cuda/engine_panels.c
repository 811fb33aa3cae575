/*
 * engine_panels.c - where a device worker's panels come from (engine_worker.h): uploaded
 * from the host on the driving thread into slots the panel cache picks (streamed plans), or,
 * with every panel resident, uploaded ahead on a thread of their own into a slot per panel
 * (engine_prestage.h) and, with several devices, copied from the device each panel was given
 * to (panel_exchange.h). Every slot's panel_loaded event is recorded after its panel (and the
 * job's panel_loaded work) is enqueued, on whichever stream brought it.
 */
#include "engine/cuda/engine_worker.h"

#include <stdlib.h>

#include "core/context.h"
#include "core/threads.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/panel_exchange.h"

/* The panel just uploaded into `slot` on `stream` is offered to the job's other devices: an
 * event after the upload tells them when it is there. */
static oc_status publish_panel(oc_engine_worker *w, int64_t key, int slot, cudaStream_t stream)
{
    oc_context *ctx = w->ctx;
    cudaEvent_t ready;
    CUDA_CHECK(ctx, cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    cudaError_t e = cudaEventRecord(ready, stream);
    if (e != cudaSuccess) {
        (void)cudaEventDestroy(ready);
        CUDA_CHECK(ctx, e);
    }
    oc_panel_exchange_publish(w->exchange, key, w->panel[slot], w->dev.index, ready);
    return OC_OK;
}

/* The panel key of an exchange or upload key: the key itself for a whole panel, else the
 * panel of a slice key (engine.h: oc_engine_window_key), *slice its slice (-1: whole). */
static int64_t key_panel(const oc_engine_worker *w, int64_t key, int *slice)
{
    const oc_engine_window *win = w->window;
    if (!win || key < win->keys) {
        *slice = -1;
        return key;
    }
    *slice = (int)((key - win->keys) % win->slices);
    return (key - win->keys) / win->slices;
}

/* Words [*w0, *w1) of the rows that slice `slice` covers (all of them for -1). */
static void slice_words(const oc_engine_worker *w, const oc_matrix *m, int slice, int64_t *w0, int64_t *w1)
{
    *w0 = slice < 0 ? 0 : w->window->bounds[slice];
    *w1 = slice < 0 ? m->words_per_row : w->window->bounds[slice + 1];
}

/* Words [w0, w1) of the panel's rows (a slice of K, or all of them) from the device that
 * uploaded them (panel_exchange.h), on `stream`: a slice is a column of the rows, copied as a
 * 2-D region. */
static oc_status copy_panel(oc_engine_worker *w, const oc_panel_source *from, int slot, const oc_matrix *m,
                            int64_t rows, int64_t w0, int64_t w1, cudaStream_t stream)
{
    oc_context *ctx = w->ctx;
    const size_t pitch = (size_t)m->words_per_row * 8, width = (size_t)(w1 - w0) * 8;
    char *dst = (char *)w->panel[slot] + w0 * 8;
    const char *src = (const char *)from->ptr + w0 * 8;
    CUDA_CHECK(ctx, cudaStreamWaitEvent(stream, from->ready, 0));
    if (from->device == w->dev.index) {
        CUDA_CHECK(ctx,
                   cudaMemcpy2DAsync(dst, pitch, src, pitch, width, (size_t)rows, cudaMemcpyDeviceToDevice, stream));
    } else if (width == pitch) {
        CUDA_CHECK(ctx, cudaMemcpyPeerAsync(dst, w->dev.index, src, from->device, width * (size_t)rows, stream));
    } else {
        struct cudaMemcpy3DPeerParms p = {0};
        p.srcPtr = (struct cudaPitchedPtr){.ptr = (void *)src, .pitch = pitch, .xsize = width, .ysize = (size_t)rows};
        p.dstPtr = (struct cudaPitchedPtr){.ptr = dst, .pitch = pitch, .xsize = width, .ysize = (size_t)rows};
        p.srcDevice = from->device;
        p.dstDevice = w->dev.index;
        p.extent = (struct cudaExtent){.width = width, .height = (size_t)rows, .depth = 1};
        CUDA_CHECK(ctx, cudaMemcpy3DPeerAsync(&p, stream));
    }
    w->counts.bytes_peer += (int64_t)width * rows;
    return OC_OK;
}

/* Panel (side, index), or its slice `slice` (>= 0), into `slot` on `stream`: copied from
 * `from` (another device's), else uploaded from the host and, with an exchange, published
 * (withdrawn if that fails, so that another device takes it over); then the slice's event,
 * or the job's panel_loaded and the slot's event. */
static oc_status fill_slot(oc_engine_worker *w, int side, int64_t index, int slice, int slot, cudaStream_t stream,
                           const oc_panel_source *from)
{
    oc_context *ctx = w->ctx;
    const oc_matrix *m = side == 0 ? w->job.a : w->job.b;
    int64_t rows = oc_tile_panel_rows(&w->plan.tiles, m->rows, index), w0, w1;
    int64_t key = oc_tile_panel_key(side, index);
    if (slice >= 0) key = oc_engine_window_key(w->window, key, slice);
    slice_words(w, m, slice, &w0, &w1);
    if (from) {
        OC_CHECK(ctx, copy_panel(w, from, slot, m, rows, w0, w1, stream));
    } else {
        pthread_mutex_lock(&w->upload_lock);
        const int64_t row0 = index * w->plan.tiles.tile;
        oc_status st = oc_engine_upload_rows(ctx, w->upload, m, row0, rows, w0, w1, w->panel[slot], stream,
                                             &w->counts.upload_seconds, &w->counts.stage_wait_seconds);
        if (st == OC_OK) w->counts.bytes_h2d += rows * (w1 - w0) * 8;
        pthread_mutex_unlock(&w->upload_lock);
        if (st == OC_OK && w->exchange) st = publish_panel(w, key, slot, stream);
        if (st != OC_OK) {
            if (w->exchange) oc_panel_exchange_withdraw(w->exchange, key);
            return st;
        }
    }
    if (slice >= 0) {
        CUDA_CHECK(ctx, cudaEventRecord(w->slice_loaded[slot * w->window->slices + slice], stream));
        return OC_OK;
    }
    if (w->job.panel_loaded) OC_CHECK(ctx, w->job.panel_loaded(w->job.user, w->panel[slot], rows, stream));
    CUDA_CHECK(ctx, cudaEventRecord(w->panel_loaded[slot], stream));
    return OC_OK;
}

/* A streamed panel, on the driving thread: after the kernels that read the slot's previous
 * panel, on either compute stream (an event never recorded is complete). */
static oc_status load_panel(oc_engine_worker *w, int side, int64_t index, int slot)
{
    oc_context *ctx = w->ctx;
    CUDA_CHECK(ctx, cudaStreamWaitEvent(w->dev.h2d, w->panel_free[2 * slot], 0));
    CUDA_CHECK(ctx, cudaStreamWaitEvent(w->dev.h2d, w->panel_free[2 * slot + 1], 0));
    oc_panel_source from;
    int copy =
        w->exchange && oc_panel_exchange_claim(w->exchange, oc_tile_panel_key(side, index), &from) == OC_PANEL_COPY;
    return fill_slot(w, side, index, -1, slot, w->dev.h2d, copy ? &from : NULL);
}

static oc_status place_panel(oc_engine_worker *w, oc_panel_cache *cache, int side, int64_t index, int64_t keep,
                             int *slot)
{
    oc_context *ctx = w->ctx;
    int load;
    *slot = oc_panel_cache_place(cache, oc_tile_panel_key(side, index), keep, &load);
    if (load) OC_CHECK(ctx, load_panel(w, side, index, *slot));
    return OC_OK;
}

/* ------------------------------------------------ resident panels, uploaded ahead */
/* A resident plan's slot of a panel: each panel has its own, A's and then B's. */
static int resident_slot(const oc_engine_worker *w, int64_t key)
{
    int64_t index = key / 2;
    return (int)(key % 2 ? w->plan.tiles.panels_a + index : index);
}

/* The prestage thread's upload of one panel or slice (engine_prestage.h), on the upload stream. */
static oc_status prestage_upload(void *user, int64_t key)
{
    oc_engine_worker *w = user;
    int slice;
    int64_t panel = key_panel(w, key, &slice);
    return fill_slot(w, (int)(panel % 2), panel / 2, slice, resident_slot(w, panel), w->dev.h2d, NULL);
}

/* A panel the thread will not upload: another device waiting for it takes it over. */
static void prestage_give_up(void *user, int64_t key)
{
    oc_engine_worker *w = user;
    if (w->exchange) oc_panel_exchange_withdraw(w->exchange, key);
}

static oc_status place_prestaged(oc_engine_worker *w, int64_t key, int nowait, int *placed);

/* A panel that goes up in slices: each slice, then, once all are placed, the job's
 * panel_loaded and the slot's event on the peer stream after every slice's. */
static oc_status place_sliced(oc_engine_worker *w, int64_t panel, int slot, int nowait, int *placed)
{
    oc_context *ctx = w->ctx;
    const int S = w->window->slices;
    for (int s = 0; s < S; ++s) {
        OC_CHECK(ctx, place_prestaged(w, oc_engine_window_key(w->window, panel, s), nowait, placed));
        if (!*placed) return OC_OK;
    }
    for (int s = 0; s < S; ++s) CUDA_CHECK(ctx, cudaStreamWaitEvent(w->peer, w->slice_loaded[slot * S + s], 0));
    const oc_matrix *m = panel % 2 ? w->job.b : w->job.a;
    int64_t rows = oc_tile_panel_rows(&w->plan.tiles, m->rows, panel / 2);
    if (w->job.panel_loaded) OC_CHECK(ctx, w->job.panel_loaded(w->job.user, w->panel[slot], rows, w->peer));
    CUDA_CHECK(ctx, cudaEventRecord(w->panel_loaded[slot], w->peer));
    w->placed[slot] = 1;
    return OC_OK;
}

/* Panel or slice `key` into its resident slot: the thread's upload, or another device's
 * copied on the peer stream (or, given up by its uploader, uploaded here). Waits for it
 * unless nowait; *placed is 0 when it is not there yet (nowait only). */
static oc_status place_prestaged(oc_engine_worker *w, int64_t key, int nowait, int *placed)
{
    oc_context *ctx = w->ctx;
    int slice;
    int64_t panel = key_panel(w, key, &slice);
    int slot = resident_slot(w, panel);
    *placed = 1;
    if (w->placed[slot]) return OC_OK;
    if (slice < 0 && w->window && w->window->sliced[panel]) return place_sliced(w, panel, slot, nowait, placed);
    unsigned char *mark = slice < 0 ? &w->placed[slot] : &w->slice_placed[slot * w->window->slices + slice];
    if (*mark) return OC_OK;
    int r = oc_prestage_wait(w->prestage, key, nowait, &w->counts.panel_wait_seconds);
    if (r < 0) {
        *placed = 0;
        return OC_OK;
    }
    if (r == 0) {
        /* The thread failed (its message is on ctx), or the panel is another device's. */
        oc_status st = oc_prestage_status(w->prestage);
        if (st != OC_OK) return oc_trace_at(ctx, st, __FILE__, __LINE__);
        oc_panel_source from;
        int how = OC_PANEL_UPLOAD;
        if (w->exchange) {
            double t0 = oc_now();
            how = nowait ? oc_panel_exchange_try_claim(w->exchange, key, &from)
                         : oc_panel_exchange_claim(w->exchange, key, &from);
            w->counts.panel_wait_seconds += oc_now() - t0;
            if (how == 0) {
                *placed = 0;
                return OC_OK;
            }
        }
        OC_CHECK(ctx,
                 fill_slot(w, (int)(panel % 2), panel / 2, slice, slot, w->peer, how == OC_PANEL_COPY ? &from : NULL));
    }
    *mark = 1;
    return OC_OK;
}

oc_status oc_engine_place_slice(oc_engine_worker *w, int64_t key, int s, int *slot)
{
    int placed;
    *slot = resident_slot(w, key);
    return place_prestaged(w, oc_engine_window_key(w->window, key, s), 0, &placed);
}

/* Both panels of a tile (keys ka, kb) into their resident slots; *placed as for one. */
static oc_status place_prestaged_tile(oc_engine_worker *w, int64_t ka, int64_t kb, int nowait, int *placed)
{
    oc_context *ctx = w->ctx;
    OC_CHECK(ctx, place_prestaged(w, ka, nowait, placed));
    if (*placed && kb != ka) OC_CHECK(ctx, place_prestaged(w, kb, nowait, placed));
    return OC_OK;
}

/* Starts the uploads of a resident plan: this worker's share of the exchange's panels, or
 * every panel of the order it walks (its own order, or the shared one), in need order. */
oc_status oc_engine_prestage_begin(oc_engine_worker *w, const int64_t *order, int64_t ntiles)
{
    oc_context *ctx = w->ctx;
    const oc_tile_plan *tp = &w->plan.tiles;
    int64_t nkeys = 2 * (tp->panels_a > tp->panels_b ? tp->panels_a : tp->panels_b);
    if (w->window) nkeys *= 1 + w->window->slices; /* and the slices' keys */
    int64_t *keys = malloc((size_t)nkeys * sizeof *keys), n;
    int64_t *kept = NULL; /* a resumable job's order without the tiles done before */
    if (!keys) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the panel upload list (%lld)", (long long)nkeys);
    if (w->exchange) {
        n = oc_panel_exchange_owned(w->exchange, w->queue_index, keys);
    } else {
        if (w->job.skip && !w->queue && (kept = malloc((size_t)(2 * (ntiles ? ntiles : 1)) * sizeof *kept))) {
            int64_t k = 0;
            for (int64_t t = 0; t < ntiles; ++t)
                if (!w->job.skip(w->job.user, order[2 * t], order[2 * t + 1]))
                    kept[2 * k] = order[2 * t], kept[2 * k + 1] = order[2 * t + 1], k++;
            order = kept, ntiles = k;
        }
        n = oc_tile_order_first_need(order, ntiles, w->job.symmetric, nkeys, keys);
    }
    free(kept);
    oc_status st = OC_OK;
    if (n < 0) st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the panel upload list");
    oc_prestage_ops ops = {.user = w, .upload = prestage_upload, .give_up = prestage_give_up};
    if (st == OC_OK) st = oc_prestage_start(ctx, w->dev.index, keys, n, nkeys, &ops, &w->prestage);
    w->prestage_started = st == OC_OK;
    free(keys);
    return st;
}

/* Waits for the uploads to end (stopping them first when the job failed or another device
 * did), then for what they and the peer copies enqueued. */
oc_status oc_engine_prestage_finish(oc_engine_worker *w, oc_status st)
{
    oc_context *ctx = w->ctx;
    int stop = st != OC_OK || (w->queue && oc_scheduler_aborted(w->queue) >= 0);
    oc_status pst = oc_prestage_end(w->prestage, stop);
    w->prestage = NULL;
    if (st != OC_OK) return st;
    if (pst != OC_OK && !stop) return oc_trace_at(ctx, pst, __FILE__, __LINE__);
    CUDA_CHECK(ctx, cudaStreamSynchronize(w->dev.h2d));
    CUDA_CHECK(ctx, cudaStreamSynchronize(w->peer));
    return OC_OK;
}

/* Panels of tile (I, J) not yet on the device. */
static int tile_uploads(const oc_panel_cache *cache, int side_b, int64_t I, int64_t J)
{
    int64_t ka = oc_tile_panel_key(0, I), kb = oc_tile_panel_key(side_b, J);
    return (cache->key_slot[ka] < 0) + (kb != ka && cache->key_slot[kb] < 0);
}

/* Places both panels of tile (I, J), uploading what is not resident (or, uploaded ahead,
 * waiting for them). */
oc_status oc_engine_place_tile(oc_engine_worker *w, oc_panel_cache *cache, int64_t I, int64_t J, int *sa, int *sb)
{
    oc_context *ctx = w->ctx;
    int side_b = w->job.symmetric ? 0 : 1;
    int64_t ka = oc_tile_panel_key(0, I), kb = oc_tile_panel_key(side_b, J);
    if (w->prestage) {
        int placed;
        OC_CHECK(ctx, place_prestaged_tile(w, ka, kb, 0, &placed));
        *sa = resident_slot(w, ka), *sb = resident_slot(w, kb);
        return OC_OK;
    }
    OC_CHECK(ctx, place_panel(w, cache, 0, I, kb, sa));
    if (kb != ka) OC_CHECK(ctx, place_panel(w, cache, side_b, J, ka, sb));
    else *sb = *sa;
    return OC_OK;
}

/* The next tiles' panels go up now: what follows may block this thread (a selection
 * waiting for its pairs, a sink for a free slot), and an upload issued only after it would
 * leave the GPU waiting for the panel (a long panel takes longer to upload than a tile to
 * compute). With every panel resident nothing is evicted, so the uploads run up to three
 * tiles ahead, one tile's uploads per tile (a burst would keep this thread staging while
 * the GPU waits for the next kernel); streaming panels, one tile, so that the cache sees
 * the placements in the plan's order (each tile's own placement then finds its panels
 * placed). Resident panels uploaded ahead on their own thread are placed here only when
 * already there (or another device's, copied over), so this thread never waits for them
 * before the tile that needs them. */
oc_status oc_engine_prefetch(oc_engine_worker *w, oc_panel_cache *cache, oc_tile_source *src, int64_t t,
                             int64_t *prefetched)
{
    oc_context *ctx = w->ctx;
    const oc_tile_plan *tp = &w->plan.tiles;
    const int side_b = w->job.symmetric ? 0 : 1;
    /* Uploaded ahead: place what is there (another device's panels then cross early), and
     * never wait here for what is not. */
    for (; w->prestage && *prefetched < t + 3 && oc_tile_source_has(src, *prefetched + 1); ++*prefetched) {
        int64_t nI, nJ;
        oc_tile_source_tile(src, *prefetched + 1, &nI, &nJ);
        int placed;
        OC_CHECK(ctx, place_prestaged_tile(w, oc_tile_panel_key(0, nI), oc_tile_panel_key(side_b, nJ), 1, &placed));
        if (!placed) return OC_OK;
    }
    if (w->prestage) return OC_OK;
    for (int64_t ahead = tp->resident ? 3 : 1, issued = 0;
         *prefetched < t + ahead && oc_tile_source_has(src, *prefetched + 1); ++*prefetched) {
        int64_t nI, nJ;
        oc_tile_source_tile(src, *prefetched + 1, &nI, &nJ);
        int na, nb, need = tile_uploads(cache, side_b, nI, nJ);
        if (need && issued) break;
        issued += need;
        OC_CHECK(ctx, oc_engine_place_tile(w, cache, nI, nJ, &na, &nb));
    }
    return OC_OK;
}
