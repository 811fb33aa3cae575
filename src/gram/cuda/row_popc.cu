/*
 * row_popc.cu - the row popcounts the metrics need (|a| and |b|), counted on the device from
 * the panels just uploaded, so the host never makes its own pass over A and B before the
 * first tile (a pass over all of A on every core, which the GPU waited for). A warp per row; each lane adds the popcounts of every
 * 32nd word (coalesced), and the warp reduces. Reading the panel costs its size at HBM
 * bandwidth, a few microseconds per panel.
 */
#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
}
#include "engine/cuda/cuda_check.h"
#include "gram/cuda/row_popc.cuh"

namespace {

constexpr int WARPS = 8;

__global__ void __launch_bounds__(WARPS * 32)
    row_popc_kernel(const uint64_t *panel, int64_t words, int rows, int32_t *out)
{
    const int lane = threadIdx.x & 31, row = blockIdx.x * WARPS + (threadIdx.x >> 5);
    if (row >= rows) return;
    const uint64_t *r = panel + (size_t)row * (size_t)words;
    int sum = 0;
    for (int64_t w = lane; w < words; w += 32) sum += __popcll(r[w]);
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, d);
    if (lane == 0) out[row] = sum;
}

} // namespace

extern "C" oc_status oc_cuda_row_popcounts(oc_context *ctx, oc_cuda_device *dev, const uint64_t *panel, int64_t words,
                                           int rows, int32_t *out, cudaStream_t stream)
{
    if (rows <= 0) return OC_OK;
    OC_CHECK(ctx, oc_cuda_launch_prepare(ctx, dev, (const void *)row_popc_kernel, "row_popc_kernel", WARPS * 32, 0));
    row_popc_kernel<<<(unsigned)((rows + WARPS - 1) / WARPS), WARPS * 32, 0, stream>>>(panel, words, rows, out);
    CUDA_CHECK_LAUNCH(ctx, "row_popc_kernel");
    return OC_OK;
}
