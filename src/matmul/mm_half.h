/*
 * mm_half.h - IEEE half and bfloat16 to and from float, rounding to nearest even: the one
 * definition the job layer (input conversion) and the CPU backend (tiles) share.
 */
#ifndef OC_MATMUL_MM_HALF_H
#define OC_MATMUL_MM_HALF_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t oc_mm_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float oc_mm_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float oc_mm_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    if (exp == 0x1f) /* infinity; a NaN keeps its payload and is made quiet, as F16C does */
        return oc_mm_bits_f32(sign | 0x7f800000u | (man ? 0x400000u : 0) | (man << 13));
    if (exp == 0) { /* zero or subnormal: man * 2^-24 exactly */
        float f = (float)man * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    return oc_mm_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

static inline uint16_t oc_mm_float_to_half(float f)
{
    uint32_t u = oc_mm_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a & 0x7fffffu) >> 13)); /* NaN: quiet, as F16C */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* infinity, or rounds past 65504 to it */
    if (a < 0x38800000u) {                         /* below 2^-14: a subnormal half, man = round(|f| * 2^24) */
        float m = oc_mm_bits_f32(a) * 16777216.0f; /* exact: a power-of-two scale */
        uint32_t q = (uint32_t)m;
        float rest = m - (float)q;
        if (rest > 0.5f || (rest == 0.5f && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u); /* round to nearest even at bit 13 */
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

/* float16 of a double, rounded once: the double to float32 rounded to odd (toward zero, the
 * last bit set when anything was dropped), then to float16 to nearest even. float32 keeps 13
 * bits more than float16, more than the 2 that make the second rounding exact, so this is the
 * correctly rounded float16 (numpy's astype(float16) of a float64). */
static inline uint16_t oc_mm_double_to_half(double d)
{
    float f = (float)d;
    if (isfinite(f) && (double)f != d) { /* inexact (NaN and infinities pass through) */
        uint32_t u = oc_mm_f32_bits(f);
        if (fabs((double)f) > fabs(d)) u -= 1; /* rounded away from zero: the one toward it */
        f = oc_mm_bits_f32(u | 1u);
    }
    return oc_mm_float_to_half(f);
}

static inline float oc_mm_bf16_to_float(uint16_t b) { return oc_mm_bits_f32((uint32_t)b << 16); }

static inline uint16_t oc_mm_float_to_bf16(float f)
{
    uint32_t u = oc_mm_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#endif
