/*
 * device.h - one CUDA device as a job uses it: properties, streams, memory pool, and the
 * launch planner's verdicts.
 *
 * One oc_cuda_device per device and job, so that several devices can later each draw tiles
 * from one queue: nothing in it is shared between devices. All its calls are made from the
 * thread that drives the device, except where a function says otherwise.
 */
#ifndef OC_ENGINE_CUDA_DEVICE_H
#define OC_ENGINE_CUDA_DEVICE_H

#include <cuda_runtime_api.h>

#include "core/gpu_arch.h"
#include "mem/pool.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OC_CUDA_MAX_KERNELS 32

/* A launch configuration that passed the launch planner on this device. */
typedef struct oc_cuda_launch_ok {
    const void *func;
    int block;
    size_t dyn_smem;
} oc_cuda_launch_ok;

typedef struct oc_cuda_device {
    int index;
    int cc; /* compute capability x10 */
    char name[256];
    int sm_count;
    size_t total_mem;
    size_t free_mem_at_open;
    size_t smem_optin;       /* cudaDevAttrMaxSharedMemoryPerBlockOptin */
    const oc_gpu_arch *arch; /* NULL for a generation the table does not know */
    cudaStream_t h2d, compute, d2h;
    cudaStream_t compute2; /* consecutive tiles alternate between compute (the device's highest
                                   * priority: its tile runs first) and this (the default) */
    oc_pool *pool;         /* the job's budgeted memory, created by the pipeline */
    oc_cuda_launch_ok checked[OC_CUDA_MAX_KERNELS];
    int nchecked;
} oc_cuda_device;

/* Nonzero when CUDA device `device` exists and the driver answers (cheap; no messages). */
int oc_cuda_device_usable(int device);

/* What a job reads of a device's properties, read once per process and device:
 * cudaGetDeviceProperties reads every property, some from the device, a fixed cost that a
 * short product would otherwise pay on each call (bench/RESULTS.md). */
typedef struct oc_cuda_props {
    char name[256];
    int cc, sm_count;
    size_t smem_optin, total_mem;
} oc_cuda_props;
/* Device `index`'s properties (the calling thread's device is not changed); a CUDA error
 * when they cannot be read. Thread-safe. */
cudaError_t oc_cuda_props_get(int index, oc_cuda_props *out);

/* Whether host byte p is page-locked memory (allocated or registered with CUDA) that the
 * devices copy to and from at the PCIe rate. */
int oc_cuda_host_pinned(const void *p);

/* The device whose memory byte p is (cudaMalloc, cudaMallocAsync, a framework's tensor: what
 * the host cannot read), else -1 (host memory, page-locked or not, managed memory, NULL). */
int oc_cuda_memory_device(const void *p);

/* Selects device `index`, reads its properties and creates its streams. A missing index
 * is OC_ERR_INVALID_ARGUMENT naming how many devices exist. */
oc_status oc_cuda_device_open(oc_context *ctx, int index, oc_cuda_device *dev);
/* The same with the compute stream alone (h2d, compute2 and d2h NULL), and free_mem_at_open
 * 0: not asked, since cudaMemGetInfo is among the costlier calls around a product of a few
 * milliseconds (bench/RESULTS.md, "int8's chunks kept") and a caller that planned with it
 * asked already. For work that moves nothing across PCIe, such as one product on memory
 * already on the device. */
oc_status oc_cuda_device_open_compute(oc_context *ctx, int index, oc_cuda_device *dev);

/* The physical devices whose context this process has made through the library (bit d for
 * device d below 64): oc_cuda_device_open and oc_cuda_warm_up note each device they make
 * current. A job opens only its own devices (engine/device_spec.h); tests check it here
 * and against the driver's own record of primary contexts. */
void oc_cuda_note_context(int device);
uint64_t oc_cuda_contexts_made(void);
/* Destroys the streams and the pool (after synchronising); safe on a partly opened device. */
void oc_cuda_device_close(oc_cuda_device *dev);

/* The allocation calls of a pool on this device: cudaMalloc, and cudaHostAlloc behind the
 * pinned cache of ctx, which outlives the job (mem/pinned_cache.c says why and its rules);
 * creates that cache on ctx's first GPU job. Called by the thread running ctx's job. */
oc_mem_ops oc_cuda_mem_ops(oc_context *ctx);

/* The pinned size to ask for when `need` bytes are needed and at most `limit` may be taken:
 * the smallest block idle in ctx's cache within [need, limit], else need. Called by the
 * thread running ctx's job. (oc_context_release_cached_memory unpins the idle blocks.) */
size_t oc_cuda_staging_fit(oc_context *ctx, size_t need, size_t limit);

/* child's jobs take and give their pinned staging through parent's cache (made now if it
 * has none): the part of a logical device that runs on a context of its own then pins
 * nothing that parent keeps idle, and leaves what it pinned idle there at the job's end
 * instead of unpinning it on the job's path. The cache's mutex serves both. child must be
 * freed before parent (its free leaves the cache alone). */
void oc_cuda_share_pinned_cache(oc_context *child, oc_context *parent);

/* The device block a context keeps between its jobs (core/context.h's oc_kept_device): a
 * resident product's scratch (int8's packed operands or two chunks of a row-major B, 64 MiB
 * at 16384³; a half-precision result's float32 accumulator), then cuBLASLt's workspace (a few
 * bytes for most algorithms, at most 32 MiB). A cudaMalloc and a
 * cudaFree cost the same for 4 bytes as for megabytes, and more for tens of megabytes, a part
 * of a product of a few milliseconds that every call would pay (bench/RESULTS.md, "A resident
 * product's workspace kept", "int8's chunks kept"). Blocks above OC_CUDA_KEPT_MAX are freed
 * after their job. */
#define OC_CUDA_KEPT_MAX ((size_t)96 << 20)
struct oc_kept_device;
/* *out: at least `bytes` (none when bytes is 0: *out NULL) on `device`, the current device:
 * the block ctx keeps when it is on `device` with a size in [bytes, limit], else a new one of
 * `bytes` (a kept block that does not fit is freed first). `what` names it in the error.
 * Called by the thread running ctx's job. */
oc_status oc_cuda_kept_take(oc_context *ctx, int device, size_t bytes, size_t limit, const char *what,
                            struct oc_kept_device **out);
/* Gives a block back after its device work has finished: ctx keeps it for its next job when
 * it is at most OC_CUDA_KEPT_MAX bytes (freeing one it kept already), else it is freed. NULL
 * is a no-op. oc_context_release_cached_memory and oc_context_free free a kept block. */
void oc_cuda_kept_give(oc_context *ctx, struct oc_kept_device *block);

/* Page-locked host memory usable from every device: 0, or 1 with *out NULL and why[] saying
 * why not (the pinned staging's pinning, and oc_pinned_alloc's through the probe table); and
 * its free. Neither counts in oc_cuda_live_pinned_bytes (the staging's pin and unpin do). */
int oc_cuda_host_pin(size_t bytes, void **out, char *why, size_t why_size);
void oc_cuda_host_unpin(void *ptr);

/* Device and pinned bytes allocated through oc_cuda_mem_ops and not yet freed, in this
 * process (any thread), idle cached staging included, once earlier jobs' releases are done
 * (core/process/after_job.h): tests check that a failed job leaves none behind once
 * oc_context_release_cached_memory has run. */
int64_t oc_cuda_live_device_bytes(void);
int64_t oc_cuda_live_pinned_bytes(void);
/* Device bytes allocated through oc_cuda_mem_ops and the kept block in this process so far,
 * freed or not: tests check that a product allocates only what it should. */
int64_t oc_cuda_device_bytes_allocated(void);

/* The launch planner: before the first launch of `func` with `block` threads and dyn_smem
 * bytes of dynamic shared memory on this device, reads the kernel's registers and shared
 * memory (cudaFuncGetAttributes), decides with oc_launch_check whether it fits, raises the
 * kernel's dynamic shared memory limit when it needs more than the default, and remembers
 * the verdict. A configuration that cannot launch is OC_ERR_UNSUPPORTED with the
 * explanation, never a launch that fails with "too many resources requested". Any thread
 * that launches on the device may call it (one lock guards the verdicts). */
oc_status oc_cuda_launch_prepare(oc_context *ctx, oc_cuda_device *dev, const void *func, const char *name, int block,
                                 size_t dyn_smem);

#ifdef __cplusplus
}
#endif

#endif
