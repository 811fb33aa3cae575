/*
 * epilogue_avx512.c - the AVX-512 tile epilogue (contract: ../kernel.h; column blocks and
 * the float path of jaccard: ../epilogue_blocks.h), 16 float32 or 8 float64 lanes per
 * operation. Tails are masked: a masked-off lane is neither loaded nor stored, and a lane
 * whose division is masked off raises no floating-point exception.
 *
 * Exactness (src/core/metric.h is the specification): every integer involved is below
 * 2^34 and exact in double, so the union |a| + |b| - c comes out of exact double sums, and
 * then the lanes do the scalar code's correctly rounded vmulpd / vsqrtpd / vdivpd in the
 * same order, and vcvtpd2ps rounds once to float like the scalar cast. No multiply feeds
 * an add, so nothing can be contracted into an FMA (and intrinsics are not reassociated).
 * Hamming runs in wrapping 32-bit lanes: the low 32 bits of the 64-bit value, which are
 * what the int32 and uint16 casts keep.
 */
#include <immintrin.h>

#include "gram/cpu/kernels/epilogue_blocks.h"

static inline __mmask16 mask16(int64_t left) { return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1); }
static inline __mmask8 mask8(int64_t left) { return left >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << left) - 1); }

static void counts_u16(const uint32_t *c, int64_t ldc, int64_t rows, int64_t cols, uint16_t *out, int64_t ldo)
{
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; j += 16) {
            const __mmask16 m = mask16(cols - j);
            /* vpmovdw keeps the low 16 bits, as the cast does. */
            _mm512_mask_cvtepi32_storeu_epi16(out + r * ldo + j, m, _mm512_maskz_loadu_epi32(m, c + r * ldc + j));
        }
}

static void hamming(const uint32_t *c, int64_t ldc, const int64_t *pa, const uint32_t *pb, int64_t rows, int64_t cols,
                    int wide, void *out, int64_t ldo)
{
    for (int64_t r = 0; r < rows; ++r) {
        const __m512i a = _mm512_set1_epi32((int)(uint32_t)pa[r]);
        for (int64_t j = 0; j < cols; j += 16) {
            const __mmask16 m = mask16(cols - j);
            const __m512i cv = _mm512_maskz_loadu_epi32(m, c + r * ldc + j);
            const __m512i h =
                _mm512_sub_epi32(_mm512_add_epi32(a, _mm512_maskz_loadu_epi32(m, pb + j)), _mm512_add_epi32(cv, cv));
            if (wide) _mm512_mask_storeu_epi32((int32_t *)out + r * ldo + j, m, h);
            else _mm512_mask_cvtepi32_storeu_epi16((uint16_t *)out + r * ldo + j, m, h);
        }
    }
}

/* c / (|a| + |b| - c) with both terms exact in float; 1 where the union is 0. */
static void jaccard_float(const uint32_t *c, int64_t ldc, const int64_t *pa, const uint32_t *pb, int64_t rows,
                          int64_t cols, float *out, int64_t ldo)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t r = 0; r < rows; ++r) {
        const __m512i a = _mm512_set1_epi32((int)pa[r]);
        for (int64_t j = 0; j < cols; j += 16) {
            const __mmask16 m = mask16(cols - j);
            const __m512i cv = _mm512_maskz_loadu_epi32(m, c + r * ldc + j);
            const __m512i uni = _mm512_sub_epi32(_mm512_add_epi32(a, _mm512_maskz_loadu_epi32(m, pb + j)), cv);
            const __mmask16 nonzero = _mm512_test_epi32_mask(uni, uni);
            const __m512 q = _mm512_mask_div_ps(one, nonzero, _mm512_cvtepi32_ps(cv), _mm512_cvtepi32_ps(uni));
            _mm512_mask_storeu_ps(out + r * ldo + j, m, q);
        }
    }
}

/* Jaccard: (double)c / (double)(|a| + |b| - c), 1 where the union is 0. Cosine:
 * (double)c / sqrt((double)|a| * (double)|b|), 0 where either row is empty, which is exactly
 * where the product is 0 (positive integers multiply to at least 1). Rounded to float. */
static void in_double(const uint32_t *c, int64_t ldc, const int64_t *pa, const double *pb, int64_t rows, int64_t cols,
                      int cosine, float *out, int64_t ldo)
{
    const __m512d one = _mm512_set1_pd(1.0), zero = _mm512_setzero_pd();
    for (int64_t r = 0; r < rows; ++r) {
        const __m512d a = _mm512_set1_pd((double)pa[r]);
        for (int64_t j = 0; j < cols; j += 8) {
            const __mmask8 m = mask8(cols - j);
            const __m512d cd = _mm512_cvtepu32_pd(_mm256_maskz_loadu_epi32(m, c + r * ldc + j));
            const __m512d b = _mm512_maskz_loadu_pd(m, pb + j);
            __m512d q;
            if (cosine) {
                const __m512d prod = _mm512_mul_pd(a, b);
                const __mmask8 nonzero = _mm512_cmp_pd_mask(prod, zero, _CMP_NEQ_OQ);
                q = _mm512_maskz_div_pd(nonzero, cd, _mm512_maskz_sqrt_pd(nonzero, prod));
            } else {
                const __m512d uni = _mm512_sub_pd(_mm512_add_pd(a, b), cd);
                q = _mm512_mask_div_pd(one, _mm512_cmp_pd_mask(uni, zero, _CMP_NEQ_OQ), cd, uni);
            }
            _mm256_mask_storeu_ps(out + r * ldo + j, m, _mm512_cvtpd_ps(q));
        }
    }
}

static const oc_epilogue_rows rows_avx512 = {hamming, jaccard_float, in_double};

void oc_epilogue_avx512(oc_epilogue_kind kind, const uint32_t *c, int64_t ldc, const int64_t *pa, const int64_t *pb,
                        int64_t rows, int64_t cols, int64_t pop_max, void *out, int64_t ldo)
{
    if (kind == OC_EPILOGUE_COUNTS_U16) counts_u16(c, ldc, rows, cols, out, ldo);
    else oc_epilogue_blocks(&rows_avx512, kind, c, ldc, pa, pb, rows, cols, pop_max, out, ldo);
}
