/*
 * gpu_probe.h - the driver-side questions of `inspect` and `devices`, behind one table.
 *
 * core/ and io/ include no CUDA header; the CUDA build defines oc_gpu_probe_cuda in
 * src/cuda (inspect_driver.c, devices.c). A CPU-only build has no table and answers from
 * the code files and /proc alone.
 */
#ifndef OC_CORE_GPU_PROBE_H
#define OC_CORE_GPU_PROBE_H

#include <stddef.h>
#include "outcore.h"

struct oc_kernel_list;

typedef struct oc_gpu_probe {
    /* Compute capability x10 of GPU `device`, 0 when none is usable (why[] says why). */
    int (*device_cc)(int device, char *why, size_t why_size);
    /* Loads image (PTX, cubin or fatbinary bytes) on `device`, loads every kernel and queries
     * its attributes; with block > 0 also the driver's occupancy. display_name names the file
     * in messages. */
    oc_status (*inspect)(oc_context *ctx, const char *display_name, const void *image, size_t size, int device,
                         int block, size_t dyn_smem, struct oc_kernel_list *out);
    /* Fills devices->count and devices->devices (and no_gpu_reason when there are none). */
    oc_status (*devices)(oc_context *ctx, int bandwidth, oc_devices *devices);
} oc_gpu_probe;

#ifdef OC_HAVE_CUDA
extern const oc_gpu_probe oc_gpu_probe_cuda;
#endif

#endif
