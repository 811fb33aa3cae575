/*
 * matmul_promote.cu - the promotion of matmul_promote.cuh: one kernel per (stored, compute)
 * pair, each thread converting elements in a grid-stride loop (memory-bound, a small share
 * of the panel's product).
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
}
#include "engine/cuda/cuda_check.h"
#include "matmul/cuda/kernels/matmul_promote.cuh"

namespace {

constexpr int THREADS = 256;
/* The most blocks of a launch: the grid-stride loop covers the rest. */
constexpr int64_t MAX_BLOCKS = 1 << 20;

/* The stored half-precision types, by their bits. */
struct f16_bits {
    uint16_t b;
};
struct bf16_bits {
    uint16_t b;
};
/* numpy's bool: 1 where the byte is not 0. */
struct bool_byte {
    uint8_t b;
};

/* An element's value as float64 and as float32: as C converts, the halves exactly. */
template <typename S> __device__ double as_double(S v) { return (double)v; }
template <> __device__ double as_double<f16_bits>(f16_bits v) { return (double)__half2float(__ushort_as_half(v.b)); }
template <> __device__ double as_double<bf16_bits>(bf16_bits v)
{
    return (double)__bfloat162float(__ushort_as_bfloat16(v.b));
}
template <> __device__ double as_double<bool_byte>(bool_byte v) { return v.b != 0; }
template <typename S> __device__ float as_float(S v) { return (float)v; }
template <> __device__ float as_float<bool_byte>(bool_byte v) { return v.b != 0; }
template <> __device__ float as_float<f16_bits>(f16_bits v) { return __half2float(__ushort_as_half(v.b)); }
template <> __device__ float as_float<bf16_bits>(bf16_bits v) { return __bfloat162float(__ushort_as_bfloat16(v.b)); }

/* The compute type's element from a stored one (oc_matmul_convert's roundings). */
template <typename D> struct to;
template <> struct to<double> {
    template <typename S> __device__ static double of(S v) { return as_double(v); }
};
template <> struct to<float> {
    template <typename S> __device__ static float of(S v) { return as_float(v); }
};
template <> struct to<__half> {
    template <typename S> __device__ static __half of(S v) { return __double2half(as_double(v)); }
};
template <> struct to<__nv_bfloat16> {
    template <typename S> __device__ static __nv_bfloat16 of(S v) { return __float2bfloat16_rn(as_float(v)); }
};
template <> struct to<int8_t> { /* from bool alone */
    __device__ static int8_t of(bool_byte v) { return v.b != 0; }
};

template <typename S, typename D>
__global__ void __launch_bounds__(THREADS) promote_kernel(const S *__restrict__ src, int64_t n, D *__restrict__ dst)
{
    const int64_t stride = (int64_t)gridDim.x * THREADS;
    for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < n; i += stride) dst[i] = to<D>::of(src[i]);
}

template <typename S, typename D>
oc_status launch(oc_context *ctx, oc_cuda_device *dev, const void *src, int64_t n, void *dst, cudaStream_t stream)
{
    OC_CHECK(ctx,
             oc_cuda_launch_prepare(ctx, dev, (const void *)promote_kernel<S, D>, "matmul promote_kernel", THREADS, 0));
    const int64_t blocks = (n + THREADS - 1) / THREADS;
    promote_kernel<S, D>
        <<<(unsigned)(blocks < MAX_BLOCKS ? blocks : MAX_BLOCKS), THREADS, 0, stream>>>((const S *)src, n, (D *)dst);
    CUDA_CHECK_LAUNCH(ctx, "matmul promote_kernel");
    return OC_OK;
}

/* The kernel for a stored type, into compute type D. */
template <typename D>
oc_status from_stored(oc_context *ctx, oc_cuda_device *dev, oc_matmul_dtype from, const void *src, int64_t n, void *dst,
                      cudaStream_t stream)
{
    switch (from) {
    case OC_MATMUL_FLOAT64:
        return launch<double, D>(ctx, dev, src, n, dst, stream);
    case OC_MATMUL_FLOAT32:
        return launch<float, D>(ctx, dev, src, n, dst, stream);
    case OC_MATMUL_FLOAT16:
        return launch<f16_bits, D>(ctx, dev, src, n, dst, stream);
    case OC_MATMUL_BFLOAT16:
        return launch<bf16_bits, D>(ctx, dev, src, n, dst, stream);
    case OC_MATMUL_INT8:
        return launch<int8_t, D>(ctx, dev, src, n, dst, stream);
    case OC_MATMUL_INT16:
        return launch<int16_t, D>(ctx, dev, src, n, dst, stream);
    case OC_MATMUL_INT32:
        return launch<int32_t, D>(ctx, dev, src, n, dst, stream);
    case OC_MATMUL_INT64:
        return launch<long long, D>(ctx, dev, src, n, dst, stream);
    case OC_MATMUL_UINT8:
        return launch<uint8_t, D>(ctx, dev, src, n, dst, stream);
    case OC_MATMUL_UINT16:
        return launch<uint16_t, D>(ctx, dev, src, n, dst, stream);
    case OC_MATMUL_UINT32:
        return launch<uint32_t, D>(ctx, dev, src, n, dst, stream);
    case OC_MATMUL_UINT64:
        return launch<unsigned long long, D>(ctx, dev, src, n, dst, stream);
    case OC_MATMUL_BOOL:
        return launch<bool_byte, D>(ctx, dev, src, n, dst, stream);
    default:
        return oc_fail(ctx, OC_ERR_INTERNAL, "matmul promote: stored type %d", (int)from);
    }
}

} // namespace

extern "C" oc_status oc_mm_promote(oc_context *ctx, oc_cuda_device *dev, oc_matmul_dtype from, const void *src,
                                   int64_t n, oc_mm_type to, void *dst, cudaStream_t stream)
{
    if (n <= 0) return OC_OK;
    switch (to) {
    case OC_MM_FLOAT64:
        return from_stored<double>(ctx, dev, from, src, n, dst, stream);
    case OC_MM_FLOAT32:
        return from_stored<float>(ctx, dev, from, src, n, dst, stream);
    case OC_MM_FLOAT16:
        return from_stored<__half>(ctx, dev, from, src, n, dst, stream);
    case OC_MM_BFLOAT16:
        return from_stored<__nv_bfloat16>(ctx, dev, from, src, n, dst, stream);
    case OC_MM_INT8:
        if (from == OC_MATMUL_BOOL) return launch<bool_byte, int8_t>(ctx, dev, src, n, dst, stream);
        return oc_fail(ctx, OC_ERR_INTERNAL, "matmul promote: stored type %d into int8", (int)from);
    default:
        return oc_fail(ctx, OC_ERR_INTERNAL, "matmul promote: compute type %d", (int)to);
    }
}
