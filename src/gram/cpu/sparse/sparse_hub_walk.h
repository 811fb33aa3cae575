/*
 * sparse_hub_walk.h - step 3 of a sparse row (sparse_rows.h) with one hub word: the B rows
 * that share only hub columns with row i, from the single and pair lists of sparse_index.h
 * (its hub word lists), whose entries carry each row's hub word and popcount. Static inline
 * functions for sparse_hub_sweep.h only.
 *
 * Row i's h hubs are ranked rarest first. A row b sharing only hubs with row i shares the
 * set S = ha & hb, c = |S| columns, and scores c against |a| + |b| - c. It is met in exactly
 * one list: if c == 1, the single list of its one hub; else the pair list of the two rarest
 * hubs of S, ranks r < q, and then S holds no hub ranked below q but r, so c <= h - q + 1
 * (the prefix filter of Bayardo et al., WWW 2007, over pairs). A list ascends in |b|, and the
 * best score of a row of popcount |b| with c <= cap falls as |b| grows, so the walk ends
 * where that bound cannot enter (top-k) or pass (threshold); the rows before it are each
 * tested with their exact c, computed from the entry, before row i's accumulator is read
 * (a row that shares a non-hub column was counted in step 2: its acc is DONE).
 */
#ifndef OC_GRAM_CPU_SPARSE_SPARSE_HUB_WALK_H
#define OC_GRAM_CPU_SPARSE_SPARSE_HUB_WALK_H

#include "gram/cpu/sparse/sparse_row_state.h"

/* One list, [e, end): the rows whose hub word meets ha and not foreign (the hubs of row i
 * whose lists own them), each with at most cap shared columns. */
static inline __attribute__((always_inline)) void walk_hub_list(row_state *rs, uint64_t ha, const oc_hub_entry *e,
                                                                const oc_hub_entry *end, int64_t cap, uint64_t foreign)
{
    const sparse_job *sj = rs->sj;
    const uint32_t *acc = rs->w->acc;
    uint32_t bound_pop = 0xFFFFFFFFu;
    for (; e < end; ++e) {
        const uint32_t pop = e->pop;
        if (pop != bound_pop) { /* rows of popcount below cap are bounded as if of popcount cap */
            bound_pop = pop;
            if (!could_pass(rs, candidate_key(sj, cap, rs->pa, pop > cap ? pop : cap))) break;
        }
        if (e->hubs & foreign) continue;
        const int64_t c = __builtin_popcountll(ha & e->hubs);
        if (!could_pass_row(rs, candidate_key(sj, c, rs->pa, pop), e->row) || acc[e->row]) continue;
        offer_pop(rs, e->row, c, pop);
    }
}

/* Step 3 through the single and pair lists; order[h] are row i's hubs, rarest first. */
static inline __attribute__((always_inline)) void walk_hub_pairs(row_state *rs, uint64_t ha, const int32_t *order,
                                                                 int64_t h)
{
    const oc_sparse_index *ix = rs->sj->ix;
    const oc_hub_pairs *hp = &ix->pairs;
    uint64_t below = 0; /* the hubs ranked before q */
    for (int64_t q = 1; q < h; ++q) {
        below |= 1ull << order[q - 1];
        for (int64_t r = 0; r < q; ++r) {
            const int64_t x = order[r], key = oc_hub_pair_key(x, order[q], ix->hubs);
            walk_hub_list(rs, ha, hp->pair + hp->pair_ptr[key], hp->pair + hp->pair_ptr[key + 1], h - q + 1,
                          below & ~(1ull << x));
        }
    }
    for (int64_t r = 0; r < h; ++r)
        walk_hub_list(rs, ha, hp->single + hp->single_ptr[order[r]], hp->single + hp->single_ptr[order[r] + 1], 1,
                      ha & ~(1ull << order[r]));
}

#endif
