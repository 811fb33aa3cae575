/*
 * select_scan.h - the top-k pre-test: which elements of a tile row may enter a list.
 *
 * Almost every element of a Gram tile fails its row's floor and its column's floor (the
 * kept-th key of each list, see select.c), so top-k selection runs at the speed of this
 * test. It works on the score keys of one tile row (select_key.h) and sets, per element,
 * one bit in a mask of 64-column words; only set bits reach the exact, scalar bookkeeping.
 *
 * The 64-bit test "key > floor" is split into 32-bit halves so that it vectorises and stays
 * exact (ties are frequent with counts and must not wake the slow path):
 *   row direction, column c:     sk[c] > rhi  || (sk[c] == rhi  && c < climit)
 *   column direction, column c:  sk[c] > chi[c] || (sk[c] == chi[c] && ilow > clo[c])
 * where rhi/chi are the floors' score halves and climit, ilow turn the index halves into
 * column and row limits (select.c derives them).
 *
 * Contract of a scan function: it fills words[w0..w1) for columns 64*w0 .. 64*w1 - 1 and
 * reads sk, chi and clo over that whole range, so the caller pads those arrays to a
 * multiple of 64 entries; bits of columns outside the row's valid range are garbage and
 * the caller masks them. The same bits come out of every path: they are a pure function
 * of the inputs.
 *
 * The path follows the CPU kernels' (oc_cpu_isa(): cpuid, the OS's saved state, and
 * OUTCORE_CPU_ISA), so forcing a kernel path forces the matching scan too. The vector
 * paths are compiled with target attributes in select_scan.c, which call them only where
 * that check allowed them; the rest of the library still runs on any x86-64.
 */
#ifndef OC_EXEC_SELECT_SCAN_H
#define OC_EXEC_SELECT_SCAN_H

#include <stdint.h>

#define OC_SCAN_WORD 64 /* columns per mask word; arrays that a scan reads are padded to it */

typedef struct oc_scan_row {
    const uint32_t *sk;       /* score keys of the tile row */
    const uint32_t *chi, *clo; /* column floors' halves (read only when mirror) */
    uint32_t rhi, climit;     /* row floor's score half; columns below climit win ties */
    uint32_t ilow;            /* the row's index half: wins a column's tie when > clo[c] */
    int mirror;               /* A·Aᵀ: also test the column direction */
} oc_scan_row;

typedef void (*oc_scan_fn)(const oc_scan_row *row, int64_t w0, int64_t w1, uint64_t *words);

/* The scan for this CPU (see the top comment). */
oc_scan_fn oc_scan_choose(void);

#endif
