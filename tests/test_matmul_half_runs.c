/*
 * test_matmul_half_runs.c - float32 <-> float16 runs (mm_half_run.h): every variant this
 * CPU has gives the scalar conversions' bits for every half, for floats at and around every
 * rounding boundary, random bit patterns, NaNs with payloads, subnormals and the overflow
 * edge, at every length and alignment; the scalar conversions against the correctly rounded
 * reference; oc_matmul_convert's float16 runs (from float32, from types held exactly by
 * float32 through its chunks, strided) against the element-by-element conversion; and the
 * float32 -> bfloat16 conversion against its correctly rounded reference, bit for bit.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "half_reference.h"
#include "harness.h"
#include "matmul/matmul_dtype.h"
#include "matmul/mm_half.h"
#include "matmul/mm_half_run.h"

static float f32_of(uint32_t u) { return oc_mm_bits_f32(u); }

/* The probes: each half's value, the midpoints between neighbours and a float32 ulp either
 * side, the overflow edge, subnormals of both types, NaNs, and random bit patterns. */
static int64_t probes(float *p)
{
    int64_t n = 0;
    for (uint32_t h = 0; h < 0x7c00; ++h) {
        const float v = oc_mm_half_to_float((uint16_t)h);
        p[n++] = v, p[n++] = -v;
        if (h + 1 < 0x7c00) {
            const float mid = (float)(((double)v + oc_mm_half_to_float((uint16_t)(h + 1))) / 2); /* exact */
            p[n++] = mid, p[n++] = nextafterf(mid, 0), p[n++] = nextafterf(mid, INFINITY), p[n++] = -mid;
        }
    }
    const uint32_t specials[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fbfffffu,
                                 0x7fffffffu, 0xffa5a5a5u, 0x7fc01234u, 0x00000001u, 0x807fffffu, 0x477fefffu,
                                 0x477ff000u, 0x477ff001u, 0x33000000u, 0x33000001u, 0x32ffffffu, 0x387fc000u};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; ++i) p[n++] = f32_of(specials[i]);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 1 << 20; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        p[n++] = f32_of((uint32_t)(x >> 32));
    }
    return n;
}
#define MAX_PROBES (0x7c00 * 6 + 64 + (1 << 20))

/* The scalar conversions: against the reference for every finite probe, NaNs quiet with
 * their sign and high payload, halves widened and narrowed back unchanged. */
static void check_scalar(const float *p, int64_t n)
{
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; ++i) {
        const float f = p[i];
        const uint16_t got = oc_mm_float_to_half(f);
        uint16_t want;
        if (isnan(f)) {
            const uint32_t u = oc_mm_f32_bits(f);
            want = (uint16_t)(((u >> 16) & 0x8000u) | 0x7e00u | ((u & 0x7fffffu) >> 13));
        } else {
            want = half_reference(fabs((double)f));
            if (signbit(f)) want |= 0x8000u;
        }
        if (got != want) {
            CHECK_MSG(0, "float16 of 0x%08x: 0x%04x, expected 0x%04x", oc_mm_f32_bits(f), got, want);
            bad++;
        }
    }
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const uint16_t back = oc_mm_float_to_half(oc_mm_half_to_float((uint16_t)h));
        const int nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
        if (back != (nan ? (uint16_t)(h | 0x200u) : (uint16_t)h) && bad < 10) {
            CHECK_MSG(0, "half 0x%04x widened and narrowed: 0x%04x", h, back);
            bad++;
        }
    }
    CHECK(oc_mm_f32_bits(oc_mm_half_to_float(0x7c01)) == 0x7fc02000u); /* quiet, payload kept */
    CHECK(oc_mm_f32_bits(oc_mm_half_to_float(0xfc00)) == 0xff800000u);
}

/* A variant's runs against the scalar conversions, bit for bit, whole and at every length up
 * to 40 from every byte offset up to 3 (the vector body, its tail, unaligned loads and
 * stores). */
static void check_variant(const oc_mm_half_runs *r, const float *p, int64_t n)
{
    uint16_t *h = malloc((size_t)n * 2), *want_h = malloc((size_t)n * 2);
    unsigned char *src = malloc(64 * 4 + 8), *dst = malloc(64 * 4 + 8);
    if (!h || !want_h || !src || !dst) exit(1);
    r->to_half(p, n, h);
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; ++i) {
        want_h[i] = oc_mm_float_to_half(p[i]);
        if (h[i] != want_h[i]) {
            CHECK_MSG(0, "%s: float16 of 0x%08x: 0x%04x, scalar 0x%04x", r->name, oc_mm_f32_bits(p[i]), h[i],
                      want_h[i]);
            bad++;
        }
    }
    uint16_t all[0x10000];
    for (uint32_t i = 0; i < 0x10000; ++i) all[i] = (uint16_t)i;
    float *wide = malloc(0x10000 * 4);
    if (!wide) exit(1);
    r->to_float(all, 0x10000, wide);
    for (uint32_t i = 0; i < 0x10000 && bad < 10; ++i)
        if (oc_mm_f32_bits(wide[i]) != oc_mm_f32_bits(oc_mm_half_to_float((uint16_t)i))) {
            CHECK_MSG(0, "%s: half 0x%04x widened: 0x%08x, scalar 0x%08x", r->name, i, oc_mm_f32_bits(wide[i]),
                      oc_mm_f32_bits(oc_mm_half_to_float((uint16_t)i)));
            bad++;
        }
    for (int off = 0; off < 4; ++off)
        for (int64_t len = 0; len <= 40; ++len) {
            memcpy(src + off, p + 0x7c00 * 3 + len, (size_t)len * 4); /* probes around mid-range midpoints */
            memset(dst, 0xEE, 64 * 4 + 8);
            r->to_half(src + off, len, dst + off);
            int ok = dst[off + len * 2] == 0xEE && (off == 0 || dst[off - 1] == 0xEE);
            for (int64_t i = 0; i < len; ++i) {
                uint16_t got;
                memcpy(&got, dst + off + i * 2, 2);
                ok &= got == oc_mm_float_to_half(p[0x7c00 * 3 + len + i]);
            }
            memcpy(src + off, all + 0x3c00 + len, (size_t)len * 2);
            memset(dst, 0xEE, 64 * 4 + 8);
            r->to_float(src + off, len, dst + off);
            ok &= dst[off + len * 4] == 0xEE && (off == 0 || dst[off - 1] == 0xEE);
            for (int64_t i = 0; i < len; ++i) {
                float got;
                memcpy(&got, dst + off + i * 4, 4);
                ok &= oc_mm_f32_bits(got) == oc_mm_f32_bits(oc_mm_half_to_float((uint16_t)(0x3c00 + len + i)));
            }
            CHECK_MSG(ok, "%s: a run of %lld from byte offset %d", r->name, (long long)len, off);
        }
    free(h), free(want_h), free(src), free(dst), free(wide);
}

/* oc_matmul_convert into float16 and out of it: the runs where it takes them (float32, the
 * exact types through chunks of 512, float16 widened), the element loop where not (strided),
 * every element as the element-by-element conversion gives it. */
static void check_convert(const float *p)
{
    enum { N = 2000 };
    static const oc_matmul_dtype from[] = {OC_MATMUL_FLOAT32, OC_MATMUL_INT8,    OC_MATMUL_UINT8, OC_MATMUL_INT16,
                                           OC_MATMUL_UINT16,  OC_MATMUL_FLOAT64, OC_MATMUL_INT32};
    unsigned char src[N * 8];
    uint16_t dst[N * 3];
    for (int i = 0; i < N * 8; ++i) src[i] = (unsigned char)(i * 131 + 7);
    memcpy(src, p + 0x7c00 * 3, N * 4); /* float32: probes around midpoints */
    for (size_t t = 0; t < sizeof from / sizeof from[0]; ++t)
        for (int stride = 1; stride <= 3; stride += 2) {
            float f32[N];
            oc_matmul_convert(from[t], src, N, OC_MM_FLOAT32, f32, 1);
            double f64[N];
            oc_matmul_convert(from[t], src, N, OC_MM_FLOAT64, f64, 1);
            oc_matmul_convert(from[t], src, N, OC_MM_FLOAT16, dst, stride);
            int bad = 0;
            for (int i = 0; i < N; ++i) {
                double v = f64[i];
                uint16_t want = isnan(v) ? oc_mm_float_to_half(f32[i]) : half_reference(fabs(v));
                if (!isnan(v) && signbit(v)) want |= 0x8000u;
                bad += dst[i * stride] != want;
            }
            CHECK_MSG(bad == 0, "%s -> float16, stride %d: %d elements differ", oc_matmul_dtype_name(from[t]), stride,
                      bad);
        }
    uint16_t halves[N];
    for (int i = 0; i < N; ++i) halves[i] = (uint16_t)(i * 33 + 1);
    float wide[N * 3];
    for (int stride = 1; stride <= 3; stride += 2) {
        oc_matmul_convert(OC_MATMUL_FLOAT16, halves, N, OC_MM_FLOAT32, wide, stride);
        int bad = 0;
        for (int i = 0; i < N; ++i)
            bad += oc_mm_f32_bits(wide[i * stride]) != oc_mm_f32_bits(oc_mm_half_to_float(halves[i]));
        CHECK_MSG(bad == 0, "float16 -> float32, stride %d: %d elements differ", stride, bad);
    }
}

/* One float32 -> bfloat16 conversion against the reference: the finite ones and infinities
 * rounded to nearest, ties to even; a NaN stays a NaN, quiet, with its sign and high payload. */
static int bf16_differs(float f)
{
    const uint16_t got = oc_mm_float_to_bf16(f);
    const uint32_t u = oc_mm_f32_bits(f);
    uint16_t want;
    if (isnan(f)) {
        want = (uint16_t)((u >> 16) | 0x40u);
        if (!isnan(oc_mm_bf16_to_float(got))) CHECK_MSG(0, "bfloat16 of the NaN 0x%08x: 0x%04x, not a NaN", u, got);
    } else {
        want = isinf(f) ? 0x7f80u : bf16_reference(fabs((double)f));
        if (signbit(f)) want |= 0x8000u;
    }
    if (got == want) return 0;
    CHECK_MSG(0, "bfloat16 of 0x%08x: 0x%04x, expected 0x%04x", u, got, want);
    return 1;
}

/* float32 -> bfloat16: cases written out (each tie class, just off a tie, negatives,
 * subnormals, rounding up into the next binade and to infinity, infinities, NaNs), then every
 * bfloat16's value, the midpoints between neighbours and a float32 ulp either side, both
 * signs, and the probes above, against the reference. */
static void check_bf16(const float *p, int64_t n)
{
    static const struct {
        uint32_t f;
        uint16_t bf16;
    } cases[] = {
        /* ties: 1 + 2^-8 down to the even 1.0, 1 + 3 * 2^-8 up to the even 1.015625, negative
         * ones the same; a float32 ulp above a tie goes up, below it down */
        {0x3f808000u, 0x3f80u},
        {0x3f818000u, 0x3f82u},
        {0xbf808000u, 0xbf80u},
        {0xbf818000u, 0xbf82u},
        {0x3f808001u, 0x3f81u},
        {0x3f807fffu, 0x3f80u},
        {0x3f818001u, 0x3f82u},
        {0x3f817fffu, 0x3f81u},
        {0xbf808001u, 0xbf81u},
        /* subnormals: ties down to 0 and up to 0x0002, the smallest, one exact, the largest
         * rounding up to the smallest normal */
        {0x00008000u, 0x0000u},
        {0x00018000u, 0x0002u},
        {0x80008001u, 0x8001u},
        {0x00000001u, 0x0000u},
        {0x00010000u, 0x0001u},
        {0x007fffffu, 0x0080u},
        /* into the next binade: a tie whose even neighbour is 1.0, and just below 2 */
        {0x3f7f8000u, 0x3f80u},
        {0x3fffffffu, 0x4000u},
        /* the top: just below halfway past the largest finite stays it; halfway (a tie, to the
         * even infinity) and FLT_MAX round to infinity */
        {0x7f7f7fffu, 0x7f7fu},
        {0x7f7f8000u, 0x7f80u},
        {0x7f7fffffu, 0x7f80u},
        {0xff7f8000u, 0xff80u},
        /* infinities and zeros */
        {0x7f800000u, 0x7f80u},
        {0xff800000u, 0xff80u},
        {0x00000000u, 0x0000u},
        {0x80000000u, 0x8000u},
        /* NaNs: quiet, with their sign and high payload, never infinity */
        {0x7f800001u, 0x7fc0u},
        {0xff800001u, 0xffc0u},
        {0x7fc00000u, 0x7fc0u},
        {0xffa5a5a5u, 0xffe5u},
        {0x7fbfffffu, 0x7fffu},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        const uint16_t got = oc_mm_float_to_bf16(f32_of(cases[i].f));
        CHECK_MSG(got == cases[i].bf16, "bfloat16 of 0x%08x: 0x%04x, expected 0x%04x", cases[i].f, got, cases[i].bf16);
        const float f = f32_of(cases[i].f);
        if (isfinite(f)) /* the reference agrees with the cases written out */
            CHECK((bf16_reference(fabs((double)f)) | (signbit(f) ? 0x8000u : 0u)) == cases[i].bf16);
    }
    int bad = 0;
    for (uint32_t b = 0; b < 0x7f80 && bad < 5; ++b) {
        const float v = oc_mm_bf16_to_float((uint16_t)b);
        const float mid = (float)((bf16_reference_value((uint16_t)b) + bf16_reference_value((uint16_t)(b + 1))) / 2);
        const float at[] = {v, mid, nextafterf(mid, 0), nextafterf(mid, INFINITY)}; /* mid: exact, 9 bits */
        for (int k = 0; k < 4; ++k) bad += bf16_differs(at[k]) + bf16_differs(-at[k]);
    }
    for (int64_t i = 0; i < n && bad < 10; ++i) bad += bf16_differs(p[i]);
}

int main(void)
{
    float *p = malloc(MAX_PROBES * sizeof *p);
    if (!p) return 1;
    const int64_t n = probes(p);
    CHECK(n <= MAX_PROBES);
    check_scalar(p, n);
    int variants = 0;
    for (int v = 0; v < OC_MM_HALF_VARIANTS; ++v) {
        const oc_mm_half_runs *r = oc_mm_half_runs_get((oc_mm_half_variant)v);
        if (!r) {
            printf("variant %d: not on this CPU or build\n", v);
            continue;
        }
        printf("variant %s\n", r->name);
        check_variant(r, p, n);
        variants++;
    }
    CHECK(variants >= 1 && oc_mm_half_runs_best() != NULL);
    const oc_mm_half_runs *f16c = oc_mm_half_runs_get(OC_MM_HALF_F16C);
    if (f16c) CHECK(oc_mm_half_runs_best() == f16c);
    check_convert(p);
    check_bf16(p, n);
    free(p);
    return oc_test_finish();
}
