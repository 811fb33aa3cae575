/*
 * half_reference.h - the correctly rounded float16 and bfloat16 of a value by search over the
 * ordered halves, for the tests of the conversions (mm_half.h, mm_half_run.h) to check
 * against: an implementation that shares nothing with theirs but the widening of a half to
 * float, which is exact (checked on its own for float16; a shift by 16 for bfloat16).
 */
#ifndef OC_TESTS_HALF_REFERENCE_H
#define OC_TESTS_HALF_REFERENCE_H

#include <stdint.h>

#include "matmul/mm_half.h"

/* The correctly rounded float16 of d >= 0 (finite): the nearest, a tie to the even one;
 * infinity from 65520 up. */
static inline uint16_t half_reference(double d)
{
    uint16_t lo = 0, hi = 0x7bff;
    if (d >= 65520.0) return 0x7c00;
    while (lo < hi) { /* the largest half <= d */
        const uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
        if ((double)oc_mm_half_to_float(mid) <= d) lo = mid;
        else hi = (uint16_t)(mid - 1);
    }
    if (lo == 0x7bff) return d - 65504.0 < 16.0 ? lo : 0x7c00;
    const double below = oc_mm_half_to_float(lo), above = oc_mm_half_to_float((uint16_t)(lo + 1));
    if (d - below < above - d) return lo;
    if (d - below > above - d) return (uint16_t)(lo + 1);
    return (lo & 1u) ? (uint16_t)(lo + 1) : lo;
}

/* A bfloat16's value, infinity (0x7f80) as 2^128: the next value past the largest finite
 * one (0x7f7f), where a value halfway or more past it rounds. */
static inline double bf16_reference_value(uint16_t b) { return b == 0x7f80 ? 0x1p128 : (double)oc_mm_bf16_to_float(b); }

/* The correctly rounded bfloat16 of d >= 0 (finite): the nearest, a tie to the even one;
 * infinity from 2^128 - 2^119, halfway past the largest finite bfloat16, up. */
static inline uint16_t bf16_reference(double d)
{
    uint16_t lo = 0, hi = 0x7f7f;
    while (lo < hi) { /* the largest finite bfloat16 <= d */
        const uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
        if (bf16_reference_value(mid) <= d) lo = mid;
        else hi = (uint16_t)(mid - 1);
    }
    const double below = bf16_reference_value(lo), above = bf16_reference_value((uint16_t)(lo + 1));
    if (d - below < above - d) return lo;
    if (d - below > above - d) return (uint16_t)(lo + 1);
    return (lo & 1u) ? (uint16_t)(lo + 1) : lo;
}

#endif
