/*
 * matmul_dtype.h - the dtypes of a product: names, .npy descrs, numpy's promotion of two
 * inputs to the type a product computes in, and the conversion of input elements to it.
 */
#ifndef OC_MATMUL_MATMUL_DTYPE_H
#define OC_MATMUL_MATMUL_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "outcore.h"
#include "matmul/matmul_job.h"

/* Bytes of one element (0 for DEFAULT or an unknown value). */
size_t oc_matmul_dtype_size(oc_matmul_dtype t);
/* The .npy descr of t in this host's byte order ("<f4"), or NULL (bfloat16, DEFAULT). */
const char *oc_matmul_dtype_descr(oc_matmul_dtype t);
/* The dtype of a .npy descr, or DEFAULT when it is not one a product reads. */
oc_matmul_dtype oc_matmul_dtype_from_descr(const char *descr);

/* The compute and result types of a product of inputs ta and tb (tb == ta for A·Aᵀ) under
 * the requested dtype (DEFAULT: numpy's result type, but float32 where that is float16 or
 * bfloat16, whose sums are float32; int8 x int8: int32 exact). Returns 0 and
 * sets *in, *out and *result; else -1 and a one-line reason in why (the caller prefixes the
 * file it names). */
int oc_matmul_promote(oc_matmul_dtype ta, oc_matmul_dtype tb, oc_matmul_dtype requested, oc_mm_type *in,
                      oc_mm_type *out, oc_matmul_dtype *result, char *why, size_t why_size);

/* The public dtype of a compute or result type (DEFAULT for an unknown value). Its element
 * size (0 for an unknown value) and its name as numpy spells it ("float32", "bfloat16"; "?"
 * for an unknown value, for messages) are that dtype's. */
oc_matmul_dtype oc_matmul_dtype_of(oc_mm_type t);
size_t oc_mm_type_size(oc_mm_type t);
const char *oc_mm_type_name(oc_mm_type t);

/* Nonzero when elements of `from` converted to compute type `to` take no fewer bytes than
 * as stored (a promotion, not a rounding into a narrower type asked for): a backend that
 * copies panels to where it multiplies them moves them as stored and converts them there
 * (matmul_job.h's panel_stored). 0 when from is to's own dtype; into int8, 1 for bool alone
 * (its bytes become 0 or 1). */
int oc_matmul_widens(oc_matmul_dtype from, oc_mm_type to);

/* The largest k at which the int32 sums of an int8 product of inputs ta and tb (int8 or
 * bool) are exact: k·|a|·|b| < 2^31, |x| at most 128 for int8 and 1 for bool (int8 x int8:
 * 131071). */
int64_t oc_matmul_int8_k_max(oc_matmul_dtype ta, oc_matmul_dtype tb);
/* The largest k at which those sums are exact in float32 whatever their order, every partial
 * sum an integer of magnitude at most k·|a|·|b| <= 2^24: a BLAS multiplies the product with
 * sgemm up to it, with dgemm past it (int8 x int8: OC_MM_INT8_F32_K_MAX, 1024; bool x int8
 * 131072; bool x bool 2^24). */
int64_t oc_matmul_int8_f32_k_max(oc_matmul_dtype ta, oc_matmul_dtype tb);

/* Converts n elements of type from at src (contiguous) into type to at dst, dst_stride
 * elements apart. Only the pairs oc_matmul_promote allows are meaningful. */
void oc_matmul_convert(oc_matmul_dtype from, const void *src, int64_t n, oc_mm_type to, void *dst, int64_t dst_stride);

#endif
