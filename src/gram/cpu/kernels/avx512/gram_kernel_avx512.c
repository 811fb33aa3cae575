/*
 * gram_kernel_avx512.c - the AVX-512 VPOPCNTDQ micro-kernel (contract: ../kernel.h).
 *
 * A 4 x 6 block of row pairs keeps 24 zmm accumulators of 8 qword partial counts. Each K
 * step loads 4 A segments and 6 B segments (512 bits each) and does, per pair,
 *     vpandq -> vpopcntq -> vpaddq
 * Those three 512-bit operations share ports 0 and 5, and vpopcntq runs on port 5 only,
 * so a pair costs 1.5 cycles at best: about 341 bit-MACs per cycle and core. The 10 loads
 * per 24 pairs stay far below the load ports' rate, which is why the block is shaped for
 * the register file (24 + 4 + 1 + temporaries <= 32 zmm) rather than for loads.
 *
 * Every (mr, nr) tail shape is its own instance of one inlined body with compile-time
 * sizes, so the accumulators stay in registers and a tail costs no wasted pairs.
 *
 * A call walks a strip of A rows (kernel.h); its full 4 x 6 micro-tiles run the body inlined
 * in oc_gram_kernel_avx512, the tails through the instances. Check after any change that the
 * hot loop has 24 x (vpandd/q, vpopcntq, vpaddq), 10 loads and no stack access, and that the
 * reduction does not spill either:
 *   objdump -d --no-show-raw-insn <build>/CMakeFiles/outcore_obj.dir/src/gram/cpu/kernels/avx512/
 *     gram_kernel_avx512.c.o | awk '/<oc_gram_kernel_avx512>:/,/^$/' | grep zmm | grep -c 'sp)\|bp)'
 * (expect 0; the same for <kernel_4x6>).
 */
#include <immintrin.h>

#include "gram/cpu/kernels/kernel.h"

#define MR OC_KERNEL_AVX512_MR
#define NR OC_KERNEL_AVX512_NR
#define ACC_GROUPS ((MR * NR + 7) / 8)

/* Reduces 8 accumulators to one vector whose qword k is the sum of the 8 lanes of v[k]:
 * 21 operations instead of 8 full horizontal reductions (48). */
static inline __attribute__((always_inline)) __m512i reduce8(__m512i v0, __m512i v1, __m512i v2, __m512i v3, __m512i v4,
                                                             __m512i v5, __m512i v6, __m512i v7)
{
    /* Level 1: in each 128-bit lane L, qword 0 = x[2L] + x[2L+1] of the first input and
     * qword 1 the same of the second. */
    __m512i s01 = _mm512_add_epi64(_mm512_unpacklo_epi64(v0, v1), _mm512_unpackhi_epi64(v0, v1));
    __m512i s23 = _mm512_add_epi64(_mm512_unpacklo_epi64(v2, v3), _mm512_unpackhi_epi64(v2, v3));
    __m512i s45 = _mm512_add_epi64(_mm512_unpacklo_epi64(v4, v5), _mm512_unpackhi_epi64(v4, v5));
    __m512i s67 = _mm512_add_epi64(_mm512_unpacklo_epi64(v6, v7), _mm512_unpackhi_epi64(v6, v7));
    /* Level 2: lanes 0,1 of the result hold halves of (v0, v1), lanes 2,3 of (v2, v3). */
    __m512i u0 = _mm512_add_epi64(_mm512_shuffle_i64x2(s01, s23, 0x88), _mm512_shuffle_i64x2(s01, s23, 0xDD));
    __m512i u1 = _mm512_add_epi64(_mm512_shuffle_i64x2(s45, s67, 0x88), _mm512_shuffle_i64x2(s45, s67, 0xDD));
    /* Level 3: lane L holds the full sums of (v[2L], v[2L+1]). */
    return _mm512_add_epi64(_mm512_shuffle_i64x2(u0, u1, 0x88), _mm512_shuffle_i64x2(u0, u1, 0xDD));
}

static inline __attribute__((always_inline)) void kernel_body(const uint64_t *a, int64_t lda, const uint64_t *b,
                                                              int64_t ldb, int64_t kw, uint32_t *c, int64_t ldc,
                                                              const int mr, const int nr)
{
    /* Padded to whole groups of 8 for the reduction; the padding stays zero. */
    __m512i acc[ACC_GROUPS * 8];
    for (int t = 0; t < ACC_GROUPS * 8; ++t) acc[t] = _mm512_setzero_si512();

    for (int64_t k = 0; k < kw; k += OC_KERNEL_K_WORDS) {
        __m512i av[MR];
        for (int i = 0; i < mr; ++i) av[i] = _mm512_load_si512((const void *)(a + i * lda + k));
        for (int j = 0; j < nr; ++j) {
            __m512i bv = _mm512_load_si512((const void *)(b + j * ldb + k));
            for (int i = 0; i < mr; ++i)
                acc[i * nr + j] = _mm512_add_epi64(acc[i * nr + j], _mm512_popcnt_epi64(_mm512_and_si512(av[i], bv)));
        }
    }

    /* Sums fit in 32 bits (kernel.h bounds kw), so the qword sums narrow exactly: sum t of
     * pair (i, j), t = i * nr + j, is dword t % 8 of group t / 8. Spelled out per group (not
     * a loop) so that the accumulators are never spilled. */
#define REDUCE_GROUP(acc, mr, nr, g)                                                                            \
    ((g) < (mr) * (nr) ? _mm512_cvtepi64_epi32(reduce8(acc[(g)], acc[(g) + 1], acc[(g) + 2], acc[(g) + 3],      \
                                                       acc[(g) + 4], acc[(g) + 5], acc[(g) + 6], acc[(g) + 7])) \
                       : _mm256_setzero_si256())
    _Static_assert(ACC_GROUPS == 3, "one REDUCE_GROUP per group of 8 accumulators");
    const __m512i s01 =
        _mm512_inserti64x4(_mm512_castsi256_si512(REDUCE_GROUP(acc, mr, nr, 0)), REDUCE_GROUP(acc, mr, nr, 8), 1);
    const __m512i s2 = _mm512_castsi256_si512(REDUCE_GROUP(acc, mr, nr, 16));
#undef REDUCE_GROUP
    /* Row i's nr sums are dwords i * nr .. of (s01, s2): one two-source permute gathers them,
     * and one masked add updates the row of c (24 scalar updates took a third of a short-K
     * call, about as long as the whole loop at kw = 32). */
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __mmask8 cols = (__mmask8)((1u << nr) - 1);
    for (int i = 0; i < mr; ++i) {
        const __m512i idx = _mm512_add_epi32(iota, _mm512_set1_epi32(i * nr));
        const __m256i row = _mm512_castsi512_si256(_mm512_permutex2var_epi32(s01, idx, s2));
        const __m256i old = _mm256_maskz_loadu_epi32(cols, c + i * ldc);
        _mm256_mask_storeu_epi32(c + i * ldc, cols, _mm256_add_epi32(old, row));
    }
}

#define KERNEL_INSTANCE(R, S)                                                                                \
    static void kernel_##R##x##S(const uint64_t *a, int64_t lda, const uint64_t *b, int64_t ldb, int64_t kw, \
                                 uint32_t *c, int64_t ldc)                                                   \
    {                                                                                                        \
        kernel_body(a, lda, b, ldb, kw, c, ldc, R, S);                                                       \
    }
#define KERNEL_ROW(R)     \
    KERNEL_INSTANCE(R, 1) \
    KERNEL_INSTANCE(R, 2) KERNEL_INSTANCE(R, 3) KERNEL_INSTANCE(R, 4) KERNEL_INSTANCE(R, 5) KERNEL_INSTANCE(R, 6)
KERNEL_ROW(1)
KERNEL_ROW(2)
KERNEL_ROW(3)
KERNEL_ROW(4)

typedef void (*shape_fn)(const uint64_t *, int64_t, const uint64_t *, int64_t, int64_t, uint32_t *, int64_t);
#define SHAPE_ROW(R)                                                                                   \
    {                                                                                                  \
        kernel_##R##x1, kernel_##R##x2, kernel_##R##x3, kernel_##R##x4, kernel_##R##x5, kernel_##R##x6 \
    }
_Static_assert(MR == 4 && NR == 6, "the instance table below spells out a 4 x 6 micro-tile");
static const shape_fn shapes[MR][NR] = {SHAPE_ROW(1), SHAPE_ROW(2), SHAPE_ROW(3), SHAPE_ROW(4)};

void oc_gram_kernel_avx512(const uint64_t *a, int64_t lda, const uint64_t *b, int64_t ldb, int64_t kw, int mr, int nr,
                           uint32_t *c, int64_t ldc)
{
    OC_KERNEL_STRIP_WALK(kernel_body, shapes, MR, NR, a, lda, b, ldb, kw, mr, nr, c, ldc);
}
