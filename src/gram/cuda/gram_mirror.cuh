/* gram_mirror.cuh - the mirror of a Gram tile of A·Aᵀ, made on the device: one host entry point. */
#ifndef OC_GRAM_CUDA_GRAM_MIRROR_CUH
#define OC_GRAM_CUDA_GRAM_MIRROR_CUH

#include "engine/cuda/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues on `stream` (asynchronous; returns once launched) the part of C that tile (I, J)
 * of A·Aᵀ stands for besides itself. `src` holds the tile, rows x cols elements of
 * elem_size bytes (2 or 4), ld elements between rows; `dst` receives ld elements per row.
 *   diagonal == 0 (I < J): dst (cols x rows) = srcᵀ, the block at (J, I).
 *   diagonal != 0 (I == J, rows == cols): dst = the whole symmetric block, read from the
 *   elements on and above the diagonal only (those below may be unset in src).
 * Goes through the launch planner like every kernel. */
oc_status oc_cuda_gram_mirror(oc_context *ctx, oc_cuda_device *dev, const void *src, void *dst, int rows, int cols,
                              int64_t ld, int elem_size, int diagonal, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
