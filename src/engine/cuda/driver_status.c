#include "engine/cuda/driver_status.h"

#include <dlfcn.h>
#include <stdio.h>

typedef int (*driver_version_fn)(int *);

/* The driver's CUDA version (e.g. 12040 for 12.4), 0 when it cannot be asked; *missing is
 * set when the driver library cannot be loaded at all, with the loader's reason in why. */
static int driver_version(int *missing, char *why, size_t why_size)
{
    *missing = 0;
    void *lib = dlopen(OC_CUDA_DRIVER_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *err = dlerror();
        *missing = 1;
        snprintf(why, why_size, "%s", err ? err : "not found");
        return 0;
    }
    int version = 0;
    driver_version_fn get = (driver_version_fn)dlsym(lib, "cuDriverGetVersion");
    if (!get || get(&version) != 0) version = 0;
    dlclose(lib);
    return version;
}

void oc_cuda_no_device_reason(cudaError_t e, char *buf, size_t size)
{
    char why[256] = "";
    int missing = 0, driver = driver_version(&missing, why, sizeof why), runtime = 0;
    (void)cudaRuntimeGetVersion(&runtime);
    if (missing) {
        snprintf(buf, size, "no NVIDIA driver found (%s could not be loaded: %s)", OC_CUDA_DRIVER_LIBRARY, why);
        return;
    }
    switch (e) {
    case cudaErrorInsufficientDriver:
        snprintf(buf, size,
                 "the NVIDIA driver supports CUDA %d.%d but this outcore's CUDA runtime is %d.%d: update the driver",
                 driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
        return;
    case cudaErrorNoDevice:
        snprintf(buf, size, "the NVIDIA driver (CUDA %d.%d) finds no GPU", driver / 1000, driver % 1000 / 10);
        return;
    case cudaErrorDevicesUnavailable:
        snprintf(buf, size,
                 "every GPU is busy or prohibited (compute mode exclusive-process held by another process, or "
                 "prohibited: see nvidia-smi -q -d COMPUTE)");
        return;
    default:
        snprintf(buf, size, "CUDA cannot start: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        return;
    }
}
