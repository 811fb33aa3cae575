/*
 * select_scan.c - the top-k pre-test on each CPU path (see select_scan.h for the test and
 * the contract shared by every path).
 *
 * The reference path is plain C: per 64 columns one branch-free pass that the compiler
 * vectorises for any x86-64 answers "does any column pass?", and only then are the bits
 * gathered one by one (after a row's first tiles most words have none). The AVX2 and
 * AVX-512 paths compare 8 or 16 score keys per instruction and build the bits directly
 * from the compare masks, so a word costs the same whatever passes.
 */
#include "select_scan.h"

#include <string.h>

#include "outcore.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define OC_SCAN_X86 1
#endif

/* The test of select_scan.h for column c (absolute in the tile row). */
static inline uint32_t passes(const oc_scan_row *row, int mirror, int64_t c)
{
    const uint32_t v = row->sk[c];
    uint32_t p = (uint32_t)(v > row->rhi) | ((uint32_t)(v == row->rhi) & (uint32_t)((uint32_t)c < row->climit));
    if (mirror)
        p |= (uint32_t)(v > row->chi[c]) | ((uint32_t)(v == row->chi[c]) & (uint32_t)(row->ilow > row->clo[c]));
    return p;
}

static inline __attribute__((always_inline)) void scan_ref_body(const oc_scan_row *row, int mirror, int64_t w0,
                                                                 int64_t w1, uint64_t *words)
{
    for (int64_t w = w0; w < w1; ++w) {
        const int64_t b = w * OC_SCAN_WORD;
        uint32_t any = 0;
        for (int64_t c = b; c < b + OC_SCAN_WORD; ++c) any |= passes(row, mirror, c);
        uint64_t m = 0;
        if (any)
            for (int64_t c = b; c < b + OC_SCAN_WORD; ++c) m |= (uint64_t)passes(row, mirror, c) << (c - b);
        words[w] = m;
    }
}

static void scan_ref(const oc_scan_row *row, int64_t w0, int64_t w1, uint64_t *words)
{
    /* Two instances, so that A·Bᵀ jobs do not pay for the column test. */
    if (row->mirror) scan_ref_body(row, 1, w0, w1, words);
    else scan_ref_body(row, 0, w0, w1, words);
}

#ifdef OC_SCAN_X86
/* AVX2 has signed 32-bit compares only: biasing both sides by 2^31 turns them unsigned. */
__attribute__((target("avx2"))) static inline __attribute__((always_inline)) void
scan_avx2_body(const oc_scan_row *row, int mirror, int64_t w0, int64_t w1, uint64_t *words)
{
    const __m256i bias = _mm256_set1_epi32((int)0x80000000u);
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i rhi = _mm256_set1_epi32((int)(row->rhi ^ 0x80000000u));
    const __m256i climit = _mm256_set1_epi32((int)(row->climit ^ 0x80000000u));
    const __m256i ilow = _mm256_set1_epi32((int)(row->ilow ^ 0x80000000u));
    for (int64_t w = w0; w < w1; ++w) {
        uint64_t m = 0;
        for (int q = 0; q < OC_SCAN_WORD / 8; ++q) {
            const int64_t c = w * OC_SCAN_WORD + q * 8;
            const __m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(row->sk + c)), bias);
            const __m256i idx = _mm256_xor_si256(_mm256_add_epi32(_mm256_set1_epi32((int)c), iota), bias);
            __m256i p = _mm256_or_si256(_mm256_cmpgt_epi32(v, rhi),
                                        _mm256_and_si256(_mm256_cmpeq_epi32(v, rhi), _mm256_cmpgt_epi32(climit, idx)));
            if (mirror) {
                const __m256i ch = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(row->chi + c)), bias);
                const __m256i cl = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(row->clo + c)), bias);
                p = _mm256_or_si256(p, _mm256_or_si256(_mm256_cmpgt_epi32(v, ch),
                                                       _mm256_and_si256(_mm256_cmpeq_epi32(v, ch),
                                                                        _mm256_cmpgt_epi32(ilow, cl))));
            }
            m |= (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(p)) << (q * 8);
        }
        words[w] = m;
    }
}

__attribute__((target("avx2"))) static void scan_avx2(const oc_scan_row *row, int64_t w0, int64_t w1, uint64_t *words)
{
    if (row->mirror) scan_avx2_body(row, 1, w0, w1, words);
    else scan_avx2_body(row, 0, w0, w1, words);
}

__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) void
scan_avx512_body(const oc_scan_row *row, int mirror, int64_t w0, int64_t w1, uint64_t *words)
{
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i rhi = _mm512_set1_epi32((int)row->rhi), climit = _mm512_set1_epi32((int)row->climit);
    const __m512i ilow = _mm512_set1_epi32((int)row->ilow);
    for (int64_t w = w0; w < w1; ++w) {
        uint64_t m = 0;
        for (int q = 0; q < OC_SCAN_WORD / 16; ++q) {
            const int64_t c = w * OC_SCAN_WORD + q * 16;
            const __m512i v = _mm512_loadu_si512(row->sk + c);
            const __m512i idx = _mm512_add_epi32(_mm512_set1_epi32((int)c), iota);
            __mmask16 p = _mm512_cmpgt_epu32_mask(v, rhi) |
                          _mm512_mask_cmplt_epu32_mask(_mm512_cmpeq_epu32_mask(v, rhi), idx, climit);
            if (mirror) {
                const __m512i ch = _mm512_loadu_si512(row->chi + c), cl = _mm512_loadu_si512(row->clo + c);
                p |= _mm512_cmpgt_epu32_mask(v, ch) |
                     _mm512_mask_cmplt_epu32_mask(_mm512_cmpeq_epu32_mask(v, ch), cl, ilow);
            }
            m |= (uint64_t)p << (q * 16);
        }
        words[w] = m;
    }
}

__attribute__((target("avx512f"))) static void scan_avx512(const oc_scan_row *row, int64_t w0, int64_t w1,
                                                            uint64_t *words)
{
    if (row->mirror) scan_avx512_body(row, 1, w0, w1, words);
    else scan_avx512_body(row, 0, w0, w1, words);
}
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
