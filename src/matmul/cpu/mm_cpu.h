/*
 * mm_cpu.h - the CPU product's parts: its plan (mm_cpu_plan.c), its reference loops
 * (mm_ref.c) and its run (mm_cpu.c, the backend table).
 *
 * C is computed tile by tile: for a tile of tm rows and tn columns the rows of op(A) and
 * the columns of op(B) are read in K panels of kp, each pair multiplied into the tile's
 * accumulator (GEMM with beta = 1 after the first), which is rounded to the result type and
 * written once. Panels, accumulator and output tile fit in the host budget. An operand that
 * lies in memory as the BLAS takes it (the caller's array or a mapped input, in the compute
 * type, not transposed) is multiplied where it lies, and a result whose place the job gives
 * (the caller's array or the output's mapping, in the accumulator's type) is accumulated
 * there: neither holds a buffer, so the budget goes to the others' panels.
 */
#ifndef OC_MATMUL_CPU_MM_CPU_H
#define OC_MATMUL_CPU_MM_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "matmul/matmul_job.h"
#include "matmul/cpu/mm_blas.h"

/* What the multiply works in. */
typedef enum oc_mm_kind {
    OC_MM_KIND_F64 = 0, /* float64 panels and accumulator (dgemm); int8 with a BLAS (exact) */
    OC_MM_KIND_F32,     /* float32 panels and accumulator (sgemm); float16 and bfloat16 converted */
    OC_MM_KIND_I8       /* int8 panels, int32 accumulator: the reference loop without a BLAS */
} oc_mm_kind;

typedef struct oc_mm_cpu_plan {
    oc_mm_kind kind;
    int64_t tm, tn, kp;               /* tile rows and columns, K panel */
    int64_t tiles_m, tiles_n, panels; /* tiles along m and n, panels along k */
    int64_t tiles;                    /* tiles computed (the upper ones for A·Aᵀ) */
    int64_t need_bytes;               /* panels + accumulator + output tile, those not in place */
    int in_place[3];                  /* A's panels, B's panels, C's tiles where they lie */
    int transposed[2];                /* A's, B's in place as the transpose of how they lie */
    const char *bound;                /* what bounds tm, tn and kp */
    int threads;
    oc_mm_blas blas;
} oc_mm_cpu_plan;

/* Bytes of one element of the multiply's panels and accumulator. */
size_t oc_mm_kind_size(oc_mm_kind kind);
/* Bytes of one element of its accumulator (int32 for the int8 loop). */
size_t oc_mm_acc_size(oc_mm_kind kind);
/* Whether the result type needs a tile of its own beside the accumulator. */
int oc_mm_out_separate(oc_mm_kind kind, oc_mm_type out);
/* Plans job under job->host_mem_bytes; OC_ERR_NO_MEMORY naming the need when even the
 * smallest tile and panel do not fit, OC_ERR_INVALID_ARGUMENT when OUTCORE_BLAS cannot be
 * loaded. */
oc_status oc_mm_cpu_plan_make(oc_matmul_job *job, oc_mm_cpu_plan *p);

/* What the plan multiplies with ("dgemm, float64 accumulator", "int8 panels, int32
 * accumulator"). */
const char *oc_mm_cpu_kind_text(const oc_mm_cpu_plan *p);

/* The plan as text for people, or a JSON object (--plan). */
oc_status oc_mm_cpu_plan_text(oc_matmul_job *job, int json, char **out);

/* acc[h x w] += a[h x kw] · b[kw x w] (row-major, dense) on `threads` threads, summing each
 * element in k order. */
oc_status oc_mm_ref_gemm(oc_context *ctx, oc_mm_kind kind, int threads, int64_t h, int64_t w, int64_t kw, const void *a,
                         const void *b, void *acc);

#endif
