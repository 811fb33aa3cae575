/*
 * mm_half_run.c - float32 <-> float16 runs (mm_half_run.h): the scalar conversions of
 * mm_half.h, and F16C's VCVTPS2PH (rounding to nearest even) and VCVTPH2PS, which give the
 * same bits for every input: both keep a NaN's sign and its high payload bits and set its
 * quiet bit, and neither flushes subnormals.
 */
#include "matmul/mm_half_run.h"

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "matmul/mm_half.h"

#if defined(__x86_64__) || defined(_M_X64)
#define OC_HALF_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

static void to_half_scalar(const void *src, int64_t n, void *dst)
{
    for (int64_t i = 0; i < n; i++) {
        float f;
        memcpy(&f, (const char *)src + i * 4, 4);
        const uint16_t h = oc_mm_float_to_half(f);
        memcpy((char *)dst + i * 2, &h, 2);
    }
}

static void to_float_scalar(const void *src, int64_t n, void *dst)
{
    for (int64_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, (const char *)src + i * 2, 2);
        const float f = oc_mm_half_to_float(h);
        memcpy((char *)dst + i * 4, &f, 4);
    }
}

static const oc_mm_half_runs scalar_runs = {"scalar", to_half_scalar, to_float_scalar};

#ifdef OC_HALF_X86
__attribute__((target("avx,f16c"))) static void to_half_f16c(const void *src, int64_t n, void *dst)
{
    const char *s = src;
    char *d = dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(d + i * 2),
                         _mm256_cvtps_ph(_mm256_loadu_ps((const float *)(s + i * 4)), _MM_FROUND_TO_NEAREST_INT));
    to_half_scalar(s + i * 4, n - i, d + i * 2);
}

__attribute__((target("avx,f16c"))) static void to_float_f16c(const void *src, int64_t n, void *dst)
{
    const char *s = src;
    char *d = dst;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps((float *)(d + i * 4), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i * 2))));
    to_float_scalar(s + i * 2, n - i, d + i * 4);
}

static const oc_mm_half_runs f16c_runs = {"f16c", to_half_f16c, to_float_f16c};

/* F16C (CPUID leaf 1, ECX bit 29; not every compiler's __builtin_cpu_supports names it) and
 * AVX with the system saving its registers. */
static int has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) && __builtin_cpu_supports("avx");
}
#endif

const oc_mm_half_runs *oc_mm_half_runs_get(oc_mm_half_variant v)
{
    switch (v) {
    case OC_MM_HALF_SCALAR:
        return &scalar_runs;
#ifdef OC_HALF_X86
    case OC_MM_HALF_F16C:
        return has_f16c() ? &f16c_runs : NULL;
#endif
    default:
        return NULL;
    }
}

const oc_mm_half_runs *oc_mm_half_runs_best(void)
{
    /* Every thread that races here stores the same pointer. */
    static _Atomic(const oc_mm_half_runs *) best;
    const oc_mm_half_runs *b = atomic_load_explicit(&best, memory_order_relaxed);
    if (!b) {
        b = oc_mm_half_runs_get(OC_MM_HALF_F16C);
        if (!b) b = &scalar_runs;
        atomic_store_explicit(&best, b, memory_order_relaxed);
    }
    return b;
}
