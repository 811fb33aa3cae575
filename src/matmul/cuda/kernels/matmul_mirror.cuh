/*
 * matmul_mirror.cuh - the lower triangle of an A·Aᵀ result written from its upper on the device. Host entry point: checks its launch with the launch planner before it and
 * the launch's status after, and enqueues on `stream` (asynchronous).
 */
#ifndef OC_MATMUL_CUDA_MATMUL_MIRROR_CUH
#define OC_MATMUL_CUDA_MATMUL_MIRROR_CUH

#include <stddef.h>
#include <stdint.h>

#include "engine/cuda/device.h"
#include "matmul/matmul_job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* c[i * ld + j] = c[j * ld + i] for j < i < n, elements of elem bytes (1, 2, 4 or 8): an n x n
 * result made exactly symmetric from its upper triangle. */
oc_status oc_mm_mirror(oc_context *ctx, oc_cuda_device *dev, void *c, int64_t n, int64_t ld, size_t elem,
                       cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
