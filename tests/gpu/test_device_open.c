/*
 * test_device_open.c - a job opens only its own devices (engine/device_spec.h): after the
 * warm-up and a one-device job on the host's last GPU (not device 0, so that a default of 0
 * somewhere shows), the library's record of the contexts it made (oc_cuda_contexts_made)
 * names that device alone, and so does the driver's own record of primary contexts
 * (cuDevicePrimaryCtxGetState, read through the driver library as the library reads it).
 * An auto job and `--explain` on that device (the cost model's machine key names every GPU
 * of the host) must not open the others either. With three GPUs or more, a job on devices
 * "2,0" then opens 0 and 2 and leaves 1 alone. Every job's phases (oc_gram_stats.phases) are
 * checked on the way: none negative, within the job's seconds.
 *
 * On a host of one GPU the checks still run but cannot tell "only this device" from "every
 * device". Exits 77 when no CUDA device is usable or the driver library cannot be read.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../harness.h"
#include "outcore.h"
#include "engine/cuda/device.h"

typedef int (*cu_device_get_fn)(int *device, int ordinal);
typedef int (*cu_ctx_state_fn)(int device, unsigned *flags, int *active);

static cu_device_get_fn device_get;
static cu_ctx_state_fn ctx_state;

/* The devices (bit d) whose primary context the driver holds active in this process. */
static uint64_t driver_contexts(int count)
{
    uint64_t mask = 0;
    for (int d = 0; d < count && d < 64; ++d) {
        int dev = 0, active = 0;
        unsigned flags = 0;
        if (device_get(&dev, d) == 0 && ctx_state(dev, &flags, &active) == 0 && active) mask |= 1ULL << d;
    }
    return mask;
}

static oc_status run(oc_context *ctx, const oc_matrix *a, oc_backend backend, int device, const char *devices)
{
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = backend;
    o.algorithm = OC_ALGORITHM_DENSE;
    o.device = device;
    o.devices = devices;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_DISCARD;
    oc_gram_stats stats = {.struct_size = sizeof stats};
    oc_status st = oc_gram(ctx, a, NULL, &o, &out, &stats);
    /* The phases on a GPU: none negative, within the job's seconds; a job the GPU ran spent
     * time opening its devices (setup) and on its tiles. */
    const oc_gram_phases *p = &stats.phases;
    const double sum = p->cuda_start + p->prepare + p->setup + p->compute + p->output + p->teardown;
    CHECK(p->cuda_start >= 0 && p->prepare >= 0 && p->setup >= 0 && p->compute >= 0 && p->output >= 0 &&
          p->teardown >= 0);
    CHECK_MSG(sum <= stats.seconds + 1e-6, "phases %g s of a %g s job", sum, stats.seconds);
    if (st == OC_OK && stats.backend == OC_BACKEND_CUDA) CHECK(p->setup > 0 && p->compute > 0);
    return st;
}

int main(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib) {
        device_get = (cu_device_get_fn)dlsym(lib, "cuDeviceGet");
        ctx_state = (cu_ctx_state_fn)dlsym(lib, "cuDevicePrimaryCtxGetState");
    }
    setenv("OUTCORE_COST_CACHE", "off", 1); /* nothing measured or stored by the auto job */
    const int count = device_get && ctx_state ? oc_cuda_device_count() : 0;
    if (count == 0) {
        oc_test_skip("no usable CUDA device, or the driver library cannot be read");
        return oc_test_finish();
    }
    const int last = count - 1;
    const uint64_t only_last = 1ULL << last;
    /* Counting the devices makes no context. */
    CHECK(driver_contexts(count) == 0);

    CHECK(oc_cuda_warm_up(NULL, last) == count);
    CHECK_MSG(oc_cuda_contexts_made() == only_last, "warm-up made contexts %#llx",
              (unsigned long long)oc_cuda_contexts_made());
    CHECK_MSG(driver_contexts(count) == only_last, "after the warm-up the driver holds %#llx",
              (unsigned long long)driver_contexts(count));

    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    oc_matrix *a = oc_test_random01(ctx, 1000, 512, 5);
    CHECK(a != NULL);
    if (a) {
        CHECK(run(ctx, a, OC_BACKEND_CUDA, last, NULL) == OC_OK);
        CHECK(run(ctx, a, OC_BACKEND_AUTO, last, NULL) == OC_OK);
        oc_gram_options o = OC_GRAM_OPTIONS_INIT;
        o.device = last;
        oc_output out = OC_OUTPUT_INIT;
        out.kind = OC_OUTPUT_DISCARD;
        char *text = NULL;
        CHECK(oc_gram_explain(ctx, a, NULL, &o, &out, &text) == OC_OK);
        free(text);
        (void)oc_cuda_live_device_bytes(); /* waits for the jobs' release after them */
        CHECK_MSG(oc_cuda_contexts_made() == only_last, "one-device jobs made contexts %#llx",
                  (unsigned long long)oc_cuda_contexts_made());
        CHECK_MSG(driver_contexts(count) == only_last, "after one-device jobs the driver holds %#llx",
                  (unsigned long long)driver_contexts(count));
        if (count >= 3) {
            CHECK(run(ctx, a, OC_BACKEND_CUDA, 0, "2,0") == OC_OK);
            (void)oc_cuda_live_device_bytes();
            const uint64_t want = only_last | 1ULL << 2 | 1ULL;
            CHECK_MSG(oc_cuda_contexts_made() == want, "a job on 2,0 made contexts %#llx",
                      (unsigned long long)oc_cuda_contexts_made());
            CHECK_MSG(driver_contexts(count) == want, "after a job on 2,0 the driver holds %#llx",
                      (unsigned long long)driver_contexts(count));
        }
    }
    oc_matrix_free(a);
    oc_context_free(ctx);
    dlclose(lib);
    return oc_test_finish();
}
