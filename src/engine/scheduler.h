/*
 * scheduler.h - the queue of tile groups the device workers of one job pull from.
 *
 * The plan's tile order is cut into groups: runs of consecutive tiles with the same
 * affinity key (the caller's: for a plan whose panels stay resident the column panel, for a
 * streaming plan the group of A panels it keeps resident; gram/cuda/gram_parts.c),
 * each run cut again into pieces of at most `max_group` tiles, and (chosen sizes) the last
 * pieces shrinking to single tiles, so that no worker holds back much work at the end. Workers pull groups whenever they need work (dynamic: a slower or
 * busier device simply pulls fewer), and prefer panel affinity: a worker takes the first
 * unclaimed group whose key is the key of its last group (it holds that panel), else the
 * first unclaimed group of the order. A single worker therefore walks the order as planned.
 *
 * Results do not depend on who computed what: every tile lands at its own place in a dense
 * result, top-k keys are totally ordered (select_key.h) so merging per-device lists in any
 * order keeps the same keys, and threshold pairs leave sorted by (row, col). The scheduler
 * only decides speed, never bytes.
 *
 * A worker that fails calls oc_scheduler_abort: from then on no worker gets another group,
 * so every worker stops after the tile it is on and the job ends with the failing worker's
 * error (docs/architecture.md: "A device that fails").
 *
 * Thread-safe: one mutex around the state; pulls happen once per group, not per tile.
 * Plain C, no device calls: tests/test_scheduler.c drives it with simulated workers.
 */
#ifndef OC_ENGINE_SCHEDULER_H
#define OC_ENGINE_SCHEDULER_H

#include <stdint.h>

#include "outcore.h"

typedef struct oc_scheduler oc_scheduler;

/* A queue over `ntiles` tiles of an order whose tile t has affinity key keys[t] (copied),
 * pulled by `workers` workers; groups of at most max_group tiles (0: chosen from the tile and
 * worker counts, eight groups per worker at least, and with several workers each group at
 * most a (2 x workers)-th of the tiles left from its first on). */
oc_status oc_scheduler_create(oc_context *ctx, const int64_t *keys, int64_t ntiles, int workers, int64_t max_group,
                              oc_scheduler **out);
void oc_scheduler_free(oc_scheduler *s); /* NULL: no-op */

/* Worker `worker` claims its next group: the tiles [*first, *first + *count) of the order.
 * Returns 0 when none is left or the job was aborted. */
int oc_scheduler_next(oc_scheduler *s, int worker, int64_t *first, int64_t *count);

/* Worker `worker` finished `tiles` more tiles (progress). */
void oc_scheduler_complete(oc_scheduler *s, int worker, int64_t tiles);

/* Worker `worker` failed: no group is handed out any more. The first abort is kept. */
void oc_scheduler_abort(oc_scheduler *s, int worker);

/* The worker that aborted the job, or -1. */
int oc_scheduler_aborted(oc_scheduler *s);

/* Tiles completed so far by all workers, and by one worker (worker < 0: all). */
int64_t oc_scheduler_done(oc_scheduler *s, int worker);

/* Groups the queue holds (for tests and the trace). */
int64_t oc_scheduler_groups(const oc_scheduler *s);

#endif
