/*
 * pack_bytes.c - the byte packers of pack_bytes.h: the reference loop (the specification),
 * SSE2, AVX2 and AVX-512BW (x86-64 only), and the choice between them.
 *
 * The vector step: a byte holding 0 or 1 keeps its value in bit 0; shifting each 64-bit
 * lane left by 7 carries that bit to bit 7 of the same byte (the bits that cross into the
 * next byte land at its bits 0-6, which movemask ignores), and movemask then gathers one
 * bit per byte, byte j of the block as mask bit j. packbits order wants byte 8k + t at bit
 * 7 - t of output byte k: SSE2 reverses the bits of each mask byte through a table, AVX2
 * and AVX-512 reverse each group of 8 bytes with a shuffle before taking the mask (AVX-512
 * tests bit 0 of each byte into a mask register instead of shifting). Validity is checked
 * for the whole row at once: the OR of every byte, with bit 0 cleared, is zero exactly when
 * no byte is above 1; only a bad row is scanned again for the first bad index.
 */
#include "matrix/pack_bytes.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#define OC_PACK_X86 1
#include <immintrin.h>
#endif

/* The bits of b in reverse order. */
static unsigned char reverse8(unsigned char b)
{
    b = (unsigned char)((b & 0xF0) >> 4 | (b & 0x0F) << 4);
    b = (unsigned char)((b & 0xCC) >> 2 | (b & 0x33) << 2);
    b = (unsigned char)((b & 0xAA) >> 1 | (b & 0x55) << 1);
    return b;
}

/* Packs src[from, cols) byte by byte into out, whose bytes from from / 8 on are zero. */
static void pack_tail(const unsigned char *src, int64_t from, int64_t cols, unsigned char *out, int binarize,
                      unsigned char *bad)
{
    for (int64_t j = from; j < cols; ++j) {
        unsigned char v = binarize ? (unsigned char)(src[j] != 0) : src[j];
        *bad |= (unsigned char)(v & 0xFE);
        out[j >> 3] |= (unsigned char)((v & 1) << (7 - (j & 7)));
    }
}

static int64_t first_bad(const unsigned char *src, int64_t cols)
{
    for (int64_t j = 0; j < cols; ++j)
        if (src[j] > 1) return j;
    return -1; /* unreachable when the caller saw a bad byte */
}

static int64_t pack_ref(const unsigned char *src, int64_t cols, uint64_t *dst, int64_t words_per_row, int binarize)
{
    unsigned char *out = (unsigned char *)dst, bad = 0;
    memset(out, 0, (size_t)words_per_row * 8);
    pack_tail(src, 0, cols, out, binarize, &bad);
    return bad ? first_bad(src, cols) : -1;
}

#ifdef OC_PACK_X86
static unsigned char reversed_bits[256];
static pthread_once_t reversed_once = PTHREAD_ONCE_INIT;

static void reversed_init(void)
{
    for (int b = 0; b < 256; ++b) reversed_bits[b] = reverse8((unsigned char)b);
}

static int64_t pack_sse2(const unsigned char *src, int64_t cols, uint64_t *dst, int64_t words_per_row, int binarize)
{
    pthread_once(&reversed_once, reversed_init);
    unsigned char *out = (unsigned char *)dst, bad = 0;
    const int64_t full = cols / 16 * 16;
    const __m128i zero = _mm_setzero_si128();
    __m128i any = zero;
    for (int64_t j = 0; j < full; j += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(src + j));
        unsigned mask;
        if (binarize) {
            mask = ~(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero)) & 0xFFFFu;
        } else {
            any = _mm_or_si128(any, v);
            mask = (unsigned)_mm_movemask_epi8(_mm_slli_epi64(v, 7));
        }
        out[j / 8] = reversed_bits[mask & 0xFF];
        out[j / 8 + 1] = reversed_bits[mask >> 8];
    }
    memset(out + full / 8, 0, (size_t)(words_per_row * 8 - full / 8));
    pack_tail(src, full, cols, out, binarize, &bad);
    /* any holds the OR of every vector-packed byte: a byte above 1 leaves a bit other than
     * bit 0 set somewhere. */
    __m128i high = _mm_andnot_si128(_mm_set1_epi8(1), any);
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(high, zero)) != 0xFFFF) bad = 1;
    return bad ? first_bad(src, cols) : -1;
}

__attribute__((target("avx2"))) static int64_t pack_avx2(const unsigned char *src, int64_t cols, uint64_t *dst,
                                                         int64_t words_per_row, int binarize)
{
    unsigned char *out = (unsigned char *)dst, bad = 0;
    const int64_t full = cols / 32 * 32;
    const __m256i zero = _mm256_setzero_si256();
    /* Byte t of every group of 8 takes byte 7 - t: the movemask then reads each group
     * backwards, which is packbits order. */
    const __m256i reverse = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1,
                                             0, 15, 14, 13, 12, 11, 10, 9, 8);
    __m256i any = zero;
    for (int64_t j = 0; j < full; j += 32) {
        __m256i v = _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)(src + j)), reverse);
        uint32_t mask;
        if (binarize) {
            mask = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, zero));
        } else {
            any = _mm256_or_si256(any, v);
            mask = (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi64(v, 7));
        }
        memcpy(out + j / 8, &mask, 4); /* little-endian: mask byte k is output byte k */
    }
    memset(out + full / 8, 0, (size_t)(words_per_row * 8 - full / 8));
    pack_tail(src, full, cols, out, binarize, &bad);
    __m256i high = _mm256_andnot_si256(_mm256_set1_epi8(1), any);
    if (!_mm256_testz_si256(high, high)) bad = 1;
    return bad ? first_bad(src, cols) : -1;
}

/* AVX-512BW: the comparisons give the 64-bit mask directly (one bit per byte, no shift). */
__attribute__((target("avx512f,avx512bw"))) static int64_t
pack_avx512(const unsigned char *src, int64_t cols, uint64_t *dst, int64_t words_per_row, int binarize)
{
    unsigned char *out = (unsigned char *)dst, bad = 0;
    const int64_t full = cols / 64 * 64;
    const __m512i reverse =
        _mm512_set_epi64(0x08090a0b0c0d0e0fLL, 0x0001020304050607LL, 0x08090a0b0c0d0e0fLL, 0x0001020304050607LL,
                         0x08090a0b0c0d0e0fLL, 0x0001020304050607LL, 0x08090a0b0c0d0e0fLL, 0x0001020304050607LL);
    const __m512i one = _mm512_set1_epi8(1), high = _mm512_set1_epi8((char)0xFE);
    __mmask64 any_high = 0;
    for (int64_t j = 0; j < full; j += 64) {
        __m512i v = _mm512_shuffle_epi8(_mm512_loadu_si512((const void *)(src + j)), reverse);
        uint64_t mask;
        if (binarize) {
            mask = (uint64_t)_mm512_test_epi8_mask(v, v);
        } else {
            any_high |= _mm512_test_epi8_mask(v, high);
            mask = (uint64_t)_mm512_test_epi8_mask(v, one);
        }
        memcpy(out + j / 8, &mask, 8);
    }
    memset(out + full / 8, 0, (size_t)(words_per_row * 8 - full / 8));
    pack_tail(src, full, cols, out, binarize, &bad);
    if (any_high) bad = 1;
    return bad ? first_bad(src, cols) : -1;
}
#endif

oc_pack_bytes_fn oc_pack_bytes_get(oc_pack_bytes_variant v)
{
    switch (v) {
    case OC_PACK_BYTES_REF:
        return pack_ref;
#ifdef OC_PACK_X86
    case OC_PACK_BYTES_SSE2:
        return pack_sse2;
    case OC_PACK_BYTES_AVX2:
        return __builtin_cpu_supports("avx2") ? pack_avx2 : NULL;
    case OC_PACK_BYTES_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") ? pack_avx512 : NULL;
#endif
    default:
        return NULL;
    }
}

const char *oc_pack_bytes_name(oc_pack_bytes_variant v)
{
    static const char *const names[OC_PACK_BYTES_VARIANTS] = {"ref", "sse2", "avx2", "avx512"};
    return (unsigned)v < OC_PACK_BYTES_VARIANTS ? names[v] : "?";
}

static oc_pack_bytes_fn best;
static pthread_once_t best_once = PTHREAD_ONCE_INIT;

static void best_init(void)
{
    /* OUTCORE_CPU_ISA caps the choice as it caps the Gram kernels' (docs/environment.md). */
    const char *isa = getenv("OUTCORE_CPU_ISA");
    int cap = OC_PACK_BYTES_VARIANTS - 1;
    if (isa && strcmp(isa, "ref") == 0) cap = OC_PACK_BYTES_REF;
    if (isa && strcmp(isa, "avx2") == 0) cap = OC_PACK_BYTES_AVX2;
    for (int v = cap; v >= 0 && !best; --v) best = oc_pack_bytes_get((oc_pack_bytes_variant)v);
}

oc_pack_bytes_fn oc_pack_bytes_best(void)
{
    pthread_once(&best_once, best_init);
    return best;
}
