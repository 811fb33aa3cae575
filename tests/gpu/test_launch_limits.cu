// test_launch_limits.cu - on a real GPU: the largest block oc_launch_check predicts from
// cudaFuncGetAttributes launches, and one warp more fails with cudaErrorLaunchOutOfResources
// (701), for kernels of 64..255 registers. Also compares the driver's occupancy with outcore's.
// Exits 77 (skipped) without a usable GPU or for an architecture outcore has no table for.
#include <cuda_runtime.h>
#include <stdio.h>

extern "C" {
#include "core/gpu_arch.h"
#include "../harness.h"
}

#include "../kernels/register_pressure.cu"

typedef void (*pressure_kernel)(const float *, float *);

static const struct {
    pressure_kernel kernel;
    const char *name;
    int regs;         // what __maxnreg__ grants and the kernel uses
    int h100_largest; // measured on an H100 (sm_90)
} cases[] = {
    {regs64, "regs64", 64, 1024},   {regs72, "regs72", 72, 896},    {regs96, "regs96", 96, 640},
    {regs128, "regs128", 128, 512}, {regs168, "regs168", 168, 384}, {regs255, "regs255", 255, 256},
};

static void check_kernel(const oc_gpu_arch *arch, int cc, size_t i, const float *in, float *out)
{
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, cases[i].kernel) == cudaSuccess);
    oc_kernel_resources r = {attr.numRegs, attr.sharedSizeBytes, attr.localSizeBytes, 0, 0, 0, OC_REG_CAP_NONE};
    int largest = oc_launch_largest_block(arch, &r, 0);
    printf("%s: %d registers, largest block %d (driver's maxThreadsPerBlock %d)\n", cases[i].name, attr.numRegs,
           largest, attr.maxThreadsPerBlock);
    CHECK_EQ_I64(largest, attr.maxThreadsPerBlock);
    if (cc == 90) {
        CHECK_EQ_I64(attr.numRegs, cases[i].regs);
        CHECK_EQ_I64(largest, cases[i].h100_largest);
    }

    oc_launch_verdict v;
    CHECK(oc_launch_check(arch, &r, largest, 0, &v) == OC_OK && v.fits);
    cases[i].kernel<<<1, largest>>>(in, out);
    cudaError_t e = cudaGetLastError();
    CHECK_MSG(e == cudaSuccess, "%s with %d threads: %s", cases[i].name, largest, cudaGetErrorString(e));
    CHECK(cudaDeviceSynchronize() == cudaSuccess);

    if (largest + 32 <= 1024) {
        CHECK(oc_launch_check(arch, &r, largest + 32, 0, &v) == OC_OK && !v.fits);
        cases[i].kernel<<<1, largest + 32>>>(in, out);
        e = cudaGetLastError();
        CHECK_MSG(e == cudaErrorLaunchOutOfResources, "%s with %d threads: expected 701, got %d (%s)", cases[i].name,
                  largest + 32, (int)e, cudaGetErrorString(e));
        CHECK_EQ_I64((int)cudaErrorLaunchOutOfResources, 701);
    }

    // The driver's occupancy calculator and outcore's agree at the common block sizes.
    static const int sizes[] = {64, 128, 256, 512, 768, 1024};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int blocks = -1;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, cases[i].kernel, sizes[k], 0) == cudaSuccess);
        CHECK(oc_launch_check(arch, &r, sizes[k], 0, &v) == OC_OK);
        CHECK_MSG(blocks == v.blocks_per_sm, "%s at %d threads: driver %d blocks/SM, outcore %d", cases[i].name,
                  sizes[k], blocks, v.blocks_per_sm);
    }
}

int main(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        oc_test_skip("no usable CUDA device");
        return oc_test_finish();
    }
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
        oc_test_skip("cudaGetDeviceProperties failed");
        return oc_test_finish();
    }
    int cc = p.major * 10 + p.minor;
    const oc_gpu_arch *arch = oc_gpu_arch_find(cc);
    if (!arch) {
        oc_test_skip("no architecture table for this GPU");
        return oc_test_finish();
    }
    CHECK_EQ_I64(arch->regs_per_sm, p.regsPerMultiprocessor);
    CHECK_EQ_I64((long long)arch->smem_per_block_optin, (long long)p.sharedMemPerBlockOptin);
    CHECK_EQ_I64(arch->max_warps_per_sm * 32, p.maxThreadsPerMultiProcessor);

    const size_t threads = 1024;
    float *in = NULL, *out = NULL;
    if (cudaMalloc(&in, threads * PRESSURE_MAX_LIVE * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&out, threads * sizeof(float)) != cudaSuccess) {
        CHECK_MSG(0, "cudaMalloc failed");
        return oc_test_finish();
    }
    cudaMemset(in, 0, threads * PRESSURE_MAX_LIVE * sizeof(float));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_kernel(arch, cc, i, in, out);
    cudaFree(in);
    cudaFree(out);
    return oc_test_finish();
}
