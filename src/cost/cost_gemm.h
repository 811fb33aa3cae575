/*
 * cost_gemm.h - the GEMM rates of the cost model (docs/cost-model.md), for dense products
 * (`outcore matmul`): the CPU BLAS per core and the GPU's tensor-core rates per compute type
 * and architecture. Defaults, stated as such in --explain; pure functions.
 */
#ifndef OC_COST_COST_GEMM_H
#define OC_COST_COST_GEMM_H

typedef enum oc_cost_gemm_type {
    OC_COST_GEMM_F64 = 0,
    OC_COST_GEMM_F32,
    OC_COST_GEMM_TF32, /* float32 operands on TF32 tensor cores */
    OC_COST_GEMM_F16,  /* float16 and bfloat16 operands, float32 accumulation */
    OC_COST_GEMM_INT8, /* int8 operands, int32 accumulation */
    OC_COST_GEMM_TYPES
} oc_cost_gemm_type;

const char *oc_cost_gemm_type_name(oc_cost_gemm_type t);

/* Multiply-adds x 2 (flop) per second of a GEMM on `cores` cores: a BLAS (blas != 0) or
 * the reference loops. float16, bfloat16 and int8 run as float32 and float64 there. */
double oc_cost_gemm_cpu_rate(oc_cost_gemm_type t, int blas, int cores);

/* The same on one GPU of compute capability cc (x10; sm_90 and later get the Hopper figures,
 * sm_80 to sm_89 half of them, older ones a quarter). */
double oc_cost_gemm_gpu_rate(oc_cost_gemm_type t, int cc);

/* Seconds a first GEMM on a GPU costs beyond the context: the BLAS library's load and its
 * handle. */
#define OC_COST_GEMM_GPU_LIBRARY_START 0.4

#endif
