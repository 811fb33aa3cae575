/*
 * cublaslt.c - cuBLASLt through dlopen (cublaslt.h says why and where it is looked for).
 */
#include "matmul/cuda/cublaslt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    pthread_once_t once;
    void *lib;
    char why[512];
    oc_cublaslt_api api;
} lt = {.once = PTHREAD_ONCE_INIT};

/* The names toolkits install the library under, newest first. */
static const char *const cublaslt_names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"};

static void cublaslt_load(void)
{
    const char *forced = getenv("OUTCORE_CUBLASLT");
    const char *err = NULL;
    if (forced && *forced) {
        lt.lib = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
        if (!lt.lib) {
            err = dlerror();
            snprintf(lt.why, sizeof lt.why, "OUTCORE_CUBLASLT=%s could not be loaded (%s)", forced,
                     err ? err : "not found");
            return;
        }
        snprintf(lt.api.library, sizeof lt.api.library, "%s", forced);
    }
    for (size_t i = 0; i < sizeof cublaslt_names / sizeof cublaslt_names[0] && !lt.lib; ++i) {
        lt.lib = dlopen(cublaslt_names[i], RTLD_NOW | RTLD_LOCAL);
        if (lt.lib) snprintf(lt.api.library, sizeof lt.api.library, "%s", cublaslt_names[i]);
        else err = dlerror();
    }
    if (!lt.lib) {
        snprintf(lt.why, sizeof lt.why,
                 "libcublasLt could not be loaded (libcublasLt.so.13, .so.12, .so.11 tried; set OUTCORE_CUBLASLT "
                 "to its path): %s",
                 err ? err : "not found");
        return;
    }
    /* The functions by name, each into its field of the table. */
    static const struct {
        size_t offset;
        const char *name;
    } symbols[] = {
        {offsetof(oc_cublaslt_api, create), "cublasLtCreate"},
        {offsetof(oc_cublaslt_api, destroy), "cublasLtDestroy"},
        {offsetof(oc_cublaslt_api, desc_create), "cublasLtMatmulDescCreate"},
        {offsetof(oc_cublaslt_api, desc_set), "cublasLtMatmulDescSetAttribute"},
        {offsetof(oc_cublaslt_api, desc_destroy), "cublasLtMatmulDescDestroy"},
        {offsetof(oc_cublaslt_api, layout_create), "cublasLtMatrixLayoutCreate"},
        {offsetof(oc_cublaslt_api, layout_set), "cublasLtMatrixLayoutSetAttribute"},
        {offsetof(oc_cublaslt_api, layout_destroy), "cublasLtMatrixLayoutDestroy"},
        {offsetof(oc_cublaslt_api, pref_create), "cublasLtMatmulPreferenceCreate"},
        {offsetof(oc_cublaslt_api, pref_set), "cublasLtMatmulPreferenceSetAttribute"},
        {offsetof(oc_cublaslt_api, pref_destroy), "cublasLtMatmulPreferenceDestroy"},
        {offsetof(oc_cublaslt_api, heuristic), "cublasLtMatmulAlgoGetHeuristic"},
        {offsetof(oc_cublaslt_api, matmul), "cublasLtMatmul"},
    };
    const char *missing = NULL;
    for (size_t k = 0; k < sizeof symbols / sizeof symbols[0]; ++k) {
        void *fn = dlsym(lt.lib, symbols[k].name);
        memcpy((char *)&lt.api + symbols[k].offset, &fn, sizeof fn);
        if (!fn && !missing) missing = symbols[k].name;
    }
    if (missing) {
        snprintf(lt.why, sizeof lt.why, "%s lacks %s (cuBLASLt 11 or later is needed)", lt.api.library, missing);
        dlclose(lt.lib);
        lt.lib = NULL;
        return;
    }
    size_t (*version)(void);
    *(void **)&version = dlsym(lt.lib, "cublasLtGetVersion");
    lt.api.version = version ? version() : 0;
}

const oc_cublaslt_api *oc_cublaslt_load(char *why, size_t why_size)
{
    pthread_once(&lt.once, cublaslt_load);
    if (!lt.lib && why && why_size) snprintf(why, why_size, "%s", lt.why);
    return lt.lib ? &lt.api : NULL;
}

const char *oc_cublaslt_status_name(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS:
        return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
        return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
        return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
        return "CUBLAS_STATUS_LICENSE_ERROR";
    default:
        return "an unknown cuBLASLt status";
    }
}
