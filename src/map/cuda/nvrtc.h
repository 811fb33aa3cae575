/*
 * nvrtc.h - CUDA C source compiled at run time (NVRTC) and loaded as driver modules.
 *
 * NVRTC is loaded with dlopen on first use, never linked: the library still loads, and every
 * other job still runs, on a machine without libnvrtc; only the jobs that generate kernels
 * (outcore map, user sources) then fail, with a status that says NVRTC is missing.
 *
 *   source ──hash(source, options, target, NVRTC version)──> key
 *     1. in-process cache: key + device -> loaded CUmodule (lives until the process ends)
 *     2. disk cache: <dir>/<key>-<target>.bin (cubin, or PTX where NVRTC cannot emit code for
 *        the device), written to a temporary name and renamed, so a reader never sees half
 *        a file; a file that does not carry the key's check words is ignored and rewritten
 *     3. NVRTC: compile for sm_<cc> of the device (or compute_<highest NVRTC knows> as PTX
 *        for a device newer than NVRTC, which the driver then compiles)
 *
 * The disk cache is $OUTCORE_NVRTC_CACHE when set (empty or "off": no disk cache), else
 * $XDG_CACHE_HOME/outcore/nvrtc, else $HOME/.cache/outcore/nvrtc (nvrtc_cache.h:
 * oc_nvrtc_cache_dir). A cache that cannot be read or written only costs a compilation; it
 * never fails a job.
 *
 * A compilation error is OC_ERR_INVALID_ARGUMENT with NVRTC's log folded into one line
 * ("nvrtc: <name>: line 3: error: identifier "x" is undefined; ..."), so generated code that
 * does not compile names its first errors in the job's message.
 *
 * Thread safety: every function may be called from any thread; the caches take a lock.
 */
#ifndef OC_MAP_CUDA_NVRTC_H
#define OC_MAP_CUDA_NVRTC_H

#include <cuda.h>
#include <stddef.h>

#include "outcore.h"
#include "map/cuda/nvrtc_program.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when NVRTC can be loaded, else 0 with the loader's reason in why (may be NULL). */
int oc_nvrtc_available(char *why, size_t why_size);

/* NVRTC's version as major*1000 + minor*10 (12040 for 12.4), 0 when it is absent. */
int oc_nvrtc_version(void);

/* Compiles src for compute capability cc (x10: 90 for sm_90) through the disk cache. Needs
 * no GPU. OC_ERR_UNSUPPORTED when NVRTC is absent; OC_ERR_INVALID_ARGUMENT with the log when
 * the source does not compile. On success the caller owns *out. */
oc_status oc_nvrtc_compile(oc_context *ctx, const oc_nvrtc_source *src, int cc, oc_nvrtc_image *out);

void oc_nvrtc_image_free(oc_nvrtc_image *img);

/* The kernel `kernel` (an extern "C" __global__ function of src) loaded on the current
 * device (the caller made its context current, e.g. with cudaSetDevice + cudaFree(0)):
 * compiles through both caches and cuModuleLoadData. The module stays loaded until the
 * process ends, so the function is valid for the rest of it. */
oc_status oc_nvrtc_function(oc_context *ctx, const oc_nvrtc_source *src, const char *kernel, CUfunction *out);

/* Launches fn (from oc_nvrtc_function) on stream with kernel arguments args (an array of
 * pointers to each argument, as cuLaunchKernel takes them). The driver is reached through
 * dlsym as NVRTC is; name names the kernel in messages. Asynchronous: a fault inside the
 * kernel reports at the stream's next synchronisation. */
oc_status oc_nvrtc_launch(oc_context *ctx, CUfunction fn, const char *name, const unsigned grid[3],
                          const unsigned block[3], unsigned dyn_smem, CUstream stream, void **args);

#ifdef __cplusplus
}
#endif

#endif
