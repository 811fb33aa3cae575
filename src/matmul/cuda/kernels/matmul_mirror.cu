/*
 * matmul_mirror.cu - an n x n result made exactly symmetric from its upper triangle on the
 * device (matmul_mirror.cuh), through shared memory so that both triangles are read and
 * written by rows.
 */
#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
}
#include "engine/cuda/cuda_check.h"
#include "matmul/cuda/kernels/matmul_mirror.cuh"

namespace {

constexpr int EDGE = 32;     /* tile edge */
constexpr int THREADS = 256; /* EDGE x 8 */

/* c[i * ld + j] = c[j * ld + i] for j < i: the lower triangle from the upper, through shared
 * memory so that both are read and written by rows. Block (x, y) writes lower tile (x, y),
 * y <= x, from upper tile (y, x), which no block writes (a diagonal tile reads its own upper
 * part before writing its lower part). */
template <typename T> __global__ void __launch_bounds__(THREADS) mirror_kernel(T *c, int64_t n, int64_t ld)
{
    const int64_t bi = blockIdx.x, bj = blockIdx.y;
    if (bj > bi) return;
    __shared__ T s[EDGE][EDGE + 1];
    const int tx = threadIdx.x % EDGE, ty = threadIdx.x / EDGE;
    for (int r = ty; r < EDGE; r += THREADS / EDGE) {
        const int64_t i = bj * EDGE + r, j = bi * EDGE + tx;
        if (i < n && j < n) s[r][tx] = c[i * ld + j];
    }
    __syncthreads();
    for (int r = ty; r < EDGE; r += THREADS / EDGE) {
        const int64_t i = bi * EDGE + r, j = bj * EDGE + tx;
        if (i < n && j < i) c[i * ld + j] = s[tx][r];
    }
}

template <typename T>
oc_status mirror(oc_context *ctx, oc_cuda_device *dev, void *c, int64_t n, int64_t ld, cudaStream_t stream)
{
    OC_CHECK(ctx, oc_cuda_launch_prepare(ctx, dev, (const void *)mirror_kernel<T>, "matmul mirror_kernel", THREADS, 0));
    const unsigned tiles = (unsigned)((n + EDGE - 1) / EDGE);
    mirror_kernel<T><<<dim3(tiles, tiles), THREADS, 0, stream>>>((T *)c, n, ld);
    CUDA_CHECK_LAUNCH(ctx, "matmul mirror_kernel");
    return OC_OK;
}

} // namespace

extern "C" oc_status oc_mm_mirror(oc_context *ctx, oc_cuda_device *dev, void *c, int64_t n, int64_t ld, size_t elem,
                                  cudaStream_t stream)
{
    if (n <= 1) return OC_OK;
    if ((n + EDGE - 1) / EDGE > 65535)
        return oc_fail(ctx, OC_ERR_INTERNAL, "matmul mirror: %lld rows exceed the grid", (long long)n);
    switch (elem) {
    case 1:
        return mirror<uint8_t>(ctx, dev, c, n, ld, stream);
    case 2:
        return mirror<uint16_t>(ctx, dev, c, n, ld, stream);
    case 4:
        return mirror<uint32_t>(ctx, dev, c, n, ld, stream);
    case 8:
        return mirror<uint64_t>(ctx, dev, c, n, ld, stream);
    default:
        return oc_fail(ctx, OC_ERR_INTERNAL, "matmul mirror: elements of %zu bytes", elem);
    }
}
