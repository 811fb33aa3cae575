/*
 * engine.h - the CUDA device worker and the interface a job gives it.
 *
 *   job (gram_cuda.c: kernels, epilogue, selection)
 *     -> plan (engine/engine_plan.h: tiles, slots, staging, threads; no device calls)
 *       -> worker (engine_worker.c: device, pool, panel uploads, the tile loop)
 *         -> sinks (engine_sinks.c: pinned download slots delivered by pool threads)
 *
 * A job is a set of tiles (I, J) over row panels of one or two inputs: panel I of A and
 * panel J of B (of A again for A·Aᵀ). The worker owns the device memory the plan names
 * (panel slots, output slots), places and uploads panels, walks the plan's tile order and,
 * for each tile, asks the job to compute it into an output slot on a compute stream; then
 * either the job consumes the slot itself (a selection on the device) or the worker
 * downloads the blocks the job names into the dense destination through the sinks.
 * Every callback runs on the driving thread (the caller's), which only enqueues work on
 * the device's streams; waiting for the device happens in the staging rings and sinks.
 *
 * What orders the device work (events recorded by the driving thread):
 *   - a panel upload waits (on h2d) until no kernel on either compute stream still reads the
 *     slot's previous panel; a kernel waits for the upload of both its panels;
 *   - a kernel waits for its output slot to be free: after the last download out of it, or
 *     after the job's consumption of its last tile (the `slot_free` event the job records);
 *   - downloads wait (on d2h) for the tile's kernels.
 * Consecutive tiles alternate between two compute streams (one when the job says its tiles
 * must not overlap), so a tile's CTAs fill the SMs the last wave of the previous one leaves;
 * the first stream has the higher priority, so that the two tiles do not run side by side
 * throughout (engine/cuda/device.c). Resident panels go up on a thread of their own, ahead of the
 * tiles (engine_prestage.h).
 */
#ifndef OC_ENGINE_CUDA_ENGINE_H
#define OC_ENGINE_CUDA_ENGINE_H

#include <cuda_runtime_api.h>

#include "matrix/matrix.h"
#include "engine/engine_plan.h"
#include "engine/scheduler.h"
#include "engine/sink.h"
#include "engine/cuda/device.h"

typedef struct oc_engine_tile {
    int64_t t;               /* the worker's count of tiles before this one (its position in the
                             * plan's order when the worker runs alone) */
    int64_t I, J;            /* panels */
    int rows, cols;          /* rows of panel I and of panel J */
    void *panel_a, *panel_b; /* their device rows (panel_b == panel_a on the diagonal of A·Aᵀ) */
    void *out;               /* the tile's output slot */
    int out_slot;
    cudaStream_t stream; /* the compute stream the tile runs on */
    /* A tile split on K (oc_engine_window): the counts of words [0, k0) of its rows are in
     * `partial` (tile x tile int32, the plan's tile apart); compute adds those of [k0, end).
     * NULL: a whole tile. */
    int32_t *partial;
    int64_t k0;
} oc_engine_tile;

/* A block of an output slot to deliver: rows x cols elements at src (rows plan.tile elements
 * apart) to C(i0, j0). */
typedef struct oc_engine_block {
    const void *src;
    int64_t i0, j0, rows, cols;
} oc_engine_block;

typedef struct oc_engine_job {
    void *user;                   /* passed to every callback */
    const oc_matrix *a, *b;       /* inputs; b == a for A·Aᵀ */
    int symmetric;                /* tiles with I <= J over A's panels only */
    int two_streams;              /* consecutive tiles may overlap on two compute streams */
    int seeded_order;             /* the plan's seeded order (engine_plan.h) */
    oc_dense_sink *dense;         /* where downloaded blocks go; NULL: nothing comes back */
    int host_mirror;              /* blocks are tiles of A·Aᵀ the sinks mirror on the host */
    oc_gpu_mem_mode gpu_mem_mode; /* grow or reserve the plan's device budget */
    oc_progress_fn progress;      /* called between tiles, about ten times a second; may be NULL */
    void *progress_user;
    /* After a panel's rows were enqueued on `h2d` (the panel's extra bytes lie behind its
     * rows): e.g. the rows' popcounts. May be NULL. */
    oc_status (*panel_loaded)(void *user, void *panel, int64_t rows, cudaStream_t h2d);
    /* Enqueues the tile's kernels on t->stream into t->out. Adds bit-MACs to *macs. */
    oc_status (*compute)(void *user, const oc_engine_tile *t, double *macs);
    /* A tile split on K: enqueues on t->stream the counts of words [k0, k1) of its rows
     * into t->partial, added to what is there when k0 > 0 (oc_engine_window). NULL: the job
     * has no split tiles. */
    oc_status (*partial)(void *user, const oc_engine_tile *t, int64_t k0, int64_t k1, double *macs);
    /* The job's own set-up that only its whole tiles need (e.g. a selection's buffers), on
     * the driving thread once the worker runs: after the slices but the last of its window
     * tiles were enqueued (oc_engine_window: the device runs them meanwhile), else before
     * its first tile. May be NULL. */
    oc_status (*prepare)(void *user);
    /* Called after compute of the same tile (no other tile's compute comes between), once
     * the next tiles' uploads were issued. Consumes the output
     * slot on the device and records slot_free (on any stream) when done with it; returns
     * 1 when it did, 0 when the worker should download the tile. May be NULL (download). */
    int (*consume)(void *user, const oc_engine_tile *t, cudaStream_t d2h, cudaEvent_t slot_free, oc_status *st);
    /* The blocks (at most 2) a downloaded tile delivers; NULL: the tile itself. */
    int (*blocks)(void *user, const oc_engine_tile *t, oc_engine_block out[2]);
    /* After the last tile: the job's last device work (on d2h). May be NULL. */
    oc_status (*finish)(void *user, cudaStream_t d2h);
    /* Resumable jobs (gram/gram_resume.h), else NULL: skip(I, J) nonzero passes tile (I, J)
     * by (done by an earlier run); delivered gets the tiles (I, J pairs) enqueued since its
     * last call, every deliver_every tiles and after the last, once the device and the sinks
     * have delivered them all (the worker waits for both: a checkpoint). */
    int (*skip)(void *user, int64_t I, int64_t J);
    oc_status (*delivered)(void *user, const int64_t *tiles, int64_t count);
    int64_t deliver_every;
} oc_engine_job;

/* What a worker did, for the job's statistics and the trace. */
typedef struct oc_engine_counts {
    int64_t tiles;
    int64_t bytes_h2d, bytes_d2h;
    int64_t bytes_peer; /* panels copied from another device (panel_exchange.h) */
    double bit_macs;
    double upload_seconds;     /* host time staging panels */
    double stage_wait_seconds; /* of which waiting for a free upload slot */
    double panel_wait_seconds; /* the driving thread waiting for panels uploaded ahead (resident plans) */
    double acquire_seconds;    /* waiting for a free download slot */
    double run_seconds;        /* wall time of oc_engine_worker_run */
} oc_engine_counts;

typedef struct oc_engine_worker oc_engine_worker;

/* Opens device `index` (properties, streams); the plan is made from what it reports. */
oc_status oc_engine_worker_open(oc_context *ctx, int index, oc_engine_worker **out);
oc_cuda_device *oc_engine_worker_device(oc_engine_worker *w);

/* Creates the pool under the plan's budgets and allocates what the plan names: panel and
 * output slots, events, the pinned rings, the threads. The output slots are then available
 * to the job (oc_engine_worker_out_slots) for its own set-up (oc_engine_job.prepare). */
oc_status oc_engine_worker_setup(oc_engine_worker *w, const oc_engine_plan *plan, const oc_engine_job *job);
void *const *oc_engine_worker_out_slots(const oc_engine_worker *w);

/* Several devices (docs/architecture.md): the worker takes its tiles in groups from `queue`
 * (engine/scheduler.h) as worker `index`, over the shared tile `order` (2 per tile, the queue's
 * positions), instead of walking its plan's order alone. Before oc_engine_worker_run; the
 * order and queue outlive the run. Every worker of a job has the same tile edge. */
void oc_engine_worker_share(oc_engine_worker *w, const int64_t *order, oc_scheduler *queue, int index);
/* Several devices with every panel resident: panels go through `x` (engine/cuda/panel_exchange.h),
 * uploaded from the host by the first device that needs each and copied by the others from
 * it. Before oc_engine_worker_run; x outlives the run. NULL: every panel from the host. */
typedef struct oc_panel_exchange oc_panel_exchange;
void oc_engine_worker_exchange(oc_engine_worker *w, oc_panel_exchange *x);
/* Several devices with every panel resident, through an exchange: the first tiles of the
 * shared order run split on K, so that the devices start on the panels' first columns while
 * the rest of them still crosses from the host (docs/design-notes.md, "Tiles split on K").
 * Those panels go up and across in slices of K: in the exchange, and in the uploads ahead,
 * panel key k is replaced by the slice keys oc_engine_window_key(w, k, s), dealt slice by
 * slice. The window's tiles are dealt round the workers (tile i to worker i mod devices),
 * which run their slices but the last, for all of them, before any whole tile; the last
 * slice is then the tile's ordinary compute (with oc_engine_tile.partial). The queue holds
 * the order's other tiles (its positions from `tiles` on). Before oc_engine_worker_setup;
 * the window outlives the run. */
#define OC_ENGINE_MAX_SLICES 8
typedef struct oc_engine_window {
    int slices;                               /* S, 2 to OC_ENGINE_MAX_SLICES */
    int64_t bounds[OC_ENGINE_MAX_SLICES + 1]; /* slice s: words [bounds[s], bounds[s + 1]) */
    int64_t keys;                             /* panel keys (oc_tile_panel_key's range) */
    const unsigned char *sliced;              /* per panel key: its panel goes up in slices */
    int64_t tiles;                            /* the tiles at the head of the shared order */
    int devices;
} oc_engine_window;
static inline int64_t oc_engine_window_key(const oc_engine_window *w, int64_t key, int slice)
{
    return w->keys + key * w->slices + slice;
}
void oc_engine_worker_window(oc_engine_worker *w, const oc_engine_window *window);
/* A worker shared with an exchange (both above called before oc_engine_worker_setup) starts
 * its share of the panel uploads at the end of its set-up, so they run beside the job's own
 * set-up (a selection's allocations) instead of after it. A part that then fails before
 * oc_engine_worker_run calls oc_engine_worker_give_up: its uploads stop and the panels it
 * will not upload go to the devices waiting for them (oc_engine_worker_run does the same when
 * it fails before its uploads start). NULL: no-op. */
void oc_engine_worker_give_up(oc_engine_worker *w);
/* Fault injection for tests: the worker's tile number `tile` (from 1) fails as a launch
 * would, with OC_ERR_DEVICE (OUTCORE_FAULT_DEVICE, docs/environment.md). 0: never. */
void oc_engine_worker_fail_at(oc_engine_worker *w, int64_t tile);

/* Runs every tile of the plan's order (or, shared, the groups it takes from the queue);
 * returns when the last result was delivered. On failure it aborts the queue so that the
 * other workers stop after their current tile. */
oc_status oc_engine_worker_run(oc_engine_worker *w);

const oc_engine_counts *oc_engine_worker_counts(const oc_engine_worker *w);
/* OUTCORE_TRACE: the worker's choices and where its time went, to stderr. */
void oc_engine_worker_trace(const oc_engine_worker *w);

/* Waits until nothing the worker started still runs: its device's work (copies into and
 * out of the job's memory) and its sinks' deliveries. After it the job may return while its
 * memory is given back later (core/process/after_job.h): on a failed job a delivery still in flight
 * would write into an output the caller removes. NULL, or a worker never set up: nothing. */
void oc_engine_worker_quiesce(oc_engine_worker *w);
/* Waits for the device, frees everything. NULL: no-op. */
void oc_engine_worker_close(oc_engine_worker *w);

#endif
