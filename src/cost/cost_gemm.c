/*
 * cost_gemm.c - default GEMM rates (cost_gemm.h). The GPU figures are the dense tensor-core
 * peaks of the data sheets, derated to what a tiled product of large tiles reaches.
 */
#include "cost/cost_gemm.h"

const char *oc_cost_gemm_type_name(oc_cost_gemm_type t)
{
    static const char *const names[] = {[OC_COST_GEMM_F64] = "float64",
                                        [OC_COST_GEMM_F32] = "float32",
                                        [OC_COST_GEMM_TF32] = "tf32",
                                        [OC_COST_GEMM_F16] = "float16",
                                        [OC_COST_GEMM_INT8] = "int8"};
    _Static_assert(sizeof names / sizeof names[0] == OC_COST_GEMM_TYPES, "names[] needs one row per GEMM type");
    return (unsigned)t < OC_COST_GEMM_TYPES ? names[t] : "?";
}

double oc_cost_gemm_cpu_rate(oc_cost_gemm_type t, int blas, int cores)
{
    /* An AVX2 core with two FMA units: 16 float64 flop a cycle at about 2.5 GHz, reached in
     * part; float32 twice that. The reference loops vectorise their inner loop only. */
    const double per_core_f64 = blas ? 25e9 : 1.5e9;
    const double f32 = t == OC_COST_GEMM_F64 || t == OC_COST_GEMM_INT8 ? 1.0 : 2.0;
    return (cores > 0 ? cores : 1) * per_core_f64 * f32;
}

double oc_cost_gemm_gpu_rate(oc_cost_gemm_type t, int cc)
{
    static const double hopper[] = {[OC_COST_GEMM_F64] = 50e12,
                                    [OC_COST_GEMM_F32] = 50e12,
                                    [OC_COST_GEMM_TF32] = 400e12,
                                    [OC_COST_GEMM_F16] = 700e12,
                                    [OC_COST_GEMM_INT8] = 1400e12};
    _Static_assert(sizeof hopper / sizeof hopper[0] == OC_COST_GEMM_TYPES, "hopper[] needs one rate per GEMM type");
    double r = hopper[(unsigned)t < OC_COST_GEMM_TYPES ? t : 0];
    if (cc >= 90) return r;
    return cc >= 80 ? r / 2 : r / 4;
}
