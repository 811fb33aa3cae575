/*
 * pinned_host.c - oc_pinned_alloc and oc_pinned_free (outcore.h): page-locked host memory
 * through the CUDA backend's probe table, so that a CPU-only build links and says why not.
 */
#include <stdio.h>

#include "core/error.h"
#include "core/gpu_probe.h"

oc_status oc_pinned_alloc(oc_context *ctx, size_t bytes, void **out)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    if (!out) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "pinned memory: out is NULL");
    if (bytes == 0) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "pinned memory: a size of 0 bytes");
#ifdef OC_HAVE_CUDA
    if (oc_cuda_device_count() == 0)
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "pinned memory: no usable CUDA device (see `outcore devices`)");
    char why[200];
    void *block = NULL; /* *out is left untouched on failure (outcore.h) */
    if (oc_gpu_probe_cuda.pinned_alloc(bytes, &block, why, sizeof why) == 0) {
        *out = block;
        return OC_OK;
    }
    return oc_fail(ctx, OC_ERR_NO_MEMORY, "pinned memory: %zu bytes could not be page-locked: %s", bytes, why);
#else
    return oc_fail(ctx, OC_ERR_UNSUPPORTED, "pinned memory: this build has no CUDA backend");
#endif
}

void oc_pinned_free(void *ptr)
{
#ifdef OC_HAVE_CUDA
    if (ptr) oc_gpu_probe_cuda.pinned_free(ptr);
#else
    (void)ptr;
#endif
}
