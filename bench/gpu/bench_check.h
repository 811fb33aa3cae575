/* bench_check.h - the CUDA benchmarks' checks of a runtime call (CK) and of a cuBLASLt call (CKL,
 * where cublasLt.h is included): message and exit(1) on error. */
#ifndef OC_BENCH_CHECK_H
#define OC_BENCH_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CKL(call)                                                                                 \
    do {                                                                                          \
        cublasStatus_t s_ = (call);                                                               \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                        \
            fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #call, (int)s_); \
            exit(1);                                                                              \
        }                                                                                         \
    } while (0)

#endif
