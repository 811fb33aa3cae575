/*
 * cublaslt.c - cuBLASLt through dlopen (cublaslt.h says why and where it is looked for).
 */
#include "matmul/cuda/cublaslt.h"

#include <dlfcn.h>
#include <pthread.h>
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
    const char *missing = NULL;
#define SYM(field, name)                               \
    do {                                               \
        *(void **)&lt.api.field = dlsym(lt.lib, name); \
        if (!lt.api.field && !missing) missing = name; \
    } while (0)
    SYM(create, "cublasLtCreate");
    SYM(destroy, "cublasLtDestroy");
    SYM(desc_create, "cublasLtMatmulDescCreate");
    SYM(desc_set, "cublasLtMatmulDescSetAttribute");
    SYM(desc_destroy, "cublasLtMatmulDescDestroy");
    SYM(layout_create, "cublasLtMatrixLayoutCreate");
    SYM(layout_set, "cublasLtMatrixLayoutSetAttribute");
    SYM(layout_destroy, "cublasLtMatrixLayoutDestroy");
    SYM(pref_create, "cublasLtMatmulPreferenceCreate");
    SYM(pref_set, "cublasLtMatmulPreferenceSetAttribute");
    SYM(pref_destroy, "cublasLtMatmulPreferenceDestroy");
    SYM(heuristic, "cublasLtMatmulAlgoGetHeuristic");
    SYM(matmul, "cublasLtMatmul");
#undef SYM
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
