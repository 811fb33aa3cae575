/*
 * engine_prestage.h - a resident plan's panel uploads on a thread of their own, ahead of
 * the tiles.
 *
 * When every panel stays on the device, nothing an upload writes is ever read by an
 * earlier kernel, so the uploads need not wait for the tiles: a thread of the worker
 * stages its panels from host memory one after the other, in the order the tiles first
 * need them, as fast as the host copies them, from the moment the device is set up. The
 * driving thread only waits for a panel when the next tile needs one that is not up yet,
 * and the GPU then has every earlier tile to run meanwhile. Staged on the driving thread
 * instead, each panel was copied only when the prefetch, three tiles ahead, reached it, and
 * the GPU idled while the driving thread copied (a panel of long rows took longer to copy
 * than three tiles to run: bench/RESULTS.md, "Panels uploaded ahead on a thread; tiles on a
 * high-priority stream").
 *
 * The thread calls the worker's upload for each key in turn; the worker decides where the
 * panel goes and what follows it (publishing it to the other devices, its row popcounts).
 * It stops early when asked (the job failed or was cancelled) or when an upload fails; the
 * keys it will not upload are then handed to `give_up` (the worker withdraws them from the
 * panel exchange, so another device's wait for them ends), and a wait for one returns 0.
 *
 * Threads: the prestage thread, and the worker's driving thread, which waits. One mutex
 * and one condition variable; the wait is the only call the driving thread makes while the
 * thread runs, besides the end.
 */
#ifndef OC_ENGINE_CUDA_ENGINE_PRESTAGE_H
#define OC_ENGINE_CUDA_ENGINE_PRESTAGE_H

#include <stdint.h>

#include "outcore.h"

typedef struct oc_prestage oc_prestage;

typedef struct oc_prestage_ops {
    void *user;
    /* Uploads the panel of key, on the prestage thread (its device is current). */
    oc_status (*upload)(void *user, int64_t key);
    /* The thread will not upload key (it stopped first). May be NULL. */
    void (*give_up)(void *user, int64_t key);
} oc_prestage_ops;

/* Starts the thread over keys[0..n) (copied), each below nkeys, on CUDA device `device`
 * (< 0: none is selected; for uploads that need none, as in tests).
 * Fails only when memory is short or no thread can start; nothing is running then. */
oc_status oc_prestage_start(oc_context *ctx, int device, const int64_t *keys, int64_t n, int64_t nkeys,
                            const oc_prestage_ops *ops, oc_prestage **out);

/* Whether key's upload is enqueued: 1 it is; 0 the thread will not upload it (not one of
 * its keys, or it stopped first); -1 not yet (only with nowait; otherwise the call waits).
 * Adds the time it waited to *waited. */
int oc_prestage_wait(oc_prestage *p, int64_t key, int nowait, double *waited);

/* OC_OK, or the failed upload's status (its message is on the context it was given). */
oc_status oc_prestage_status(oc_prestage *p);

/* Waits for the thread and frees everything; returns oc_prestage_status. With `stop`, the
 * thread stops after its current upload (the keys left are given up); without, it uploads
 * every key first (the other devices of the job may still need them). NULL: OC_OK. */
oc_status oc_prestage_end(oc_prestage *p, int stop);

#endif
