/*
 * matmul_round.cu - the accumulator of a product rounded to its result type on the device
 * (matmul_round.cuh): one element per thread.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
}
#include "engine/cuda/cuda_check.h"
#include "matmul/cuda/kernels/matmul_grid.cuh"
#include "matmul/cuda/kernels/matmul_round.cuh"

namespace {

constexpr int THREADS = 256;

/* The accumulator's value in the result's type, one overload per pair. Overloads, not explicit
 * specializations of a template: nvcc makes this anonymous namespace a hidden named one, whose
 * visibility GCC does not give an explicit specialization of builtin types (round_to<int,
 * unsigned char> was exported from liboutcore.so; tests/link/check_elf.sh). */
__device__ void round_to(float v, __half *out) { *out = __float2half_rn(v); }
__device__ void round_to(float v, __nv_bfloat16 *out) { *out = __float2bfloat16_rn(v); }
__device__ void round_to(int32_t v, uint8_t *out) { *out = v != 0; }

template <typename S, typename T>
__global__ void __launch_bounds__(THREADS)
    round_kernel(const S *__restrict__ src, int64_t rows, int64_t cols, int64_t ld, T *__restrict__ dst)
{
    const int64_t c = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    const int64_t r = blockIdx.y + (int64_t)blockIdx.z * gridDim.y;
    if (r >= rows || c >= cols) return;
    round_to(src[r * ld + c], &dst[r * cols + c]);
}

} // namespace

/* One round_kernel<S, T> launched over rows x cols. */
template <typename S, typename T>
static oc_status round_as(oc_context *ctx, oc_cuda_device *dev, const void *src, int64_t rows, int64_t cols, int64_t ld,
                          void *dst, const char *name, cudaStream_t stream)
{
    OC_CHECK(ctx, oc_cuda_launch_prepare(ctx, dev, (const void *)round_kernel<S, T>, name, THREADS, 0));
    round_kernel<S, T>
        <<<oc_mm_row_grid(rows, cols, THREADS), THREADS, 0, stream>>>((const S *)src, rows, cols, ld, (T *)dst);
    return OC_OK;
}

extern "C" oc_status oc_mm_round_acc(oc_context *ctx, oc_cuda_device *dev, const void *src, int64_t rows, int64_t cols,
                                     int64_t ld, oc_mm_type to, void *dst, cudaStream_t stream)
{
    if (rows <= 0 || cols <= 0) return OC_OK;
    if (to == OC_MM_FLOAT16)
        OC_CHECK(ctx,
                 (round_as<float, __half>(ctx, dev, src, rows, cols, ld, dst, "matmul round_kernel<half>", stream)));
    else if (to == OC_MM_BFLOAT16)
        OC_CHECK(ctx, (round_as<float, __nv_bfloat16>(ctx, dev, src, rows, cols, ld, dst,
                                                      "matmul round_kernel<bfloat16>", stream)));
    else if (to == OC_MM_BOOL)
        OC_CHECK(ctx,
                 (round_as<int32_t, uint8_t>(ctx, dev, src, rows, cols, ld, dst, "matmul round_kernel<bool>", stream)));
    else return oc_fail(ctx, OC_ERR_INTERNAL, "matmul round: output type %d has no rounding step", (int)to);
    CUDA_CHECK_LAUNCH(ctx, "matmul round_kernel");
    return OC_OK;
}
