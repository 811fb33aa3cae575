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
 *   extern "C" __global__ void oc_map_reduce_partial(RT *partials, const T0 *in0, ...,
 *                                                   long long n, long long start, int *error)
 *     only for reductions over all elements (sum, mean, min, max): block b writes the
 *     reduction of its grid-stride share of the n elements to partials[b], in the
 *     reduction's type RT (oc_map_plan.reduce_type; mean's partials are sums); launch with
 *     blockDim.x == OC_MAP_CUDA_BLOCK and at most ceil(n / OC_MAP_CUDA_BLOCK) blocks (a
 *     block without elements writes 0). The host combines the partials in block order. The order
 *     of a float sum is a tree within each block, not numpy's pairwise order: the result
 *     differs from numpy by at most about (log2(n) + 2) * eps * sum(|x|) (docs/map.md).
 *
 * Arithmetic follows the CPU's loops (map_cpu_ops.h) expression for expression, so integer,
 * comparison and float arithmetic results are bit-identical to the CPU's; transcendental
 * functions are CUDA's libdevice (sqrt is correctly rounded; the others' ulp bounds are in
 * the CUDA programming guide, appendix "Mathematical Functions"). Float + - * / are written
 * as the __d*_rn / __f*_rn intrinsics, which no compiler option contracts into a fused
 * multiply-add; compile without fast-math options (-ftz=false -prec-div=true
 * -prec-sqrt=true are NVRTC's defaults). NaN results may differ from the CPU's in sign and
 * payload (the GPU's canonical NaN), never in being NaN.
 */
#ifndef OC_MAP_MAP_CODEGEN_H
#define OC_MAP_MAP_CODEGEN_H

#include "map/map_plan.h"

#define OC_MAP_CUDA_BLOCK 256

/* Writes the kernels' source into *src (malloc'ed, NUL-terminated; the caller frees it).
 * The partial-reduction kernel is emitted when the plan reduces over all elements (*has_reduce
 * = 1; has_reduce may be NULL); plans without a reduction or with an axis reduction get the
 * element-wise kernel only (an axis reduction is then the GPU side's to do, or the CPU's).
 * Fails only with OC_ERR_NO_MEMORY. Thread safe; the plan is read only. */
oc_status oc_map_emit_cuda(oc_context *ctx, const oc_map_plan *m, char **src, int *has_reduce);

#endif
