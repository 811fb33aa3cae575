/*
 * select_scan.h - the top-k pre-test: which elements of a tile may enter a list.
 *
 * Almost every element of a Gram tile fails its row's floor and its column's floor (the
 * kept-th key of each list, see select.c), so top-k selection runs at the speed of this
 * test. It reads the tile's values as they are, turns them into score keys in registers
 * (select_key.h) and sets one bit per element that may pass; only set bits reach the
 * exact, scalar bookkeeping in select.c.
 *
 * The 64-bit test "key > floor" is split into 32-bit halves so that it vectorises and stays
 * exact (ties are frequent with counts and must not wake the slow path). For the element
 * of tile row r and tile column c, with score key sk:
 *   row direction:     sk > hi(rf) || (sk == hi(rf) && c < climit),
 *                      climit = jlow0 - lo(rf) when jlow0 > lo(rf), else 0,
 *                      jlow0 = 0xFFFFFFFF - j0 (the index half of column j0 + c is jlow0 - c);
 *   column direction:  sk > chi[c] || (sk == chi[c] && ilow > clo[c]),
 *                      ilow = 0xFFFFFFFF - (i0 + r) (the index half of the mirrored key),
 * where rf = row_floor[r] and chi/clo are the halves of the column floors (A·Aᵀ only).
 *
 * Contract of a scan: row r's bits are words[r * wpr ..], wpr = OC_SCAN_WORDS(cols), bit
 * c % 64 of word c / 64 for column c; bits of columns >= cols are 0. Bits of columns below
 * a row's first eligible column (A·Aᵀ) are not cleared: the caller masks them. Values are
 * read only inside the tile (rows x cols, ld elements apart); chi and clo are read up to
 * the next multiple of OC_SCAN_WORD columns, so the caller pads them. Every path sets the
 * same bits: they are a pure function of the inputs.
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
    int kind;                  /* oc_key_kind of the values */
    const void *values;        /* rows x cols, ld elements apart */
    int64_t ld, rows, cols;
    int64_t i0, j0;            /* global row of tile row 0, global column of tile column 0 */
    const uint64_t *row_floor; /* rows */
    const uint32_t *chi, *clo; /* column floors' halves; read only when mirror */
    int mirror;                /* A·Aᵀ: also test the column direction */
    uint64_t *words;           /* out: rows x OC_SCAN_WORDS(cols) */
} oc_scan_tile;

typedef void (*oc_scan_fn)(const oc_scan_tile *t);

/* The scan for this CPU (see the top comment). */
oc_scan_fn oc_scan_choose(void);

#endif
