/*
 * matmul_dtype.c - dtypes of `outcore matmul`: names, descrs, promotion and conversion
 * (matmul_dtype.h). numpy's rules, with two departures that docs/matmul.md states:
 * int8 x int8 is int32 (exact) where numpy wraps in int8 (bool x int8 too, as numpy's int8),
 * and other integer products are refused, since their exact sums need more than a float64 or
 * int32 holds. bool x bool is numpy's bool, from int8 products' int32 sums.
 */
#include "matmul/matmul_dtype.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "matmul/mm_half.h"
#include "matmul/mm_half_run.h"

/* R: a product may be computed and written in it (opts.dtype); N: a .npy file holds it. */
#define R OC_MATMUL_DTYPE_RESULT
#define N OC_MATMUL_DTYPE_NPY
static const struct {
    const char *name;
    const char *descr;
    unsigned char size;
    unsigned char uses; /* oc_matmul_dtype_uses */
} types[] = {
    [OC_MATMUL_DEFAULT] = {"default", NULL, 0, 0},      [OC_MATMUL_FLOAT64] = {"float64", "<f8", 8, R | N},
    [OC_MATMUL_FLOAT32] = {"float32", "<f4", 4, R | N}, [OC_MATMUL_FLOAT16] = {"float16", "<f2", 2, R | N},
    [OC_MATMUL_BFLOAT16] = {"bfloat16", NULL, 2, R},    [OC_MATMUL_INT8] = {"int8", "|i1", 1, N},
    [OC_MATMUL_INT16] = {"int16", "<i2", 2, N},         [OC_MATMUL_INT32] = {"int32", "<i4", 4, R | N},
    [OC_MATMUL_INT64] = {"int64", "<i8", 8, N},         [OC_MATMUL_UINT8] = {"uint8", "|u1", 1, N},
    [OC_MATMUL_UINT16] = {"uint16", "<u2", 2, N},       [OC_MATMUL_UINT32] = {"uint32", "<u4", 4, N},
    [OC_MATMUL_UINT64] = {"uint64", "<u8", 8, N},       [OC_MATMUL_BOOL] = {"bool", "|b1", 1, R | N},
};
#undef R
#undef N
#define NTYPES ((int)(sizeof types / sizeof types[0]))
/* OC_MATMUL_BOOL is the enum's last value: a dtype added after it needs its row. */
_Static_assert(NTYPES == OC_MATMUL_BOOL + 1, "types[] needs one row per oc_matmul_dtype");

const char *oc_matmul_dtype_name(oc_matmul_dtype t) { return (unsigned)t < (unsigned)NTYPES ? types[t].name : NULL; }

oc_status oc_matmul_dtype_parse(const char *name, oc_matmul_dtype *out)
{
    if (!out) return OC_ERR_INVALID_ARGUMENT;
    for (int i = 0; name && i < NTYPES; i++)
        if (strcmp(name, types[i].name) == 0) return *out = (oc_matmul_dtype)i, OC_OK;
    return OC_ERR_INVALID_ARGUMENT;
}

unsigned oc_matmul_dtype_uses(oc_matmul_dtype t) { return (unsigned)t < (unsigned)NTYPES ? types[t].uses : 0; }

size_t oc_matmul_dtype_size(oc_matmul_dtype t) { return (unsigned)t < (unsigned)NTYPES ? types[t].size : 0; }

const char *oc_matmul_dtype_descr(oc_matmul_dtype t) { return (unsigned)t < (unsigned)NTYPES ? types[t].descr : NULL; }

oc_matmul_dtype oc_matmul_dtype_from_descr(const char *descr)
{
    /* One byte needs no order: numpy writes '|', and accepts '<' and '>' (and '=' for the
     * native order everywhere). */
    char d[8];
    if (!descr || strlen(descr) != 3) return OC_MATMUL_DEFAULT;
    memcpy(d, descr, 4);
    if (d[0] == '=' || (d[2] == '1' && (d[0] == '<' || d[0] == '>'))) d[0] = d[2] == '1' ? '|' : '<';
    for (int i = 1; i < NTYPES; i++)
        if (types[i].descr && strcmp(types[i].descr, d) == 0) return (oc_matmul_dtype)i;
    return OC_MATMUL_DEFAULT;
}

/* The dtypes a product may be computed in, from the table: "float64, float32, ... or bool". */
static void results_text(char *text, size_t size)
{
    int n = 0, k = 0;
    size_t len = 0;
    for (int t = 0; t < NTYPES; t++) n += (types[t].uses & OC_MATMUL_DTYPE_RESULT) != 0;
    text[0] = '\0';
    for (int t = 0; t < NTYPES && len < size; t++) {
        if (!(types[t].uses & OC_MATMUL_DTYPE_RESULT)) continue;
        const char *between = k == 0 ? "" : k == n - 1 ? " or " : ", ";
        const int w = snprintf(text + len, size - len, "%s%s", between, types[t].name);
        if (w < 0) break;
        len += (size_t)w, k++;
    }
}

static int is_float(oc_matmul_dtype t) { return t >= OC_MATMUL_FLOAT64 && t <= OC_MATMUL_BFLOAT16; }

/* The smallest float numpy promotes an integer type to when it meets a float. */
static oc_matmul_dtype int_as_float(oc_matmul_dtype t, oc_matmul_dtype half)
{
    switch (t) {
    case OC_MATMUL_BOOL:
    case OC_MATMUL_INT8:
    case OC_MATMUL_UINT8:
        return half;
    case OC_MATMUL_INT16:
    case OC_MATMUL_UINT16:
        return OC_MATMUL_FLOAT32;
    default:
        return OC_MATMUL_FLOAT64;
    }
}

/* Rank among floats: float16 and bfloat16 meet at float32. */
static oc_matmul_dtype float_join(oc_matmul_dtype a, oc_matmul_dtype b)
{
    if (a == b) return a;
    if (a == OC_MATMUL_FLOAT64 || b == OC_MATMUL_FLOAT64) return OC_MATMUL_FLOAT64;
    return OC_MATMUL_FLOAT32; /* float32 with a half type, or float16 with bfloat16 */
}

/* Whether int8 holds both inputs as they are multiplied: int8 or bool (numpy's bool meets
 * int8 as int8). */
static int int8_pair(oc_matmul_dtype a, oc_matmul_dtype b)
{
    return (a == OC_MATMUL_INT8 || a == OC_MATMUL_BOOL) && (b == OC_MATMUL_INT8 || b == OC_MATMUL_BOOL);
}

static oc_matmul_dtype numpy_result(oc_matmul_dtype a, oc_matmul_dtype b)
{
    if (is_float(a) && is_float(b)) return float_join(a, b);
    if (is_float(a)) return float_join(a, int_as_float(b, a == OC_MATMUL_BFLOAT16 ? a : OC_MATMUL_FLOAT16));
    if (is_float(b)) return float_join(b, int_as_float(a, b == OC_MATMUL_BFLOAT16 ? b : OC_MATMUL_FLOAT16));
    if (a == OC_MATMUL_BOOL && b == OC_MATMUL_BOOL) return OC_MATMUL_BOOL;
    return int8_pair(a, b) ? OC_MATMUL_INT32 : OC_MATMUL_DEFAULT;
}

/* The public dtype of each compute and result type, which gives its name and size. */
static const oc_matmul_dtype mm_types[] = {
    [OC_MM_FLOAT64] = OC_MATMUL_FLOAT64,   [OC_MM_FLOAT32] = OC_MATMUL_FLOAT32, [OC_MM_FLOAT16] = OC_MATMUL_FLOAT16,
    [OC_MM_BFLOAT16] = OC_MATMUL_BFLOAT16, [OC_MM_INT8] = OC_MATMUL_INT8,       [OC_MM_INT32] = OC_MATMUL_INT32,
    [OC_MM_BOOL] = OC_MATMUL_BOOL,
};
_Static_assert(sizeof mm_types / sizeof mm_types[0] == OC_MM_TYPE_COUNT, "mm_types[] needs one row per oc_mm_type");

oc_matmul_dtype oc_matmul_dtype_of(oc_mm_type t)
{
    return (unsigned)t < OC_MM_TYPE_COUNT ? mm_types[t] : OC_MATMUL_DEFAULT;
}

size_t oc_mm_type_size(oc_mm_type t) { return oc_matmul_dtype_size(oc_matmul_dtype_of(t)); }

const char *oc_mm_type_name(oc_mm_type t) { return (unsigned)t < OC_MM_TYPE_COUNT ? types[mm_types[t]].name : "?"; }

int oc_matmul_promote(oc_matmul_dtype ta, oc_matmul_dtype tb, oc_matmul_dtype requested, oc_mm_type *in,
                      oc_mm_type *out, oc_matmul_dtype *result, char *why, size_t why_size)
{
    oc_matmul_dtype r = numpy_result(ta, tb);
    /* The half type multiplied as it is into float32 sums, or DEFAULT. */
    oc_matmul_dtype half = OC_MATMUL_DEFAULT;
    if (requested == OC_MATMUL_DEFAULT) {
        if (r == OC_MATMUL_DEFAULT) {
            snprintf(why, why_size,
                     "%s x %s: integer products are computed for int8 x int8 alone (exact, into int32); "
                     "ask for --dtype float64 (or float32) to compute this one in floating point",
                     oc_matmul_dtype_name(ta), oc_matmul_dtype_name(tb));
            return -1;
        }
        /* float16 and bfloat16 products are summed in float32 and, unless a half type is
         * asked for, written in it: numpy's a @ b would round them to the half type. */
        if (r == OC_MATMUL_FLOAT16 || r == OC_MATMUL_BFLOAT16) half = r, r = OC_MATMUL_FLOAT32;
    } else if (requested == OC_MATMUL_INT32) {
        if (!int8_pair(ta, tb)) {
            snprintf(why, why_size, "dtype int32 is the product of int8 or bool inputs alone, not of %s x %s",
                     oc_matmul_dtype_name(ta), oc_matmul_dtype_name(tb));
            return -1;
        }
        r = OC_MATMUL_INT32;
    } else if (requested == OC_MATMUL_BOOL) {
        if (ta != OC_MATMUL_BOOL || tb != OC_MATMUL_BOOL) {
            snprintf(why, why_size, "dtype bool is the product of bool inputs alone, not of %s x %s",
                     oc_matmul_dtype_name(ta), oc_matmul_dtype_name(tb));
            return -1;
        }
        r = OC_MATMUL_BOOL;
    } else if (is_float(requested) && (oc_matmul_dtype_uses(requested) & OC_MATMUL_DTYPE_RESULT)) {
        r = requested; /* same_kind: any integer or float input casts to a float */
    } else {
        char results[160];
        results_text(results, sizeof results);
        snprintf(why, why_size,
                 "dtype %s: a product is computed in %s (int32 of int8 or bool inputs, bool of bool inputs)",
                 oc_matmul_dtype_name(requested) ? oc_matmul_dtype_name(requested) : "?", results);
        return -1;
    }
    switch (r) {
    case OC_MATMUL_FLOAT64:
        *in = *out = OC_MM_FLOAT64;
        break;
    case OC_MATMUL_FLOAT32:
        *in = *out = OC_MM_FLOAT32;
        break;
    case OC_MATMUL_FLOAT16:
        *in = *out = OC_MM_FLOAT16;
        break;
    case OC_MATMUL_BFLOAT16:
        *in = *out = OC_MM_BFLOAT16;
        break;
    case OC_MATMUL_BOOL: /* int8 products of 0 and 1, their int32 sums not 0 */
        *in = OC_MM_INT8, *out = OC_MM_BOOL;
        break;
    default:
        *in = OC_MM_INT8, *out = OC_MM_INT32;
        break;
    }
    /* Halves into float32 (those above, or two of one kind asked for float32): multiplied as
     * they are, with float32 products and sums (a product of two halves is exact in float32,
     * so this is float32's product of the inputs converted, as numpy's matmul(a, b,
     * dtype=float32) is), on tensor cores on a GPU. */
    if (r == OC_MATMUL_FLOAT32 && ta == tb && (ta == OC_MATMUL_FLOAT16 || ta == OC_MATMUL_BFLOAT16)) half = ta;
    if (half != OC_MATMUL_DEFAULT) *in = half == OC_MATMUL_FLOAT16 ? OC_MM_FLOAT16 : OC_MM_BFLOAT16;
    *result = r;
    return 0;
}

/* The largest magnitude of an element multiplied as int8: 1 for bool, 128 for int8. */
static int64_t int8_magnitude(oc_matmul_dtype t) { return t == OC_MATMUL_BOOL ? 1 : 128; }

int64_t oc_matmul_int8_k_max(oc_matmul_dtype ta, oc_matmul_dtype tb)
{
    return INT32_MAX / (int8_magnitude(ta) * int8_magnitude(tb));
}

int64_t oc_matmul_int8_f32_k_max(oc_matmul_dtype ta, oc_matmul_dtype tb)
{
    return (1LL << 24) / (int8_magnitude(ta) * int8_magnitude(tb));
}

int oc_matmul_widens(oc_matmul_dtype from, oc_mm_type to)
{
    const size_t size = oc_matmul_dtype_size(from);
    /* Into int8, bool alone: its bytes become 0 or 1. */
    return (to == OC_MM_INT8 ? from == OC_MATMUL_BOOL : to != OC_MM_INT32) && size > 0 &&
           from != oc_matmul_dtype_of(to) && size <= oc_mm_type_size(to);
}

/* ---------------------------------------------------------------- conversion */

/* Element i of an array of T at src: a caller's memory may place it off T's alignment, which
 * a plain load would not allow (memcpy compiles to the same load where the machine permits). */
#define OC_MM_LOADER(T)                                                          \
    static inline T load_##T(const void *src, int64_t i)                         \
    {                                                                            \
        T v;                                                                     \
        memcpy(&v, (const unsigned char *)src + (size_t)i * sizeof v, sizeof v); \
        return v;                                                                \
    }
OC_MM_LOADER(double)
OC_MM_LOADER(float)
OC_MM_LOADER(int8_t)
OC_MM_LOADER(int16_t)
OC_MM_LOADER(int32_t)
OC_MM_LOADER(int64_t)
OC_MM_LOADER(uint8_t)
OC_MM_LOADER(uint16_t)
OC_MM_LOADER(uint32_t)
OC_MM_LOADER(uint64_t)
#undef OC_MM_LOADER

static double load(oc_matmul_dtype t, const void *src, int64_t i)
{
    switch (t) {
    case OC_MATMUL_FLOAT64:
        return load_double(src, i);
    case OC_MATMUL_FLOAT32:
        return load_float(src, i);
    case OC_MATMUL_FLOAT16:
        return oc_mm_half_to_float(load_uint16_t(src, i));
    case OC_MATMUL_BFLOAT16:
        return oc_mm_bf16_to_float(load_uint16_t(src, i));
    case OC_MATMUL_INT8:
        return load_int8_t(src, i);
    case OC_MATMUL_INT16:
        return load_int16_t(src, i);
    case OC_MATMUL_INT32:
        return load_int32_t(src, i);
    case OC_MATMUL_INT64:
        return (double)load_int64_t(src, i);
    case OC_MATMUL_UINT8:
        return load_uint8_t(src, i);
    case OC_MATMUL_UINT16:
        return load_uint16_t(src, i);
    case OC_MATMUL_UINT32:
        return load_uint32_t(src, i);
    case OC_MATMUL_UINT64:
        return (double)load_uint64_t(src, i);
    case OC_MATMUL_BOOL:
        return load_uint8_t(src, i) != 0;
    default:
        return 0;
    }
}

/* float32 of an element: exact for every type a float32 product promotes from; int32 and
 * wider round once, as numpy's astype does. */
static float load_f32(oc_matmul_dtype t, const void *src, int64_t i)
{
    switch (t) {
    case OC_MATMUL_FLOAT32:
        return load_float(src, i);
    case OC_MATMUL_INT32:
        return (float)load_int32_t(src, i);
    case OC_MATMUL_INT64:
        return (float)load_int64_t(src, i);
    case OC_MATMUL_UINT32:
        return (float)load_uint32_t(src, i);
    case OC_MATMUL_UINT64:
        return (float)load_uint64_t(src, i);
    default:
        return (float)load(t, src, i);
    }
}

/* One loop per (source, target) pair: each is called with `from` a constant, so that after
 * inlining the switches of load() and load_f32() fold away and the loop is a plain (and, at
 * stride 1, vectorized) conversion. */
#define OC_MM_INLINE static inline __attribute__((always_inline))
OC_MM_INLINE void to_f64(oc_matmul_dtype from, const void *src, int64_t n, double *dst, int64_t stride)
{
    for (int64_t i = 0; i < n; i++) dst[i * stride] = load(from, src, i);
}
OC_MM_INLINE void to_f32(oc_matmul_dtype from, const void *src, int64_t n, float *dst, int64_t stride)
{
    if (from == OC_MATMUL_FLOAT16 && stride == 1) { /* F16C's where the CPU has it */
        oc_mm_half_runs_best()->to_float(src, n, dst);
        return;
    }
    for (int64_t i = 0; i < n; i++) dst[i * stride] = load_f32(from, src, i);
}
/* Whether every value of `from` is a float32 (so float16 of it is float16 of that float32). */
static int exact_in_f32(oc_matmul_dtype from)
{
    return from == OC_MATMUL_FLOAT32 || from == OC_MATMUL_BFLOAT16 || from == OC_MATMUL_INT8 ||
           from == OC_MATMUL_INT16 || from == OC_MATMUL_UINT8 || from == OC_MATMUL_UINT16 || from == OC_MATMUL_BOOL;
}
/* float16 from the value itself, rounded once, as numpy's astype(float16): from a float32
 * (or a type that every float32 holds, through one) on F16C's run where the CPU has it. */
OC_MM_INLINE void to_f16(oc_matmul_dtype from, const void *src, int64_t n, uint16_t *dst, int64_t stride)
{
    if (stride == 1 && from == OC_MATMUL_FLOAT32) {
        oc_mm_half_runs_best()->to_half(src, n, dst);
        return;
    }
    if (stride == 1 && exact_in_f32(from)) {
        enum { CHUNK = 512 };
        float f[CHUNK];
        for (int64_t i = 0; i < n; i += CHUNK) {
            const int64_t m = n - i < CHUNK ? n - i : CHUNK;
            to_f32(from, (const char *)src + i * (int64_t)oc_matmul_dtype_size(from), m, f, 1);
            oc_mm_half_runs_best()->to_half(f, m, dst + i);
        }
        return;
    }
    for (int64_t i = 0; i < n; i++) dst[i * stride] = oc_mm_double_to_half(load(from, src, i));
}
OC_MM_INLINE void to_bf16(oc_matmul_dtype from, const void *src, int64_t n, uint16_t *dst, int64_t stride)
{
    for (int64_t i = 0; i < n; i++) dst[i * stride] = oc_mm_float_to_bf16(load_f32(from, src, i));
}
#undef OC_MM_INLINE

/* LOOP(t, ...) with t each source dtype in turn as a constant: the case of `from`. */
#define OC_MM_EACH_SOURCE(from, LOOP, ...)     \
    switch (from) {                            \
    case OC_MATMUL_FLOAT64:                    \
        LOOP(OC_MATMUL_FLOAT64, __VA_ARGS__);  \
        break;                                 \
    case OC_MATMUL_FLOAT32:                    \
        LOOP(OC_MATMUL_FLOAT32, __VA_ARGS__);  \
        break;                                 \
    case OC_MATMUL_FLOAT16:                    \
        LOOP(OC_MATMUL_FLOAT16, __VA_ARGS__);  \
        break;                                 \
    case OC_MATMUL_BFLOAT16:                   \
        LOOP(OC_MATMUL_BFLOAT16, __VA_ARGS__); \
        break;                                 \
    case OC_MATMUL_INT8:                       \
        LOOP(OC_MATMUL_INT8, __VA_ARGS__);     \
        break;                                 \
    case OC_MATMUL_INT16:                      \
        LOOP(OC_MATMUL_INT16, __VA_ARGS__);    \
        break;                                 \
    case OC_MATMUL_INT32:                      \
        LOOP(OC_MATMUL_INT32, __VA_ARGS__);    \
        break;                                 \
    case OC_MATMUL_INT64:                      \
        LOOP(OC_MATMUL_INT64, __VA_ARGS__);    \
        break;                                 \
    case OC_MATMUL_UINT8:                      \
        LOOP(OC_MATMUL_UINT8, __VA_ARGS__);    \
        break;                                 \
    case OC_MATMUL_UINT16:                     \
        LOOP(OC_MATMUL_UINT16, __VA_ARGS__);   \
        break;                                 \
    case OC_MATMUL_UINT32:                     \
        LOOP(OC_MATMUL_UINT32, __VA_ARGS__);   \
        break;                                 \
    case OC_MATMUL_UINT64:                     \
        LOOP(OC_MATMUL_UINT64, __VA_ARGS__);   \
        break;                                 \
    case OC_MATMUL_BOOL:                       \
        LOOP(OC_MATMUL_BOOL, __VA_ARGS__);     \
        break;                                 \
    default:                                   \
        break;                                 \
    }

void oc_matmul_convert(oc_matmul_dtype from, const void *src, int64_t n, oc_mm_type to, void *dst, int64_t dst_stride)
{
    if (dst_stride == 1 && oc_matmul_dtype_of(to) == from) {
        memcpy(dst, src, (size_t)n * oc_mm_type_size(to));
        return;
    }
    switch (to) {
    case OC_MM_FLOAT64:
        OC_MM_EACH_SOURCE(from, to_f64, src, n, (double *)dst, dst_stride)
        break;
    case OC_MM_FLOAT32:
        OC_MM_EACH_SOURCE(from, to_f32, src, n, (float *)dst, dst_stride)
        break;
    case OC_MM_FLOAT16:
        OC_MM_EACH_SOURCE(from, to_f16, src, n, (uint16_t *)dst, dst_stride)
        break;
    case OC_MM_BFLOAT16:
        OC_MM_EACH_SOURCE(from, to_bf16, src, n, (uint16_t *)dst, dst_stride)
        break;
    case OC_MM_INT8: /* from int8 (strided) or bool */
        for (int64_t i = 0; i < n; i++)
            ((int8_t *)dst)[i * dst_stride] = from == OC_MATMUL_BOOL ? load_uint8_t(src, i) != 0 : load_int8_t(src, i);
        break;
    default:
        for (int64_t i = 0; i < n; i++) ((int32_t *)dst)[i * dst_stride] = load_int32_t(src, i);
        break;
    }
}
#undef OC_MM_EACH_SOURCE
