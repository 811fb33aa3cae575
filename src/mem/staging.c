/*
 * staging.c - the pinned staging ring (staging.h says its layout and rules).
 *
 * One mutex guards the held flags, the turn and the failure; the callbacks and the
 * holders' work run without it. Nothing is allocated after oc_staging_create.
 */
#include "mem/staging.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/threads.h"

struct oc_staging_ring {
    oc_pool *pool;
    unsigned char *base;
    int slots;
    int64_t slot_bytes, stride;
    oc_staging_ops ops;
    pthread_mutex_t lock;
    pthread_cond_t freed;
    unsigned char *held;
    int held_count;
    int next;
    oc_status failure;
    atomic_int failed; /* failure != OC_OK, readable without the lock */
    char message[512];
};

static int64_t page_round(int64_t bytes)
{
    return (bytes + OC_STAGING_ALIGN - 1) / OC_STAGING_ALIGN * OC_STAGING_ALIGN;
}

int64_t oc_staging_bytes(int slots, int64_t slot_bytes) { return (int64_t)slots * page_round(slot_bytes); }

oc_status oc_staging_create(oc_context *ctx, oc_pool *pool, int slots, int64_t slot_bytes, size_t alloc_bytes,
                            const char *what, const oc_staging_ops *ops, oc_staging_ring **out)
{
    if (slots < 1 || slot_bytes < 1 || (int64_t)alloc_bytes < oc_staging_bytes(slots, slot_bytes))
        return oc_fail(ctx, OC_ERR_INTERNAL, "%s: %d slots of %lld bytes do not fit %zu bytes", what, slots,
                       (long long)slot_bytes, alloc_bytes);
    oc_staging_ring *r = calloc(1, sizeof *r);
    unsigned char *held = calloc((size_t)slots, 1);
    if (!r || !held) {
        free(r);
        free(held);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the state of %s", what);
    }
    oc_status st = oc_pool_host_alloc(ctx, pool, alloc_bytes, what, (void **)&r->base);
    if (st != OC_OK) {
        free(r);
        free(held);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    r->pool = pool;
    r->slots = slots;
    r->slot_bytes = slot_bytes;
    r->stride = page_round(slot_bytes);
    r->held = held;
    if (ops) r->ops = *ops;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->freed, NULL);
    *out = r;
    return OC_OK;
}

void oc_staging_free(oc_staging_ring *r)
{
    if (!r) return;
    oc_pool_host_free(r->pool, r->base);
    pthread_cond_destroy(&r->freed);
    pthread_mutex_destroy(&r->lock);
    free(r->held);
    free(r);
}

int oc_staging_slots(const oc_staging_ring *r) { return r->slots; }
int64_t oc_staging_slot_bytes(const oc_staging_ring *r) { return r->slot_bytes; }
unsigned char *oc_staging_slot(const oc_staging_ring *r, int slot) { return r->base + slot * r->stride; }

/* With the lock held: the recorded failure as a status on ctx. */
static oc_status failure_locked(oc_context *ctx, oc_staging_ring *r)
{
    oc_status st = r->failure;
    char message[sizeof r->message];
    snprintf(message, sizeof message, "%s", r->message);
    pthread_mutex_unlock(&r->lock);
    return oc_fail(ctx, st, "%s", message);
}

oc_status oc_staging_acquire(oc_context *ctx, oc_staging_ring *r, int *slot, double *waited)
{
    double t0 = oc_now();
    int s = -1;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        if (r->failure != OC_OK) return failure_locked(ctx, r);
        for (int k = 0; k < r->slots && s < 0; ++k) {
            int c = (r->next + k) % r->slots;
            if (!r->held[c]) s = c;
        }
        if (s >= 0) break;
        pthread_cond_wait(&r->freed, &r->lock);
    }
    r->held[s] = 1;
    r->held_count++;
    r->next = (s + 1) % r->slots;
    pthread_mutex_unlock(&r->lock);
    char why[256] = "";
    if (r->ops.wait_reusable && r->ops.wait_reusable(r->ops.user, s, why, sizeof why) != 0) {
        oc_staging_release(r, s);
        return oc_fail(ctx, OC_ERR_DEVICE, "waiting for a staging slot to be free: %s", why);
    }
    if (waited) *waited += oc_now() - t0;
    *slot = s;
    return OC_OK;
}

void oc_staging_release(oc_staging_ring *r, int slot)
{
    pthread_mutex_lock(&r->lock);
    if (r->held[slot]) {
        r->held[slot] = 0;
        r->held_count--;
    }
    pthread_cond_broadcast(&r->freed);
    pthread_mutex_unlock(&r->lock);
}

void oc_staging_fail(oc_staging_ring *r, oc_status status, const char *fmt, ...)
{
    pthread_mutex_lock(&r->lock);
    if (r->failure == OC_OK) {
        r->failure = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->message, sizeof r->message, fmt, ap);
        va_end(ap);
        atomic_store(&r->failed, 1);
    }
    pthread_cond_broadcast(&r->freed);
    pthread_mutex_unlock(&r->lock);
}

int oc_staging_failed(oc_staging_ring *r) { return atomic_load(&r->failed); }

oc_status oc_staging_drain(oc_context *ctx, oc_staging_ring *r)
{
    pthread_mutex_lock(&r->lock);
    while (r->held_count > 0) pthread_cond_wait(&r->freed, &r->lock);
    if (r->failure != OC_OK) return failure_locked(ctx, r);
    pthread_mutex_unlock(&r->lock);
    return OC_OK;
}
