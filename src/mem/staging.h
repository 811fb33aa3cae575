/*
 * staging.h - a ring of pinned host slots between host threads and a device's copy engine.
 *
 * Layout: one pinned allocation from the job's pool (so it counts against the host budget
 * and may come from the context's cache of pinned blocks), cut into `slots` slots of
 * `slot_bytes` usable bytes, each starting on a page (STAGING_ALIGN), the copy engine's
 * best case:
 *
 *   base: | slot 0 ......pad | slot 1 ......pad | ... | slot slots-1 ......pad | (rest of a cached block)
 *
 * A slot is free or held. oc_staging_acquire takes a free slot (the first at or after the
 * last one taken, so slots are used in turn), waiting for a release when none is free, and
 * then waits through the `wait_reusable` callback until the device is done with the slot's
 * previous contents (an event recorded after the last copy that read it). Any thread may
 * release a slot; a thread that finds a failure while holding one records it with
 * oc_staging_fail, and every later acquire and the drain return it.
 *
 * The two uses in the CUDA engine:
 *   upload:   acquire (waits for the event of the copy that last read the slot), fill,
 *             enqueue the H2D copy, record that event, release at once;
 *   download: acquire, enqueue the D2H copy into it, record its ready event, hand the slot
 *             to a sink task, which waits for the event, delivers the rows and releases.
 * The ring does not know CUDA: events are behind the callback, so its rules are tested on
 * the CPU (tests/test_staging.c).
 */
#ifndef OC_MEM_STAGING_H
#define OC_MEM_STAGING_H

#include <stddef.h>
#include <stdint.h>

#include "outcore.h"
#include "mem/pool.h"

#define OC_STAGING_ALIGN 4096

typedef struct oc_staging_ops {
    void *user;
    /* Blocks until the device no longer reads or writes slot `slot` (NULL: never needed).
     * Returns 0, or nonzero with a reason in why. Called without the ring's lock. */
    int (*wait_reusable)(void *user, int slot, char *why, size_t why_size);
} oc_staging_ops;

typedef struct oc_staging_ring oc_staging_ring;

/* Bytes a ring of `slots` slots of `slot_bytes` needs (page-rounded slots). */
int64_t oc_staging_bytes(int slots, int64_t slot_bytes);

/* A ring from `pool`'s pinned memory. alloc_bytes >= oc_staging_bytes(slots, slot_bytes)
 * may be larger (the size of a cached block that can be reused without pinning). `what`
 * names the ring in messages. ops may be NULL. */
oc_status oc_staging_create(oc_context *ctx, oc_pool *pool, int slots, int64_t slot_bytes, size_t alloc_bytes,
                            const char *what, const oc_staging_ops *ops, oc_staging_ring **out);

/* Returns the pinned memory to the pool and frees the ring. No slot may be held. NULL: no-op. */
void oc_staging_free(oc_staging_ring *ring);

int oc_staging_slots(const oc_staging_ring *ring);
int64_t oc_staging_slot_bytes(const oc_staging_ring *ring);
unsigned char *oc_staging_slot(const oc_staging_ring *ring, int slot);

/* A free slot, once the device is done with it. Fails with the recorded failure, or when
 * wait_reusable fails (the slot is then released again). *waited adds the seconds spent
 * waiting (may be NULL). */
oc_status oc_staging_acquire(oc_context *ctx, oc_staging_ring *ring, int *slot, double *waited);

/* Frees a held slot. Any thread. */
void oc_staging_release(oc_staging_ring *ring, int slot);

/* Records a failure found by a holder (the first one is kept); later acquires return it.
 * Any thread. */
void oc_staging_fail(oc_staging_ring *ring, oc_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Nonzero once a failure was recorded: holders skip work that no longer matters. */
int oc_staging_failed(oc_staging_ring *ring);

/* Waits until no slot is held; returns the recorded failure, if any. */
oc_status oc_staging_drain(oc_context *ctx, oc_staging_ring *ring);

#endif
