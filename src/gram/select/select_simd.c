/*
 * select_simd.c - the top-k pre-test, list insertion and column seeds on each CPU path (see
 * select_simd.h for what they compute and the contract shared by every path).
 *
 * Each path is written once as a body that takes the key kind and the mirror flag as
 * constants; SCAN_DISPATCH instantiates it for every combination, so the key conversion
 * and the column bound cost nothing when they do not apply.
 *
 * The reference path is plain C (ROW_WORDS_BY_PASS), vectorised by the compiler for any
 * x86-64. The AVX2 and
 * AVX-512 paths convert 8 or 16 values to score keys in registers, compare them with the
 * bounds and take the bits straight from the compare masks (SCAN_VECTOR_ROWS). A row's
 * last, partial vector is loaded from a zeroed copy: the tile may end exactly at the row's
 * last value. The pre-test on jaccard counts has the plain C body for the reference and
 * AVX2 paths and its own AVX-512 loop. The column seeds are plain C bodies compiled once
 * per path with its instruction set (select.c, built for any x86-64, would do the
 * unsigned 32-bit max and min of their loops with SSE2 emulations).
 */
#include "gram/select/select_simd.h"

#include <string.h>

#include "outcore.h"
#include "gram/select/select_key.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define OC_SCAN_X86 1
#endif

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Runs BODY(ARGS..., kind, mirror) with t's key kind and mirror flag as constants: each body
 * is instantiated per kind and flag. */
#define SCAN_DISPATCH(t, BODY, ...)                   \
    do {                                              \
        if ((t)->mirror) {                            \
            switch ((t)->kind) {                      \
            case OC_KEY_F32:                          \
                BODY(__VA_ARGS__, OC_KEY_F32, 1);     \
                break;                                \
            case OC_KEY_I32:                          \
                BODY(__VA_ARGS__, OC_KEY_I32, 1);     \
                break;                                \
            case OC_KEY_U16:                          \
                BODY(__VA_ARGS__, OC_KEY_U16, 1);     \
                break;                                \
            case OC_KEY_I32_REV:                      \
                BODY(__VA_ARGS__, OC_KEY_I32_REV, 1); \
                break;                                \
            default:                                  \
                BODY(__VA_ARGS__, OC_KEY_U16_REV, 1); \
                break;                                \
            }                                         \
        } else {                                      \
            switch ((t)->kind) {                      \
            case OC_KEY_F32:                          \
                BODY(__VA_ARGS__, OC_KEY_F32, 0);     \
                break;                                \
            case OC_KEY_I32:                          \
                BODY(__VA_ARGS__, OC_KEY_I32, 0);     \
                break;                                \
            case OC_KEY_U16:                          \
                BODY(__VA_ARGS__, OC_KEY_U16, 0);     \
                break;                                \
            case OC_KEY_I32_REV:                      \
                BODY(__VA_ARGS__, OC_KEY_I32_REV, 0); \
                break;                                \
            default:                                  \
                BODY(__VA_ARGS__, OC_KEY_U16_REV, 0); \
                break;                                \
            }                                         \
        }                                             \
    } while (0)

ALWAYS_INLINE int64_t kind_size(int kind) { return kind == OC_KEY_U16 || kind == OC_KEY_U16_REV ? 2 : 4; }

ALWAYS_INLINE const void *scan_row(const oc_scan_tile *t, int kind, int64_t r)
{
    return (const char *)t->values + r * t->ld * kind_size(kind);
}

/* ---------------------------------------------------------------- reference */
ALWAYS_INLINE uint32_t passes(const oc_scan_tile *t, int kind, int mirror, const void *row, uint32_t rmin, int64_t c)
{
    const uint32_t bound = mirror && t->col_min[c] < rmin ? t->col_min[c] : rmin;
    return oc_key_score(kind, row, c) >= bound;
}

/* A row's words from PASS (0 or 1 for the column in c): per 64 columns one branch-free pass
 * that the compiler vectorises answers "does any column pass?", and only then are the bits
 * gathered one by one (after a row's first tiles most words have none). */
#define ROW_WORDS_BY_PASS(words, cols, c, PASS)                                                             \
    for (int64_t w_ = 0; w_ < OC_SCAN_WORDS(cols); ++w_) {                                                  \
        const int64_t b_ = w_ * OC_SCAN_WORD, e_ = b_ + OC_SCAN_WORD < (cols) ? b_ + OC_SCAN_WORD : (cols); \
        uint32_t any_ = 0;                                                                                  \
        for (int64_t c = b_; c < e_; ++c) any_ |= (PASS);                                                   \
        uint64_t m_ = 0;                                                                                    \
        if (any_)                                                                                           \
            for (int64_t c = b_; c < e_; ++c) m_ |= (uint64_t)(PASS) << (c - b_);                           \
        (words)[w_] = m_;                                                                                   \
    }

ALWAYS_INLINE void scan_ref_body(const oc_scan_tile *t, const int kind, const int mirror)
{
    const int64_t wpr = OC_SCAN_WORDS(t->cols);
    for (int64_t r = 0; r < t->rows; ++r) {
        const void *row = scan_row(t, kind, r);
        const uint32_t rmin = t->row_min[r];
        ROW_WORDS_BY_PASS(t->words + r * wpr, t->cols, c, passes(t, kind, mirror, row, rmin, c));
    }
}

static void scan_ref(const oc_scan_tile *t) { SCAN_DISPATCH(t, scan_ref_body, t); }

/* The counts pre-test (select_simd.h) in plain C, for the reference and AVX2 paths (the
 * latter compiled with its target attribute). No operation can be contracted into an FMA (a sum is multiplied,
 * never a product added), so the bits do not depend on the path. */
ALWAYS_INLINE uint32_t count_passes(const oc_scan_counts *t, const int mirror, const uint32_t *row, float pr, float gr,
                                    int64_t c)
{
    const float g = mirror && t->g_c[c] < gr ? t->g_c[c] : gr;
    return (float)row[c] >= (pr + t->pop_c[c]) * g;
}

ALWAYS_INLINE void scan_counts_body(const oc_scan_counts *t, const int mirror)
{
    const int64_t wpr = OC_SCAN_WORDS(t->cols);
    for (int64_t r = 0; r < t->rows; ++r) {
        const uint32_t *row = t->counts + r * t->ld;
        const float pr = t->pop_r[r], gr = t->g_r[r];
        ROW_WORDS_BY_PASS(t->words + r * wpr, t->cols, c, count_passes(t, mirror, row, pr, gr, c));
    }
}

#define SCAN_COUNTS(t) (t)->mirror ? scan_counts_body(t, 1) : scan_counts_body(t, 0)
static void scan_counts_ref(const oc_scan_counts *t) { SCAN_COUNTS(t); }

/* The group maxima of seeding (select_simd.h) as one plain C body: the key conversion of
 * a constant kind and the unsigned max vectorise on every path, each with its own
 * instruction set. */
ALWAYS_INLINE void group_max_body(const oc_scan_tile *t, const int kind, int64_t g, uint32_t *out)
{
    const int64_t rows = t->rows, cols = t->cols;
    for (int64_t q = 0; q < g; ++q) {
        uint32_t *restrict gmax = out + q * cols;
        for (int64_t c = 0; c < cols; ++c) gmax[c] = 0;
        for (int64_t r = q * rows / g; r < (q + 1) * rows / g; ++r) {
            const void *row = scan_row(t, kind, r);
            for (int64_t c = 0; c < cols; ++c) {
                const uint32_t x = oc_key_score(kind, row, c);
                gmax[c] = x > gmax[c] ? x : gmax[c];
            }
        }
    }
}

#define GROUP_MAX_BODY(t, g, out, kind, mirror) group_max_body(t, kind, g, out)
static void group_max_ref(const oc_scan_tile *t, int64_t g, uint32_t *out)
{
    SCAN_DISPATCH(t, GROUP_MAX_BODY, t, g, out);
}

/* oc_kth_fn: each column keeps its kept largest values so far in descending order,
 * w[j * cols + c] for slot j, and a value x goes in as in the insertion above (ties each
 * take a slot): w'[j] = max(w[j], min(w[j - 1], x)), one branch-free pass over the columns
 * per slot, from the last slot up so that w[j - 1] is still the old one. */
ALWAYS_INLINE void kth_body(const uint32_t *gm, int64_t g, int64_t cols, int64_t kept, uint32_t *w)
{
    memset(w, 0, (size_t)(kept * cols) * sizeof *w);
    for (int64_t q = 0; q < g; ++q) {
        const uint32_t *restrict x = gm + q * cols;
        for (int64_t j = kept - 1; j > 0; --j) {
            uint32_t *restrict wj = w + j * cols;
            const uint32_t *restrict up = w + (j - 1) * cols;
            for (int64_t c = 0; c < cols; ++c) {
                const uint32_t m = up[c] < x[c] ? up[c] : x[c];
                wj[c] = wj[c] > m ? wj[c] : m;
            }
        }
        for (int64_t c = 0; c < cols; ++c) w[c] = w[c] > x[c] ? w[c] : x[c];
    }
    memmove(w, w + (kept - 1) * cols, (size_t)cols * sizeof *w);
}

static void kth_ref(const uint32_t *gm, int64_t g, int64_t cols, int64_t kept, uint32_t *w)
{
    kth_body(gm, g, cols, kept, w);
}

/* Lists of more than INSERT_BRANCHFREE_MAX keys (and every list off AVX-512): the slot
 * by binary search, then the smaller keys move down one; the formula of select_simd.h
 * would touch every slot for every key. */
#define INSERT_BRANCHFREE_MAX 16

static void insert_ref(uint64_t *list, int64_t kept, const uint64_t *keys, int64_t n)
{
    for (int64_t c = 0; c < n; ++c) {
        const uint64_t key = keys[c];
        if (key <= list[kept - 1]) continue; /* most survivors of later tiles: nothing changes */
        int64_t lo = 0, len = kept - 1;      /* the slot is in [lo, lo + len]: list[kept - 1] < key */
        while (len > 0) {
            const int64_t half = len / 2;
            if (list[lo + half] > key) lo += half + 1, len -= half + 1;
            else len = half;
        }
        memmove(list + lo + 1, list + lo, (size_t)(kept - 1 - lo) * sizeof *list);
        list[lo] = key;
    }
}

#ifdef OC_SCAN_X86
/* The loop of the vector paths: ROW_BOUND(rmin) makes a row's bound vector, BITS(...) the
 * bits of n <= LANES columns from c. Each word is built in a register and stored once: an
 * OR into memory per vector would chain every vector of a word through store forwarding,
 * which costs more than the compares. A row's whole words take a loop of constant length
 * (unrolled, every vector full: no tail test per vector), its last partial word the
 * general one. */
#define SCAN_VECTOR_ROWS(t, kind, mirror, LANES, ROW_BOUND, BITS)                                                \
    do {                                                                                                         \
        const int64_t wpr_ = OC_SCAN_WORDS((t)->cols), cols_ = (t)->cols, full_ = cols_ / OC_SCAN_WORD;          \
        for (int64_t r = 0; r < (t)->rows; ++r) {                                                                \
            const void *row = scan_row(t, kind, r);                                                              \
            const __typeof__(ROW_BOUND((t)->row_min[r])) rbound = ROW_BOUND((t)->row_min[r]);                    \
            uint64_t *words = (t)->words + r * wpr_;                                                             \
            for (int64_t w_ = 0; w_ < full_; ++w_) {                                                             \
                uint64_t m_ = 0;                                                                                 \
                for (int v_ = 0; v_ < OC_SCAN_WORD / (LANES); ++v_)                                              \
                    m_ |= (uint64_t)BITS(t, kind, mirror, row, rbound, w_ * OC_SCAN_WORD + v_ * (LANES), LANES)  \
                          << (v_ * (LANES));                                                                     \
                words[w_] = m_;                                                                                  \
            }                                                                                                    \
            if (full_ < wpr_) {                                                                                  \
                const int64_t b_ = full_ * OC_SCAN_WORD;                                                         \
                uint64_t m_ = 0;                                                                                 \
                for (int64_t c = b_; c < cols_; c += LANES)                                                      \
                    m_ |= (uint64_t)BITS(t, kind, mirror, row, rbound, c, cols_ - c < LANES ? cols_ - c : LANES) \
                          << (c - b_);                                                                           \
                words[full_] = m_;                                                                               \
            }                                                                                                    \
        }                                                                                                        \
    } while (0)

/* Values of columns c .. c + n - 1 into buf, zero padded to `bytes`. */
ALWAYS_INLINE const void *scan_tail(int kind, const void *row, int64_t c, int64_t n, unsigned char *buf, int64_t bytes)
{
    memset(buf, 0, (size_t)bytes);
    memcpy(buf, (const char *)row + c * kind_size(kind), (size_t)(n * kind_size(kind)));
    return buf;
}

/* ---------------------------------------------------------------- AVX2 */
#define TARGET_AVX2 __attribute__((target("avx2")))

TARGET_AVX2 ALWAYS_INLINE __m256i keys8(int kind, const void *row, int64_t c)
{
    if (kind == OC_KEY_U16 || kind == OC_KEY_U16_REV) {
        const __m256i x = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + c)));
        return kind == OC_KEY_U16 ? x : _mm256_sub_epi32(_mm256_set1_epi32(0xFFFF), x);
    }
    const __m256i x = _mm256_loadu_si256((const __m256i *)((const uint32_t *)row + c));
    const __m256i sign = _mm256_set1_epi32((int)0x80000000u);
    switch (kind) {
    case OC_KEY_F32:
        return _mm256_xor_si256(x, _mm256_or_si256(_mm256_srai_epi32(x, 31), sign));
    case OC_KEY_I32:
        return _mm256_xor_si256(x, sign);
    default:
        return _mm256_xor_si256(x, _mm256_set1_epi32(0x7FFFFFFF)); /* OC_KEY_I32_REV */
    }
}

#define ROW_BOUND8(v) _mm256_set1_epi32((int)(v))

/* AVX2 compares signed only: sk >= bound is max(sk, bound) == sk, unsigned. */
TARGET_AVX2 ALWAYS_INLINE uint32_t bits8(const oc_scan_tile *t, int kind, int mirror, const void *row, __m256i rbound,
                                         int64_t c, int64_t n)
{
    _Alignas(32) unsigned char buf[32];
    const __m256i k = n == 8 ? keys8(kind, row, c) : keys8(kind, scan_tail(kind, row, c, n, buf, sizeof buf), 0);
    const __m256i bound =
        mirror ? _mm256_min_epu32(rbound, _mm256_loadu_si256((const __m256i *)(t->col_min + c))) : rbound;
    const __m256i pass = _mm256_cmpeq_epi32(_mm256_max_epu32(k, bound), k);
    return (uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(pass)) & ((1u << n) - 1);
}

#define SCAN_AVX2_BODY(t, kind, mirror) SCAN_VECTOR_ROWS(t, kind, mirror, 8, ROW_BOUND8, bits8)
TARGET_AVX2 static void scan_avx2(const oc_scan_tile *t) { SCAN_DISPATCH(t, SCAN_AVX2_BODY, t); }
TARGET_AVX2 static void scan_counts_avx2(const oc_scan_counts *t) { SCAN_COUNTS(t); }
TARGET_AVX2 static void group_max_avx2(const oc_scan_tile *t, int64_t g, uint32_t *out)
{
    SCAN_DISPATCH(t, GROUP_MAX_BODY, t, g, out);
}
TARGET_AVX2 static void kth_avx2(const uint32_t *gm, int64_t g, int64_t cols, int64_t kept, uint32_t *w)
{
    kth_body(gm, g, cols, kept, w);
}

/* ---------------------------------------------------------------- AVX-512 */
#define TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

TARGET_AVX512 ALWAYS_INLINE __m512i keys16(int kind, const void *row, int64_t c)
{
    if (kind == OC_KEY_U16 || kind == OC_KEY_U16_REV) {
        const __m512i x = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)((const uint16_t *)row + c)));
        return kind == OC_KEY_U16 ? x : _mm512_sub_epi32(_mm512_set1_epi32(0xFFFF), x);
    }
    const __m512i x = _mm512_loadu_si512((const uint32_t *)row + c);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    switch (kind) {
    case OC_KEY_F32:
        return _mm512_xor_si512(x, _mm512_or_si512(_mm512_srai_epi32(x, 31), sign));
    case OC_KEY_I32:
        return _mm512_xor_si512(x, sign);
    default:
        return _mm512_xor_si512(x, _mm512_set1_epi32(0x7FFFFFFF)); /* OC_KEY_I32_REV */
    }
}

#define ROW_BOUND16(v) _mm512_set1_epi32((int)(v))

TARGET_AVX512 ALWAYS_INLINE uint32_t bits16(const oc_scan_tile *t, int kind, int mirror, const void *row,
                                            __m512i rbound, int64_t c, int64_t n)
{
    _Alignas(64) unsigned char buf[64];
    const __m512i k = n == 16 ? keys16(kind, row, c) : keys16(kind, scan_tail(kind, row, c, n, buf, sizeof buf), 0);
    const __m512i bound = mirror ? _mm512_min_epu32(rbound, _mm512_loadu_si512(t->col_min + c)) : rbound;
    return (uint32_t)_mm512_cmpge_epu32_mask(k, bound) & ((1u << n) - 1);
}

#define SCAN_AVX512_BODY(t, kind, mirror) SCAN_VECTOR_ROWS(t, kind, mirror, 16, ROW_BOUND16, bits16)
TARGET_AVX512 static void scan_avx512(const oc_scan_tile *t) { SCAN_DISPATCH(t, SCAN_AVX512_BODY, t); }
/* The counts pre-test in 16 lanes: the generic body's operations one for one (the
 * conversion of a count rounds to nearest like C's, min_ps(x, y) is x < y ? x : y), so the
 * bits are the same; a row's last vector is a masked load. */
TARGET_AVX512 ALWAYS_INLINE __mmask16 counts_bits16(const oc_scan_counts *t, const int mirror, const uint32_t *row,
                                                    __m512 pr, __m512 gr, int64_t c, __mmask16 in)
{
    const __m512 n = _mm512_cvtepu32_ps(_mm512_maskz_loadu_epi32(in, row + c));
    const __m512 pc = _mm512_maskz_loadu_ps(in, t->pop_c + c);
    const __m512 g = mirror ? _mm512_min_ps(_mm512_maskz_loadu_ps(in, t->g_c + c), gr) : gr;
    return _mm512_mask_cmp_ps_mask(in, n, _mm512_mul_ps(_mm512_add_ps(pr, pc), g), _CMP_GE_OQ);
}

/* Words are built in registers, as in SCAN_VECTOR_ROWS: whole words of four full vectors,
 * then the row's last word from masked loads. A loop of its own, since a row's bound here
 * is a popcount and a factor, not one key; a loop per word with a mask per vector took a
 * larger share of a short-row jaccard top-k job's samples than this form (bench/RESULTS.md). */
TARGET_AVX512 ALWAYS_INLINE void scan_counts_avx512_body(const oc_scan_counts *t, const int mirror)
{
    const int64_t cols = t->cols, full = cols / OC_SCAN_WORD;
    for (int64_t r = 0; r < t->rows; ++r) {
        const uint32_t *row = t->counts + r * t->ld;
        const __m512 pr = _mm512_set1_ps(t->pop_r[r]), gr = _mm512_set1_ps(t->g_r[r]);
        uint64_t *words = t->words + r * OC_SCAN_WORDS(cols);
        for (int64_t w = 0; w < full; ++w) {
            const int64_t c = w * OC_SCAN_WORD;
            const uint64_t m0 = counts_bits16(t, mirror, row, pr, gr, c, 0xFFFF);
            const uint64_t m1 = counts_bits16(t, mirror, row, pr, gr, c + 16, 0xFFFF);
            const uint64_t m2 = counts_bits16(t, mirror, row, pr, gr, c + 32, 0xFFFF);
            const uint64_t m3 = counts_bits16(t, mirror, row, pr, gr, c + 48, 0xFFFF);
            words[w] = m0 | m1 << 16 | m2 << 32 | m3 << 48;
        }
        if (full * OC_SCAN_WORD < cols) {
            uint64_t m = 0;
            for (int64_t c = full * OC_SCAN_WORD; c < cols; c += 16) {
                const __mmask16 in = (__mmask16)(cols - c >= 16 ? 0xFFFFu : (1u << (cols - c)) - 1);
                m |= (uint64_t)counts_bits16(t, mirror, row, pr, gr, c, in) << (c % OC_SCAN_WORD);
            }
            words[full] = m;
        }
    }
}

TARGET_AVX512 static void group_max_avx512(const oc_scan_tile *t, int64_t g, uint32_t *out)
{
    SCAN_DISPATCH(t, GROUP_MAX_BODY, t, g, out);
}
TARGET_AVX512 static void kth_avx512(const uint32_t *gm, int64_t g, int64_t cols, int64_t kept, uint32_t *w)
{
    kth_body(gm, g, cols, kept, w);
}

TARGET_AVX512 static void scan_counts_avx512(const oc_scan_counts *t)
{
    t->mirror ? scan_counts_avx512_body(t, 1) : scan_counts_avx512_body(t, 0);
}

/* Lists of up to 16 keys live in two registers while the keys go in; list[j - 1] for every
 * lane is the pair shifted up one lane, with all ones (larger than any key) above lane 0.
 * Lanes past `kept` hold whatever comes, are never stored and never reach a lane below. */
TARGET_AVX512 static void insert_avx512(uint64_t *list, int64_t kept, const uint64_t *keys, int64_t n)
{
    if (kept > INSERT_BRANCHFREE_MAX) {
        insert_ref(list, kept, keys, n);
        return;
    }
    const __mmask8 mlo = (__mmask8)(kept >= 8 ? 0xFF : (1u << kept) - 1);
    const __mmask8 mhi = (__mmask8)(kept <= 8 ? 0 : (1u << (kept - 8)) - 1);
    const __m512i top = _mm512_set1_epi64(-1);
    __m512i lo = _mm512_maskz_loadu_epi64(mlo, list), hi = _mm512_maskz_loadu_epi64(mhi, list + 8);
    for (int64_t c = 0; c < n; ++c) {
        const __m512i x = _mm512_set1_epi64((long long)keys[c]);
        const __m512i up_lo = _mm512_alignr_epi64(lo, top, 7), up_hi = _mm512_alignr_epi64(hi, lo, 7);
        lo = _mm512_max_epu64(lo, _mm512_min_epu64(up_lo, x));
        hi = _mm512_max_epu64(hi, _mm512_min_epu64(up_hi, x));
    }
    _mm512_mask_storeu_epi64(list, mlo, lo);
    _mm512_mask_storeu_epi64(list + 8, mhi, hi);
}
#endif

oc_select_simd oc_select_simd_choose(void)
{
#ifdef OC_SCAN_X86
    /* oc_cpu_isa() names a path only after checking the CPU and the OS (isa.c); each
     * kernel path's instruction sets include what the code of the same name uses. AVX2 has
     * no unsigned 64-bit min and max: its lists take the reference insertion. */
    const char *isa = oc_cpu_isa();
    if (strcmp(isa, "avx512") == 0)
        return (oc_select_simd){scan_avx512, insert_avx512, scan_counts_avx512, group_max_avx512, kth_avx512};
    if (strcmp(isa, "avx2") == 0)
        return (oc_select_simd){scan_avx2, insert_ref, scan_counts_avx2, group_max_avx2, kth_avx2};
#endif
    return (oc_select_simd){scan_ref, insert_ref, scan_counts_ref, group_max_ref, kth_ref};
}
