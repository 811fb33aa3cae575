/*
 * inspect_driver.c - `inspect` with a GPU: the driver loads the code and says what each
 * kernel will really get.
 *
 * Order of work, and why:
 *   1. cuModuleLoadDataEx on the device's primary context (PTX is JIT-compiled here, with
 *      CU_JIT_MAX_REGISTERS and CU_JIT_OPTIMIZATION_LEVEL when the caller names them, so the
 *      figures are those of the producer's options). A module the caller loaded itself
 *      (oc_inspect_module: CuPy's) skips this step and is queried where it lives.
 *   2. cuModuleEnumerateFunctions (CUDA 12.4+) lists every kernel without knowing names.
 *   3. cuFuncLoad on each: with lazy loading (the default since CUDA 12.2) enumerated
 *      functions are not loaded yet, and some attributes fail or read 0 until they are.
 *   4. cuFuncGetAttribute for registers, static shared, local memory and the kernel's thread
 *      limit; with a block size also cuOccupancyMaxActiveBlocksPerMultiprocessor, the
 *      driver's own answer, reported beside outcore's verdict.
 * The context is pushed for the duration and popped on every path; the module is unloaded.
 *
 * The driver functions are looked up through the runtime (cudaGetDriverEntryPointByVersion)
 * rather than linked: libcuda.so.1 exists only where a driver is installed, and a library
 * that names it could not even be linked into programs on a build machine without a GPU.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cuda/driver_status.h"
#include "core/error.h"
#include "inspect/kernel_list.h"

/* The driver entry points used here, resolved once. */
typedef struct driver_api {
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*Init)(unsigned);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*DevicePrimaryCtxRelease)(CUdevice);
    CUresult (*CtxPushCurrent)(CUcontext);
    CUresult (*CtxPopCurrent)(CUcontext *);
    CUresult (*CtxGetCurrent)(CUcontext *);
    CUresult (*CtxGetDevice)(CUdevice *);
    CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned, CUjit_option *, void **);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunctionCount)(unsigned *, CUmodule);
    CUresult (*ModuleEnumerateFunctions)(CUfunction *, unsigned, CUmodule);
    CUresult (*FuncLoad)(CUfunction);
    CUresult (*FuncGetName)(const char **, CUfunction);
    CUresult (*FuncGetAttribute)(int *, CUfunction_attribute, CUfunction);
    CUresult (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *, CUfunction, int, size_t);
} driver_api;

static driver_api cu;

/* Resolves every entry point (the ABI of CUDA 12.4, the first with function enumeration). */
static oc_status driver_resolve(oc_context *ctx)
{
    static const char *const names[] = {
        "cuGetErrorName",
        "cuGetErrorString",
        "cuInit",
        "cuDeviceGet",
        "cuDeviceGetAttribute",
        "cuDevicePrimaryCtxRetain",
        "cuDevicePrimaryCtxRelease",
        "cuCtxPushCurrent",
        "cuCtxPopCurrent",
        "cuCtxGetCurrent",
        "cuCtxGetDevice",
        "cuModuleLoadDataEx",
        "cuModuleUnload",
        "cuModuleGetFunctionCount",
        "cuModuleEnumerateFunctions",
        "cuFuncLoad",
        "cuFuncGetName",
        "cuFuncGetAttribute",
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    };
    void **slots = (void **)&cu;
    _Static_assert(sizeof cu == sizeof names / sizeof names[0] * sizeof(void *), "one name per entry point");
    if (cu.OccupancyMaxActiveBlocksPerMultiprocessor) return OC_OK;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
        void *fn = NULL;
        cudaError_t e = cudaGetDriverEntryPointByVersion(names[i], &fn, 12040, cudaEnableDefault, &found);
        if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !fn) {
            (void)cudaGetLastError();
            memset(&cu, 0, sizeof cu);
            return oc_fail(ctx, OC_ERR_UNSUPPORTED, "the CUDA driver has no %s (CUDA 12.4 or later is needed): %s",
                           names[i], e != cudaSuccess ? cudaGetErrorString(e) : "symbol not found");
        }
        slots[i] = fn;
    }
    return OC_OK;
}

static oc_status cu_fail_at(oc_context *ctx, CUresult r, const char *call, const char *file, int line)
{
    const char *name = NULL, *text = NULL;
    cu.GetErrorName(r, &name);
    cu.GetErrorString(r, &text);
    return oc_fail_at(ctx, r == CUDA_ERROR_OUT_OF_MEMORY ? OC_ERR_DEVICE_NO_MEMORY : OC_ERR_DEVICE, file, line,
                      "%s: %s (%s)", call, text ? text : "unknown error", name ? name : "?");
}

#define CU_CHECK_GOTO(ctx, st, call, label)                                \
    do {                                                                   \
        CUresult oc_cu_r_ = (call);                                        \
        if (oc_cu_r_ != CUDA_SUCCESS) {                                    \
            (st) = cu_fail_at((ctx), oc_cu_r_, #call, __FILE__, __LINE__); \
            goto label;                                                    \
        }                                                                  \
    } while (0)

int oc_cuda_probe_device_cc(int device, char *why, size_t why_size)
{
    int count = 0, major = 0, minor = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && device >= count) {
        snprintf(why, why_size, count ? "no CUDA device %d (%d present)" : "no CUDA device present", device, count);
        return 0;
    }
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        oc_cuda_no_device_reason(e, why, why_size);
        return 0;
    }
    return major * 10 + minor;
}

static oc_status query_function(oc_context *ctx, const oc_gpu_arch *arch, CUfunction f, const oc_inspect_options *opts,
                                oc_kernel_list *out)
{
    oc_status st = OC_OK;
    const char *name = NULL;
    int regs = 0, smem = 0, local = 0, max_threads = 0, cmem = 0;
    oc_kernel_entry *e;
    CU_CHECK_GOTO(ctx, st, cu.FuncLoad(f), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.FuncGetName(&name, f), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.FuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.FuncGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.FuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.FuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.FuncGetAttribute(&cmem, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, f), cleanup);
    OC_CHECK_GOTO(ctx, st, oc_kernel_list_add(ctx, out, name, strlen(name), &e), cleanup);
    e->res.regs_per_thread = regs;
    e->res.static_smem = (size_t)smem;
    e->res.local_bytes = (size_t)local;
    /* The driver's MAX_THREADS_PER_BLOCK folds the registers and the kernel's launch bound into
     * one figure. Below what the registers alone allow, the difference is a launch bound. */
    e->res.max_threads_per_block = 0;
    if (arch && max_threads < oc_launch_largest_block(arch, &e->res, 0))
        e->launch_bounds = e->res.max_threads_per_block = max_threads;
    e->const_bytes = cmem;
    if (opts->block > 0) {
        int blocks = 0;
        CU_CHECK_GOTO(ctx, st,
                      cu.OccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, opts->block, (size_t)opts->dyn_smem),
                      cleanup);
        e->driver_blocks_per_sm = blocks;
    }
cleanup:
    return st;
}

/* Every kernel of a loaded module, queried on device dev (the current context's). */
static oc_status query_module(oc_context *ctx, CUmodule module, CUdevice dev, const oc_inspect_options *opts,
                              oc_kernel_list *out)
{
    oc_status st = OC_OK;
    unsigned count = 0;
    CUfunction *functions = NULL;
    int major = 0, minor = 0;
    CU_CHECK_GOTO(ctx, st, cu.ModuleGetFunctionCount(&count, module), cleanup);
    functions = calloc(count ? count : 1, sizeof *functions);
    if (!functions) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "out of host memory");
        goto cleanup;
    }
    CU_CHECK_GOTO(ctx, st, cu.ModuleEnumerateFunctions(functions, count, module), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), cleanup);
    const oc_gpu_arch *arch = oc_gpu_arch_find(major * 10 + minor);
    for (unsigned i = 0; i < count; i++)
        OC_CHECK_GOTO(ctx, st, query_function(ctx, arch, functions[i], opts, out), cleanup);
    out->code_cc = major * 10 + minor;
    snprintf(out->source, sizeof out->source, "CUDA driver");
cleanup:
    free(functions);
    return st;
}

/* The JIT options the caller asked for, as cuModuleLoadDataEx takes them (values by value). */
static unsigned jit_options(const oc_inspect_options *opts, CUjit_option names[2], void *values[2])
{
    unsigned n = 0;
    if (opts->maxrregcount > 0) {
        names[n] = CU_JIT_MAX_REGISTERS;
        values[n++] = (void *)(uintptr_t)(unsigned)opts->maxrregcount;
    }
    if (opts->opt_level >= 0) {
        names[n] = CU_JIT_OPTIMIZATION_LEVEL;
        values[n++] = (void *)(uintptr_t)(unsigned)opts->opt_level;
    }
    return n;
}

oc_status oc_cuda_probe_inspect(oc_context *ctx, const char *display, const void *image, size_t size, int device,
                                const oc_inspect_options *opts, oc_kernel_list *out)
{
    (void)size;
    oc_status st = OC_OK;
    CUdevice dev;
    CUcontext cu_ctx = NULL;
    CUmodule module = NULL;
    int pushed = 0;
    CUjit_option names[2];
    void *values[2];
    unsigned n_options = jit_options(opts, names, values);
    OC_CHECK_GOTO(ctx, st, driver_resolve(ctx), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.Init(0), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.DeviceGet(&dev, device), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.DevicePrimaryCtxRetain(&cu_ctx, dev), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.CtxPushCurrent(cu_ctx), cleanup);
    pushed = 1;
    CUresult r = cu.ModuleLoadDataEx(&module, image, n_options, n_options ? names : NULL, n_options ? values : NULL);
    if (r != CUDA_SUCCESS) {
        const char *text = NULL;
        cu.GetErrorString(r, &text);
        st = oc_fail(ctx,
                     r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_INVALID_IMAGE || r == CUDA_ERROR_NO_BINARY_FOR_GPU
                         ? OC_ERR_INPUT
                         : OC_ERR_DEVICE,
                     "%s: the driver cannot load it: %s", display, text ? text : "unknown error");
        goto cleanup;
    }
    OC_CHECK_GOTO(ctx, st, query_module(ctx, module, dev, opts, out), cleanup);
cleanup:
    if (module) cu.ModuleUnload(module);
    if (pushed) cu.CtxPopCurrent(NULL);
    if (cu_ctx) cu.DevicePrimaryCtxRelease(dev);
    return st;
}

oc_status oc_cuda_probe_inspect_module(oc_context *ctx, const char *display, void *module,
                                       const oc_inspect_options *opts, oc_kernel_list *out)
{
    oc_status st = OC_OK;
    CUdevice dev = 0;
    CUcontext current = NULL, primary = NULL;
    int pushed = 0;
    OC_CHECK_GOTO(ctx, st, driver_resolve(ctx), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.Init(0), cleanup);
    CU_CHECK_GOTO(ctx, st, cu.CtxGetCurrent(&current), cleanup);
    /* The module lives in the context that loaded it: normally the caller's current one (CuPy
     * and numba both use the device's primary context). */
    if (!current) {
        CU_CHECK_GOTO(ctx, st, cu.DeviceGet(&dev, 0), cleanup);
        CU_CHECK_GOTO(ctx, st, cu.DevicePrimaryCtxRetain(&primary, dev), cleanup);
        CU_CHECK_GOTO(ctx, st, cu.CtxPushCurrent(primary), cleanup);
        pushed = 1;
    }
    CU_CHECK_GOTO(ctx, st, cu.CtxGetDevice(&dev), cleanup);
    OC_CHECK_GOTO(ctx, st, query_module(ctx, (CUmodule)module, dev, opts, out), cleanup);
cleanup:
    if (pushed) cu.CtxPopCurrent(NULL);
    if (primary) cu.DevicePrimaryCtxRelease(dev);
    if (st != OC_OK) {
        /* Name the caller's object: the driver's message alone does not say what was asked. */
        char why[512];
        snprintf(why, sizeof why, "%s", oc_context_last_error(ctx));
        st = oc_fail(ctx, st, "%s: the driver cannot query the loaded module: %s", display, why);
    }
    return st;
}
