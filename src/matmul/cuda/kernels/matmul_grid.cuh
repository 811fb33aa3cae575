/*
 * matmul_grid.cuh - the launch grid of the CUDA matmul backend's element-wise kernels (pack,
 * round): one thread an element of a row, one row per (y, z) pair of blocks.
 */
#ifndef OC_MATMUL_CUDA_MATMUL_GRID_CUH
#define OC_MATMUL_CUDA_MATMUL_GRID_CUH

#include <stdint.h>

#include <cuda_runtime.h>

/* A grid over rows x cols elements, `threads` a block along a row, one row per (y, z) pair:
 * y stays under its limit. */
static inline dim3 oc_mm_row_grid(int64_t rows, int64_t cols, int threads)
{
    const int64_t y = rows < 65535 ? rows : 65535;
    return dim3((unsigned)((cols + threads - 1) / threads), (unsigned)y, (unsigned)((rows + y - 1) / y));
}

#endif
