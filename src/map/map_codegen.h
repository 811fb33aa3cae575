/*
 * map_codegen.h - CUDA C source of a map plan's kernels, for the GPU path to compile with
 * NVRTC at run time (no CUDA header is needed here: this writes text).
 *
 * The emitted source defines, with C linkage and no #include:
 *
 *   extern "C" __global__ void oc_map_elementwise(OUT *out, const T0 *in0, ..., const Tk *ink,
 *                                                 long long n, long long start, int *error)
 *     out[i] for i in [0, n): element start + i (flat, C order) of the element-wise result,
 *     in the output dtype (OUT; for a reducing plan, the expression's type). Grid-stride loop: any grid and block size work. Input k's pointer
 *     is, when oc_map_plan.inputs[k].same_shape is set, the address of the input's element
 *     `start` (the chunk staged for this launch, n elements); otherwise the address of the
 *     whole input (a broadcast input: the kernel computes each element's offset from the
 *     result's shape and the input's strides, which are compiled into the source). Only the
 *     plan's used inputs are parameters, in input order. *error is set to 1 (plain store)
 *     when an integer meets a negative integer power, as numpy raises; error may be NULL.
 *
 *   only for reducing plans (sum, mean, min, max), with RT the reduction's type
 *   (oc_map_plan.reduce_type; mean's values are sums) and the inputs as above, except that
 *   same-shape inputs point at the chunk's elements in the layout each kernel states:
 *
 *   extern "C" __global__ void oc_map_reduce_rows(RT *out, const T0 *in0, ..., long long rows,
 *                                                 long long len, long long first,
 *                                                 int lanes_log2, int *error)
 *     out[r] for r in [0, rows): the reduction of row r, the elements [r * len, (r + 1) * len)
 *     of the chunk (flat indices first + r * len + j of the result). Float sums are numpy's
 *     pairwise_sum of the row (no leading 0 +), min/max propagate NaN, integer sums wrap.
 *     Launch with blockDim.x == OC_MAP_CUDA_BLOCK; 2^lanes_log2 threads (lanes_log2 <= 8) share
 *     a row, each taking the subtree of numpy's recursion its lane's bits choose; any grid.
 *
 *   extern "C" __global__ void oc_map_reduce_axis(RT *acc, const T0 *in0, ..., long long outer,
 *                                                 long long rows, long long len,
 *                                                 long long inner, long long start, int *error)
 *     the chunk holds rows [start, start + rows) of the reduced axis of the result seen as
 *     [outer][len][inner], as [outer][rows][inner]; for each of the outer * inner output
 *     elements, acc[k] = acc[k] op x_start op x_(start+1) ... in index order (min/max: the
 *     row 0 replaces acc). Sums need acc zeroed before the first chunk, and successive chunks'
 *     launches in order. Any grid and block size.
 *
 * A bool input's bytes are read as 0/1 (any nonzero byte is True, as numpy and the CPU
 * evaluator read them). Arithmetic follows the CPU's loops (map_cpu_ops.h) expression for
 * expression, so integer, comparison and float arithmetic results are bit-identical to the
 * CPU's; transcendental functions are CUDA's libdevice (sqrt is correctly rounded; the
 * others' ulp bounds are in the CUDA programming guide, appendix "Mathematical Functions").
 * Float + - * / are written as the __d*_rn / __f*_rn intrinsics, which no compiler option
 * contracts into a fused multiply-add; compile without fast-math options (-ftz=false
 * -prec-div=true -prec-sqrt=true are NVRTC's defaults). NaN results may differ from the
 * CPU's in sign and payload (the GPU's canonical NaN), never in being NaN.
 */
#ifndef OC_MAP_MAP_CODEGEN_H
#define OC_MAP_MAP_CODEGEN_H

#include "map/map_plan.h"

#define OC_MAP_CUDA_BLOCK 256
/* The longest run one thread block reduces (whole in one chunk): 2^27 elements. */
#define OC_MAP_CUDA_MAX_RUN (1LL << 27)

/* Writes the kernels' source into *src (malloc'ed, NUL-terminated; the caller frees it).
 * The reduction kernels are emitted when the plan reduces (*has_reduce = 1; has_reduce may be
 * NULL). Fails only with OC_ERR_NO_MEMORY. Thread safe; the plan is read only. */
oc_status oc_map_emit_cuda(oc_context *ctx, const oc_map_plan *m, char **src, int *has_reduce);

#endif
