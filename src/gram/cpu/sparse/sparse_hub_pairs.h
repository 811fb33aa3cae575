/*
 * sparse_hub_pairs.h - the B rows of a sparse Gram job by the hub columns they hold, for jobs
 * of at most 64 hubs (one hub word), each entry carrying its row's hub word and popcount so
 * that a walk computes a row's exact hub count without touching the row (src/gram/cpu/sparse/sparse_index.h).
 *
 *   post_hub, post_pop  beside each posting entry of a non-hub column: its row's hub word and
 *                       popcount (the candidates of step 1 are counted from the entries read)
 *   single lists        per hub h: the B rows holding h
 *   pair lists          per hub pair x < y: the B rows holding both (row with q hubs: q(q-1)/2)
 * Every list is sorted by (popcount, row): a walk reads it while the best score a row of that
 * popcount can reach still enters (sparse_hub_sweep.h). The pair lists are built only while
 * they hold at most about as many entries as B has ones (PAIR_ENTRIES_PER_ONE); otherwise
 * pair == NULL and the sweep keeps the per-hub lists of sparse_index.h.
 */
#ifndef OC_GRAM_CPU_SPARSE_SPARSE_HUB_PAIRS_H
#define OC_GRAM_CPU_SPARSE_SPARSE_HUB_PAIRS_H

#include <stdint.h>
#include "outcore.h"

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

struct oc_sparse_index;

/* Builds hp for ix (which has hub_words == 1 and its B lists built). Fails on allocation
 * only; hp is then empty. */
oc_status oc_hub_pairs_build(oc_context *ctx, const struct oc_sparse_index *ix, oc_hub_pairs *hp);
void oc_hub_pairs_free(oc_hub_pairs *hp);

#endif
