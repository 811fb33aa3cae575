/*
 * sparse_hub_sweep.h - step 2 of a sparse row (sparse_rows.h): the B rows that share hub
 * columns with row i, counted from the hubs' bit words. Rows that share only hub columns
 * are found through per-hub lists, rarest hub first, each list walked while its bound can
 * still enter (a prefix filter); rows whose lists would be longer than the hub rows keep the
 * sweep by popcount groups. With one hub word and its pair lists built, the walk of
 * sparse_hub_walk.h replaces both. Static inline functions for sparse_rows.c only.
 */
#ifndef OC_GRAM_CPU_SPARSE_SPARSE_HUB_SWEEP_H
#define OC_GRAM_CPU_SPARSE_SPARSE_HUB_SWEEP_H

#include "gram/cpu/sparse/sparse_hub_walk.h"
#include "gram/cpu/sparse/sparse_row_state.h"

/* One hub's list, whose rows share at most cap columns with row i (and only hub columns).
 * A row with nb non-hub and hp hub columns shares c <= min(cap, hp) of them, and its score
 * rises with c and falls with nb + hp - c >= nb, so c / (|a| + nb) bounds it: the list
 * ascends in nb and ends where cap / (|a| + nb) cannot enter. Within one nb the rows descend
 * in hp, and those with hp <= cap, bounded by hp / (|a| + nb), end the group where they fail;
 * rows with hp > cap are tested one by one. Returns the new length of the touched list. */
static inline __attribute__((always_inline)) int64_t sweep_list(row_state *rs, const uint64_t *ha, int64_t hub,
                                                                int64_t cap, int64_t nt)
{
    const sparse_job *sj = rs->sj;
    const oc_sparse_index *ix = sj->ix;
    const int hw = ix->hub_words;
    uint32_t *acc = rs->w->acc, *touched = rs->w->touched;
    const uint32_t *nbs = ix->hub_nb, *hps = ix->hub_hp, *rows = ix->hub_list;
    const int64_t hi = ix->hub_ptr[hub + 1];
    const int symmetric_pairs = sj->mode == SPARSE_PAIRS && sj->job->symmetric;
    for (int64_t e = ix->hub_ptr[hub]; e < hi;) {
        const uint32_t nb = nbs[e];
        if (!could_pass_row(rs, candidate_key(sj, cap, rs->pa, nb + cap), 0)) break;
        for (; e < hi && nbs[e] == nb; ++e) {
            const uint32_t j = rows[e], hp = hps[e];
            const int64_t c = hp < cap ? hp : cap;
            if (!could_pass_row(rs, candidate_key(sj, c, rs->pa, nb + hp), j)) {
                if (hp > cap) continue;
                /* The rest of the group scores at most this bound (hp descends; the rows
                 * of one hp ascend, so a tie that fails on its column fails for them too). */
                while (e < hi && nbs[e] == nb) ++e;
                break;
            }
            if ((acc[j] & DONE) || (symmetric_pairs && j <= rs->i)) continue;
            acc[j] = DONE;
            touched[nt++] = j;
            const int64_t count = hub_count(ha, ix->b.hub + (int64_t)j * hw, hw);
            if (count) offer(rs, j, count);
        }
    }
    return nt;
}

/* Step 3 for a row with many hubs: every B hub row not yet offered, once, by groups of
 * popcount in order of their bound. */
static inline __attribute__((always_inline)) void sweep_by_popcount(row_state *rs, const uint64_t *ha, int64_t h)
{
    const sparse_job *sj = rs->sj;
    const oc_sparse_index *ix = sj->ix;
    const int hw = ix->hub_words;
    const uint32_t *acc = rs->w->acc;
    /* A row reaching the sweep shares no non-hub column with row i (those were offered and
     * marked done), so its count is at most h = row i's hub bits, and the best a group of
     * popcount q can score is that of a count min(h, q): it rises with q up to h and falls
     * after, so the walk starts at h and goes outward. */
    int64_t lo = 0, hi = ix->ngroups;
    while (lo < hi) { /* the first group whose popcount is >= h */
        int64_t mid = lo + (hi - lo) / 2;
        if (ix->group_pop[mid] < h) lo = mid + 1;
        else hi = mid;
    }
    int64_t down = lo - 1, up = lo;
    while (down >= 0 || up < ix->ngroups) {
        /* Bounds fall away from h on both sides, so the larger of the two next ones failing
         * ends the sweep. */
        uint32_t bd = 0, bu = 0;
        if (down >= 0) {
            int64_t q = ix->group_pop[down];
            bd = candidate_key(sj, q < h ? q : h, rs->pa, q);
        }
        if (up < ix->ngroups) {
            int64_t q = ix->group_pop[up];
            bu = candidate_key(sj, q < h ? q : h, rs->pa, q);
        }
        int64_t g;
        uint32_t bound;
        if (up < ix->ngroups && (down < 0 || bu >= bd)) g = up++, bound = bu;
        else g = down--, bound = bd;
        if (!could_pass(rs, bound)) break;
        int64_t r = ix->group_start[g];
        if (sj->mode == SPARSE_PAIRS && sj->job->symmetric) { /* A·Aᵀ pairs: only j > i, and a group ascends */
            int64_t hi_r = ix->group_start[g + 1];
            while (r < hi_r) {
                int64_t mid = r + (hi_r - r) / 2;
                if ((int64_t)ix->hub_rows[mid] <= rs->i) r = mid + 1;
                else hi_r = mid;
            }
        }
        for (; r < ix->group_start[g + 1]; ++r) {
            const uint32_t j = ix->hub_rows[r];
            if (acc[j] & DONE) continue;
            /* Rows of a group ascend: once the floor's score equals the bound, only a lower
             * column than the floor's could still enter. */
            if (sj->mode == SPARSE_TOPK && rs->heap_n == sj->kept) {
                const uint64_t floor = rs->w->heap[0];
                if ((uint32_t)(floor >> 32) == bound && j > 0xFFFFFFFFu - (uint32_t)floor) break;
            }
            const int64_t c = hub_count(ha, ix->b.hub + (int64_t)j * hw, hw);
            if (c) offer(rs, j, c);
        }
    }
}

/* Step 3: the B rows that share only hub columns with row i (prefix filtering: Bayardo et
 * al., All-Pairs, WWW 2007). Row i's h hubs are taken from the rarest (the shortest list) to
 * the densest; a row whose first shared hub in that order is the r-th (from 0) shares at most
 * h - r columns with row i, so the r-th list is swept with that cap: the densest hub, which
 * most rows hold, only reaches rows whose count of 1 could still enter. A row not offered
 * from the list of its first shared hub cannot enter (the floor only rises), and one offered
 * is marked done, so each is counted once. A row whose lists together are longer than the
 * B hub rows sweeps those once instead (sweep_by_popcount), as a document with dozens of
 * common words does. Returns the new length of the touched list. */
static inline __attribute__((always_inline)) int64_t hub_sweep(row_state *rs, const uint64_t *ha, int64_t nt)
{
    const oc_sparse_index *ix = rs->sj->ix;
    int32_t order[8 * 64];
    int64_t h = 0, listed = 0;
    for (int w = 0; w < ix->hub_words; ++w)
        for (uint64_t bits = ha[w]; bits; bits &= bits - 1) {
            const int32_t hub = w * 64 + __builtin_ctzll(bits);
            const int64_t len = ix->hub_ptr[hub + 1] - ix->hub_ptr[hub];
            int64_t at = h++;
            listed += len;
            for (; at > 0 && ix->hub_ptr[order[at - 1] + 1] - ix->hub_ptr[order[at - 1]] > len; --at)
                order[at] = order[at - 1];
            order[at] = hub;
        }
    if (ix->pairs.pair) { /* its dense lists end at once: no popcount sweep needed */
        walk_hub_pairs(rs, ha[0], order, h);
        return nt;
    }
    if (listed > ix->group_start[ix->ngroups]) {
        sweep_by_popcount(rs, ha, h);
        return nt;
    }
    for (int64_t r = 0; r < h; ++r) nt = sweep_list(rs, ha, order[r], h - r, nt);
    return nt;
}

#endif
