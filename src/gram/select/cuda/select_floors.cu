/* select_floors.cu - the floors of a top-k job's devices, each raised to the best any has
 * reached (select_floors.cuh). */
#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
}
#include "engine/cuda/cuda_check.h"
#include "gram/select/cuda/select_floors.cuh"

namespace {

struct import_args {
    uint64_t *own;
    const uint64_t *peer[OC_MAX_LOGICAL_DEVICES];
    int npeers;
    int64_t a0, na, b0, nb;
};

__global__ void floors_import_kernel(const import_args a)
{
    const int64_t total = a.na + a.nb;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i < a.na ? a.a0 + i : a.b0 + (i - a.na);
        const uint64_t mine = a.own[r];
        uint64_t best = mine;
        for (int p = 0; p < a.npeers; ++p) {
            /* volatile: the peer's current value, not one cached before its selection wrote */
            const uint64_t v = *(const volatile uint64_t *)(a.peer[p] + r);
            best = v > best ? v : best;
        }
        if (best > mine) a.own[r] = best;
    }
}

} // namespace

extern "C" oc_status oc_cuda_floors_import(oc_context *ctx, oc_cuda_device *dev, uint64_t *own,
                                           const uint64_t *const *peers, int npeers, int64_t a0, int64_t na, int64_t b0,
                                           int64_t nb, cudaStream_t stream)
{
    if (npeers <= 0 || na + nb <= 0) return OC_OK;
    if (npeers > OC_MAX_LOGICAL_DEVICES)
        return oc_fail(ctx, OC_ERR_INTERNAL, "floors_import: %d peers, at most %d", npeers, OC_MAX_LOGICAL_DEVICES);
    import_args a = {};
    a.own = own;
    for (int p = 0; p < npeers; ++p) a.peer[p] = peers[p];
    a.npeers = npeers, a.a0 = a0, a.na = na, a.b0 = b0, a.nb = nb;
    const int threads = 256;
    const int64_t blocks = (na + nb + threads - 1) / threads;
    OC_CHECK(ctx,
             oc_cuda_launch_prepare(ctx, dev, (const void *)floors_import_kernel, "floors_import_kernel", threads, 0));
    floors_import_kernel<<<(unsigned)(blocks < 1024 ? blocks : 1024), threads, 0, stream>>>(a);
    CUDA_CHECK_LAUNCH(ctx, "floors_import_kernel");
    return OC_OK;
}
