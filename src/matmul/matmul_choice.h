/*
 * matmul_choice.h - where a product runs: the backend asked for, or with --backend auto the
 * one the cost model predicts faster (cost/cost_gemm.h for the GEMM rates, cost/cost.h for
 * PCIe and the GPU's start-up), and why (--explain).
 */
#ifndef OC_MATMUL_MATMUL_CHOICE_H
#define OC_MATMUL_MATMUL_CHOICE_H

#include <stddef.h>
#include <stdint.h>

#include "outcore.h"
#include "matmul/matmul_job.h"

/* What the prediction needs: pure figures, so tests give them directly. */
typedef struct oc_mm_cost_input {
    int64_t m, n, k;
    int symmetric;
    oc_mm_type in_type;
    int tf32;
    int64_t int8_f32_k_max;     /* int8: the k up to which the CPU multiplies it as float32 */
    double in_bytes, out_bytes; /* the operands as a GPU uploads them, the result */
    int cpu_blas, cpu_cores;
    double cpu_core_rate; /* flop/s a core of the BLAS's GEMM as measured; 0: the default */
    int gpu_cc;           /* 0: no usable GPU */
    double gpu_rate;      /* flop/s of the GPU's GEMM as measured; 0: the default of gpu_cc */
    int gpu_warm;         /* this process already ran a GPU job */
    double gpu_startup;   /* s: the context (the GEMM library's load is added) */
    double h2d, d2h;      /* bytes/s over PCIe */
    double file_seconds;  /* writing the result's file: the same on either backend; 0 for memory */
    /* Bytes a first-use measurement of a GEMM rate may take: of the host (what the host
     * budget leaves beside the inputs) and of the device (the device budget; 0: no limit). */
    int64_t host_room, gpu_room;
} oc_mm_cost_input;

typedef struct oc_mm_prediction {
    double cpu_seconds, gpu_seconds; /* gpu: INFINITY without a GPU */
    int gpu;                         /* the GPU is predicted faster */
    char reason[560];
} oc_mm_prediction;

void oc_mm_predict(const oc_mm_cost_input *in, oc_mm_prediction *out);

/* Whether the product runs on the CPU before a GPU could even start (in->gpu_startup plus
 * the GEMM library's start, a cold process only): then auto takes the CPU without asking the
 * driver anything (its start is most of such a job's wall time). Fills out with the CPU's
 * prediction and says so in its reason; in->gpu_cc is not read. */
int oc_mm_cpu_before_gpu_start(const oc_mm_cost_input *in, oc_mm_prediction *out);

/* The backend for job under opts (backend, device): OC_ERR_UNSUPPORTED when CUDA was asked
 * for and cannot run. *explain (may be NULL) gets the prediction's reason. */
oc_status oc_mm_choose(oc_context *ctx, const oc_matmul_job *job, const oc_matmul_options *opts,
                       const oc_mm_backend **out, char *explain, size_t explain_size);

#endif
