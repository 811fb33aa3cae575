/*
 * context_cache.c - the public calls on the memory a context keeps between its jobs: the
 * pinned staging of its GPU jobs (pinned_cache.c), and the device block of a resident
 * product's cuBLASLt workspace (core/context.h's oc_kept_device), which the context owns and
 * frees with itself (core/context.c). Releasing needs no backend: the cache unpins, and the
 * block frees itself, through the calls the backend gave with them. Each call first waits
 * for the release of earlier GPU jobs (core/process/after_job.h), which hands their staging back to
 * the cache.
 */
#include "core/process/after_job.h"
#include "core/context.h"
#include "mem/pinned_cache.h"

static void release_one(oc_context *ctx, void *arg)
{
    (void)arg;
    if (!ctx) return;
    oc_pinned_cache *cache = oc_context_pinned_cache(ctx);
    if (cache) oc_pinned_cache_release(cache);
    oc_context_free_kept_device(ctx);
}

void oc_context_release_cached_memory(oc_context *ctx)
{
    oc_after_job_wait();
    release_one(ctx, NULL);
}

/* Waits before the registry's lock is taken: a release frees its parts' contexts, which
 * takes that lock. */
void oc_release_cached_memory(void)
{
    oc_after_job_wait();
    oc_context_for_each_live(release_one, NULL);
}

int64_t oc_context_cached_memory_bytes(oc_context *ctx)
{
    oc_after_job_wait();
    if (!ctx) return 0;
    oc_pinned_cache *cache = oc_context_pinned_cache(ctx);
    return (cache ? oc_pinned_cache_idle_bytes(cache) : 0) + atomic_load(&ctx->kept_device_bytes);
}
