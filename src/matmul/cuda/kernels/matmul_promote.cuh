/*
 * matmul_promote.cuh - a mixed pair's operand promoted on the device in the CUDA matmul
 * backend: its panels cross PCIe as stored (int8 for an int8 x float32 product: a quarter of
 * the bytes) and are converted here into the compute type, with the host's rounding
 * (matmul_dtype.c's oc_matmul_convert), so that the product's bytes do not depend on where the
 * conversion ran. Host entry point; checks its launch with the launch planner before it and
 * the launch's status after, and enqueues on `stream` (asynchronous).
 */
#ifndef OC_MATMUL_CUDA_MATMUL_PROMOTE_CUH
#define OC_MATMUL_CUDA_MATMUL_PROMOTE_CUH

#include <stdint.h>

#include "engine/cuda/device.h"
#include "matmul/matmul_job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] = src[i] converted from `from` to `to` for i < n (contiguous): to float64 and
 * float32 as C converts (exact, or rounded once to nearest for integers wider than the
 * float's significand), to float16 from the value rounded once to nearest even, to bfloat16
 * from its float32 rounded to nearest even, bool (a byte not 0 is 1) to any of them and to
 * int8. OC_ERR_INTERNAL for a pair it has no kernel for (another type into int8, int32). */
oc_status oc_mm_promote(oc_context *ctx, oc_cuda_device *dev, oc_matmul_dtype from, const void *src, int64_t n,
                        oc_mm_type to, void *dst, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
