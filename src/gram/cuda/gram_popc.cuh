/* gram_popc.cuh - the CUDA-core popcount Gram kernel (any GPU): one host entry point. */
#ifndef OC_GRAM_CUDA_GRAM_POPC_CUH
#define OC_GRAM_CUDA_GRAM_POPC_CUH

#include "engine/cuda/device.h"
#include "gram/cuda/gram_tile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues the tile on `stream` (asynchronous; returns once launched). Checks the launch
 * configuration with the launch planner first and the launch itself after. *bit_macs
 * receives the bit multiply-adds the launch performs. Runs on every GPU. */
oc_status oc_cuda_gram_popc(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *tile, cudaStream_t stream,
                            double *bit_macs);

#ifdef __cplusplus
}
#endif

#endif
