/*
 * engine_worker.h - the device worker's state, shared by the two files that make it up
 * (internal to src/cuda): engine_worker.c (set-up, the tile loop, results, close) and
 * engine_panels.c (where its panels come from: uploads on the driving thread, another
 * device's copies, a resident plan's uploads ahead on their own thread).
 */
#ifndef OC_ENGINE_CUDA_ENGINE_WORKER_H
#define OC_ENGINE_CUDA_ENGINE_WORKER_H

#include <pthread.h>

#include "engine/cuda/engine.h"
#include "engine/cuda/engine_prestage.h"
#include "engine/cuda/engine_sinks.h"
#include "engine/cuda/engine_trace.h"
#include "engine/cuda/engine_upload.h"
#include "engine/tile_plan.h"

/* Tiles a worker that shares the job's queue may have on the device unfinished (run_tiles). */
#define OC_ENGINE_PACE 6

struct oc_engine_worker {
    oc_context *ctx;
    oc_cuda_device dev;
    oc_engine_plan plan;
    oc_engine_job job;
    int streams; /* compute streams the tiles alternate between */
    void **panel, **out;
    cudaEvent_t *panel_loaded, *panel_free, *out_done, *out_free;
    oc_engine_upload *upload;
    oc_engine_sinks *sinks;
    oc_engine_counts counts;
    oc_engine_trace *trace; /* OUTCORE_TRACE only */
    int ready;              /* setup completed: the tables below have their sizes */
    /* several devices: the shared order and queue, and this worker's index in it */
    const int64_t *shared_order;
    oc_scheduler *queue;
    int queue_index;
    int64_t fail_at;                  /* fault injection: this tile (from 1) fails */
    cudaEvent_t pace[OC_ENGINE_PACE]; /* several workers: the last tiles' completions (run_tiles) */
    int npace;
    oc_panel_exchange *exchange; /* several devices, resident panels: panels crossing once */
    /* Resident plans: the panels go up on a thread of their own (engine_prestage.h); the
     * driving thread copies other devices' panels, and uploads any the thread gave up, on
     * `peer`; `placed` marks the slots whose panel is here or on its way. The upload ring is
     * used by one thread at a time (upload_lock), which also guards the upload counts. */
    oc_prestage *prestage;
    int prestage_started; /* its panels of the exchange are its thread's to upload or give up */
    cudaStream_t peer;
    unsigned char *placed;
    pthread_mutex_t upload_lock;
    /* Tiles split on K (engine.h: oc_engine_window): per resident slot and slice, the event
     * after the slice arrived and whether it is here or on its way; the counts of the
     * worker's window tiles (its first `windowed` tiles), allocated in pieces (the first in
     * the set-up behind the panel slots, the others as the first slices reach them:
     * window_counts), `partial_pieces` so far, the others taking `partial_seconds`. */
    const oc_engine_window *window;
    cudaEvent_t *slice_loaded;
    unsigned char *slice_placed;
    int32_t **partial_at;
    size_t partial_stride;
    int64_t windowed;
    int partial_pieces;
    double partial_seconds;
};

/* The tiles a worker computes, in its order: positions in the job's tile order, all of them
 * for a worker alone, else the groups it claimed from the queue so far (claimed when the
 * loop or the prefetch first looks past the last one). */
typedef struct oc_tile_source {
    const int64_t *order; /* pairs (I, J) */
    int64_t *mine;        /* positions in order; NULL: every tile, in order */
    int64_t count;        /* tiles known so far */
    oc_scheduler *queue;
    int index;
    int64_t base; /* the queue's tile 0 is the order's tile base */
} oc_tile_source;

/* Whether the worker has a k-th tile (claiming groups as needed). */
static inline int oc_tile_source_has(oc_tile_source *src, int64_t k)
{
    int64_t first, count;
    while (src->mine && k >= src->count && oc_scheduler_next(src->queue, src->index, &first, &count))
        for (int64_t i = 0; i < count; ++i) src->mine[src->count++] = src->base + first + i;
    return k < src->count;
}

static inline void oc_tile_source_tile(const oc_tile_source *src, int64_t k, int64_t *I, int64_t *J)
{
    int64_t t = src->mine ? src->mine[k] : k;
    *I = src->order[2 * t], *J = src->order[2 * t + 1];
}

/* engine_panels.c, all on the driving thread. */
/* Places both panels of tile (I, J) (uploading, copying or waiting for them); *sa, *sb: their slots. */
oc_status oc_engine_place_tile(oc_engine_worker *w, oc_panel_cache *cache, int64_t I, int64_t J, int *sa, int *sb);
/* Places the panels of the worker's tiles after tile t ahead of them; *prefetched: the last
 * tile whose panels are placed. */
oc_status oc_engine_prefetch(oc_engine_worker *w, oc_panel_cache *cache, oc_tile_source *src, int64_t t,
                             int64_t *prefetched);
/* A resident plan: starts the uploads ahead over the order the worker walks (its own, or the
 * shared one with ntiles tiles). */
oc_status oc_engine_prestage_begin(oc_engine_worker *w, const int64_t *order, int64_t ntiles);
/* Ends them (stopping them first when st failed or another device did); returns the run's status. */
oc_status oc_engine_prestage_finish(oc_engine_worker *w, oc_status st);
/* Slice s of panel key `key` (a panel of the window) into its resident slot, waiting for it;
 * *slot: the slot. */
oc_status oc_engine_place_slice(oc_engine_worker *w, int64_t key, int s, int *slot);

#endif
