/*
 * cost_gpu_defaults.c - the GPU Gram kernel's default rate per architecture (cost.h:
 * oc_cost_gpu_default_bit_macs), used until `outcore devices --bandwidth` has measured the
 * machine's own. Each row is the kernel that src/gram/cuda/gram_cuda.c (choose_kernel) runs
 * on that architecture and the rate measured for it, in bit-MACs computed per second (the
 * model counts the bit-MACs a job computes: the upper triangle of A·Aᵀ). The figures, with
 * their commands and devices, are in bench/RESULTS.md:
 *   wgmma:    the entry "Hopper's wgmma b1 kernel", the run of record, raw column;
 *   mma.sync: the same entry, the mma.sync row (measured on Hopper; no Ampere figure yet,
 *             so on sm_80..sm_89 it is an upper bound);
 *   popc:     the entry on the first CUDA backend, the kernel popc row (the CUDA-core fallback).
 */
#include "cost/cost.h"

static const struct {
    int min_cc;         /* from this compute capability (x10) up */
    const char *kernel; /* the kernel choose_kernel runs there */
    double bit_macs;    /* per second, computed */
} gpu_kernels[] = {
    {90, "wgmma b1", 5.9e15}, /* with sm_90a code in the build; else mma.sync runs */
    {80, "mma.sync b1", 3.5e15},
    {1, "popc", 0.13e15},
};

double oc_cost_gpu_default_bit_macs(int cc, const char **kernel)
{
    for (size_t i = 0; i < sizeof gpu_kernels / sizeof gpu_kernels[0]; ++i)
        if (cc >= gpu_kernels[i].min_cc) {
            if (kernel) *kernel = gpu_kernels[i].kernel;
            return gpu_kernels[i].bit_macs;
        }
    if (kernel) *kernel = "";
    return 0;
}
