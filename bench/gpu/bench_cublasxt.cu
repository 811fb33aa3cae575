/*
 * bench_cublasxt.cu - the reference for outcore matmul out of core: cuBLASXt's host-to-host
 * GEMM (it tiles the product across the device itself) on the same row-major product as
 * bench_matmul_cuda, at its default block size and at the block sizes given.
 *
 *   bench_cublasxt M N K float32|float64 [BLOCK ...]    (BLOCK 0 = cuBLASXt's default)
 *
 * A and B are pageable host memory filled with 0 and 1 (as bench_matmul_cuda fills them); C
 * is pageable host memory. Each block size runs XT_REPS times (default 2); the last run is
 * reported.
 */
#include <cublasXt.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_fill.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 0 or 1 in the first block of elements, repeated rotated after it (seconds, not minutes, for
 * matrices of many GB; the rate does not depend on the values). */
static void fill(char *p, int64_t count, size_t es, uint64_t seed)
{
    for (int64_t i = 0; i < count && i < BENCH_FILL_BLOCK; ++i) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        const int one = (seed >> 40) & 1;
        if (es == 8) ((double *)p)[i] = one;
        else ((float *)p)[i] = (float)one;
    }
    bench_fill_repeat(p, count, es);
}

int main(int argc, char **argv)
{
    if (argc < 5 || (strcmp(argv[4], "float32") != 0 && strcmp(argv[4], "float64") != 0)) {
        fprintf(stderr, "usage: bench_cublasxt M N K float32|float64 [BLOCK ...]  (BLOCK 0: the default)\n");
        return 2;
    }
    const int64_t m = atoll(argv[1]), n = atoll(argv[2]), k = atoll(argv[3]);
    const int f64 = strcmp(argv[4], "float64") == 0;
    const size_t es = f64 ? 8 : 4;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        printf("SKIPPED: no usable CUDA device\n");
        return 0;
    }
    char *a = (char *)malloc((size_t)(m * k) * es), *b = (char *)malloc((size_t)(k * n) * es),
         *c = (char *)malloc((size_t)(m * n) * es);
    if (!a || !b || !c) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    fill(a, m * k, es, 1);
    fill(b, k * n, es, 2);
    memset(c, 0, (size_t)(m * n) * es);
    cublasXtHandle_t xt;
    if (cublasXtCreate(&xt) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasXtCreate failed\n");
        return 1;
    }
    int dev = 0;
    if (cublasXtDeviceSelect(xt, 1, &dev) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasXtDeviceSelect failed\n");
        return 1;
    }
    int default_block = 0;
    cublasXtGetBlockDim(xt, &default_block);
    const double flop = 2.0 * (double)m * (double)n * (double)k;
    printf("%-10s %-24s %8s %10s %10s\n", "case", "m x n x k", "block", "seconds", "TFLOP/s");
    const int nblocks = argc > 5 ? argc - 5 : 1;
    const int reps = getenv("XT_REPS") ? atoi(getenv("XT_REPS")) : 2;
    for (int i = 0; i < nblocks; ++i) {
        const int block = argc > 5 ? atoi(argv[5 + i]) : 0, used = block > 0 ? block : default_block;
        if (cublasXtSetBlockDim(xt, used) != CUBLAS_STATUS_SUCCESS) {
            fprintf(stderr, "block %d refused\n", used);
            continue;
        }
        double secs = 0;
        for (int rep = 0; rep < reps; ++rep) {
            /* Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ. */
            const double t0 = now();
            cublasStatus_t st;
            if (f64) {
                const double one = 1, zero = 0;
                st = cublasXtDgemm(xt, CUBLAS_OP_N, CUBLAS_OP_N, (size_t)n, (size_t)m, (size_t)k, &one,
                                   (const double *)b, (size_t)n, (const double *)a, (size_t)k, &zero, (double *)c,
                                   (size_t)n);
            } else {
                const float one = 1, zero = 0;
                st =
                    cublasXtSgemm(xt, CUBLAS_OP_N, CUBLAS_OP_N, (size_t)n, (size_t)m, (size_t)k, &one, (const float *)b,
                                  (size_t)n, (const float *)a, (size_t)k, &zero, (float *)c, (size_t)n);
            }
            cudaDeviceSynchronize();
            secs = now() - t0;
            if (st != CUBLAS_STATUS_SUCCESS) {
                fprintf(stderr, "cuBLASXt gemm failed (%d) at block %d\n", (int)st, used);
                return 1;
            }
        }
        printf("%-10s %-24s %8d %10.3f %10.2f%s\n", f64 ? "xt-dgemm" : "xt-sgemm", "", used, secs, flop / secs / 1e12,
               block > 0 ? "" : "  (default block)");
    }
    printf("dims %lld x %lld x %lld\n", (long long)m, (long long)n, (long long)k);
    cublasXtDestroy(xt);
    free(a), free(b), free(c);
    return 0;
}
