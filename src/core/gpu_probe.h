/*
 * gpu_probe.h - the driver-side questions of `inspect` and `devices`, behind one table; and
 * the words in which a job asked to run on a GPU refuses when none can.
 *
 * core/, io/ and inspect/ include no CUDA header; the CUDA build defines oc_gpu_probe_cuda in
 * src/cuda (inspect_driver.c, devices.c). A CPU-only build has no table and answers from
 * the code files and /proc alone.
 */
#ifndef OC_CORE_GPU_PROBE_H
#define OC_CORE_GPU_PROBE_H

#include <stddef.h>
#include "outcore.h"
#include "core/error.h"

/* Why no GPU can run anything in a build without CUDA. */
#define OC_NO_CUDA_BUILD "this build of outcore has no CUDA support (configure with nvcc available)"

/* The refusal of a CUDA backend asked for (--backend cuda) where no GPU can run the job: why
 * not (fmt, a literal, and its arguments: the device's, the build's or the job's reason), then
 * what to do instead. gram, matmul and map refuse in these words; returns OC_ERR_UNSUPPORTED. */
#define oc_fail_no_gpu(ctx, fmt, ...) \
    oc_fail((ctx), OC_ERR_UNSUPPORTED, "backend cuda: " fmt "; use --backend cpu (or auto)", __VA_ARGS__)

struct oc_kernel_list;

typedef struct oc_gpu_probe {
    /* Compute capability x10 of GPU `device`, 0 when none is usable (why[] says why). */
    int (*device_cc)(int device, char *why, size_t why_size);
    /* Loads image (PTX, cubin or fatbinary bytes) on `device`, JIT-compiling PTX with opts'
     * maxrregcount and opt_level, loads every kernel and queries its attributes; with
     * opts->block > 0 also the driver's occupancy. display_name names the file in messages. */
    oc_status (*inspect)(oc_context *ctx, const char *display_name, const void *image, size_t size, int device,
                         const oc_inspect_options *opts, struct oc_kernel_list *out);
    /* The same for a module the caller loaded (a CUmodule), in the calling thread's current
     * context (else device 0's primary one); out->code_cc gets that device's architecture. */
    oc_status (*inspect_module)(oc_context *ctx, const char *display_name, void *module, const oc_inspect_options *opts,
                                struct oc_kernel_list *out);
    /* Fills devices->count and devices->devices (and no_gpu_reason when there are none). */
    oc_status (*devices)(oc_context *ctx, int bandwidth, oc_devices *devices);
    /* The GPUs' identity for the cost model's cache key: driver version, then each GPU's
     * name and UUID; "" when there are none. Initialises the driver, creates no context. */
    void (*identity)(char *buf, size_t size);
    /* Makes GPU `device`'s primary context on the calling thread (oc_cuda_warm_up); a
     * failure is left for the job that opens the device to report. */
    void (*make_context)(int device);
    /* Enables peer access between every pair of the `count` GPUs (their contexts made), as
     * a job whose devices share panels would; a pair that cannot is left for the job. */
    void (*peer_access)(const int *devices, int count);
    /* Page-locked host memory usable from every device (oc_pinned_alloc): 0, or nonzero with
     * why[] saying why not; and its free. */
    int (*pinned_alloc)(size_t bytes, void **out, char *why, size_t why_size);
    void (*pinned_free)(void *ptr);
    /* The device whose memory byte p is, else -1 (host memory of any kind). */
    int (*memory_device)(const void *p);
    /* Whether GPU `device` is one the runtime can use (oc_cuda_device_count counts them). */
    int (*usable)(int device);
} oc_gpu_probe;

/* The CPU's model name from /proc/cpuinfo, "" when unknown (core/devices.c). */
void oc_cpu_model(char *buf, size_t size);

#ifdef OC_HAVE_CUDA
extern const oc_gpu_probe oc_gpu_probe_cuda;
#endif

#endif
