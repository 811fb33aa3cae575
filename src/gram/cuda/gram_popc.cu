/*
 * gram_popc.cu - the binary Gram tile on CUDA cores (AND + __popcll), for GPUs without
 * 1-bit tensor cores (before sm_80) and as an independent second implementation that the
 * tests compare with the tensor-core kernel.
 *
 * One CTA of 16 x 16 threads computes a 64 x 64 block; thread (ty, tx) owns rows ty + 16i
 * and columns tx + 16j (i, j < 4), so a warp reads two A values (broadcast) and sixteen
 * consecutive B values per step. K advances 512 bits (8 words) at a time through shared
 * memory; rows past the edge are loaded as zeros and never stored.
 */
#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
#include "core/gpu_arch.h"
}
#include "engine/cuda/cuda_check.h"
#include "gram/cuda/gram_epilogue.cuh"
#include "gram/cuda/gram_popc.cuh"

namespace {

constexpr int PB = 64; /* block edge */
constexpr int PK = 8;  /* words per shared K step */
constexpr int THREADS = 256;

__global__ void __launch_bounds__(THREADS) gram_popc_kernel(const oc_gram_tile t)
{
    __shared__ uint64_t sa[PK][PB + 1];
    __shared__ uint64_t sb[PK][PB + 1];
    if (t.run_if && *t.run_if == 0) return;
    const int bm = blockIdx.y, bn = blockIdx.x;
    if (t.upper_only && (bn + 1) * PB <= bm * PB) return; /* wholly below the diagonal */
    const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
    const int rows_left = t.rows - bm * PB, cols_left = t.cols - bn * PB;
    int acc[4][4] = {};

    for (int64_t k0 = 0; k0 < t.words; k0 += PK) {
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int idx = tid + i * THREADS, row = idx / PK, k = idx % PK;
            sa[k][row] = row < rows_left ? t.a[((size_t)bm * PB + row) * (size_t)t.words + k0 + k] : 0;
            sb[k][row] = row < cols_left ? t.b[((size_t)bn * PB + row) * (size_t)t.words + k0 + k] : 0;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < PK; ++k) {
            uint64_t a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = sa[k][ty + 16 * i];
#pragma unroll
            for (int j = 0; j < 4; ++j) b[j] = sb[k][tx + 16 * j];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] += __popcll(a[i] & b[j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) oc_gram_store(t, bm * PB + ty + 16 * i, bn * PB + tx + 16 * j, acc[i][j]);
}

} // namespace

extern "C" oc_status oc_cuda_gram_popc(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *tile,
                                       cudaStream_t stream, double *bit_macs)
{
    if ((tile->stride > 0 && tile->stride != tile->words) || tile->acc_in)
        return oc_fail(ctx, OC_ERR_INTERNAL, "gram_popc: tiles split on K run on the wgmma kernel only");
    if (tile->words % PK != 0)
        return oc_fail(ctx, OC_ERR_INTERNAL, "gram_popc: %lld words per row is not a multiple of %d",
                       (long long)tile->words, PK);
    if (tile->select != OC_TILE_DENSE)
        return oc_fail(ctx, OC_ERR_INTERNAL, "gram_popc: fused selection is a b1 kernel mode");
    if (tile->rows <= 0 || tile->cols <= 0) return OC_OK;
    OC_CHECK(ctx, oc_cuda_launch_prepare(ctx, dev, (const void *)gram_popc_kernel, "gram_popc_kernel", THREADS, 0));
    const dim3 grid((unsigned)((tile->cols + PB - 1) / PB), (unsigned)((tile->rows + PB - 1) / PB));
    gram_popc_kernel<<<grid, THREADS, 0, stream>>>(*tile);
    CUDA_CHECK_LAUNCH(ctx, "gram_popc_kernel");
    *bit_macs = (double)oc_gram_tile_blocks(tile, PB, PB) * PB * PB * (double)tile->words * 64.0;
    return OC_OK;
}
