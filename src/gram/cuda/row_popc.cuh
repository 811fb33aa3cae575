/* row_popc.cuh - row popcounts of a panel on the device: one host entry point. */
#ifndef OC_GRAM_CUDA_ROW_POPC_CUH
#define OC_GRAM_CUDA_ROW_POPC_CUH

#include "engine/cuda/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues on `stream` (asynchronous) out[r] = the set bits of row r of `rows` packed rows
 * of `words` 64-bit words each, for r < rows. Goes through the launch planner. */
oc_status oc_cuda_row_popcounts(oc_context *ctx, oc_cuda_device *dev, const uint64_t *panel, int64_t words, int rows,
                                int32_t *out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
