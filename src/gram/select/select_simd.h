/*
 * select_simd.h - the vectorised parts of CPU top-k selection: the pre-test of a tile, the
 * insertion of survivors into a list and the column seeds of a tile. select_topk.c does the
 * bookkeeping around them.
 *
 * The pre-test: which elements of a tile may enter a list. Almost every element of a Gram tile fails its row's floor and its column's floor (the
 * kept-th key of each list, see select_topk.c), so top-k selection runs at the speed of this
 * test. It reads the tile's values as they are, turns them into 32-bit score keys in
 * registers (select_key.h) and sets one bit per element whose score key reaches the
 * smaller of two bounds:
 *
 *     sk >= min(row_min[r], col_min[c])      (col_min only for A·Aᵀ, the mirrored lists)
 *
 * select_topk.c derives each bound from a floor so that every key above the floor passes (a
 * superset: ties at the floor's score pass unless all of them lose on the index, and the
 * exact 64-bit test follows for the set bits only), and one compare per element decides.
 *
 * Contract of a scan: row r's bits are words[r * wpr ..], wpr = OC_SCAN_WORDS(cols), bit
 * c % 64 of word c / 64 for column c; bits of columns >= cols are 0. Bits of columns below
 * a row's first eligible column (A·Aᵀ) are not cleared: the caller masks them. Values are
 * read only inside the tile (rows x cols, ld elements apart); col_min is read up to the
 * next multiple of OC_SCAN_WORD columns, so the caller pads it. Every path sets the same
 * bits: they are a pure function of the inputs.
 *
 * The insertion: a list is `kept` keys in descending order, 0 for an empty slot (keys are
 * never 0, and distinct). Inserting key x keeps the best `kept` of the list and x:
 *
 *     list'[0] = max(list[0], x),  list'[j] = max(list[j], min(list[j - 1], x)),
 *
 * which leaves the list as it was when x does not beat its last key: no branch, and on
 * AVX-512 two min/max per 8 keys, for lists of up to 16 keys. Longer lists (and all lists
 * off AVX-512) find the slot by binary search and move the smaller keys down one.
 *
 * The path follows the CPU kernels' (oc_cpu_isa(): cpuid, the OS's saved state, and
 * OUTCORE_CPU_ISA), so forcing a kernel path forces the matching vector code too. The
 * vector paths are compiled with target attributes in select_simd.c and called only where
 * that check allowed them; the rest of the library still runs on any x86-64.
 */
#ifndef OC_GRAM_SELECT_SELECT_SIMD_H
#define OC_GRAM_SELECT_SELECT_SIMD_H

#include <stdint.h>

#define OC_SCAN_WORD 64 /* columns per mask word */
#define OC_SCAN_WORDS(cols) (((cols) + OC_SCAN_WORD - 1) / OC_SCAN_WORD)

typedef struct oc_scan_tile {
    int kind;           /* oc_key_kind of the values */
    const void *values; /* rows x cols, ld elements apart */
    int64_t ld, rows, cols;
    const uint32_t *row_min; /* rows */
    const uint32_t *col_min; /* cols, padded; read only when mirror */
    int mirror;              /* A·Aᵀ: also test the column bound */
    uint64_t *words;         /* out: rows x OC_SCAN_WORDS(cols) */
} oc_scan_tile;

typedef void (*oc_scan_fn)(const oc_scan_tile *t);

/* The pre-test on a tile of jaccard counts, before any score is computed (select_topk.c turns a
 * floor into a factor g: a score can reach the floor only if c >= (|a| + |b|)·g, with a
 * margin for every rounding). One bit per element whose count c satisfies
 *
 *     (float)c >= (pop_r[r] + pop_c[c]) * min(g_r[r], g_c[c])   (g_c only when mirror)
 *
 * in float arithmetic, the same operations in the same order on every path, so every path
 * sets the same bits. The words follow oc_scan_tile's contract; pop_c and g_c are read
 * only inside the tile. */
typedef struct oc_scan_counts {
    const uint32_t *counts; /* rows x cols, ld apart */
    int64_t ld, rows, cols;
    const float *pop_r, *g_r; /* rows */
    const float *pop_c, *g_c; /* cols; g_c read only when mirror */
    int mirror;
    uint64_t *words;
} oc_scan_counts;

typedef void (*oc_scan_counts_fn)(const oc_scan_counts *t);

/* Inserts keys[0..n) (any order) into a list of kept keys (see the top comment). */
typedef void (*oc_insert_fn)(uint64_t *list, int64_t kept, const uint64_t *keys, int64_t n);

/* Seeding's group maxima (select_topk.c): out[q * cols + c] is the largest score key of column c
 * over tile rows q * rows / g .. (q + 1) * rows / g - 1, for q < g <= rows. Reads only
 * kind, values, ld, rows and cols of t. */
typedef void (*oc_group_max_fn)(const oc_scan_tile *t, int64_t g, uint32_t *out);

/* Seeding's floors for all columns at once: for each c < cols, the kept-th largest (equal
 * values each counted) of gm[q * cols + c], q < g, g >= kept, kept <= OC_SEED_RANK_MAX.
 * work holds kept * cols values; the results are in work[0 .. cols). */
#define OC_SEED_RANK_MAX 16
typedef void (*oc_kth_fn)(const uint32_t *gm, int64_t g, int64_t cols, int64_t kept, uint32_t *work);

typedef struct oc_select_simd {
    oc_scan_fn scan;
    oc_insert_fn insert;
    oc_scan_counts_fn scan_counts;
    oc_group_max_fn group_max;
    oc_kth_fn kth_largest;
} oc_select_simd;

/* The vector code for this CPU (see the top comment). */
oc_select_simd oc_select_simd_choose(void);

#endif
