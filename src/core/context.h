/* context.h - the opaque oc_context: last error, trace, cancel flag. */
#ifndef OC_CORE_CONTEXT_H
#define OC_CORE_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>
#include "outcore.h"
#include "core/fault.h"
#include "core/workers.h"

struct oc_pinned_cache; /* mem/pinned_cache.h; core/ holds only the pointer */

/* A block of device memory a context keeps between its jobs (the CUDA backend's: a resident
 * product's scratch, engine/cuda/device.h's oc_cuda_kept_take). Made by the
 * backend, which also gives the call that frees it (on its device) with the struct; core/
 * holds only the block and calls `free`. */
typedef struct oc_kept_device {
    int device;
    void *ptr;
    size_t bytes;
    void (*free)(struct oc_kept_device *block);
} oc_kept_device;

/* A message names a file and its problem, some a file and its folder: room for two paths of
 * PATH_MAX (4096) bytes and the words between them. */
#define OC_MESSAGE_MAX 12288
#define OC_TRACE_MAX 2048

struct oc_context {
    /* The last error: written under error_lock, since a job's threads (a device part's
     * upload thread beside its driving thread) may fail at once; each write is whole, the
     * later one stays. Read after the job's threads are done. */
    pthread_mutex_t error_lock;
    oc_status status;
    char message[OC_MESSAGE_MAX];
    char trace[OC_TRACE_MAX];
    atomic_int cancel;
    /* Nonzero while a job made of jobs runs (oc_gram_ranks: its sub-jobs are oc_gram calls):
     * oc_context_begin_job then leaves the cancel flag set, so that a cancel asked between
     * or during the sub-jobs holds for the whole job. */
    int keep_cancel;
    /* The pinned staging kept between this context's jobs, created by the backend on its
     * first GPU job (oc_context_adopt_pinned_cache) and freed with the context through
     * pinned_cache_free: core/ holds only the pointer and the call, so it includes no mem/
     * or backend header. Atomic because oc_release_cached_memory reads it from any thread. */
    struct oc_pinned_cache *_Atomic pinned_cache;
    void (*pinned_cache_free)(struct oc_pinned_cache *cache);
    /* The device block kept for the next job, NULL while none is idle (a job holding it has
     * taken it out): atomic, since a release takes it from any thread; kept_device_bytes
     * is its size, read without touching the block. */
    oc_kept_device *_Atomic kept_device;
    atomic_llong kept_device_bytes;
    oc_context *live_prev, *live_next; /* the registry of live contexts (context.c) */
    oc_fault_plan faults;              /* write-side fault injection for tests (fault.h) */
    /* The threads that stage copies and run sinks for the context's jobs (workers.h):
     * started by the first job that needs them, grown by later ones, joined by
     * oc_context_free. */
    oc_workers *workers;
    /* Told of each stale temporary a job removes (oc_context_set_removed_fn); NULL: stderr. */
    oc_removed_fn removed_fn;
    void *removed_user;
    /* Told of each warning (oc_context_set_warning_fn, oc_warn); NULL: stderr. */
    oc_warning_fn warning_fn;
    void *warning_user;
};

/* Clears the error and the cancel flag (not while keep_cancel is set) and starts the fault
 * plan's counts: called at the start of each job. */
void oc_context_begin_job(oc_context *ctx);

/* Arms ctx's fault plan for one kind of call from a spec of fault.h (NULL or "" disarms it)
 * from the next job on. Returns OC_ERR_INVALID_ARGUMENT, arming nothing, when spec does not
 * parse. */
oc_status oc_fault_arm(oc_context *ctx, oc_fault_call call, const char *spec);

/* The context's worker pool with at least `threads` workers, started or grown now. */
oc_status oc_context_workers(oc_context *ctx, int threads, oc_workers **out);
/* The context's pinned cache, NULL before its first GPU job. Any thread. */
struct oc_pinned_cache *oc_context_pinned_cache(oc_context *ctx);
/* Hands ctx a pinned cache to keep until oc_context_free, which calls free_fn on it. Only
 * the thread running ctx's job, and only while ctx has none. */
void oc_context_adopt_pinned_cache(oc_context *ctx, struct oc_pinned_cache *cache,
                                   void (*free_fn)(struct oc_pinned_cache *cache));
/* The device block ctx keeps idle, taken out (NULL when none): a job's to use and give back
 * with oc_context_keep_device, or to free. Any thread. */
oc_kept_device *oc_context_take_kept_device(oc_context *ctx);
/* Gives ctx a block to keep idle for its next job; one it kept already is freed. Any
 * thread; the block's device work is finished. */
void oc_context_keep_device(oc_context *ctx, oc_kept_device *block);
/* Frees the device block ctx keeps idle, if any (a block a job holds is not touched). Any
 * thread. */
void oc_context_free_kept_device(oc_context *ctx);
/* Calls fn(ctx, arg) for every live context under the registry's lock, so that none of
 * them is freed meanwhile; fn must not create or free a context. */
void oc_context_for_each_live(void (*fn)(oc_context *ctx, void *arg), void *arg);

#endif
