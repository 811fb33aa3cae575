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
 *   hub word lists    with one hub word: the lists below
 *
 * Built from the packed bits in two passes over the set bits (count, then fill); memory is
 * O(ones + rows), the bits are not copied. For A·Aᵀ the B side is the A side.
 *
 * The hub word lists, for jobs of at most 64 hubs (one hub word), hold the B rows by the hub
 * columns they hold, each entry carrying its row's hub word and popcount so that a walk
 * computes a row's exact hub count without touching the row:
 *
 *   post_hub, post_pop  beside each posting entry of a non-hub column: its row's hub word and
 *                       popcount (the candidates of step 1 are counted from the entries read)
 *   single lists        per hub h: the B rows holding h
 *   pair lists          per hub pair x < y: the B rows holding both (row with q hubs: q(q-1)/2)
 * Every list is sorted by (popcount, row): a walk reads it while the best score a row of that
 * popcount can reach still enters (sparse_hub_walk.h). The pair lists are built only while
 * they hold at most about as many entries as B has ones (PAIR_ENTRIES_PER_ONE); otherwise
 * pair == NULL and the sweep keeps the per-hub lists above.
 */
#ifndef OC_GRAM_CPU_SPARSE_SPARSE_INDEX_H
#define OC_GRAM_CPU_SPARSE_SPARSE_INDEX_H

#include <stdint.h>
#include "outcore.h"
#include "matrix/matrix.h"

typedef struct oc_hub_entry {
    uint32_t row, pop; /* B row and its popcount (hubs included) */
    uint64_t hubs;     /* its hub word */
} oc_hub_entry;

typedef struct oc_hub_pairs {
    uint64_t *post_hub; /* per posting entry (sparse_index.h post_rows) */
    uint32_t *post_pop;
    int64_t *single_ptr; /* hubs + 1 */
    oc_hub_entry *single;
    int64_t *pair_ptr;  /* hubs * hubs + 1: pair x < y at x * hubs + y */
    oc_hub_entry *pair; /* NULL: too many entries, not built */
} oc_hub_pairs;

/* The pair list of hubs x and y (either order): pair_ptr[key] .. pair_ptr[key + 1]. */
static inline int64_t oc_hub_pair_key(int64_t x, int64_t y, int64_t hubs)
{
    return x < y ? x * hubs + y : y * hubs + x;
}

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
    oc_hub_pairs pairs; /* hub_words == 1 only (the hub word lists above); else empty */
} oc_sparse_index;

/* Builds the index of a (and b; NULL for A·Aᵀ) with hub_cols[hubs] as the hub columns, on
 * `threads` threads. Fails on allocation or cancellation; *ix is then empty. */
oc_status oc_sparse_index_build(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const uint32_t *hub_cols,
                                int64_t hubs, int threads, oc_sparse_index *ix);
void oc_sparse_index_free(oc_sparse_index *ix);

#endif
