/*
 * nvrtc_skip.h - the GPU tests of run-time compiled kernels skip (exit 77) without a usable
 * CUDA device or without NVRTC: gpu_nvrtc_missing() records the skip and returns 1 then.
 */
#ifndef OC_TEST_NVRTC_SKIP_H
#define OC_TEST_NVRTC_SKIP_H

#include <cuda_runtime_api.h>

#include "../harness.h"
#include "map/cuda/nvrtc.h"

static int gpu_nvrtc_missing(void)
{
    int count = 0;
    char why[300];
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        oc_test_skip("no usable CUDA device");
        return 1;
    }
    if (!oc_nvrtc_available(why, sizeof why)) {
        oc_test_skip(why);
        return 1;
    }
    return 0;
}

#endif
