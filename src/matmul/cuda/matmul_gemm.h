/*
 * matmul_gemm.h - one device's cuBLASLt state for a matmul job: the handle, the operation
 * descriptor of the job's types, and one algorithm per tile shape.
 *
 * Panels are row-major; cuBLASLt is column-major. A row-major m x n matrix is its transpose
 * column-major, so C = A·B is computed as Cᵀ = Bᵀ·Aᵀ: the B panel is the first operand, the A
 * panel the second, and the accumulator comes out row-major without a transpose. Floats use
 * the panels as read ("NN"). int8 uses the "TN" form of cuBLASLt's integer kernels: the first
 * operand is the B panel transposed (oc_mm_transpose_i8) and the second the A panel
 * re-strided (oc_mm_pack_rows_i8), both with K padded with zeros to a multiple of 16 and the
 * tile's columns to a multiple of 4.
 *
 * Determinism: the algorithm of a shape (rows, cols, depth, and the alignment of the three
 * pointers, which the heuristic is told so that it offers only algorithms that read them) is
 * chosen once, by cublasLtMatmulAlgoGetHeuristic's first answer with the plan's fixed
 * workspace, and every tile of that shape runs it; cuBLASLt gives the same bits for the same
 * algorithm, shape and data on devices of one architecture and SM count. The heuristic's
 * answers are kept for the process, per device and shape, so that a later job of the same
 * shape does not ask again.
 *
 * int8 is exact whatever the algorithm, so there the fastest of the heuristic's first
 * OC_MM_GEMM_CANDIDATES is taken instead: measured on a large shape's first product on a
 * machine (each candidate run into the accumulator before the product itself) and kept in the
 * rate cache's GPU section as gpu_int8_algo.<rows>x<cols>x<depth>.w<workspace / 64 KiB>
 * (.a<alignment> added when a pointer is aligned to less than 256 bytes; the value is the
 * candidate's place + 1), and in this process: the heuristic's first guess for Hopper's
 * integer kernels is not their fastest (bench/RESULTS.md has the figures). With the rate
 * cache off the first is taken.
 */
#ifndef OC_MATMUL_CUDA_MATMUL_GEMM_H
#define OC_MATMUL_CUDA_MATMUL_GEMM_H

#include <cuda_runtime_api.h>

#include "matmul/cuda/cublaslt.h"
#include "matmul/cuda/matmul_cuda_plan.h"

/* A job has at most 8 shapes: full and edge rows, columns and panel depth. */
#define OC_MM_GEMM_SHAPES 8

/* int8 only: the heuristic's candidates a shape may choose among by measuring them. */
#define OC_MM_GEMM_CANDIDATES 8

/* The heuristic's answer for a shape: its first candidates (int8: up to OC_MM_GEMM_CANDIDATES
 * to measure; else one) and the workspace each asks. A shape holds one, and so does the
 * process's memo of answers (matmul_gemm.c). */
typedef struct oc_mm_gemm_answer {
    cublasLtMatmulAlgo_t candidate[OC_MM_GEMM_CANDIDATES];
    size_t workspace[OC_MM_GEMM_CANDIDATES];
    int candidates;
} oc_mm_gemm_answer;

typedef struct oc_mm_gemm_shape {
    int64_t rows, cols, depth;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    size_t algo_workspace; /* the bytes of workspace algo needs */
    oc_mm_gemm_answer answer;
    int chosen;   /* the choice was made */
    int align[3]; /* the alignment in bytes (at most 256) of cuBLASLt's A, B and C: b, a and acc */
} oc_mm_gemm_shape;

typedef struct oc_mm_gemm {
    const oc_cublaslt_api *lt;
    const oc_mm_cuda_plan *plan;
    cublasLtHandle_t handle;
    cublasLtMatmulDesc_t desc;
    cublasLtMatmulPreference_t pref;
    cudaDataType_t ab_type, c_type;
    void *workspace;
    size_t workspace_bytes; /* the plan's workspace: what the heuristic may ask for */
    size_t workspace_held;  /* what `workspace` holds (oc_mm_gemm_use_workspace; else workspace_bytes) */
    /* The accumulator's row stride when the products write blocks of columns of a wider
     * matrix (the resident plan's C, int8's B packed in chunks: matmul_resident.c); 0: each
     * tile's own, oc_mm_cuda_ldc(cols). Set after oc_mm_gemm_open, before the first product. */
    int64_t c_ld;
    oc_mm_gemm_shape shape[OC_MM_GEMM_SHAPES];
    int nshapes;
} oc_mm_gemm;

/* Creates the handle and descriptors on the current device; workspace holds plan->workspace
 * bytes of device memory. */
oc_status oc_mm_gemm_open(oc_context *ctx, const oc_cublaslt_api *lt, const oc_mm_cuda_plan *plan, void *workspace,
                          oc_mm_gemm *g);

/* The bytes of workspace the product oc_mm_gemm_run(g, rows, cols, depth, a, b, acc, 0) will
 * ask for, its algorithm chosen now (an int8 shape whose choice is still to be measured: the
 * plan's whole workspace, which the measuring needs). For a plan of one product: its
 * workspace is then allocated at that size and given with oc_mm_gemm_use_workspace. */
oc_status oc_mm_gemm_workspace_need(oc_context *ctx, oc_mm_gemm *g, int64_t rows, int64_t cols, int64_t depth,
                                    const void *a, const void *b, const void *acc, size_t *need);

/* The workspace the products run with from now on: `bytes` of device memory at p. */
void oc_mm_gemm_use_workspace(oc_mm_gemm *g, void *p, size_t bytes);

/* acc (rows x ldc, row-major, ldc = c_ld or oc_mm_cuda_ldc(cols)) = a·b, or += a·b when accumulate:
 * a is the A panel (rows x depth) and b the B panel (depth x cols) as read, for int8 their
 * packed forms. Enqueued on stream. */
oc_status oc_mm_gemm_run(oc_context *ctx, oc_mm_gemm *g, int64_t rows, int64_t cols, int64_t depth, const void *a,
                         const void *b, void *acc, int accumulate, cudaStream_t stream);

void oc_mm_gemm_close(oc_mm_gemm *g);

#endif
