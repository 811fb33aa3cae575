/*
 * nvrtc.c - NVRTC through dlopen, the in-process module cache, the driver's module loading
 * (nvrtc.h draws the caches). The disk cache is nvrtc_cache.c.
 */
#include "map/cuda/nvrtc.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "engine/cuda/driver_status.h"
#include "map/cuda/nvrtc_cache.h"
#include "core/process/fork_locks.h"

/* ---------------------------------------------------------------- the library */
typedef int nvrtc_result; /* nvrtcResult: 0 is NVRTC_SUCCESS */
typedef struct nvrtc_program_ *nvrtc_program;

static struct {
    pthread_once_t once;
    void *lib;
    char why[256];
    int version;
    const char *(*error_string)(nvrtc_result);
    nvrtc_result (*create)(nvrtc_program *, const char *, const char *, int, const char *const *, const char *const *);
    nvrtc_result (*destroy)(nvrtc_program *);
    nvrtc_result (*compile)(nvrtc_program, int, const char *const *);
    nvrtc_result (*log_size)(nvrtc_program, size_t *);
    nvrtc_result (*log)(nvrtc_program, char *);
    nvrtc_result (*cubin_size)(nvrtc_program, size_t *);
    nvrtc_result (*cubin)(nvrtc_program, char *);
    nvrtc_result (*ptx_size)(nvrtc_program, size_t *);
    nvrtc_result (*ptx)(nvrtc_program, char *);
    nvrtc_result (*num_archs)(int *);
    nvrtc_result (*archs)(int *);
} nv = {.once = PTHREAD_ONCE_INIT};

/* The names a toolkit installs the library under, newest first; the unversioned name last
 * (only development installs have it). */
static const char *const nvrtc_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"};

static void nvrtc_load(void)
{
    for (size_t i = 0; i < sizeof nvrtc_names / sizeof nvrtc_names[0] && !nv.lib; ++i)
        nv.lib = dlopen(nvrtc_names[i], RTLD_NOW | RTLD_LOCAL);
    if (!nv.lib) {
        const char *err = dlerror();
        snprintf(nv.why, sizeof nv.why, "libnvrtc could not be loaded (%s)", err ? err : "not found");
        return;
    }
#define SYM(field, name) *(void **)&nv.field = dlsym(nv.lib, name)
    nvrtc_result (*version)(int *, int *);
    *(void **)&version = dlsym(nv.lib, "nvrtcVersion");
    SYM(error_string, "nvrtcGetErrorString");
    SYM(create, "nvrtcCreateProgram");
    SYM(destroy, "nvrtcDestroyProgram");
    SYM(compile, "nvrtcCompileProgram");
    SYM(log_size, "nvrtcGetProgramLogSize");
    SYM(log, "nvrtcGetProgramLog");
    SYM(cubin_size, "nvrtcGetCUBINSize");
    SYM(cubin, "nvrtcGetCUBIN");
    SYM(ptx_size, "nvrtcGetPTXSize");
    SYM(ptx, "nvrtcGetPTX");
    SYM(num_archs, "nvrtcGetNumSupportedArchs");
    SYM(archs, "nvrtcGetSupportedArchs");
#undef SYM
    int major = 0, minor = 0;
    /* Cubin output (nvrtcGetCUBIN) came with NVRTC 11.1; older ones are refused as a whole
     * rather than half used. */
    if (!version || !nv.error_string || !nv.create || !nv.destroy || !nv.compile || !nv.log_size || !nv.log ||
        !nv.cubin_size || !nv.cubin || !nv.ptx_size || !nv.ptx || version(&major, &minor) != 0) {
        snprintf(nv.why, sizeof nv.why, "libnvrtc is too old or incomplete (NVRTC 11.2 or later is needed)");
        dlclose(nv.lib);
        nv.lib = NULL;
        return;
    }
    nv.version = major * 1000 + minor * 10;
}

int oc_nvrtc_available(char *why, size_t why_size)
{
    pthread_once(&nv.once, nvrtc_load);
    if (!nv.lib && why && why_size) snprintf(why, why_size, "%s", nv.why);
    return nv.lib != NULL;
}

int oc_nvrtc_version(void) { return oc_nvrtc_available(NULL, 0) ? nv.version : 0; }

void oc_nvrtc_image_free(oc_nvrtc_image *img)
{
    if (!img) return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

/* ---------------------------------------------------------------- compiling */
/* The target NVRTC compiles cc for: cc itself (cubin) when NVRTC knows it, else the newest
 * architecture it knows below cc, as PTX that the driver compiles for the device. */
static int nvrtc_target(int cc, int *cubin)
{
    *cubin = 1;
    int n = 0;
    if (!nv.num_archs || !nv.archs || nv.num_archs(&n) != 0 || n <= 0 || n > 256) return cc;
    int archs[256], best = 0;
    if (nv.archs(archs) != 0) return cc;
    for (int i = 0; i < n; ++i) {
        if (archs[i] == cc) return cc;
        if (archs[i] < cc && archs[i] > best) best = archs[i];
    }
    if (!best) return cc; /* older than anything NVRTC knows: let NVRTC say so */
    *cubin = 0;
    return best;
}

/* NVRTC's log as one line: newlines become "; ", runs of blanks one space, cut at a size a
 * message can carry; the file name NVRTC prefixes to every line is dropped (the program is
 * named once in front). */
static void fold_log(const char *log, const char *name, char *out, size_t size)
{
    size_t n = 0, name_len = strlen(name);
    int space = 0;
    for (const char *p = log; *p && n + 8 < size; ++p) {
        if (p == log || p[-1] == '\n') {
            /* The caret line under the echoed source says nothing without its columns. */
            const char *q = p;
            while (*q == ' ' || *q == '\t') ++q;
            if (*q == '^') {
                ++q;
                while (*q == ' ' || *q == '\t') ++q;
                if (*q == '\n' || *q == '\r' || *q == '\0') {
                    while (*q == '\n' || *q == '\r') ++q; /* and the blank lines after it */
                    p = q - 1;                            /* the loop's ++p lands on q */
                    continue;
                }
            }
        }
        if ((p == log || p[-1] == '\n') && strncmp(p, name, name_len) == 0) {
            /* "name(12): error: ..." becomes "line 12: error: ..." */
            p += name_len;
            int line = 0, used = 0;
            if (sscanf(p, "(%d):%n", &line, &used) == 1 && used > 0 && n + 24 < size) {
                n += (size_t)snprintf(out + n, size - n, "line %d:", line);
                p += used - 1; /* the loop's ++p steps past the ':' */
                space = 0;
                continue;
            }
        }
        if (!*p) break;
        if (*p == '\n' || *p == '\r') {
            while (p[1] == '\n' || p[1] == '\r') ++p;
            if (p[1] && n) out[n++] = ';', out[n++] = ' ';
            space = 1;
            continue;
        }
        if (*p == ' ' || *p == '\t') {
            if (!space && n) out[n++] = ' ';
            space = 1;
            continue;
        }
        out[n++] = *p;
        space = 0;
    }
    if (n + 8 >= size && size > 4) memcpy(out + size - 5, "...", 4), n = size - 2;
    while (n && (out[n - 1] == ' ' || out[n - 1] == ';')) --n;
    out[n < size ? n : size - 1] = '\0';
}

static oc_status nvrtc_run(oc_context *ctx, const oc_nvrtc_source *src, int target, int cubin, oc_nvrtc_image *out)
{
    const char *name = src->name ? src->name : "kernel.cu";
    nvrtc_program prog = NULL;
    nvrtc_result r = nv.create(&prog, src->code, name, 0, NULL, NULL);
    if (r != 0) return oc_fail(ctx, OC_ERR_NO_MEMORY, "nvrtc: %s: %s", name, nv.error_string(r));
    oc_status st = OC_OK;
    char arch[40];
    snprintf(arch, sizeof arch, "--gpu-architecture=%s_%d", cubin ? "sm" : "compute", target);
    const char **opts = malloc(sizeof *opts * (size_t)(src->noptions + 2));
    if (!opts) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "nvrtc: %s: out of memory", name);
        goto cleanup;
    }
    int nopts = 0;
    opts[nopts++] = arch;
    opts[nopts++] = "--std=c++17";
    for (int i = 0; i < src->noptions; ++i) opts[nopts++] = src->options[i];
    r = nv.compile(prog, nopts, opts);
    free(opts);
    if (r != 0) {
        size_t len = 0;
        char *log = NULL, line[700] = "";
        if (nv.log_size(prog, &len) == 0 && len > 1 && (log = malloc(len)) && nv.log(prog, log) == 0)
            fold_log(log, name, line, sizeof line);
        free(log);
        st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "nvrtc: %s does not compile for %s_%d: %s", name,
                     cubin ? "sm" : "compute", target, line[0] ? line : nv.error_string(r));
        goto cleanup;
    }
    size_t size = 0;
    r = cubin ? nv.cubin_size(prog, &size) : nv.ptx_size(prog, &size);
    if (r == 0 && size > 0 && (out->data = malloc(size)) != NULL)
        r = cubin ? nv.cubin(prog, out->data) : nv.ptx(prog, out->data);
    if (r != 0 || !out->data) {
        free(out->data);
        out->data = NULL;
        st = oc_fail(ctx, r ? OC_ERR_INTERNAL : OC_ERR_NO_MEMORY, "nvrtc: %s: reading the compiled code: %s", name,
                     r ? nv.error_string(r) : "out of memory");
        goto cleanup;
    }
    out->size = size;
    out->is_cubin = cubin;
    out->target = target;
cleanup:
    nv.destroy(&prog);
    return st;
}

oc_status oc_nvrtc_compile(oc_context *ctx, const oc_nvrtc_source *src, int cc, oc_nvrtc_image *out)
{
    memset(out, 0, sizeof *out);
    char why[300];
    if (!oc_nvrtc_available(why, sizeof why))
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "run-time compilation of CUDA kernels needs NVRTC: %s", why);
    int cubin = 1, target = nvrtc_target(cc, &cubin);
    oc_nvrtc_key key;
    oc_nvrtc_key_make(src, target, cubin, nv.version, &key);
    if (oc_nvrtc_cache_read(&key, out)) return OC_OK;
    OC_CHECK(ctx, nvrtc_run(ctx, src, target, cubin, out));
    oc_nvrtc_cache_write(&key, out);
    return OC_OK;
}

/* ---------------------------------------------------------------- the driver
 * The driver's module calls through dlsym too: a direct call would make libcuda.so.1 a
 * load-time dependency of the library, which must load on machines without a driver. */
static struct {
    pthread_once_t once;
    CUresult (*ctx_current)(CUcontext *);
    CUresult (*ctx_device)(CUdevice *);
    CUresult (*attribute)(int *, CUdevice_attribute, CUdevice);
    CUresult (*load)(CUmodule *, const void *);
    CUresult (*unload)(CUmodule);
    CUresult (*function)(CUfunction *, CUmodule, const char *);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                       void **, void **);
    CUresult (*error_string)(CUresult, const char **);
} drv = {.once = PTHREAD_ONCE_INIT};

static void driver_load(void)
{
    void *lib = dlopen(OC_CUDA_DRIVER_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return;
#define SYM(lib, field, name) *(void **)&drv.field = dlsym(lib, name)
    SYM(lib, ctx_current, "cuCtxGetCurrent");
    SYM(lib, ctx_device, "cuCtxGetDevice");
    SYM(lib, attribute, "cuDeviceGetAttribute");
    SYM(lib, load, "cuModuleLoadData");
    SYM(lib, unload, "cuModuleUnload");
    SYM(lib, function, "cuModuleGetFunction");
    SYM(lib, launch, "cuLaunchKernel");
    SYM(lib, error_string, "cuGetErrorString");
#undef SYM
    if (!drv.ctx_current || !drv.ctx_device || !drv.attribute || !drv.load || !drv.unload || !drv.function ||
        !drv.launch || !drv.error_string)
        drv.ctx_current = NULL; /* incomplete: treated as no driver; the library stays loaded */
}

static int driver_ready(void)
{
    pthread_once(&drv.once, driver_load);
    return drv.ctx_current != NULL;
}

/* ---------------------------------------------------------------- loaded modules */
/* Modules loaded in this process, newest first; never unloaded (a generated kernel is used
 * again by the next job of the same expression, and a module costs a few KiB). */
typedef struct loaded_module {
    struct loaded_module *next;
    oc_nvrtc_key key;
    CUcontext cuctx;
    CUmodule module;
} loaded_module;

static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
OC_FORK_LOCK(modules_lock, OC_FORK_RANK_CUDA, NULL)
static loaded_module *modules;

static oc_status driver_fail(oc_context *ctx, CUresult r, const char *call, const char *name)
{
    const char *s = NULL;
    if (drv.error_string(r, &s) != CUDA_SUCCESS || !s) s = "unknown driver error";
    return oc_fail(ctx, r == CUDA_ERROR_OUT_OF_MEMORY ? OC_ERR_DEVICE_NO_MEMORY : OC_ERR_DEVICE, "%s (%s): %s", call,
                   name, s);
}

/* The current context's module for src, loaded now when this process has not loaded it. */
static oc_status module_for(oc_context *ctx, const oc_nvrtc_source *src, CUmodule *out)
{
    const char *name = src->name ? src->name : "kernel.cu";
    CUcontext cuctx = NULL;
    CUdevice dev = 0;
    if (!driver_ready()) return oc_fail(ctx, OC_ERR_UNSUPPORTED, "nvrtc: %s: no usable CUDA driver", name);
    CUresult r = drv.ctx_current(&cuctx);
    if (r != CUDA_SUCCESS || !cuctx) return oc_fail(ctx, OC_ERR_DEVICE, "nvrtc: %s: no current CUDA context", name);
    int major = 0, minor = 0;
    if ((r = drv.ctx_device(&dev)) != CUDA_SUCCESS ||
        (r = drv.attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) != CUDA_SUCCESS ||
        (r = drv.attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) != CUDA_SUCCESS)
        return driver_fail(ctx, r, "cuDeviceGetAttribute", name);
    char why[300];
    if (!oc_nvrtc_available(why, sizeof why))
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "run-time compilation of CUDA kernels needs NVRTC: %s", why);
    int cc = major * 10 + minor, cubin = 1, target = nvrtc_target(cc, &cubin);
    oc_nvrtc_key key;
    oc_nvrtc_key_make(src, target, cubin, nv.version, &key);

    pthread_mutex_lock(&modules_lock);
    for (loaded_module *m = modules; m; m = m->next)
        if (m->cuctx == cuctx && oc_nvrtc_key_equal(&m->key, &key)) {
            *out = m->module;
            pthread_mutex_unlock(&modules_lock);
            return OC_OK;
        }
    pthread_mutex_unlock(&modules_lock);

    /* Compiled outside the lock: another thread may compile the same source meanwhile, and
     * the second module is then simply not kept. */
    oc_nvrtc_image img;
    OC_CHECK(ctx, oc_nvrtc_compile(ctx, src, cc, &img));
    CUmodule module = NULL;
    r = drv.load(&module, img.data);
    oc_nvrtc_image_free(&img);
    if (r != CUDA_SUCCESS) return driver_fail(ctx, r, "cuModuleLoadData", name);
    loaded_module *m = calloc(1, sizeof *m);
    if (!m) {
        drv.unload(module);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "nvrtc: %s: out of memory", name);
    }
    m->key = key, m->cuctx = cuctx, m->module = module;
    pthread_mutex_lock(&modules_lock);
    for (loaded_module *o = modules; o; o = o->next)
        if (o->cuctx == cuctx && oc_nvrtc_key_equal(&o->key, &key)) {
            *out = o->module;
            pthread_mutex_unlock(&modules_lock);
            drv.unload(module);
            free(m);
            return OC_OK;
        }
    m->next = modules;
    modules = m;
    pthread_mutex_unlock(&modules_lock);
    *out = module;
    return OC_OK;
}

oc_status oc_nvrtc_function(oc_context *ctx, const oc_nvrtc_source *src, const char *kernel, CUfunction *out)
{
    CUmodule module = NULL;
    OC_CHECK(ctx, module_for(ctx, src, &module));
    CUresult r = drv.function(out, module, kernel);
    if (r == CUDA_ERROR_NOT_FOUND)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "nvrtc: %s has no kernel named %s (declare it extern \"C\")",
                       src->name ? src->name : "kernel.cu", kernel);
    if (r != CUDA_SUCCESS) return driver_fail(ctx, r, "cuModuleGetFunction", kernel);
    return OC_OK;
}

oc_status oc_nvrtc_launch(oc_context *ctx, CUfunction fn, const char *name, const unsigned grid[3],
                          const unsigned block[3], unsigned dyn_smem, CUstream stream, void **args)
{
    if (!driver_ready()) return oc_fail(ctx, OC_ERR_UNSUPPORTED, "launch of %s: no usable CUDA driver", name);
    CUresult r = drv.launch(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], dyn_smem, stream, args, NULL);
    return r == CUDA_SUCCESS ? OC_OK : driver_fail(ctx, r, "cuLaunchKernel", name);
}
