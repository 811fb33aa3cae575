/*
 * matmul_pack.cuh - int8 panels laid out on the device as cuBLASLt's integer kernels want
 * them (rows re-strided, or transposed). Host entry points; each checks its launch with the
 * launch planner before it and the launch's status after, and enqueues on `stream`
 * (asynchronous).
 */
#ifndef OC_MATMUL_CUDA_MATMUL_PACK_CUH
#define OC_MATMUL_CUDA_MATMUL_PACK_CUH

#include <stdint.h>

#include "engine/cuda/device.h"
#include "matmul/matmul_job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst[r * ld + c] = src[r * cols + c] for r < rows, c < cols, and 0 for cols <= c < ld:
 * row-major int8 rows re-strided to a multiple of 16 bytes, zero-filled (zeros add nothing
 * to an integer sum). */
oc_status oc_mm_pack_rows_i8(oc_context *ctx, oc_cuda_device *dev, const int8_t *src, int64_t rows, int64_t cols,
                             int8_t *dst, int64_t ld, cudaStream_t stream);

/* The transpose of the row-major rows x cols int8 src whose rows are src_ld apart (src_ld >=
 * cols: a block of columns of a wider matrix), padded: dst[c * ld + r] = src[r * src_ld + c]
 * for c < cols, r < rows; 0 for rows <= r < ld and for cols <= c < dst_rows. */
oc_status oc_mm_transpose_i8(oc_context *ctx, oc_cuda_device *dev, const int8_t *src, int64_t rows, int64_t cols,
                             int64_t src_ld, int8_t *dst, int64_t ld, int64_t dst_rows, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
