/*
 * gram_parts.h - the parts of a Gram job on its logical devices (engine/device_spec.h), one
 * per device (gram_part.h: worker, plan, selection), as gram_devices.c runs them: made,
 * opened and planned with one tile edge for all; the shared tile order, queue and panel
 * exchange made from those plans; each part set up on the thread that then runs its tiles;
 * and released. Opening and releasing run on every part at once, a thread per part and
 * part 0 on the caller's thread: each touches only its own context, device and
 * allocations, so the devices' driver calls overlap instead of being paid in turn.
 *
 * Each part other than the first has a context of its own (its error message, its pool of
 * sink and copy threads, its pinned staging), so parts never write one context at once.
 */
#ifndef OC_GRAM_CUDA_GRAM_PARTS_H
#define OC_GRAM_CUDA_GRAM_PARTS_H

#include <pthread.h>
#include <stdint.h>

#include "gram/cuda/gram_part.h"
#include "engine/cuda/panel_exchange.h"
#include "engine/scheduler.h"

typedef struct oc_part_slot {
    oc_gram_part part;
    oc_gram_job job; /* the job as this part sees it: its context and statistics */
    oc_gram_stats stats;
    oc_context *own_ctx; /* parts 1..N-1 */
    uint64_t *topk_keys; /* parts 1..N-1 (and 0, resumed) with device top-k lists: the lists, to merge */
    pthread_t thread;
    int started;
    oc_status st;
    char name[32]; /* the logical device's name ("cuda:1", "cuda:0.1") */
} oc_part_slot;

typedef struct oc_gram_parts {
    oc_gram_job *job;
    int count;
    oc_part_slot *slot;
    int64_t *order; /* several parts: the shared tile order */
    oc_scheduler *queue;
    oc_panel_exchange *exchange;   /* several parts, every panel resident: panels cross once */
    oc_cuda_floors *floors;        /* several parts selecting top-k on the devices: their floors, shared */
    struct oc_gram_window *window; /* the first tiles of the order split on K (gram_window.h), or NULL */
    int peers;                     /* 1: the parts' devices reach each other's memory, -1: not, 0: not asked */
} oc_gram_parts;

/* g->job set, the rest zero: one part per logical device, each opened and planned. On
 * failure the parts made so far stay in g for oc_gram_parts_status and _close. */
oc_status oc_gram_parts_open(oc_context *ctx, oc_gram_parts *g);
/* The selection's start (once per job, before any part selects); with several parts the
 * shared tile order and queue, and (every panel resident) the panel exchange, from the
 * parts' plans. */
oc_status oc_gram_parts_share(oc_context *ctx, oc_gram_parts *g);
/* Part d's worker and selection, joined to the shared order, queue and exchange; on the
 * thread that runs the part's tiles, its device selected. A failure is the part's (p->st)
 * and ends the other parts' work after their current tile. */
oc_status oc_gram_parts_setup_part(oc_gram_parts *g, int d);
/* cudaSetDevice to the part's device on the calling thread (a failure is the part's). */
oc_status oc_gram_parts_select_device(oc_part_slot *p);
/* The job's status: the first part that failed (the one that aborted the queue, else the
 * lowest), its message on ctx naming the logical device; OC_OK when none failed. */
oc_status oc_gram_parts_status(oc_context *ctx, oc_gram_parts *g);
/* Waits until no part's device work or delivery still runs (engine.h:
 * oc_engine_worker_quiesce): a job that failed may have left some in flight. */
void oc_gram_parts_quiesce(oc_gram_parts *g);
/* The device pools' figures into the job's statistics (before the release). */
void oc_gram_parts_account(oc_gram_parts *g);
/* Every part's device work undone (streams, events, device memory, staging) and the host
 * side freed; g itself is the caller's. _later does it after the job returns
 * (core/process/after_job.h), taking g's contents and leaving g empty. _close: account, release. */
void oc_gram_parts_release(oc_gram_parts *g);
void oc_gram_parts_release_later(oc_gram_parts *g);
void oc_gram_parts_close(oc_gram_parts *g);

#endif
