/*
 * epilogue_avx2.c - the AVX2 tile epilogue (contract: ../kernel.h; column blocks and the
 * float path of jaccard: ../epilogue_blocks.h), 8 float32 or 4 float64 lanes per
 * operation. AVX2 has no masked loads of words, so each block's last cols % 8 columns go
 * through the reference epilogue.
 *
 * Exactness as in ../avx512/epilogue_avx512.c (read its top comment): exact integer sums in
 * double, then the scalar code's correctly rounded operations in the same order; hamming in
 * wrapping 32-bit lanes. Lanes where the reference does not divide (an empty union, an
 * empty row) divide by 1 instead and are replaced afterwards, so that no lane computes
 * 0/0 and raises a floating-point exception the scalar code would not.
 */
#include <immintrin.h>

#include "gram/cpu/kernels/epilogue_blocks.h"

/* The low halves of eight 32-bit lanes, in order: the uint16 casts of the lanes. */
static inline __m128i low_halves(__m256i v)
{
    const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5, 8, 9,
                                          12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
    /* Each 128-bit half packs its four halves into its low qword; gather qwords 0 and 2. */
    return _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, pick), 0x08));
}

/* Four uint32 counts as exact doubles: flipping the sign bit maps them onto int32, which
 * vcvtdq2pd converts, and adding 2^31 back is exact (the sum is an integer below 2^32). */
static inline __m256d counts_pd(const uint32_t *c)
{
    const __m128i flipped = _mm_xor_si128(_mm_loadu_si128((const __m128i *)c), _mm_set1_epi32(INT32_MIN));
    return _mm256_add_pd(_mm256_cvtepi32_pd(flipped), _mm256_set1_pd(2147483648.0));
}

static void counts_u16(const uint32_t *c, int64_t ldc, int64_t rows, int64_t cols, uint16_t *out, int64_t ldo)
{
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; j += 8)
            _mm_storeu_si128((__m128i *)(out + r * ldo + j),
                             low_halves(_mm256_loadu_si256((const __m256i *)(c + r * ldc + j))));
}

static void hamming(const uint32_t *c, int64_t ldc, const int64_t *pa, const uint32_t *pb, int64_t rows, int64_t cols,
                    int wide, void *out, int64_t ldo)
{
    for (int64_t r = 0; r < rows; ++r) {
        const __m256i a = _mm256_set1_epi32((int)(uint32_t)pa[r]);
        for (int64_t j = 0; j < cols; j += 8) {
            const __m256i cv = _mm256_loadu_si256((const __m256i *)(c + r * ldc + j));
            const __m256i h = _mm256_sub_epi32(_mm256_add_epi32(a, _mm256_loadu_si256((const __m256i *)(pb + j))),
                                               _mm256_add_epi32(cv, cv));
            if (wide) _mm256_storeu_si256((__m256i *)((int32_t *)out + r * ldo + j), h);
            else _mm_storeu_si128((__m128i *)((uint16_t *)out + r * ldo + j), low_halves(h));
        }
    }
}

/* c / (|a| + |b| - c) with both terms exact in float; 1 where the union is 0. */
static void jaccard_float(const uint32_t *c, int64_t ldc, const int64_t *pa, const uint32_t *pb, int64_t rows,
                          int64_t cols, float *out, int64_t ldo)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    for (int64_t r = 0; r < rows; ++r) {
        const __m256i a = _mm256_set1_epi32((int)pa[r]);
        for (int64_t j = 0; j < cols; j += 8) {
            const __m256i cv = _mm256_loadu_si256((const __m256i *)(c + r * ldc + j));
            const __m256i uni =
                _mm256_sub_epi32(_mm256_add_epi32(a, _mm256_loadu_si256((const __m256i *)(pb + j))), cv);
            const __m256 empty = _mm256_castsi256_ps(_mm256_cmpeq_epi32(uni, _mm256_setzero_si256()));
            const __m256 q =
                _mm256_div_ps(_mm256_cvtepi32_ps(cv), _mm256_blendv_ps(_mm256_cvtepi32_ps(uni), one, empty));
            _mm256_storeu_ps(out + r * ldo + j, _mm256_blendv_ps(q, one, empty));
        }
    }
}

/* Jaccard (1 where the union is 0) or cosine (0 where either row is empty, which is exactly
 * where the product of the popcounts is 0) in double lanes, rounded to float. */
static void in_double(const uint32_t *c, int64_t ldc, const int64_t *pa, const double *pb, int64_t rows, int64_t cols,
                      int cosine, float *out, int64_t ldo)
{
    const __m256d one = _mm256_set1_pd(1.0), zero = _mm256_setzero_pd();
    for (int64_t r = 0; r < rows; ++r) {
        const __m256d a = _mm256_set1_pd((double)pa[r]);
        for (int64_t j = 0; j < cols; j += 4) {
            const __m256d cd = counts_pd(c + r * ldc + j), b = _mm256_loadu_pd(pb + j);
            __m256d q;
            if (cosine) {
                const __m256d prod = _mm256_mul_pd(a, b);
                const __m256d empty = _mm256_cmp_pd(prod, zero, _CMP_EQ_OQ);
                q = _mm256_div_pd(cd, _mm256_blendv_pd(_mm256_sqrt_pd(prod), one, empty));
                q = _mm256_andnot_pd(empty, q); /* +0 */
            } else {
                const __m256d uni = _mm256_sub_pd(_mm256_add_pd(a, b), cd);
                const __m256d empty = _mm256_cmp_pd(uni, zero, _CMP_EQ_OQ);
                q = _mm256_blendv_pd(_mm256_div_pd(cd, _mm256_blendv_pd(uni, one, empty)), one, empty);
            }
            _mm_storeu_ps(out + r * ldo + j, _mm256_cvtpd_ps(q));
        }
    }
}

static const oc_epilogue_rows rows_avx2 = {hamming, jaccard_float, in_double};

void oc_epilogue_avx2(oc_epilogue_kind kind, const uint32_t *c, int64_t ldc, const int64_t *pa, const int64_t *pb,
                      int64_t rows, int64_t cols, int64_t pop_max, void *out, int64_t ldo)
{
    const size_t es =
        kind == OC_EPILOGUE_HAMMING_U16 || kind == OC_EPILOGUE_COUNTS_U16 ? sizeof(uint16_t) : sizeof(float);
    /* Whole groups of 8 columns here, the rest in the reference. */
    const int64_t body = cols / 8 * 8;
    if (body < cols)
        oc_epilogue_ref(kind, c + body, ldc, pa, pb ? pb + body : NULL, rows, cols - body, pop_max,
                        (char *)out + (size_t)body * es, ldo);
    if (kind == OC_EPILOGUE_COUNTS_U16) counts_u16(c, ldc, rows, body, out, ldo);
    else oc_epilogue_blocks(&rows_avx2, kind, c, ldc, pa, pb, rows, body, pop_max, out, ldo);
}
