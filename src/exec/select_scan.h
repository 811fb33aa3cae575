/*
 * select_scan.h - the top-k pre-test: which elements of a tile may enter a list.
 *
 * Almost every element of a Gram tile fails its row's floor and its column's floor (the
 * kept-th key of each list, see select.c), so top-k selection runs at the speed of this
 * test. It reads the tile's values as they are, turns them into 32-bit score keys in
 * registers (select_key.h) and sets one bit per element whose score key reaches the
 * smaller of two bounds:
 *
 *     sk >= min(row_min[r], col_min[c])      (col_min only for A·Aᵀ, the mirrored lists)
 *
 * select.c derives each bound from a floor so that every key above the floor passes (a
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
 * The path follows the CPU kernels' (oc_cpu_isa(): cpuid, the OS's saved state, and
 * OUTCORE_CPU_ISA), so forcing a kernel path forces the matching scan too. The vector
 * paths are compiled with target attributes in select_scan.c and called only where that
 * check allowed them; the rest of the library still runs on any x86-64.
 */
#ifndef OC_EXEC_SELECT_SCAN_H
#define OC_EXEC_SELECT_SCAN_H

#include <stdint.h>

#define OC_SCAN_WORD 64 /* columns per mask word */
#define OC_SCAN_WORDS(cols) (((cols) + OC_SCAN_WORD - 1) / OC_SCAN_WORD)

typedef struct oc_scan_tile {
    int kind;                /* oc_key_kind of the values */
    const void *values;      /* rows x cols, ld elements apart */
    int64_t ld, rows, cols;
    const uint32_t *row_min; /* rows */
    const uint32_t *col_min; /* cols, padded; read only when mirror */
    int mirror;              /* A·Aᵀ: also test the column bound */
    uint64_t *words;         /* out: rows x OC_SCAN_WORDS(cols) */
} oc_scan_tile;

typedef void (*oc_scan_fn)(const oc_scan_tile *t);

/* The scan for this CPU (see the top comment). */
oc_scan_fn oc_scan_choose(void);

#endif
