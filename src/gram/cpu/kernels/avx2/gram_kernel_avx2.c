/*
 * gram_kernel_avx2.c - the AVX2 micro-kernel (contract: ../kernel.h).
 *
 * AVX2 has no vector popcount. Each 256-bit AND is counted per byte with the nibble table:
 * vpshufb looks up the popcount of the low and of the high nibble of every byte (Mula's
 * method). Byte counts of one step are at most 8, so 31 steps fit a byte accumulator
 * (31 * 8 = 248 < 256); then vpsadbw folds the bytes into qword totals. A 2 x 3 block keeps
 * its 6 byte accumulators, the table, the nibble mask, two A rows, one B row and the
 * lookup's temporaries in the 16 ymm registers (2 x 4 spilled 3 accumulators per step).
 * A pair costs 8 operations on 3 vector ports, about 96 bit-MACs per cycle: roughly a
 * quarter of the AVX-512 kernel, and about 6x the scalar reference.
 */
#include <immintrin.h>

#include "gram/cpu/kernels/kernel.h"

#define MR OC_KERNEL_AVX2_MR
#define NR OC_KERNEL_AVX2_NR
#define YMM_WORDS 4
#define BYTE_STEPS 31 /* steps a byte accumulator can take before it could overflow */

static inline __attribute__((always_inline)) __m256i popcount_bytes(__m256i x, __m256i table, __m256i low)
{
    __m256i lo = _mm256_and_si256(x, low);
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(x, 4), low);
    return _mm256_add_epi8(_mm256_shuffle_epi8(table, lo), _mm256_shuffle_epi8(table, hi));
}

static inline __attribute__((always_inline)) void kernel_body(const uint64_t *a, int64_t lda, const uint64_t *b,
                                                              int64_t ldb, int64_t kw, uint32_t *c, int64_t ldc,
                                                              const int mr, const int nr)
{
    const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2,
                                           2, 3, 2, 3, 3, 4);
    const __m256i low = _mm256_set1_epi8(0x0f);
    __m256i total[MR * NR];
    for (int t = 0; t < mr * nr; ++t) total[t] = _mm256_setzero_si256();

    for (int64_t k0 = 0; k0 < kw; k0 += BYTE_STEPS * YMM_WORDS) {
        int64_t k1 = k0 + BYTE_STEPS * YMM_WORDS < kw ? k0 + BYTE_STEPS * YMM_WORDS : kw;
        __m256i bytes[MR * NR];
        for (int t = 0; t < mr * nr; ++t) bytes[t] = _mm256_setzero_si256();
        for (int64_t k = k0; k < k1; k += YMM_WORDS) {
            __m256i av[MR];
            for (int i = 0; i < mr; ++i) av[i] = _mm256_load_si256((const __m256i *)(a + i * lda + k));
            for (int j = 0; j < nr; ++j) {
                __m256i bv = _mm256_load_si256((const __m256i *)(b + j * ldb + k));
                for (int i = 0; i < mr; ++i)
                    bytes[i * nr + j] =
                        _mm256_add_epi8(bytes[i * nr + j], popcount_bytes(_mm256_and_si256(av[i], bv), table, low));
            }
        }
        for (int t = 0; t < mr * nr; ++t)
            total[t] = _mm256_add_epi64(total[t], _mm256_sad_epu8(bytes[t], _mm256_setzero_si256()));
    }

    for (int i = 0; i < mr; ++i)
        for (int j = 0; j < nr; ++j) {
            __m256i t = total[i * nr + j];
            __m128i s = _mm_add_epi64(_mm256_castsi256_si128(t), _mm256_extracti128_si256(t, 1));
            s = _mm_add_epi64(s, _mm_unpackhi_epi64(s, s));
            c[i * ldc + j] += (uint32_t)_mm_cvtsi128_si64(s);
        }
}

#define KERNEL_INSTANCE(R, S)                                                                                \
    static void kernel_##R##x##S(const uint64_t *a, int64_t lda, const uint64_t *b, int64_t ldb, int64_t kw, \
                                 uint32_t *c, int64_t ldc)                                                   \
    {                                                                                                        \
        kernel_body(a, lda, b, ldb, kw, c, ldc, R, S);                                                       \
    }
#define KERNEL_ROW(R) KERNEL_INSTANCE(R, 1) KERNEL_INSTANCE(R, 2) KERNEL_INSTANCE(R, 3)
KERNEL_ROW(1)
KERNEL_ROW(2)

typedef void (*shape_fn)(const uint64_t *, int64_t, const uint64_t *, int64_t, int64_t, uint32_t *, int64_t);
#define SHAPE_ROW(R)                                   \
    {                                                  \
        kernel_##R##x1, kernel_##R##x2, kernel_##R##x3 \
    }
_Static_assert(MR == 2 && NR == 3, "the instance table below spells out a 2 x 3 micro-tile");
static const shape_fn shapes[MR][NR] = {SHAPE_ROW(1), SHAPE_ROW(2)};

void oc_gram_kernel_avx2(const uint64_t *a, int64_t lda, const uint64_t *b, int64_t ldb, int64_t kw, int mr, int nr,
                         uint32_t *c, int64_t ldc)
{
    OC_KERNEL_STRIP_WALK(kernel_body, shapes, MR, NR, a, lda, b, ldb, kw, mr, nr, c, ldc);
}
