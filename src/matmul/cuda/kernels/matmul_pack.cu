/*
 * matmul_pack.cu - the int8 panel layouts of matmul_pack.cuh. Memory-bound copies: one byte
 * per thread, the transpose through shared memory so that both its reads and its writes are
 * coalesced, four bytes a word where rows allow.
 */
#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
}
#include "engine/cuda/cuda_check.h"
#include "matmul/cuda/kernels/matmul_grid.cuh"
#include "matmul/cuda/kernels/matmul_pack.cuh"

namespace {

constexpr int EDGE = 32;     /* transpose block edge */
constexpr int THREADS = 256; /* EDGE x 8 */

__global__ void __launch_bounds__(THREADS)
    pack_rows_kernel(const int8_t *__restrict__ src, int64_t rows, int64_t cols, int8_t *__restrict__ dst, int64_t ld)
{
    const int64_t c = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    const int64_t r = blockIdx.y + (int64_t)blockIdx.z * gridDim.y;
    if (r >= rows || c >= ld) return;
    dst[r * ld + c] = c < cols ? src[r * cols + c] : (int8_t)0;
}

__global__ void __launch_bounds__(THREADS)
    transpose_kernel(const int8_t *__restrict__ src, int64_t rows, int64_t cols, int64_t src_ld,
                     int8_t *__restrict__ dst, int64_t ld, int64_t dst_rows)
{
    __shared__ int8_t s[EDGE][EDGE + 1];
    const int64_t r0 = (int64_t)blockIdx.x * EDGE;
    const int tx = threadIdx.x % EDGE, ty = threadIdx.x / EDGE;
    /* The grid's y is at most 65535 blocks: a block takes every gridDim.y-th edge of columns. */
    for (int64_t c0 = (int64_t)blockIdx.y * EDGE; c0 < dst_rows; c0 += (int64_t)gridDim.y * EDGE) {
        for (int i = ty; i < EDGE; i += THREADS / EDGE) {
            const int64_t r = r0 + i, c = c0 + tx;
            s[i][tx] = r < rows && c < cols ? src[r * src_ld + c] : (int8_t)0;
        }
        __syncthreads();
        for (int i = ty; i < EDGE; i += THREADS / EDGE) {
            const int64_t c = c0 + i, r = r0 + tx; /* dst row c, column r */
            if (c < dst_rows && r < ld) dst[c * ld + r] = s[tx][i];
        }
        __syncthreads(); /* before the next edge's loads overwrite s */
    }
}

/* The transpose four bytes at a time where rows start on word boundaries. A block moves a
 * WIDE x WIDE tile: each warp loads whole 128-byte lines of source rows as words, and stores
 * whole 128-byte lines of destination rows, each word gathered from four source rows in
 * shared memory. A source row's words are stored rotated by a quarter of its index, so that
 * both the loads' and the gathers' words of a warp fall in 32 different banks. The grid is
 * flat (tiles along the destination's rows fastest), so neither side of a large matrix meets
 * the y and z limits. */
constexpr int WIDE = 128;       /* bytes on a tile's edge */
constexpr int WORDS = WIDE / 4; /* words on a tile's edge: one per lane */
constexpr int WARPS = THREADS / 32;

__global__ void __launch_bounds__(THREADS)
    transpose_words_kernel(const int8_t *__restrict__ src, int64_t rows, int64_t cols, int64_t src_ld,
                           int8_t *__restrict__ dst, int64_t ld, int64_t dst_rows, int64_t tiles_r)
{
    __shared__ uint32_t s[WIDE][WORDS];
    const int64_t r0 = (int64_t)(blockIdx.x % (uint64_t)tiles_r) * WIDE;
    const int64_t c0 = (int64_t)(blockIdx.x / (uint64_t)tiles_r) * WIDE;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int64_t c = c0 + 4 * (int64_t)lane; /* cols is a multiple of 4: a word is whole or outside */
#pragma unroll 4
    for (int i = warp; i < WIDE; i += WARPS) {
        const int64_t r = r0 + i;
        s[i][(lane + i / 4) % WORDS] = r < rows && c < cols ? __ldg((const uint32_t *)(src + r * src_ld + c)) : 0u;
    }
    __syncthreads();
    const int64_t r = r0 + 4 * (int64_t)lane; /* destination columns r .. r + 3 (ld % 4 == 0) */
#pragma unroll 4
    for (int j = warp; j < WIDE; j += WARPS) {
        const int64_t cj = c0 + j;
        if (cj >= dst_rows || r >= ld) continue;
        const int shift = 8 * (j % 4), word = (j / 4 + lane) % WORDS; /* source rows 4 lane + q keep rotation lane */
        uint32_t v = 0;
#pragma unroll
        for (int q = 0; q < 4; ++q) v |= ((s[4 * lane + q][word] >> shift) & 0xffu) << (8 * q);
        *(uint32_t *)(dst + cj * ld + r) = v;
    }
}

} // namespace

extern "C" oc_status oc_mm_pack_rows_i8(oc_context *ctx, oc_cuda_device *dev, const int8_t *src, int64_t rows,
                                        int64_t cols, int8_t *dst, int64_t ld, cudaStream_t stream)
{
    if (rows <= 0 || ld <= 0) return OC_OK;
    OC_CHECK(ctx,
             oc_cuda_launch_prepare(ctx, dev, (const void *)pack_rows_kernel, "matmul pack_rows_kernel", THREADS, 0));
    pack_rows_kernel<<<oc_mm_row_grid(rows, ld, THREADS), THREADS, 0, stream>>>(src, rows, cols, dst, ld);
    CUDA_CHECK_LAUNCH(ctx, "matmul pack_rows_kernel");
    return OC_OK;
}

extern "C" oc_status oc_mm_transpose_i8(oc_context *ctx, oc_cuda_device *dev, const int8_t *src, int64_t rows,
                                        int64_t cols, int64_t src_ld, int8_t *dst, int64_t ld, int64_t dst_rows,
                                        cudaStream_t stream)
{
    if (ld <= 0 || dst_rows <= 0) return OC_OK;
    const int64_t tiles_r = (ld + WIDE - 1) / WIDE, tiles_c = (dst_rows + WIDE - 1) / WIDE;
    if (cols % 4 == 0 && src_ld % 4 == 0 && ld % 4 == 0 && (uintptr_t)src % 4 == 0 && (uintptr_t)dst % 4 == 0 &&
        tiles_r * tiles_c <= INT32_MAX) {
        OC_CHECK(ctx, oc_cuda_launch_prepare(ctx, dev, (const void *)transpose_words_kernel,
                                             "matmul transpose_words_kernel", THREADS, 0));
        transpose_words_kernel<<<(unsigned)(tiles_r * tiles_c), THREADS, 0, stream>>>(src, rows, cols, src_ld, dst, ld,
                                                                                      dst_rows, tiles_r);
        CUDA_CHECK_LAUNCH(ctx, "matmul transpose_words_kernel");
        return OC_OK;
    }
    if ((ld + EDGE - 1) / EDGE > INT32_MAX)
        return oc_fail(ctx, OC_ERR_INTERNAL, "matmul transpose: %lld rows exceed the grid", (long long)ld);
    OC_CHECK(ctx,
             oc_cuda_launch_prepare(ctx, dev, (const void *)transpose_kernel, "matmul transpose_kernel", THREADS, 0));
    const int64_t edges = (dst_rows + EDGE - 1) / EDGE;
    const dim3 grid((unsigned)((ld + EDGE - 1) / EDGE), (unsigned)(edges < 65535 ? edges : 65535));
    transpose_kernel<<<grid, THREADS, 0, stream>>>(src, rows, cols, src_ld, dst, ld, dst_rows);
    CUDA_CHECK_LAUNCH(ctx, "matmul transpose_kernel");
    return OC_OK;
}
