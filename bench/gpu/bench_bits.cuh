/* bench_bits.cuh - what the 1-bit kernel benchmarks share: their context and device 0,
 * random packed rows made on the device and a count, on the device, of the elements where
 * two int32 outputs differ. Include it after core/error.h and engine/cuda/device.h. */
#ifndef OC_BENCH_BITS_CUH
#define OC_BENCH_BITS_CUH

#include <stdint.h>
#include <stdio.h>

/* A context and device 0: 0, or the exit status (77 and "SKIPPED" without a usable device;
 * 1 with the error, prefixed by `name`, when it cannot be opened). */
static int bench_open_device(const char *name, oc_context **ctx, oc_cuda_device *dev)
{
    if (oc_context_create(ctx) != OC_OK) return 1;
    if (oc_cuda_device_count() == 0) {
        printf("SKIPPED: no usable CUDA device\n");
        return 77;
    }
    if (oc_cuda_device_open(*ctx, 0, dev) != OC_OK) {
        fprintf(stderr, "%s: %s\n", name, oc_context_last_error(*ctx));
        return 1;
    }
    return 0;
}

/* Random words (splitmix64 of the index and seed); the padding words past m stay zero. */
__global__ void fill_bits(uint64_t *w, int64_t rows, int64_t words, int64_t used_words, uint64_t seed)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * words;
         i += (int64_t)gridDim.x * blockDim.x) {
        uint64_t z = (uint64_t)i * 0x9e3779b97f4a7c15ull + seed;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        w[i] = i % words < used_words ? z ^ (z >> 31) : 0;
    }
}

/* Elements of two int32 outputs that differ, counted on the device (with `upper`, only those
 * with c >= r: where both kernels wrote for a diagonal tile of A·Aᵀ). */
__global__ void count_diff(const int32_t *x, const int32_t *y, int64_t rows, int64_t cols, int upper,
                           unsigned long long *bad)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * cols;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (upper && i % cols < i / cols) continue;
        if (x[i] != y[i]) atomicAdd(bad, 1ull);
    }
}

#endif
