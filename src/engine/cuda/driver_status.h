/*
 * driver_status.h - why no GPU is usable, in words a user can act on.
 *
 * The CUDA runtime answers cudaErrorInsufficientDriver ("CUDA driver version is insufficient
 * for CUDA runtime version") both when the driver is too old and when there is no driver at
 * all; only a look for the driver library itself tells the two apart.
 */
#ifndef OC_ENGINE_CUDA_DRIVER_STATUS_H
#define OC_ENGINE_CUDA_DRIVER_STATUS_H

#include <cuda_runtime_api.h>
#include <stddef.h>

/* The library the driver is looked for as (the name the runtime loads). */
#define OC_CUDA_DRIVER_LIBRARY "libcuda.so.1"

/* Writes into buf one line saying why error e (from cudaGetDeviceCount or the first call on
 * a device) leaves no usable GPU: no NVIDIA driver found (and which library was looked for),
 * a driver older than the runtime (both CUDA versions), no GPU, GPUs busy or prohibited, or
 * the runtime's own words for anything else. */
void oc_cuda_no_device_reason(cudaError_t e, char *buf, size_t size);

#endif
