/*
 * matmul_rate.h - one GPU's GEMM rate, measured on operands resident on the device.
 */
#ifndef OC_MATMUL_CUDA_MATMUL_RATE_H
#define OC_MATMUL_CUDA_MATMUL_RATE_H

#include "matmul/cuda/cublaslt.h"
#include "matmul/matmul_job.h"

/* Flop/s (int8: operations/s) of cuBLASLt's product of in-type operands (float32 on TF32
 * tensor cores when tf32) on CUDA device `device`, in the tile path's compute type, measured
 * now (a few hundredths of a second after the context); 0 when it cannot run, or when its
 * operands, result and workspace take more than `room` bytes of the device (<= 0: no limit). */
double oc_mm_cuda_gemm_rate(const oc_cublaslt_api *lt, oc_mm_type in, int tf32, int device, int64_t room);

#endif
