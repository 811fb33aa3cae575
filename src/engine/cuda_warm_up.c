/*
 * cuda_warm_up.c - oc_cuda_warm_up: the driver's start, the devices' contexts and peer
 * access between them, ahead of a job (outcore.h). The contexts are made on a thread per
 * device; the driver may still make them one after the other, but the caller's own work
 * (reading the input) runs meanwhile. Peer access (bench/RESULTS.md, "Several GPUs") is
 * what a job on several devices enables first when they share panels.
 */
#include <pthread.h>

#include "core/context.h"
#include "core/gpu_probe.h"
#include "core/threads.h"
#include "engine/device_spec.h"

#ifdef OC_HAVE_CUDA
static void *context_thread(void *arg)
{
    oc_gpu_probe_cuda.make_context(*(const int *)arg);
    return NULL;
}
#endif

int oc_cuda_warm_up(const char *devices, int device)
{
    int count = oc_cuda_device_count();
#ifdef OC_HAVE_CUDA
    if (count == 0) return 0;
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return count;
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    opts.devices = devices;
    opts.device = device;
    oc_device_list list;
    if (oc_device_list_parse(ctx, &opts, count, &list) == OC_OK) {
        int physical[OC_MAX_LOGICAL_DEVICES];
        const int n = oc_device_list_physical(&list, count, physical);
        pthread_t thread[OC_MAX_LOGICAL_DEVICES];
        int started[OC_MAX_LOGICAL_DEVICES] = {0};
        for (int e = 1; e < n; ++e) started[e] = oc_thread_start(&thread[e], 0, context_thread, &physical[e]) == 0;
        for (int e = 0; e < n; ++e)
            if (e == 0 || !started[e]) oc_gpu_probe_cuda.make_context(physical[e]);
        for (int e = 1; e < n; ++e)
            if (started[e]) pthread_join(thread[e], NULL);
        oc_gpu_probe_cuda.peer_access(physical, n);
    }
    oc_context_free(ctx);
#else
    (void)devices;
    (void)device;
#endif
    return count;
}
