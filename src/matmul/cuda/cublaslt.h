/*
 * cublaslt.h - cuBLASLt through dlopen, never linked: the library still loads, and every other
 * job still runs, on a machine without libcublasLt; only the CUDA matmul backend is then
 * unusable, and says why (oc_cublaslt_load's reason).
 *
 * The library is looked for as $OUTCORE_CUBLASLT when set (a path or a name for dlopen),
 * else libcublasLt.so.13, .so.12, .so.11 in that order. cublasLt.h is included for its
 * types alone; every call goes through the table below.
 *
 * Thread safety: oc_cublaslt_load may be called from any thread (it loads once); the
 * functions of the table are cuBLASLt's own, whose handles each belong to one device.
 */
#ifndef OC_MATMUL_CUDA_CUBLASLT_H
#define OC_MATMUL_CUDA_CUBLASLT_H

#include <cublasLt.h>
#include <stddef.h>

typedef struct oc_cublaslt_api {
    char library[256]; /* the name or path it was loaded as */
    size_t version;    /* cublasLtGetVersion(), 0 where the library lacks it */
    cublasStatus_t (*create)(cublasLtHandle_t *);
    cublasStatus_t (*destroy)(cublasLtHandle_t);
    cublasStatus_t (*desc_create)(cublasLtMatmulDesc_t *, cublasComputeType_t, cudaDataType_t);
    cublasStatus_t (*desc_set)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void *, size_t);
    cublasStatus_t (*desc_destroy)(cublasLtMatmulDesc_t);
    cublasStatus_t (*layout_create)(cublasLtMatrixLayout_t *, cudaDataType_t, uint64_t, uint64_t, int64_t);
    cublasStatus_t (*layout_set)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, const void *, size_t);
    cublasStatus_t (*layout_destroy)(cublasLtMatrixLayout_t);
    cublasStatus_t (*pref_create)(cublasLtMatmulPreference_t *);
    cublasStatus_t (*pref_set)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t, const void *, size_t);
    cublasStatus_t (*pref_destroy)(cublasLtMatmulPreference_t);
    cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                                cublasLtMatmulHeuristicResult_t *, int *);
    cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *, cublasLtMatrixLayout_t,
                             const void *, cublasLtMatrixLayout_t, const void *, const void *, cublasLtMatrixLayout_t,
                             void *, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t,
                             cudaStream_t);
} oc_cublaslt_api;

/* The table, or NULL with why[] saying why cuBLASLt cannot be used (not found, which names
 * were tried, or a library without one of the functions). why may be NULL. */
const oc_cublaslt_api *oc_cublaslt_load(char *why, size_t why_size);

/* A cuBLASLt status as its enum name ("CUBLAS_STATUS_NOT_SUPPORTED"), for messages. */
const char *oc_cublaslt_status_name(cublasStatus_t s);

#endif
