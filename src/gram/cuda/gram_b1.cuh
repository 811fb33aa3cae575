/* gram_b1.cuh - the 1-bit tensor-core Gram kernels: mma.sync (sm_80+) and wgmma (sm_90a). */
#ifndef OC_GRAM_CUDA_GRAM_B1_CUH
#define OC_GRAM_CUDA_GRAM_B1_CUH

#include "engine/cuda/device.h"
#include "gram/cuda/gram_tile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues the tile on `stream` (asynchronous; returns once launched). Checks the launch
 * configuration with the launch planner first and the launch itself after. *bit_macs
 * receives the bit multiply-adds the launch performs. OC_ERR_UNSUPPORTED below sm_80. */
oc_status oc_cuda_gram_b1(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *tile, cudaStream_t stream,
                          double *bit_macs);

/* The same tile on Hopper's warpgroup MMA (gram_b1_sm90a.cu): identical results, for sm_90
 * devices in a build with sm_90a code (OC_HAVE_SM90A); OC_ERR_UNSUPPORTED on others, and in
 * a build without that code (gram_cuda.c). */
oc_status oc_cuda_gram_wgmma(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *tile, cudaStream_t stream,
                             double *bit_macs);

#ifdef __cplusplus
}
#endif

#endif
