/*
 * pinned_cache.c - pinned host blocks kept idle between the jobs of one context.
 *
 * Why: pinning host memory runs far slower than the copies it serves, and unpinning costs
 * more time again, a fixed cost per job that bounded the dense job's rate
 * (bench/RESULTS.md). So a job's pinned rings are not unpinned when it ends but given back
 * here, idle, and the context's next job that asks for a size they cover takes one back
 * without pinning (the pipeline asks for an idle size when it covers its need within its
 * host_mem cap: oc_pinned_cache_fit).
 *
 * Layout
 *
 *     idle[]  [ oldest ][ ... ][ newest ]  (free)      count <= OC_PINNED_CACHE_KEEP
 *              each a block from ops.alloc that no job holds now
 *
 *   Blocks a job holds are not in the cache at all: take removes a block from idle[], give
 *   puts it back at the newest end.
 *
 * Invariants: count <= OC_PINNED_CACHE_KEEP; idle[0..count) are distinct live blocks,
 * oldest first; idle_bytes is their sum; every idle block is unpinned by release or free.
 *
 * Reuse rule: a request takes the newest idle block of exactly its size. A request that no
 * idle block matches unpins every idle block before it pins, so a context never holds idle
 * staging beside staging pinned for a job that could not use it: what is pinned stays
 * within the larger of the jobs' caps, never their sum. give evicts the oldest block when
 * the cache is full.
 *
 * Threads: one mutex guards idle[]. The job's thread takes and gives; release may come from
 * any thread at any time (oc_release_cached_memory), so it only ever sees idle blocks and a
 * running job's staging is never touched. The mutex is held for list edits and for
 * unpinning, never while pinning (a new block is pinned after the lock is dropped).
 */
#include "mem/pinned_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct pinned_block {
    void *ptr;
    size_t bytes;
} pinned_block;

struct oc_pinned_cache {
    oc_pinned_ops ops;
    pthread_mutex_t lock;
    pinned_block idle[OC_PINNED_CACHE_KEEP]; /* oldest first */
    int count;
};

oc_pinned_cache *oc_pinned_cache_create(const oc_pinned_ops *ops)
{
    oc_pinned_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->ops = *ops;
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        return NULL;
    }
    return c;
}

/* Removes idle block k (lock held). */
static pinned_block take_at(oc_pinned_cache *c, int k)
{
    pinned_block b = c->idle[k];
    memmove(c->idle + k, c->idle + k + 1, (size_t)(c->count - k - 1) * sizeof *c->idle);
    c->count--;
    return b;
}

/* Unpins every idle block (lock held). */
static void unpin_all(oc_pinned_cache *c)
{
    while (c->count > 0) {
        pinned_block b = take_at(c, 0);
        c->ops.free(c->ops.user, b.ptr, b.bytes);
    }
}

void oc_pinned_cache_free(oc_pinned_cache *cache)
{
    if (!cache) return;
    unpin_all(cache); /* no other thread may use a cache being freed: no lock */
    pthread_mutex_destroy(&cache->lock);
    free(cache);
}

size_t oc_pinned_cache_fit(oc_pinned_cache *cache, size_t need, size_t limit)
{
    size_t best = 0;
    pthread_mutex_lock(&cache->lock);
    for (int k = 0; k < cache->count; ++k) {
        size_t b = cache->idle[k].bytes;
        if (b >= need && b <= limit && (best == 0 || b < best)) best = b;
    }
    pthread_mutex_unlock(&cache->lock);
    return best ? best : need;
}

int oc_pinned_cache_take(oc_pinned_cache *cache, size_t bytes, void **out, char *why, size_t why_size)
{
    pthread_mutex_lock(&cache->lock);
    for (int k = cache->count - 1; k >= 0; --k)
        if (cache->idle[k].bytes == bytes) {
            *out = take_at(cache, k).ptr;
            pthread_mutex_unlock(&cache->lock);
            return 0;
        }
    unpin_all(cache);
    pthread_mutex_unlock(&cache->lock);
    return cache->ops.alloc(cache->ops.user, bytes, out, why, why_size);
}

void oc_pinned_cache_give(oc_pinned_cache *cache, void *ptr, size_t bytes)
{
    pthread_mutex_lock(&cache->lock);
    if (cache->count == OC_PINNED_CACHE_KEEP) {
        pinned_block old = take_at(cache, 0);
        cache->ops.free(cache->ops.user, old.ptr, old.bytes);
    }
    cache->idle[cache->count++] = (pinned_block){ptr, bytes};
    pthread_mutex_unlock(&cache->lock);
}

void oc_pinned_cache_release(oc_pinned_cache *cache)
{
    pthread_mutex_lock(&cache->lock);
    unpin_all(cache);
    pthread_mutex_unlock(&cache->lock);
}

int64_t oc_pinned_cache_idle_bytes(oc_pinned_cache *cache)
{
    int64_t total = 0;
    pthread_mutex_lock(&cache->lock);
    for (int k = 0; k < cache->count; ++k) total += (int64_t)cache->idle[k].bytes;
    pthread_mutex_unlock(&cache->lock);
    return total;
}
