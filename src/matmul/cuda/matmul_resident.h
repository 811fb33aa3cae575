/*
 * matmul_resident.h - the resident plan of a CUDA matmul job (oc_mm_cuda_plan_input.resident):
 * A, B and C already in one device's memory, rows back to back, so the product is one
 * cuBLASLt call from A and B into C where they are, on the calling thread. Nothing crosses
 * PCIe and nothing is pinned; the job's own device memory is what the product needs beside
 * them: int8's packed operands where they are not in its kernels' layout, the float32
 * accumulator of a half-precision result, and the workspace the chosen algorithm asks for.
 */
#ifndef OC_MATMUL_CUDA_MATMUL_RESIDENT_H
#define OC_MATMUL_CUDA_MATMUL_RESIDENT_H

#include "matmul/cuda/matmul_device_state.h"

/* Runs the product on `device` with the job's context ctx; fills *res as oc_mm_device_run
 * does (a failure: its status and message, and sh->stop set). */
void oc_mm_resident_run(oc_context *ctx, oc_mm_shared *sh, int device, oc_mm_device_result *res);

#endif
