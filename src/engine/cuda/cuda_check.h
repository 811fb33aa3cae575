/*
 * cuda_check.h - every CUDA runtime call of the backend goes through CUDA_CHECK.
 *
 * A failing call becomes a status with a one-line message naming the call, the runtime's
 * own explanation and file:line; nothing aborts. The runtime keeps some errors "sticky"
 * (returned again by the next unrelated call): cudaGetLastError() clears the non-fatal
 * ones so that a later, unrelated call does not report an old failure. Allocation
 * failures map to OC_ERR_DEVICE_NO_MEMORY, everything else to OC_ERR_DEVICE.
 */
#ifndef OC_ENGINE_CUDA_CUDA_CHECK_H
#define OC_ENGINE_CUDA_CUDA_CHECK_H

#include <cuda_runtime_api.h>

#include "core/error.h"

static inline oc_status oc_cuda_status(cudaError_t e)
{
    return e == cudaErrorMemoryAllocation ? OC_ERR_DEVICE_NO_MEMORY : OC_ERR_DEVICE;
}

/* Turns a failed CUDA call into a recorded status; returns OC_OK for cudaSuccess. */
static inline oc_status oc_cuda_fail_at(oc_context *ctx, cudaError_t e, const char *call, const char *file, int line)
{
    if (e == cudaSuccess) return OC_OK;
    (void)cudaGetLastError();
    return oc_fail_at(ctx, oc_cuda_status(e), file, line, "%s: %s (%s:%d)", call, cudaGetErrorString(e), file, line);
}

/* Evaluates a CUDA call; on failure records the message and returns the status from the
 * enclosing function. */
#define CUDA_CHECK(ctx, call)                                                                                \
    do {                                                                                                     \
        cudaError_t oc_cuda_e_ = (call);                                                                     \
        if (oc_cuda_e_ != cudaSuccess) return oc_cuda_fail_at((ctx), oc_cuda_e_, #call, __FILE__, __LINE__); \
    } while (0)

/* The same inside functions that release resources at a label: stores the status in st and
 * jumps to label. */
#define CUDA_CHECK_GOTO(ctx, st, call, label)                                     \
    do {                                                                          \
        cudaError_t oc_cuda_e_ = (call);                                          \
        if (oc_cuda_e_ != cudaSuccess) {                                          \
            (st) = oc_cuda_fail_at((ctx), oc_cuda_e_, #call, __FILE__, __LINE__); \
            goto label;                                                           \
        }                                                                         \
    } while (0)

/* Right after a kernel launch: a launch that could not start reports only here. */
#define CUDA_CHECK_LAUNCH(ctx, kernel_name)                                                          \
    do {                                                                                             \
        cudaError_t oc_cuda_e_ = cudaGetLastError();                                                 \
        if (oc_cuda_e_ != cudaSuccess)                                                               \
            return oc_cuda_fail_at((ctx), oc_cuda_e_, "launch of " kernel_name, __FILE__, __LINE__); \
    } while (0)

#endif
