/*
 * sparse_index.h - the sparse view of a Gram job's packed matrices (src/gram/cpu/sparse/gram_sparse.c).
 *
 *   A side, B side    per row: the non-hub columns (CSR), the hub columns as hub_words
 *                     64-bit words (bit h = the plan's hub h), and the row's popcount
 *   B postings        per non-hub column: the B rows holding it, ascending (CSC)
 *   B hub rows        the B rows with a hub bit, sorted by (popcount, row), in groups of one
 *                     popcount: a row with many hubs sweeps them once, by group
 *   B hub lists       per hub: the B rows holding it, sorted by (non-hub columns ascending,
 *                     hub columns descending, row), with both counts beside them: the sweep
 *                     walks a hub's list while a row's best possible score can still enter
 *   B empty rows      ascending (jaccard: two empty rows score 1)
 *   hub word lists    with one hub word: the lists of sparse_hub_pairs.h
 *
 * Built from the packed bits in two passes over the set bits (count, then fill); memory is
 * O(ones + rows), the bits are not copied. For A·Aᵀ the B side is the A side.
 */
#ifndef OC_GRAM_CPU_SPARSE_SPARSE_INDEX_H
#define OC_GRAM_CPU_SPARSE_SPARSE_INDEX_H

#include <stdint.h>
#include "outcore.h"
#include "matrix/matrix.h"
#include "gram/cpu/sparse/sparse_hub_pairs.h"

typedef struct oc_sparse_side {
    int64_t rows;
    int64_t *ptr; /* rows + 1: row i's non-hub columns are idx[ptr[i] .. ptr[i + 1]) */
    uint32_t *idx;
    uint64_t *hub; /* rows x hub_words; NULL without hubs */
    int64_t *pop;  /* every set bit of the row, hubs included */
} oc_sparse_side;

typedef struct oc_sparse_index {
    int hub_words;       /* 0 to 8 */
    oc_sparse_side a, b; /* b aliases a's arrays for A·Aᵀ (owns_b == 0) */
    int owns_b;
    int64_t *post_ptr; /* cols + 1 */
    uint32_t *post_rows;
    uint32_t *hub_rows;   /* B rows holding a hub, by (popcount, row) */
    int64_t *group_start; /* ngroups + 1 offsets into hub_rows */
    int64_t *group_pop;   /* the popcount of each group, ascending */
    int64_t ngroups;
    int64_t hubs;
    int64_t *hub_ptr;   /* hubs + 1: hub h's B rows are hub_list[hub_ptr[h] .. hub_ptr[h + 1]) */
    uint32_t *hub_list; /* by (non-hub count, -hub count, row) within each hub */
    uint32_t *hub_nb;   /* each entry's non-hub columns */
    uint32_t *hub_hp;   /* each entry's hub columns */
    uint32_t *empty_b;  /* B rows without a set bit, ascending */
    int64_t nempty_b;
    oc_hub_pairs pairs; /* hub_words == 1 only (sparse_hub_pairs.h); else empty */
} oc_sparse_index;

/* Builds the index of a (and b; NULL for A·Aᵀ) with hub_cols[hubs] as the hub columns, on
 * `threads` threads. Fails on allocation or cancellation; *ix is then empty. */
oc_status oc_sparse_index_build(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const uint32_t *hub_cols,
                                int64_t hubs, int threads, oc_sparse_index *ix);
void oc_sparse_index_free(oc_sparse_index *ix);

#endif
