/*
 * devices.c - `outcore devices` on a CUDA build: each GPU's limits and, on request, measured
 * host<->device copy rates. Also defines oc_gpu_probe_cuda, the table through which core/ and
 * io/ reach the driver without including CUDA headers.
 *
 * Bandwidth method: one buffer of up to 256 MiB per direction, each copy timed on the host
 * clock, 2 untimed warm-up copies then 7 timed, the median reported. Pageable copies
 * go through the driver's own staging buffer (that is the point of measuring them); "both at
 * once" runs a pinned H2D and a pinned D2H on two streams started by one event and reports
 * the total bytes over the span until both ended.
 *
 * PCIe generation and width come from NVML when libnvidia-ml.so.1 can be loaded at run time
 * (outcore does not link it); without it they read 0 and the text says why.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/gpu_probe.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/device.h"
#include "engine/cuda/driver_status.h"
#include "engine/cuda/panel_exchange.h"

int oc_cuda_probe_device_cc(int device, char *why, size_t why_size);
oc_status oc_cuda_probe_inspect(oc_context *ctx, const char *display, const void *image, size_t size, int device,
                                const oc_inspect_options *opts, struct oc_kernel_list *out);
oc_status oc_cuda_probe_inspect_module(oc_context *ctx, const char *display, void *module,
                                       const oc_inspect_options *opts, struct oc_kernel_list *out);

/* ------------------------------------------------------------------ NVML, optional */

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_handle_fn)(const char *, void **);
typedef int (*nvml_uint_fn)(void *, unsigned *);

static void pcie_link(oc_device_info *g)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    nvml_init_fn init = (nvml_init_fn)dlsym(lib, "nvmlInit_v2");
    nvml_init_fn shutdown = (nvml_init_fn)dlsym(lib, "nvmlShutdown");
    nvml_handle_fn by_bus = (nvml_handle_fn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    nvml_uint_fn gen = (nvml_uint_fn)dlsym(lib, "nvmlDeviceGetCurrPcieLinkGeneration");
    nvml_uint_fn width = (nvml_uint_fn)dlsym(lib, "nvmlDeviceGetCurrPcieLinkWidth");
    nvml_uint_fn gen_max = (nvml_uint_fn)dlsym(lib, "nvmlDeviceGetMaxPcieLinkGeneration");
    nvml_uint_fn width_max = (nvml_uint_fn)dlsym(lib, "nvmlDeviceGetMaxPcieLinkWidth");
    void *dev = NULL;
    unsigned v;
    if (init && shutdown && by_bus && gen && width && gen_max && width_max && init() == 0) {
        if (by_bus(g->pci_bus_id, &dev) == 0) {
            if (gen(dev, &v) == 0) g->pcie_gen = (int)v;
            if (width(dev, &v) == 0) g->pcie_width = (int)v;
            if (gen_max(dev, &v) == 0) g->pcie_gen_max = (int)v;
            if (width_max(dev, &v) == 0) g->pcie_width_max = (int)v;
        }
        shutdown();
    }
    dlclose(lib);
}

/* ------------------------------------------------------------------ bandwidth */

#define BW_WARMUP 2
#define BW_RUNS 7

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Median GB/s of BW_RUNS copies of `bytes` (after BW_WARMUP untimed ones), timed on the host
 * from the call to the end of the copy: what a program waiting for its data sees, and the
 * only clock that includes the staging of pageable copies. */
static oc_status time_copy(oc_context *ctx, void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                           cudaStream_t s, double *gbps)
{
    double rates[BW_RUNS];
    for (int i = 0; i < BW_WARMUP + BW_RUNS; i++) {
        double t0 = now_seconds();
        CUDA_CHECK(ctx, cudaMemcpyAsync(dst, src, bytes, kind, s));
        CUDA_CHECK(ctx, cudaStreamSynchronize(s));
        double t = now_seconds() - t0;
        if (i >= BW_WARMUP) rates[i - BW_WARMUP] = (double)bytes / 1e9 / t;
    }
    qsort(rates, BW_RUNS, sizeof rates[0], compare_double);
    *gbps = rates[BW_RUNS / 2];
    return OC_OK;
}

/* Both directions at once: a pinned H2D on s1 and a pinned D2H on s2, total bytes over the
 * span until both ended. */
static oc_status time_bidirectional(oc_context *ctx, void *dev_a, void *dev_b, void *host_a, void *host_b, size_t bytes,
                                    cudaStream_t s1, cudaStream_t s2, double *gbps)
{
    double rates[BW_RUNS];
    for (int i = 0; i < BW_WARMUP + BW_RUNS; i++) {
        double t0 = now_seconds();
        CUDA_CHECK(ctx, cudaMemcpyAsync(dev_a, host_a, bytes, cudaMemcpyHostToDevice, s1));
        CUDA_CHECK(ctx, cudaMemcpyAsync(host_b, dev_b, bytes, cudaMemcpyDeviceToHost, s2));
        CUDA_CHECK(ctx, cudaStreamSynchronize(s1));
        CUDA_CHECK(ctx, cudaStreamSynchronize(s2));
        double t = now_seconds() - t0;
        if (i >= BW_WARMUP) rates[i - BW_WARMUP] = 2.0 * (double)bytes / 1e9 / t;
    }
    qsort(rates, BW_RUNS, sizeof rates[0], compare_double);
    *gbps = rates[BW_RUNS / 2];
    return OC_OK;
}

static oc_status measure_bandwidth(oc_context *ctx, oc_device_info *g)
{
    oc_status st = OC_OK;
    size_t bytes = (size_t)256 << 20;
    /* Two device buffers must fit with room to spare on a busy GPU. */
    if ((int64_t)bytes * 4 > g->mem_free_bytes) bytes = (size_t)(g->mem_free_bytes / 4) & ~(size_t)0xfffff;
    if (bytes < ((size_t)1 << 20))
        return oc_fail(ctx, OC_ERR_DEVICE_NO_MEMORY, "GPU %d: %lld bytes free, too little to measure bandwidth",
                       g->index, (long long)g->mem_free_bytes);
    void *dev_a = NULL, *dev_b = NULL, *pin_a = NULL, *pin_b = NULL;
    char *pageable = NULL;
    cudaStream_t s1 = NULL, s2 = NULL;
    CUDA_CHECK_GOTO(ctx, st, cudaMalloc(&dev_a, bytes), cleanup);
    CUDA_CHECK_GOTO(ctx, st, cudaMalloc(&dev_b, bytes), cleanup);
    CUDA_CHECK_GOTO(ctx, st, cudaMallocHost(&pin_a, bytes), cleanup);
    CUDA_CHECK_GOTO(ctx, st, cudaMallocHost(&pin_b, bytes), cleanup);
    pageable = malloc(bytes);
    if (!pageable) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "out of host memory for a %zu-byte bandwidth buffer", bytes);
        goto cleanup;
    }
    /* Touch every page so the first timed copy does not pay for page faults. */
    memset(pageable, 1, bytes);
    memset(pin_a, 1, bytes);
    memset(pin_b, 1, bytes);
    CUDA_CHECK_GOTO(ctx, st, cudaMemset(dev_a, 0, bytes), cleanup);
    CUDA_CHECK_GOTO(ctx, st, cudaMemset(dev_b, 0, bytes), cleanup);
    CUDA_CHECK_GOTO(ctx, st, cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cleanup);
    CUDA_CHECK_GOTO(ctx, st, cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cleanup);
    OC_CHECK_GOTO(ctx, st, time_copy(ctx, dev_a, pageable, bytes, cudaMemcpyHostToDevice, s1, &g->h2d_pageable),
                  cleanup);
    OC_CHECK_GOTO(ctx, st, time_copy(ctx, pageable, dev_a, bytes, cudaMemcpyDeviceToHost, s1, &g->d2h_pageable),
                  cleanup);
    OC_CHECK_GOTO(ctx, st, time_copy(ctx, dev_a, pin_a, bytes, cudaMemcpyHostToDevice, s1, &g->h2d_pinned), cleanup);
    OC_CHECK_GOTO(ctx, st, time_copy(ctx, pin_a, dev_a, bytes, cudaMemcpyDeviceToHost, s1, &g->d2h_pinned), cleanup);
    OC_CHECK_GOTO(ctx, st, time_bidirectional(ctx, dev_a, dev_b, pin_a, pin_b, bytes, s1, s2, &g->bidir_pinned),
                  cleanup);
    g->bandwidth_bytes = (int64_t)bytes;
cleanup:
    if (s2) cudaStreamDestroy(s2);
    if (s1) cudaStreamDestroy(s1);
    free(pageable);
    if (pin_b) cudaFreeHost(pin_b);
    if (pin_a) cudaFreeHost(pin_a);
    if (dev_b) cudaFree(dev_b);
    if (dev_a) cudaFree(dev_a);
    return st;
}

/* ------------------------------------------------------------------ the device list */

static oc_status describe(oc_context *ctx, int index, int bandwidth, oc_device_info *g)
{
    struct cudaDeviceProp p;
    size_t free_bytes = 0, total_bytes = 0;
    memset(g, 0, sizeof *g);
    g->index = index;
    CUDA_CHECK(ctx, cudaGetDeviceProperties(&p, index));
    CUDA_CHECK(ctx, cudaSetDevice(index));
    CUDA_CHECK(ctx, cudaMemGetInfo(&free_bytes, &total_bytes));
    snprintf(g->name, sizeof g->name, "%s", p.name);
    g->cc = p.major * 10 + p.minor;
    g->sm_count = p.multiProcessorCount;
    g->mem_total_bytes = (int64_t)total_bytes;
    g->mem_free_bytes = (int64_t)free_bytes;
    g->regs_per_sm = p.regsPerMultiprocessor;
    g->regs_per_block = p.regsPerBlock;
    g->smem_per_block = (int64_t)p.sharedMemPerBlock;
    g->smem_per_block_optin = (int64_t)p.sharedMemPerBlockOptin;
    g->smem_per_sm = (int64_t)p.sharedMemPerMultiprocessor;
    g->max_threads_per_block = p.maxThreadsPerBlock;
    g->max_threads_per_sm = p.maxThreadsPerMultiProcessor;
    g->copy_engines = p.asyncEngineCount;
    CUDA_CHECK(ctx, cudaDeviceGetPCIBusId(g->pci_bus_id, (int)sizeof g->pci_bus_id, index));
    pcie_link(g);
    if (bandwidth) OC_CHECK(ctx, measure_bandwidth(ctx, g));
    return OC_OK;
}

static oc_status probe_devices(oc_context *ctx, int bandwidth, oc_devices *d)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        oc_cuda_no_device_reason(e != cudaSuccess ? e : cudaErrorNoDevice, d->no_gpu_reason, sizeof d->no_gpu_reason);
        return OC_OK;
    }
    d->devices = calloc((size_t)count, sizeof *d->devices);
    if (!d->devices) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of host memory");
    for (int i = 0; i < count; i++) {
        OC_CHECK(ctx, describe(ctx, i, bandwidth, &d->devices[i]));
        d->count = i + 1;
    }
    return OC_OK;
}

/* Driver version, then each GPU's name and UUID (the cost model's cache key), from the
 * driver's device queries: they make no context, where the runtime's device properties
 * would start its state on every GPU of the host for a job that uses one. */
typedef int (*cu_device_get_fn)(int *device, int ordinal);
typedef int (*cu_device_name_fn)(char *name, int len, int device);
typedef int (*cu_device_uuid_fn)(unsigned char *uuid, int device);

static void gpu_identity(char *buf, size_t size)
{
    int count = 0, driver = 0;
    buf[0] = '\0';
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        return;
    }
    void *lib = dlopen(OC_CUDA_DRIVER_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
    cu_device_get_fn device_get = (cu_device_get_fn)dlsym(lib, "cuDeviceGet");
    cu_device_name_fn device_name = (cu_device_name_fn)dlsym(lib, "cuDeviceGetName");
    cu_device_uuid_fn device_uuid = (cu_device_uuid_fn)dlsym(lib, "cuDeviceGetUuid_v2");
    if (!device_uuid) device_uuid = (cu_device_uuid_fn)dlsym(lib, "cuDeviceGetUuid");
    (void)cudaDriverGetVersion(&driver);
    size_t len = (size_t)snprintf(buf, size, "driver %d", driver);
    for (int i = 0; i < count && len < size && device_get && device_name && device_uuid; i++) {
        int dev = 0;
        char name[256];
        unsigned char uuid[16];
        if (device_get(&dev, i) != 0 || device_name(name, (int)sizeof name, dev) != 0 || device_uuid(uuid, dev) != 0)
            continue;
        len += (size_t)snprintf(buf + len, size - len, "; %s GPU-", name);
        for (int b = 0; b < 16 && len < size; b++) len += (size_t)snprintf(buf + len, size - len, "%02x", uuid[b]);
    }
    dlclose(lib);
}

/* Device `device`'s primary context, made now on the calling thread (errors are left for
 * the job that opens the device to report). */
static void make_context(int device)
{
    oc_cuda_note_context(device);
    if (cudaSetDevice(device) != cudaSuccess || cudaFree(0) != cudaSuccess) (void)cudaGetLastError();
}

/* Peer access among the job's devices ahead of it, as the panel exchange would enable it
 * (unless OUTCORE_PANEL_EXCHANGE=0 turns the exchange off). */
static void peer_access(const int *devices, int count)
{
    if (count > 1 && oc_panel_exchange_wanted()) (void)oc_panel_exchange_peers(devices, count);
}

const oc_gpu_probe oc_gpu_probe_cuda = {
    oc_cuda_probe_device_cc,
    oc_cuda_probe_inspect,
    oc_cuda_probe_inspect_module,
    probe_devices,
    gpu_identity,
    make_context,
    peer_access,
    oc_cuda_host_pin,
    oc_cuda_host_unpin,
    oc_cuda_memory_device,
    oc_cuda_device_usable,
};
