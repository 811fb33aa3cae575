/*
 * gram_mirror.cu - the transposed (or symmetrised) copy of a Gram tile, so that the host
 * only ever copies whole rows.
 *
 * Why on the device: the mirror of a dense A·Aᵀ is half of the result. Written by the host
 * it is a transposed scatter (one element per destination cache line and row), which ran
 * far below the copy rates on the host and bounded the whole dense job; on the device the
 * transpose is a small fraction of the tile's kernel time, and the D2H engine then carries
 * the mirror as ordinary rows (bench/RESULTS.md).
 *
 * The classic shared-memory transpose: a CTA of 32 x 8 threads moves a 32 x 32 block; it
 * reads rows of src (coalesced), and writes rows of dst from a shared block padded by one
 * element so that the column reads hit 32 different banks.
 */
#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
}
#include "engine/cuda/cuda_check.h"
#include "gram/cuda/gram_mirror.cuh"

namespace {

constexpr int MB = 32;   /* block edge */
constexpr int MROWS = 8; /* thread rows: each thread moves MB / MROWS elements */

/* dst(r, c) = src(c, r) for the transpose; for a diagonal tile dst(r, c) = src(r, c) on
 * and above the diagonal and src(c, r) below it. Grid: x over dst columns, y over dst rows. */
template <typename T>
__global__ void __launch_bounds__(MB *MROWS) gram_mirror_kernel(const T *__restrict__ src, T *__restrict__ dst,
                                                                int dst_rows, int dst_cols, int64_t ld, int diagonal)
{
    __shared__ T block[MB][MB + 1];
    const int r0 = blockIdx.y * MB, c0 = blockIdx.x * MB, tx = threadIdx.x, ty = threadIdx.y;
    /* The source block of the transpose: src rows c0.., columns r0.. (dst_cols x dst_rows). */
    const bool need_t = !diagonal || r0 + MB - 1 > c0; /* some element of the block lies below the diagonal */
    if (need_t) {
#pragma unroll
        for (int k = 0; k < MB; k += MROWS) {
            const int sr = c0 + ty + k, sc = r0 + tx;
            if (sr < dst_cols && sc < dst_rows && (!diagonal || sr <= sc))
                block[ty + k][tx] = src[(size_t)sr * ld + sc];
        }
        __syncthreads();
    }
#pragma unroll
    for (int k = 0; k < MB; k += MROWS) {
        const int r = r0 + ty + k, c = c0 + tx;
        if (r >= dst_rows || c >= dst_cols) continue;
        dst[(size_t)r * ld + c] = diagonal && r <= c ? src[(size_t)r * ld + c] : block[tx][ty + k];
    }
}

template <typename T>
oc_status launch(oc_context *ctx, oc_cuda_device *dev, const void *src, void *dst, int rows, int cols, int64_t ld,
                 int diagonal, cudaStream_t stream, const char *name)
{
    OC_CHECK(ctx, oc_cuda_launch_prepare(ctx, dev, (const void *)gram_mirror_kernel<T>, name, MB * MROWS, 0));
    /* The destination is cols x rows (a diagonal tile is square). */
    const dim3 grid((unsigned)((rows + MB - 1) / MB), (unsigned)((cols + MB - 1) / MB)), block(MB, MROWS);
    gram_mirror_kernel<T><<<grid, block, 0, stream>>>((const T *)src, (T *)dst, cols, rows, ld, diagonal);
    CUDA_CHECK_LAUNCH(ctx, "gram_mirror_kernel");
    return OC_OK;
}

} // namespace

extern "C" oc_status oc_cuda_gram_mirror(oc_context *ctx, oc_cuda_device *dev, const void *src, void *dst, int rows,
                                         int cols, int64_t ld, int elem_size, int diagonal, cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0) return OC_OK;
    if (diagonal && rows != cols)
        return oc_fail(ctx, OC_ERR_INTERNAL, "gram_mirror: a diagonal tile must be square (%d x %d)", rows, cols);
    if (ld < rows || ld < cols)
        return oc_fail(ctx, OC_ERR_INTERNAL, "gram_mirror: leading dimension %lld below the tile (%d x %d)",
                       (long long)ld, rows, cols);
    if (elem_size == 4)
        return launch<uint32_t>(ctx, dev, src, dst, rows, cols, ld, diagonal, stream, "gram_mirror_kernel<u32>");
    if (elem_size == 2)
        return launch<uint16_t>(ctx, dev, src, dst, rows, cols, ld, diagonal, stream, "gram_mirror_kernel<u16>");
    return oc_fail(ctx, OC_ERR_INTERNAL, "gram_mirror: %d-byte elements are not supported", elem_size);
}
