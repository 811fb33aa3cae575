/*
 * pinned_cache.h - pinned host blocks kept idle between the jobs of one context, so that the
 * next job takes them back without pinning again (pinned_cache.c: layout and rules).
 *
 * Plain C behind two callbacks, like pool.h's oc_mem_ops: the CUDA backend passes its
 * pinning (oc_cuda_host_pin: huge pages registered with the driver) and unpinning, the
 * tests pass malloc and free. One cache per oc_context:
 * the backend creates it on the context's first GPU job and hands it to the context
 * (oc_context_adopt_pinned_cache), which frees it in oc_context_free.
 */
#ifndef OC_MEM_PINNED_CACHE_H
#define OC_MEM_PINNED_CACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Pins (alloc: 0 on success, else nonzero with a short reason in why) and unpins a block. */
typedef struct oc_pinned_ops {
    void *user;
    int (*alloc)(void *user, size_t bytes, void **out, char *why, size_t why_size);
    void (*free)(void *user, void *ptr, size_t bytes);
} oc_pinned_ops;

/* The most idle blocks a cache keeps: every block of the largest job, so that the same job
 * again pins nothing (a gram part pins two rings, a matmul device five slots; a job runs on
 * at most eight devices). What stays pinned is still one job's, never the sum of two. */
#define OC_PINNED_CACHE_KEEP 40

typedef struct oc_pinned_cache oc_pinned_cache;

/* A cache with no idle block; NULL when out of host memory. */
oc_pinned_cache *oc_pinned_cache_create(const oc_pinned_ops *ops);
/* Unpins every idle block and frees the cache. Blocks handed out and not given back are the
 * caller's to free. NULL is a no-op. */
void oc_pinned_cache_free(oc_pinned_cache *cache);

/* The size to ask oc_pinned_cache_take for when `need` bytes are needed and at most `limit`
 * may be held: the smallest idle block within [need, limit], else need. */
size_t oc_pinned_cache_fit(oc_pinned_cache *cache, size_t need, size_t limit);
/* A pinned block of exactly `bytes`: an idle one of that size, else a new one (after every
 * idle block was unpinned). Returns 0, or the allocator's nonzero result and reason. */
int oc_pinned_cache_take(oc_pinned_cache *cache, size_t bytes, void **out, char *why, size_t why_size);
/* Gives a block back to keep idle; the oldest idle block is unpinned to make room. The
 * caller has finished every copy that used it. */
void oc_pinned_cache_give(oc_pinned_cache *cache, void *ptr, size_t bytes);
/* Unpins every idle block now; blocks handed out are not touched. */
void oc_pinned_cache_release(oc_pinned_cache *cache);
/* Bytes held idle. */
int64_t oc_pinned_cache_idle_bytes(oc_pinned_cache *cache);

#ifdef __cplusplus
}
#endif

#endif
