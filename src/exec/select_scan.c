/*
 * select_scan.c - the top-k pre-test on each CPU path (see select_scan.h for the test and
 * the contract shared by every path).
 *
 * Each path is written once as a body that takes the key kind and the mirror flag as
 * constants; SCAN_DISPATCH instantiates it for every combination, so the key conversion
 * and the column test cost nothing when they do not apply.
 *
 * The reference path is plain C: per 64 columns one branch-free pass that the compiler
 * vectorises for any x86-64 answers "does any column pass?", and only then are the bits
 * gathered one by one (after a row's first tiles most words have none). The AVX2 and
 * AVX-512 paths convert 8 or 16 values to score keys in registers, compare them against
 * both floors and take the bits straight from the compare masks. A row's last, partial
 * vector is loaded from a zeroed copy: the tile may end exactly at the row's last value.
 */
#include "select_scan.h"

#include <string.h>

#include "outcore.h"
#include "select_key.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define OC_SCAN_X86 1
#endif

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Each body is instantiated per key kind and mirror flag. */
#define SCAN_DISPATCH(BODY, t)                                   \
    do {                                                         \
        if ((t)->mirror) {                                       \
            switch ((t)->kind) {                                 \
            case OC_KEY_F32: BODY(t, OC_KEY_F32, 1); break;      \
            case OC_KEY_I32: BODY(t, OC_KEY_I32, 1); break;      \
            case OC_KEY_U16: BODY(t, OC_KEY_U16, 1); break;      \
            case OC_KEY_I32_REV: BODY(t, OC_KEY_I32_REV, 1); break; \
            default: BODY(t, OC_KEY_U16_REV, 1); break;          \
            }                                                    \
        } else {                                                 \
            switch ((t)->kind) {                                 \
            case OC_KEY_F32: BODY(t, OC_KEY_F32, 0); break;      \
            case OC_KEY_I32: BODY(t, OC_KEY_I32, 0); break;      \
            case OC_KEY_U16: BODY(t, OC_KEY_U16, 0); break;      \
            case OC_KEY_I32_REV: BODY(t, OC_KEY_I32_REV, 0); break; \
            default: BODY(t, OC_KEY_U16_REV, 0); break;          \
            }                                                    \
        }                                                        \
    } while (0)

ALWAYS_INLINE int64_t kind_size(int kind) { return kind == OC_KEY_U16 || kind == OC_KEY_U16_REV ? 2 : 4; }

/* The constants of row r's test (select_scan.h). */
typedef struct row_test {
    uint32_t rhi, climit, ilow;
} row_test;

ALWAYS_INLINE row_test row_test_of(const oc_scan_tile *t, int64_t r)
{
    const uint64_t rf = t->row_floor[r];
    const uint32_t jlow0 = 0xFFFFFFFFu - (uint32_t)t->j0, rlo = (uint32_t)rf;
    return (row_test){(uint32_t)(rf >> 32), jlow0 > rlo ? jlow0 - rlo : 0, 0xFFFFFFFFu - (uint32_t)(t->i0 + r)};
}

/* ---------------------------------------------------------------- reference */
ALWAYS_INLINE uint32_t passes(const oc_scan_tile *t, int mirror, row_test rt, uint32_t sk, int64_t c)
{
    uint32_t p = (uint32_t)(sk > rt.rhi) | ((uint32_t)(sk == rt.rhi) & (uint32_t)((uint32_t)c < rt.climit));
    if (mirror) p |= (uint32_t)(sk > t->chi[c]) | ((uint32_t)(sk == t->chi[c]) & (uint32_t)(rt.ilow > t->clo[c]));
    return p;
}

ALWAYS_INLINE void scan_ref_body(const oc_scan_tile *t, const int kind, const int mirror)
{
    const int64_t wpr = OC_SCAN_WORDS(t->cols);
    for (int64_t r = 0; r < t->rows; ++r) {
        const void *row = (const char *)t->values + r * t->ld * kind_size(kind);
        const row_test rt = row_test_of(t, r);
        uint64_t *words = t->words + r * wpr;
        for (int64_t w = 0; w < wpr; ++w) {
            const int64_t b = w * OC_SCAN_WORD, e = b + OC_SCAN_WORD < t->cols ? b + OC_SCAN_WORD : t->cols;
            uint32_t any = 0;
            for (int64_t c = b; c < e; ++c) any |= passes(t, mirror, rt, oc_key_score(kind, row, c), c);
            uint64_t m = 0;
            if (any)
                for (int64_t c = b; c < e; ++c) m |= (uint64_t)passes(t, mirror, rt, oc_key_score(kind, row, c), c) << (c - b);
            words[w] = m;
        }
    }
}

static void scan_ref(const oc_scan_tile *t) { SCAN_DISPATCH(scan_ref_body, t); }

#ifdef OC_SCAN_X86
/* ---------------------------------------------------------------- AVX2 */
#define TARGET_AVX2 __attribute__((target("avx2")))

/* Score keys of 8 values from column c; AVX2 compares signed, so keys come out biased by
 * 2^31 (and so are the floors they meet). */
TARGET_AVX2 ALWAYS_INLINE __m256i keys8(int kind, const void *row, int64_t c)
{
    const __m256i sign = _mm256_set1_epi32((int)0x80000000u);
    if (kind == OC_KEY_U16 || kind == OC_KEY_U16_REV) {
        __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + c)));
        if (kind == OC_KEY_U16_REV) x = _mm256_sub_epi32(_mm256_set1_epi32(0xFFFF), x);
        return _mm256_xor_si256(x, sign);
    }
    const __m256i x = _mm256_loadu_si256((const __m256i *)((const uint32_t *)row + c));
    switch (kind) {
    case OC_KEY_F32: /* oc_key_f32: flip every bit of negative values, the sign of others */
        return _mm256_xor_si256(_mm256_xor_si256(x, _mm256_or_si256(_mm256_srai_epi32(x, 31), sign)), sign);
    case OC_KEY_I32: return x;
    default: return _mm256_xor_si256(x, _mm256_set1_epi32(-1)); /* OC_KEY_I32_REV: x ^ 0x7FFFFFFF, biased */
    }
}

ALWAYS_INLINE void scan_vector_tail(int kind, const void *row, int64_t c, int64_t n, unsigned char *buf, int64_t bytes)
{
    memset(buf, 0, (size_t)bytes);
    memcpy(buf, (const char *)row + c * kind_size(kind), (size_t)(n * kind_size(kind)));
}

TARGET_AVX2 ALWAYS_INLINE void scan_avx2_body(const oc_scan_tile *t, const int kind, const int mirror)
{
    const __m256i sign = _mm256_set1_epi32((int)0x80000000u), iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int64_t wpr = OC_SCAN_WORDS(t->cols), cols = t->cols;
    for (int64_t r = 0; r < t->rows; ++r) {
        const void *row = (const char *)t->values + r * t->ld * kind_size(kind);
        const row_test rt = row_test_of(t, r);
        const __m256i rhi = _mm256_set1_epi32((int)(rt.rhi ^ 0x80000000u));
        const __m256i climit = _mm256_set1_epi32((int)(rt.climit ^ 0x80000000u));
        const __m256i ilow = _mm256_set1_epi32((int)(rt.ilow ^ 0x80000000u));
        uint64_t *words = t->words + r * wpr;
        for (int64_t w = 0; w < wpr; ++w) {
            uint64_t m = 0;
            for (int64_t c = w * OC_SCAN_WORD; c < (w + 1) * OC_SCAN_WORD && c < cols; c += 8) {
                const int64_t n = cols - c < 8 ? cols - c : 8;
                _Alignas(32) unsigned char buf[32];
                __m256i k;
                if (n == 8) {
                    k = keys8(kind, row, c);
                } else {
                    scan_vector_tail(kind, row, c, n, buf, sizeof buf);
                    k = keys8(kind, buf, 0);
                }
                const __m256i idx = _mm256_xor_si256(_mm256_add_epi32(_mm256_set1_epi32((int)c), iota), sign);
                __m256i p = _mm256_or_si256(_mm256_cmpgt_epi32(k, rhi),
                                            _mm256_and_si256(_mm256_cmpeq_epi32(k, rhi), _mm256_cmpgt_epi32(climit, idx)));
                if (mirror) {
                    const __m256i ch = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(t->chi + c)), sign);
                    const __m256i cl = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(t->clo + c)), sign);
                    p = _mm256_or_si256(p, _mm256_or_si256(_mm256_cmpgt_epi32(k, ch),
                                                           _mm256_and_si256(_mm256_cmpeq_epi32(k, ch),
                                                                            _mm256_cmpgt_epi32(ilow, cl))));
                }
                const uint32_t bits = (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(p)) & ((1u << n) - 1);
                m |= (uint64_t)bits << (c % OC_SCAN_WORD);
            }
            words[w] = m;
        }
    }
}

TARGET_AVX2 static void scan_avx2(const oc_scan_tile *t) { SCAN_DISPATCH(scan_avx2_body, t); }

/* ---------------------------------------------------------------- AVX-512 */
#define TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

TARGET_AVX512 ALWAYS_INLINE __m512i keys16(int kind, const void *row, int64_t c)
{
    if (kind == OC_KEY_U16 || kind == OC_KEY_U16_REV) {
        const __m512i x = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)row + c)));
        return kind == OC_KEY_U16 ? x : _mm512_sub_epi32(_mm512_set1_epi32(0xFFFF), x);
    }
    const __m512i x = _mm512_loadu_si512((const uint32_t *)row + c);
    switch (kind) {
    case OC_KEY_F32:
        return _mm512_xor_si512(x, _mm512_or_si512(_mm512_srai_epi32(x, 31), _mm512_set1_epi32((int)0x80000000u)));
    case OC_KEY_I32: return _mm512_xor_si512(x, _mm512_set1_epi32((int)0x80000000u));
    default: return _mm512_xor_si512(x, _mm512_set1_epi32(0x7FFFFFFF)); /* OC_KEY_I32_REV */
    }
}

TARGET_AVX512 ALWAYS_INLINE void scan_avx512_body(const oc_scan_tile *t, const int kind, const int mirror)
{
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const int64_t wpr = OC_SCAN_WORDS(t->cols), cols = t->cols;
    for (int64_t r = 0; r < t->rows; ++r) {
        const void *row = (const char *)t->values + r * t->ld * kind_size(kind);
        const row_test rt = row_test_of(t, r);
        const __m512i rhi = _mm512_set1_epi32((int)rt.rhi), climit = _mm512_set1_epi32((int)rt.climit);
        const __m512i ilow = _mm512_set1_epi32((int)rt.ilow);
        uint64_t *words = t->words + r * wpr;
        for (int64_t w = 0; w < wpr; ++w) {
            uint64_t m = 0;
            for (int64_t c = w * OC_SCAN_WORD; c < (w + 1) * OC_SCAN_WORD && c < cols; c += 16) {
                const int64_t n = cols - c < 16 ? cols - c : 16;
                _Alignas(64) unsigned char buf[64];
                __m512i k;
                if (n == 16) {
                    k = keys16(kind, row, c);
                } else {
                    scan_vector_tail(kind, row, c, n, buf, sizeof buf);
                    k = keys16(kind, buf, 0);
                }
                const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32((int)c), iota);
                __mmask16 p = _mm512_cmpgt_epu32_mask(k, rhi) |
                              _mm512_mask_cmplt_epu32_mask(_mm512_cmpeq_epu32_mask(k, rhi), idx, climit);
                if (mirror) {
                    const __m512i ch = _mm512_loadu_si512(t->chi + c), cl = _mm512_loadu_si512(t->clo + c);
                    p |= _mm512_cmpgt_epu32_mask(k, ch) |
                         _mm512_mask_cmplt_epu32_mask(_mm512_cmpeq_epu32_mask(k, ch), cl, ilow);
                }
                m |= (uint64_t)(p & (uint32_t)((1u << n) - 1)) << (c % OC_SCAN_WORD);
            }
            words[w] = m;
        }
    }
}

TARGET_AVX512 static void scan_avx512(const oc_scan_tile *t) { SCAN_DISPATCH(scan_avx512_body, t); }
#endif

oc_scan_fn oc_scan_choose(void)
{
#ifdef OC_SCAN_X86
    /* oc_cpu_isa() names a path only after checking the CPU and the OS (isa.c); each
     * kernel path's instruction sets include what the scan of the same name uses. */
    const char *isa = oc_cpu_isa();
    if (strcmp(isa, "avx512") == 0) return scan_avx512;
    if (strcmp(isa, "avx2") == 0) return scan_avx2;
#endif
    return scan_ref;
}
