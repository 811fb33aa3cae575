/*
 * matmul_round.cuh - the FP32 (or int32) accumulator of a product rounded to its result type on the device. Host entry point: checks its launch with the launch planner before it and
 * the launch's status after, and enqueues on `stream` (asynchronous).
 */
#ifndef OC_MATMUL_CUDA_MATMUL_ROUND_CUH
#define OC_MATMUL_CUDA_MATMUL_ROUND_CUH

#include <stddef.h>
#include <stdint.h>

#include "engine/cuda/device.h"
#include "matmul/matmul_job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst[r * cols + c] = the accumulator's src[r * ld + c] in `to`: float32 rounded to nearest
 * even in OC_MM_FLOAT16 or OC_MM_BFLOAT16, int32 as OC_MM_BOOL (1 where not 0). */
oc_status oc_mm_round_acc(oc_context *ctx, oc_cuda_device *dev, const void *src, int64_t rows, int64_t cols, int64_t ld,
                          oc_mm_type to, void *dst, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
