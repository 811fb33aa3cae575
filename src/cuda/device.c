/*
 * device.c - CUDA device discovery, per-device state, the pool's allocators, the launch
 * planner and the backend table.
 */
#include "cuda/device.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "exec/backend.h"
#include "cuda/cuda_check.h"
#include "cuda/driver_status.h"
#include "cuda/gram_cuda.h"

/* ---------------------------------------------------------------- allocators */
static atomic_llong live_device_bytes;
static atomic_llong live_pinned_bytes;

static int dev_alloc(void *user, size_t bytes, void **out, char *why, size_t why_size)
{
    (void)user;
    cudaError_t e = cudaMalloc(out, bytes);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(why, why_size, "cudaMalloc: %s", cudaGetErrorString(e));
        return 1;
    }
    atomic_fetch_add(&live_device_bytes, (long long)bytes);
    return 0;
}

static void dev_free(void *user, void *ptr, size_t bytes)
{
    (void)user;
    atomic_fetch_sub(&live_device_bytes, (long long)bytes);
    /* A free can only fail after an earlier sticky error, which was reported already. */
    if (cudaFree(ptr) != cudaSuccess) (void)cudaGetLastError();
}

/* Pinned staging kept between jobs. Pinning runs far slower than the copies it serves, and
 * unpinning costs more time again: a job's fixed cost that bounded the dense job's rate
 * (bench/RESULTS.md). So a job's pinned buffers are not unpinned
 * when it ends but kept here, idle, and the next job that asks for a size they cover (the
 * pipeline asks for the cached size when it covers its need within its --host-mem cap, see
 * oc_cuda_staging_fit) takes one back without pinning. Rules that keep the cap true:
 *   - at most STAGING_KEEP idle blocks, the most recently released;
 *   - a request no idle block matches exactly unpins every idle block before it pins, so
 *     the process never holds idle staging beside staging pinned for a job that could not
 *     use it.
 * Idle blocks count in oc_cuda_live_pinned_bytes (they are pinned) and are freed by
 * oc_cuda_staging_release or with the process. One lock guards the list; it is held for
 * list edits and the unpinning of evicted blocks, never while pinning. */
#define STAGING_KEEP 4

typedef struct staging_block {
    void *ptr;
    size_t bytes;
} staging_block;

static pthread_mutex_t staging_lock = PTHREAD_MUTEX_INITIALIZER;
static staging_block staging_idle[STAGING_KEEP]; /* oldest first */
static int staging_count;

static void unpin(void *ptr, size_t bytes)
{
    atomic_fetch_sub(&live_pinned_bytes, (long long)bytes);
    if (cudaFreeHost(ptr) != cudaSuccess) (void)cudaGetLastError();
}

/* Removes idle block k (lock held). */
static staging_block staging_take(int k)
{
    staging_block b = staging_idle[k];
    memmove(staging_idle + k, staging_idle + k + 1, (size_t)(staging_count - k - 1) * sizeof *staging_idle);
    staging_count--;
    return b;
}

size_t oc_cuda_staging_fit(size_t need, size_t limit)
{
    size_t best = 0;
    pthread_mutex_lock(&staging_lock);
    for (int k = 0; k < staging_count; ++k) {
        size_t b = staging_idle[k].bytes;
        if (b >= need && b <= limit && (best == 0 || b < best)) best = b;
    }
    pthread_mutex_unlock(&staging_lock);
    return best ? best : need;
}

void oc_cuda_staging_release(void)
{
    pthread_mutex_lock(&staging_lock);
    while (staging_count > 0) {
        staging_block b = staging_take(0);
        unpin(b.ptr, b.bytes);
    }
    pthread_mutex_unlock(&staging_lock);
}

int64_t oc_cuda_staging_idle_bytes(void)
{
    int64_t total = 0;
    pthread_mutex_lock(&staging_lock);
    for (int k = 0; k < staging_count; ++k) total += (int64_t)staging_idle[k].bytes;
    pthread_mutex_unlock(&staging_lock);
    return total;
}

static int host_alloc(void *user, size_t bytes, void **out, char *why, size_t why_size)
{
    (void)user;
    pthread_mutex_lock(&staging_lock);
    for (int k = staging_count - 1; k >= 0; --k)
        if (staging_idle[k].bytes == bytes) {
            *out = staging_take(k).ptr;
            pthread_mutex_unlock(&staging_lock);
            return 0;
        }
    while (staging_count > 0) {
        staging_block b = staging_take(0);
        unpin(b.ptr, b.bytes);
    }
    pthread_mutex_unlock(&staging_lock);
    /* Portable: any device may copy from it; a later multi-GPU job shares the ring. */
    cudaError_t e = cudaHostAlloc(out, bytes, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(why, why_size, "cudaHostAlloc: %s", cudaGetErrorString(e));
        return 1;
    }
    atomic_fetch_add(&live_pinned_bytes, (long long)bytes);
    return 0;
}

/* Keeps the block idle for the next job; the oldest idle block makes room. The caller has
 * finished every copy that used it (the pipeline synchronises the device first). */
static void host_free(void *user, void *ptr, size_t bytes)
{
    (void)user;
    pthread_mutex_lock(&staging_lock);
    if (staging_count == STAGING_KEEP) {
        staging_block old = staging_take(0);
        unpin(old.ptr, old.bytes);
    }
    staging_idle[staging_count++] = (staging_block){ptr, bytes};
    pthread_mutex_unlock(&staging_lock);
}

oc_mem_ops oc_cuda_mem_ops(void) { return (oc_mem_ops){NULL, dev_alloc, dev_free, host_alloc, host_free}; }

int64_t oc_cuda_live_device_bytes(void) { return atomic_load(&live_device_bytes); }
int64_t oc_cuda_live_pinned_bytes(void) { return atomic_load(&live_pinned_bytes); }

/* ---------------------------------------------------------------- devices */
static int cuda_usable(int device)
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

oc_status oc_cuda_device_open(oc_context *ctx, int index, oc_cuda_device *dev)
{
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
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "CUDA device %d does not exist: this machine has %d (0..%d)", index,
                       count, count - 1);
    CUDA_CHECK(ctx, cudaSetDevice(index));
    struct cudaDeviceProp prop;
    CUDA_CHECK(ctx, cudaGetDeviceProperties(&prop, index));
    snprintf(dev->name, sizeof dev->name, "%s", prop.name);
    dev->cc = prop.major * 10 + prop.minor;
    dev->sm_count = prop.multiProcessorCount;
    dev->smem_optin = prop.sharedMemPerBlockOptin;
    dev->arch = oc_gpu_arch_find(dev->cc);
    CUDA_CHECK(ctx, cudaMemGetInfo(&dev->free_mem_at_open, &dev->total_mem));
    /* Non-blocking streams: the legacy default stream of other libraries in the process
     * must not serialise against the pipeline. */
    CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&dev->h2d, cudaStreamNonBlocking));
    CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&dev->compute, cudaStreamNonBlocking));
    CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&dev->compute2, cudaStreamNonBlocking));
    CUDA_CHECK(ctx, cudaStreamCreateWithFlags(&dev->d2h, cudaStreamNonBlocking));
    return OC_OK;
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
oc_status oc_cuda_launch_prepare(oc_context *ctx, oc_cuda_device *dev, const void *func, const char *name, int block,
                                 size_t dyn_smem)
{
    for (int i = 0; i < dev->nchecked; ++i)
        if (dev->checked[i].func == func && dev->checked[i].block == block && dev->checked[i].dyn_smem == dyn_smem)
            return OC_OK;

    struct cudaFuncAttributes fa;
    CUDA_CHECK(ctx, cudaFuncGetAttributes(&fa, func));
    if (dev->arch) {
        oc_kernel_resources r = {.regs_per_thread = fa.numRegs, .static_smem = fa.sharedSizeBytes,
                                 .local_bytes = fa.localSizeBytes, .max_threads_per_block = fa.maxThreadsPerBlock};
        oc_launch_verdict v;
        OC_CHECK(oc_launch_check(dev->arch, &r, block, dyn_smem, &v));
        if (!v.fits) {
            /* The explanation has several lines; the message must stay one line. */
            for (char *c = v.explanation; *c; ++c)
                if (*c == '\n') *c = ';';
            return oc_fail(ctx, OC_ERR_UNSUPPORTED, "kernel %s cannot launch on cuda:%d (%s) with %d threads and %zu B of dynamic shared memory: %s",
                           name, dev->index, dev->arch->name, block, dyn_smem, v.explanation);
        }
    } else if (block > fa.maxThreadsPerBlock || fa.sharedSizeBytes + dyn_smem > dev->smem_optin) {
        /* A generation the table does not know yet: the device's own limits still decide. */
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "kernel %s cannot launch on cuda:%d (cc %d.%d): %d threads (limit %d), %zu B shared memory (limit %zu)",
                       name, dev->index, dev->cc / 10, dev->cc % 10, block, fa.maxThreadsPerBlock,
                       fa.sharedSizeBytes + dyn_smem, dev->smem_optin);
    }
    /* Above 48 KiB a kernel must opt in to its dynamic shared memory. */
    if (dyn_smem > 48 * 1024)
        CUDA_CHECK(ctx, cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn_smem));
    if (dev->nchecked < OC_CUDA_MAX_KERNELS)
        dev->checked[dev->nchecked++] = (oc_cuda_launch_ok){func, block, dyn_smem};
    return OC_OK;
}

/* ---------------------------------------------------------------- backend table */
const oc_backend_vtbl oc_backend_cuda = {OC_BACKEND_ABI, "cuda", cuda_usable, oc_cuda_gram, oc_cuda_staging_release, 1, oc_cuda_gram_plan};
