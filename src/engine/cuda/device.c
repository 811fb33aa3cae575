/*
 * device.c - CUDA device discovery, per-device state, the pool's allocators, the launch
 * planner and the backend table.
 */
#include "engine/cuda/device.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/process/after_job.h"
#include "core/context.h"
#include "mem/pinned_cache.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/driver_status.h"
#include "core/process/fork_locks.h"

/* ---------------------------------------------------------------- allocators */
static atomic_llong live_device_bytes;
static atomic_llong device_bytes_allocated;
static atomic_llong live_pinned_bytes;

static int dev_alloc(void *user, size_t bytes, void **out, char *why, size_t why_size)
{
    (void)user;
    cudaError_t e = cudaMalloc(out, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        size_t free_bytes = 0, total = 0;
        if (e == cudaErrorMemoryAllocation && cudaMemGetInfo(&free_bytes, &total) == cudaSuccess)
            snprintf(why, why_size, "cudaMalloc: %s (%.1f MiB of the device's %.1f MiB free now)",
                     cudaGetErrorString(e), (double)free_bytes / 1048576.0, (double)total / 1048576.0);
        else snprintf(why, why_size, "cudaMalloc: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return e == cudaErrorMemoryAllocation ? OC_MEM_OPS_NO_MEMORY : 1;
    }
    atomic_fetch_add(&live_device_bytes, (long long)bytes);
    atomic_fetch_add(&device_bytes_allocated, (long long)bytes);
    return 0;
}

static void dev_free(void *user, void *ptr, size_t bytes)
{
    (void)user;
    atomic_fetch_sub(&live_device_bytes, (long long)bytes);
    /* A free can only fail after an earlier sticky error, which was reported already. */
    if (cudaFree(ptr) != cudaSuccess) (void)cudaGetLastError();
}

/* Page-locked host memory (the staging rings, oc_pinned_alloc): whole 2 MiB pages advised
 * for transparent huge pages, registered with the driver, which faults them in. Pinning
 * costs the driver per page, so huge pages pin faster than cudaHostAlloc's small ones
 * (bench/gpu/bench_setup_costs.cu; bench/RESULTS.md, "Four GPUs again: rings pinned on huge
 * pages"). Where the driver cannot register host memory, cudaHostAlloc. Portable either way:
 * any device may copy from it, and a later job on several GPUs shares the ring. */
enum { HOST_PIN_ALIGN = 2 << 20 };

int oc_cuda_host_pin(size_t bytes, void **out, char *why, size_t why_size)
{
    *out = NULL;
    if (bytes > SIZE_MAX - HOST_PIN_ALIGN) {
        snprintf(why, why_size, "%zu bytes cannot be pinned", bytes);
        return 1;
    }
    size_t size = (bytes + HOST_PIN_ALIGN - 1) / HOST_PIN_ALIGN * HOST_PIN_ALIGN;
    void *p = aligned_alloc(HOST_PIN_ALIGN, size ? size : HOST_PIN_ALIGN);
    if (p) {
#ifdef MADV_HUGEPAGE
        (void)madvise(p, size, MADV_HUGEPAGE); /* a hint: without huge pages it pins all the same */
#endif
        if (cudaHostRegister(p, size ? size : HOST_PIN_ALIGN, cudaHostRegisterPortable) == cudaSuccess) {
            *out = p;
            return 0;
        }
        (void)cudaGetLastError();
        free(p);
    }
    cudaError_t e = cudaHostAlloc(out, bytes, cudaHostAllocPortable);
    if (e == cudaSuccess) return 0;
    (void)cudaGetLastError();
    *out = NULL;
    snprintf(why, why_size, "cudaHostAlloc: %s", cudaGetErrorString(e));
    return 1;
}

void oc_cuda_host_unpin(void *ptr)
{
    if (!ptr) return;
    /* Registered memory unregisters; cudaHostAlloc's (the fallback) does not, and is freed
     * by the driver. */
    if (cudaHostUnregister(ptr) == cudaSuccess) {
        free(ptr);
        return;
    }
    (void)cudaGetLastError();
    if (cudaFreeHost(ptr) != cudaSuccess) (void)cudaGetLastError();
}

/* Pinned staging: each context keeps the blocks its jobs pinned, idle, for its next job
 * (mem/pinned_cache.c says why and its rules); these two calls are the cache's pinning. */
static int pin(void *user, size_t bytes, void **out, char *why, size_t why_size)
{
    (void)user;
    if (oc_cuda_host_pin(bytes, out, why, why_size)) return 1;
    atomic_fetch_add(&live_pinned_bytes, (long long)bytes);
    return 0;
}

static void unpin(void *user, void *ptr, size_t bytes)
{
    (void)user;
    atomic_fetch_sub(&live_pinned_bytes, (long long)bytes);
    oc_cuda_host_unpin(ptr);
}

static void cache_free(struct oc_pinned_cache *cache) { oc_pinned_cache_free(cache); }

/* The context's cache, created on its first GPU job; NULL only when a few bytes of host
 * memory could not be had, and then every block is pinned and unpinned per job. */
static oc_pinned_cache *context_cache(oc_context *ctx)
{
    oc_pinned_cache *cache = oc_context_pinned_cache(ctx);
    if (!cache) {
        static const oc_pinned_ops ops = {NULL, pin, unpin};
        cache = oc_pinned_cache_create(&ops);
        if (cache) oc_context_adopt_pinned_cache(ctx, cache, cache_free);
    }
    return cache;
}

static void cache_borrowed(struct oc_pinned_cache *cache) { (void)cache; }

void oc_cuda_share_pinned_cache(oc_context *child, oc_context *parent)
{
    oc_pinned_cache *cache = context_cache(parent);
    if (cache && !oc_context_pinned_cache(child)) oc_context_adopt_pinned_cache(child, cache, cache_borrowed);
}

static int host_alloc(void *user, size_t bytes, void **out, char *why, size_t why_size)
{
    return user ? oc_pinned_cache_take(user, bytes, out, why, why_size) : pin(NULL, bytes, out, why, why_size);
}

/* Keeps the block idle for the context's next job. The caller has finished every copy that
 * used it (the pipeline synchronises the device first). */
static void host_free(void *user, void *ptr, size_t bytes)
{
    if (user) oc_pinned_cache_give(user, ptr, bytes);
    else unpin(NULL, ptr, bytes);
}

oc_mem_ops oc_cuda_mem_ops(oc_context *ctx)
{
    return (oc_mem_ops){context_cache(ctx), dev_alloc, dev_free, host_alloc, host_free};
}

size_t oc_cuda_staging_fit(oc_context *ctx, size_t need, size_t limit)
{
    oc_pinned_cache *cache = context_cache(ctx);
    return cache ? oc_pinned_cache_fit(cache, need, limit) : need;
}

/* ---------------------------------------------------------------- the kept device block */
/* Frees the block on its device from any thread (a release's, the context's free), leaving
 * that thread's current device as it was. */
static void kept_free(oc_kept_device *block)
{
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess) current = -1, (void)cudaGetLastError();
    const int other = current != block->device;
    if (other && cudaSetDevice(block->device) != cudaSuccess) (void)cudaGetLastError();
    dev_free(NULL, block->ptr, block->bytes);
    if (other && current >= 0 && cudaSetDevice(current) != cudaSuccess) (void)cudaGetLastError();
    free(block);
}

oc_status oc_cuda_kept_take(oc_context *ctx, int device, size_t bytes, size_t limit, const char *what,
                            oc_kept_device **out)
{
    *out = NULL;
    if (!bytes) return OC_OK;
    oc_kept_device *block = oc_context_take_kept_device(ctx);
    if (block && block->device == device && block->bytes >= bytes && block->bytes <= limit) {
        *out = block;
        return OC_OK;
    }
    if (block) block->free(block);
    block = malloc(sizeof *block);
    if (!block) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the descriptor of %s", what);
    *block = (oc_kept_device){.device = device, .bytes = bytes, .free = kept_free};
    char why[160] = "";
    if (dev_alloc(NULL, bytes, &block->ptr, why, sizeof why) != 0) {
        free(block);
        return oc_fail(ctx, OC_ERR_DEVICE_NO_MEMORY, "cuda:%d: %s needs %.1f MiB: %s", device, what,
                       (double)bytes / 1048576.0, why);
    }
    *out = block;
    return OC_OK;
}

void oc_cuda_kept_give(oc_context *ctx, oc_kept_device *block)
{
    if (!block) return;
    if (block->bytes <= OC_CUDA_KEPT_MAX) oc_context_keep_device(ctx, block);
    else block->free(block);
}

int64_t oc_cuda_live_device_bytes(void)
{
    oc_after_job_wait();
    return atomic_load(&live_device_bytes);
}
int64_t oc_cuda_device_bytes_allocated(void) { return atomic_load(&device_bytes_allocated); }
int64_t oc_cuda_live_pinned_bytes(void)
{
    oc_after_job_wait();
    return atomic_load(&live_pinned_bytes);
}

/* ---------------------------------------------------------------- devices */
int oc_cuda_device_usable(int device)
{
    int count = 0;
    /* Without a driver this returns an error rather than aborting; the error is not sticky
     * but is cleared anyway so that it cannot surface in a later call. */
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return device >= 0 && device < count;
}

static atomic_ullong contexts_made;

void oc_cuda_note_context(int device)
{
    if (device >= 0 && device < 64) atomic_fetch_or(&contexts_made, 1ULL << device);
}

uint64_t oc_cuda_contexts_made(void) { return (uint64_t)atomic_load(&contexts_made); }

#define PROPS_CACHED 64
static pthread_mutex_t props_lock = PTHREAD_MUTEX_INITIALIZER;
OC_FORK_LOCK(props_lock, OC_FORK_RANK_CUDA, NULL)
static oc_cuda_props props_cache[PROPS_CACHED];
static int props_read[PROPS_CACHED];

cudaError_t oc_cuda_props_get(int index, oc_cuda_props *out)
{
    if (index >= 0 && index < PROPS_CACHED) {
        pthread_mutex_lock(&props_lock);
        const int have = props_read[index];
        if (have) *out = props_cache[index];
        pthread_mutex_unlock(&props_lock);
        if (have) return cudaSuccess;
    }
    struct cudaDeviceProp prop;
    const cudaError_t e = cudaGetDeviceProperties(&prop, index);
    if (e != cudaSuccess) return e;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", prop.name);
    out->cc = prop.major * 10 + prop.minor;
    out->sm_count = prop.multiProcessorCount;
    out->smem_optin = prop.sharedMemPerBlockOptin;
    out->total_mem = prop.totalGlobalMem;
    if (index >= 0 && index < PROPS_CACHED) {
        pthread_mutex_lock(&props_lock);
        props_cache[index] = *out, props_read[index] = 1;
        pthread_mutex_unlock(&props_lock);
    }
    return cudaSuccess;
}

static oc_status device_open(oc_context *ctx, int index, oc_cuda_device *dev, int all_streams)
{
    oc_after_job_wait(); /* an earlier job's device memory, still being given back */
    memset(dev, 0, sizeof *dev);
    dev->index = index;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        char why[400];
        oc_cuda_no_device_reason(e, why, sizeof why);
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "no usable CUDA device: %s", why);
    }
    if (index < 0 || index >= count)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "CUDA device %d does not exist: this machine has %d (0..%d)",
                       index, count, count - 1);
    oc_cuda_note_context(index);
    CUDA_CHECK(ctx, cudaSetDevice(index));
    oc_cuda_props prop;
    CUDA_CHECK(ctx, oc_cuda_props_get(index, &prop));
    snprintf(dev->name, sizeof dev->name, "%s", prop.name);
    dev->cc = prop.cc;
    dev->sm_count = prop.sm_count;
    dev->smem_optin = prop.smem_optin;
    dev->arch = oc_gpu_arch_find(dev->cc);
    dev->total_mem = prop.total_mem;
    if (all_streams) CUDA_CHECK(ctx, cudaMemGetInfo(&dev->free_mem_at_open, &dev->total_mem));
    /* Non-blocking streams: the legacy default stream of other libraries in the process
     * must not serialise against the pipeline. */
    if (all_streams) CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&dev->h2d, cudaStreamNonBlocking));
    /* The first compute stream at the device's highest priority: of two tiles queued on the
     * two streams, the second's CTAs start only where the first leaves SMs free (its last
     * wave), instead of running beside it throughout. At equal priority the two ran together
     * and top-k and threshold jobs of long rows took markedly longer (bench/RESULTS.md,
     * "Tiles on a high-priority stream"). */
    int least = 0, greatest = 0;
    CUDA_CHECK(ctx, cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CUDA_CHECK(ctx, cudaStreamCreateWithPriority(&dev->compute, cudaStreamNonBlocking, greatest));
    if (!all_streams) return OC_OK;
    CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&dev->compute2, cudaStreamNonBlocking));
    CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&dev->d2h, cudaStreamNonBlocking));
    return OC_OK;
}

oc_status oc_cuda_device_open(oc_context *ctx, int index, oc_cuda_device *dev)
{
    return device_open(ctx, index, dev, 1);
}

oc_status oc_cuda_device_open_compute(oc_context *ctx, int index, oc_cuda_device *dev)
{
    return device_open(ctx, index, dev, 0);
}

void oc_cuda_device_close(oc_cuda_device *dev)
{
    cudaStream_t streams[4] = {dev->h2d, dev->compute, dev->compute2, dev->d2h};
    for (int i = 0; i < 4; ++i)
        if (streams[i]) {
            (void)cudaStreamSynchronize(streams[i]);
            (void)cudaStreamDestroy(streams[i]);
        }
    oc_pool_destroy(dev->pool);
    (void)cudaGetLastError();
    dev->pool = NULL;
    dev->h2d = dev->compute = dev->compute2 = dev->d2h = NULL;
}

/* ---------------------------------------------------------------- launch planner */
/* A device's checked kernels are read and added to by every thread that launches on it (the
 * driving thread, and a resident plan's upload thread with its row popcounts). */
static pthread_mutex_t checked_lock = PTHREAD_MUTEX_INITIALIZER;
OC_FORK_LOCK(checked_lock, OC_FORK_RANK_CUDA_LAUNCH, NULL)

static oc_status launch_prepare(oc_context *ctx, oc_cuda_device *dev, const void *func, const char *name, int block,
                                size_t dyn_smem)
{
    for (int i = 0; i < dev->nchecked; ++i)
        if (dev->checked[i].func == func && dev->checked[i].block == block && dev->checked[i].dyn_smem == dyn_smem)
            return OC_OK;

    struct cudaFuncAttributes fa;
    CUDA_CHECK(ctx, cudaFuncGetAttributes(&fa, func));
    if (dev->arch) {
        oc_kernel_resources r = {.regs_per_thread = fa.numRegs,
                                 .static_smem = fa.sharedSizeBytes,
                                 .local_bytes = fa.localSizeBytes,
                                 .max_threads_per_block = fa.maxThreadsPerBlock};
        oc_launch_verdict v;
        OC_CHECK(ctx, oc_launch_check(dev->arch, &r, block, dyn_smem, &v));
        if (!v.fits) {
            /* The explanation has several lines; the message must stay one line. */
            for (char *c = v.explanation; *c; ++c)
                if (*c == '\n') *c = ';';
            return oc_fail(
                ctx, OC_ERR_UNSUPPORTED,
                "kernel %s cannot launch on cuda:%d (%s) with %d threads and %zu B of dynamic shared memory: %s", name,
                dev->index, dev->arch->name, block, dyn_smem, v.explanation);
        }
    } else if (block > fa.maxThreadsPerBlock || fa.sharedSizeBytes + dyn_smem > dev->smem_optin) {
        /* A generation the table does not know yet: the device's own limits still decide. */
        return oc_fail(
            ctx, OC_ERR_UNSUPPORTED,
            "kernel %s cannot launch on cuda:%d (cc %d.%d): %d threads (limit %d), %zu B shared memory (limit %zu)",
            name, dev->index, dev->cc / 10, dev->cc % 10, block, fa.maxThreadsPerBlock, fa.sharedSizeBytes + dyn_smem,
            dev->smem_optin);
    }
    /* Above 48 KiB a kernel must opt in to its dynamic shared memory. */
    if (dyn_smem > 48 * 1024)
        CUDA_CHECK(ctx, cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn_smem));
    if (dev->nchecked < OC_CUDA_MAX_KERNELS) dev->checked[dev->nchecked++] = (oc_cuda_launch_ok){func, block, dyn_smem};
    return OC_OK;
}

oc_status oc_cuda_launch_prepare(oc_context *ctx, oc_cuda_device *dev, const void *func, const char *name, int block,
                                 size_t dyn_smem)
{
    pthread_mutex_lock(&checked_lock);
    oc_status st = launch_prepare(ctx, dev, func, name, block, dyn_smem);
    pthread_mutex_unlock(&checked_lock);
    return st;
}

int oc_cuda_host_pinned(const void *p)
{
    struct cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return at.type == cudaMemoryTypeHost;
}

int oc_cuda_memory_device(const void *p)
{
    struct cudaPointerAttributes at;
    if (!p || cudaPointerGetAttributes(&at, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return at.type == cudaMemoryTypeDevice ? at.device : -1;
}
