/*
 * sparse_rows.c - one row of the sparse Gram path (see sparse_rows.h for the algorithm).
 */
#include <stdlib.h>
#include <string.h>

#include "core/metric.h"
#include "cpu/sparse_rows.h"

#define DONE 0x80000000u /* acc[j] of a B row already offered (counts stay far below it: < 2^31) */

/* The row being processed. */
typedef struct row_state {
    const sparse_job *sj;
    sparse_worker *w;
    int64_t i, pa;
    int64_t heap_n;   /* top-k: keys in w->heap */
    int64_t npairs;   /* pairs: candidates in w->sortbuf */
} row_state;

static inline __attribute__((always_inline)) int64_t hub_count(const uint64_t *x, const uint64_t *y, int words)
{
    int64_t c = 0;
    for (int k = 0; k < words; ++k) c += __builtin_popcountll(x[k] & y[k]);
    return c;
}

/* The score key of a count in the candidate modes (jaccard, cosine, counts): metric.h's
 * value in the result dtype, as the dense path's epilogue computes it. */
static inline uint32_t candidate_key(const sparse_job *sj, int64_t c, int64_t pa, int64_t pb)
{
    switch (sj->job->metric) {
    case OC_METRIC_JACCARD: return oc_key_f32(oc_metric_jaccard(c, pa, pb));
    case OC_METRIC_COSINE: return oc_key_f32(oc_metric_cosine(c, pa, pb));
    default: return sj->kind == OC_KEY_I32 ? oc_key_i32((int32_t)c) : (uint32_t)c;
    }
}

static inline uint64_t full_key(uint32_t score_key, int64_t j) { return (uint64_t)score_key << 32 | (0xFFFFFFFFu - (uint32_t)j); }

/* Min-heap of the row's best keys (the root is the floor once kept keys are in). */
static inline void heap_offer(uint64_t *h, int64_t *n, int64_t cap, uint64_t key)
{
    int64_t at;
    if (*n < cap) {
        at = (*n)++;
        while (at > 0 && h[(at - 1) / 2] > key) {
            h[at] = h[(at - 1) / 2];
            at = (at - 1) / 2;
        }
        h[at] = key;
        return;
    }
    if (key <= h[0]) return;
    at = 0;
    for (;;) {
        int64_t c = 2 * at + 1;
        if (c >= cap) break;
        if (c + 1 < cap && h[c + 1] < h[c]) c++;
        if (h[c] >= key) break;
        h[at] = h[c];
        at = c;
    }
    h[at] = key;
}

static inline void offer(row_state *rs, int64_t j, int64_t c)
{
    const sparse_job *sj = rs->sj;
    if (sj->job->symmetric && (sj->mode == SPARSE_TOPK ? j == rs->i : j <= rs->i)) return;
    const uint32_t sk = candidate_key(sj, c, rs->pa, sj->ix->b.pop[j]);
    if (sj->mode == SPARSE_TOPK) heap_offer(rs->w->heap, &rs->heap_n, sj->kept, full_key(sk, j));
    else if (sk >= sj->min_key) rs->w->sortbuf[rs->npairs++] = (uint64_t)j << 32 | sk;
}

/* Whether a score key as good as bound may still enter (top-k) or pass (threshold). */
static inline int could_pass(const row_state *rs, uint32_t bound)
{
    if (rs->sj->mode == SPARSE_PAIRS) return bound >= rs->sj->min_key;
    return rs->heap_n < rs->sj->kept || bound >= (uint32_t)(rs->w->heap[0] >> 32);
}

/* Step 1: +1 into acc for each B row sharing a non-hub column; the first touch is listed. */
static inline __attribute__((always_inline)) int64_t scatter(const sparse_job *sj, sparse_worker *w, int64_t i,
                                                             int64_t from_row)
{
    const oc_sparse_index *ix = sj->ix;
    uint32_t *acc = w->acc, *touched = w->touched;
    int64_t nt = 0;
    double updates = 0;
    for (int64_t e = ix->a.ptr[i]; e < ix->a.ptr[i + 1]; ++e) {
        const uint32_t col = ix->a.idx[e];
        const uint32_t *r = ix->post_rows + ix->post_ptr[col], *end = ix->post_rows + ix->post_ptr[col + 1];
        if (from_row > 0) { /* lists ascend: skip the rows that cannot pair (A·Aᵀ threshold: j > i) */
            const uint32_t *lo = r, *hi = end;
            while (lo < hi) {
                const uint32_t *mid = lo + (hi - lo) / 2;
                if ((int64_t)*mid < from_row) lo = mid + 1;
                else hi = mid;
            }
            r = lo;
        }
        updates += (double)(end - r);
        for (; r < end; ++r)
            if (acc[*r]++ == 0) touched[nt++] = *r;
    }
    w->updates += updates;
    return nt;
}

/* Whether a B row j whose score key is at most bound may still enter (top-k: ties go to the
 * lower column) or pass (threshold). */
static inline int could_pass_row(const row_state *rs, uint32_t bound, uint32_t j)
{
    if (rs->sj->mode == SPARSE_PAIRS) return bound >= rs->sj->min_key;
    if (rs->heap_n < rs->sj->kept) return 1;
    const uint64_t floor = rs->w->heap[0];
    return bound > (uint32_t)(floor >> 32) || (bound == (uint32_t)(floor >> 32) && j < 0xFFFFFFFFu - (uint32_t)floor);
}

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
    if (listed > ix->group_start[ix->ngroups]) {
        sweep_by_popcount(rs, ha, h);
        return nt;
    }
    for (int64_t r = 0; r < h; ++r) nt = sweep_list(rs, ha, order[r], h - r, nt);
    return nt;
}

static int desc_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? 1 : a > b ? -1 : 0;
}

static int asc_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Top-k: the heap sorted into the row's list, completed with the columns whose count is 0
 * (every one scores the same, so they enter by column: for jaccard, an empty row first
 * lists the other empty rows, which score 1). */
static void finish_topk(row_state *rs)
{
    const sparse_job *sj = rs->sj;
    const oc_sparse_index *ix = sj->ix;
    const int64_t kept = sj->kept, i = rs->i, p = ix->b.rows;
    const int sym = sj->job->symmetric;
    uint64_t *list = sj->keys + i * kept;
    int64_t n = rs->heap_n;
    qsort(rs->w->heap, (size_t)n, sizeof *list, desc_u64);
    memcpy(list, rs->w->heap, (size_t)n * sizeof *list);
    if (n == kept) return;
    const int empty_pairs = sj->job->metric == OC_METRIC_JACCARD && rs->pa == 0;
    if (empty_pairs)
        for (int64_t e = 0; e < ix->nempty_b && n < kept; ++e)
            if (!(sym && ix->empty_b[e] == i)) list[n++] = full_key(oc_key_f32(1.0f), ix->empty_b[e]);
    /* The candidates' columns, ascending, to skip them. */
    uint64_t *taken = rs->w->sortbuf;
    for (int64_t t = 0; t < rs->heap_n; ++t) taken[t] = 0xFFFFFFFFu - (uint32_t)list[t];
    qsort(taken, (size_t)rs->heap_n, sizeof *taken, asc_u64);
    const uint32_t zero = candidate_key(sj, 0, rs->pa, rs->pa ? rs->pa : 1);
    for (int64_t j = 0, t = 0; j < p && n < kept; ++j) {
        while (t < rs->heap_n && (int64_t)taken[t] < j) t++;
        if ((t < rs->heap_n && (int64_t)taken[t] == j) || (sym && j == i)) continue;
        if (empty_pairs && ix->b.pop[j] == 0) continue;
        list[n++] = full_key(zero, j);
    }
}

/* Sorts a row's pairs (column << 32 | score key) by column: a row of a hub can have tens of
 * thousands, where an LSD radix sort over the column's bytes beats qsort's comparisons;
 * spare has room for n. */
static void sort_by_column(uint64_t *keys, uint64_t *spare, int64_t n)
{
    if (n < 256) {
        qsort(keys, (size_t)n, sizeof *keys, asc_u64);
        return;
    }
    uint64_t *from = keys, *to = spare;
    for (int shift = 32; shift < 64; shift += 8) {
        int64_t count[257] = {0};
        for (int64_t e = 0; e < n; ++e) count[((from[e] >> shift) & 0xFF) + 1]++;
        if (count[1] == n) continue; /* every key has this byte 0 (columns below 2^(shift - 32)) */
        for (int b = 0; b < 256; ++b) count[b + 1] += count[b];
        for (int64_t e = 0; e < n; ++e) to[count[(from[e] >> shift) & 0xFF]++] = from[e];
        uint64_t *t = from;
        from = to, to = t;
    }
    if (from != keys) memcpy(keys, from, (size_t)n * sizeof *keys);
}

/* Appends one pair to the worker's block buffers. */
static inline int append_pair(const sparse_job *sj, sparse_worker *w, uint32_t col, const void *value)
{
    if (w->pcount == w->pcap) {
        int64_t cap = w->pcap ? 2 * w->pcap : 4096;
        uint32_t *c = realloc(w->pcols, (size_t)cap * sizeof *c);
        if (c) w->pcols = c;
        unsigned char *v = realloc(w->pvals, (size_t)cap * sj->elem);
        if (v) w->pvals = v;
        if (!c || !v) return -1;
        w->pcap = cap;
    }
    w->pcols[w->pcount] = col;
    memcpy(w->pvals + w->pcount * (int64_t)sj->elem, value, sj->elem);
    w->pcount++;
    return 0;
}

/* Threshold: the row's candidates in column order into the block buffers. */
static int finish_pairs(row_state *rs)
{
    const sparse_job *sj = rs->sj;
    const oc_sparse_index *ix = sj->ix;
    sparse_worker *w = rs->w;
    if (sj->job->metric == OC_METRIC_JACCARD && rs->pa == 0) {
        const float one = 1.0f;
        for (int64_t e = 0; e < ix->nempty_b; ++e)
            if (!(sj->job->symmetric && ix->empty_b[e] <= rs->i) && oc_key_f32(one) >= sj->min_key &&
                append_pair(sj, w, ix->empty_b[e], &one) != 0)
                return -1;
        return 0;
    }
    sort_by_column(w->sortbuf, w->sortspare, rs->npairs);
    unsigned char value[8];
    for (int64_t t = 0; t < rs->npairs; ++t) {
        oc_key_store_score(sj->kind, (uint32_t)w->sortbuf[t], value, 0);
        if (append_pair(sj, w, (uint32_t)(w->sortbuf[t] >> 32), value) != 0) return -1;
    }
    return 0;
}

/* Every element of the row, through the dense path's epilogue. */
static inline __attribute__((always_inline)) int full_row(const sparse_job *sj, sparse_worker *w, int64_t i,
                                                          const uint64_t *ha, int has_hub)
{
    const oc_gram_job *job = sj->job;
    const oc_sparse_index *ix = sj->ix;
    const int64_t p = ix->b.rows;
    const int hw = ix->hub_words;
    const int64_t nt = scatter(sj, w, i, 0);
    if (has_hub)
        for (int64_t j = 0; j < p; ++j) w->full[j] = w->acc[j] + (uint32_t)hub_count(ha, ix->b.hub + j * hw, hw);
    else
        memcpy(w->full, w->acc, (size_t)p * sizeof *w->full);
    for (int64_t t = 0; t < nt; ++t) w->acc[w->touched[t]] = 0;
    const void *result = w->full;
    if (sj->convert) {
        sj->kernel->epilogue(sj->epilogue, w->full, p, ix->a.pop + i, ix->b.pop, 1, p, job->m, w->out, p);
        result = w->out;
    }
    if (job->dense) {
        oc_dense_sink_put(job->dense, i, 0, 1, p, result, p);
        return 0;
    }
    if (sj->keys) { /* top-k */
        int64_t n = 0;
        for (int64_t j = 0; j < p; ++j)
            if (!(job->symmetric && j == i)) heap_offer(w->heap, &n, sj->kept, full_key(oc_key_score(sj->kind, result, j), j));
        row_state rs = {.sj = sj, .w = w, .i = i, .heap_n = n};
        finish_topk(&rs);
        return 0;
    }
    for (int64_t j = job->symmetric ? i + 1 : 0; j < p; ++j)
        if (oc_key_score(sj->kind, result, j) >= sj->min_key &&
            append_pair(sj, w, (uint32_t)j, (const unsigned char *)result + j * (int64_t)sj->elem) != 0)
            return -1;
    return 0;
}

static inline __attribute__((always_inline)) int row_body(const sparse_job *sj, sparse_worker *w, int64_t i)
{
    const oc_sparse_index *ix = sj->ix;
    const int hw = ix->hub_words;
    const uint64_t *ha = hw ? ix->a.hub + i * hw : NULL;
    int has_hub = 0;
    for (int k = 0; k < hw; ++k) has_hub |= ha[k] != 0;
    if (sj->mode == SPARSE_FULL) return full_row(sj, w, i, ha, has_hub);
    if (sj->kept == 0 && sj->mode == SPARSE_TOPK) return 0;

    row_state rs = {.sj = sj, .w = w, .i = i, .pa = ix->a.pop[i]};
    const int64_t from = sj->mode == SPARSE_PAIRS && sj->job->symmetric ? i + 1 : 0;
    const int64_t nt = scatter(sj, w, i, from);
    uint32_t *acc = w->acc;
    for (int64_t t = 0; t < nt; ++t) {
        const uint32_t j = w->touched[t];
        int64_t c = acc[j];
        if (has_hub) c += hub_count(ha, ix->b.hub + (int64_t)j * hw, hw);
        acc[j] = DONE;
        offer(&rs, j, c);
    }
    const int64_t swept = has_hub ? hub_sweep(&rs, ha, nt) : nt;
    for (int64_t t = 0; t < swept; ++t) acc[w->touched[t]] = 0;
    if (sj->mode == SPARSE_TOPK) {
        finish_topk(&rs);
        return 0;
    }
    return finish_pairs(&rs);
}

#if defined(__x86_64__) || defined(__i386__)
/* The same body with the POPCNT instruction (core and cpu/ are compiled for plain x86-64,
 * where __builtin_popcountll is a slower bit trick); chosen at run time by cpuid. */
__attribute__((target("popcnt"))) static int row_hw(const sparse_job *sj, sparse_worker *w, int64_t i)
{
    return row_body(sj, w, i);
}
#endif

static int row_sw(const sparse_job *sj, sparse_worker *w, int64_t i) { return row_body(sj, w, i); }

int oc_sparse_row(const sparse_job *sj, sparse_worker *w, int64_t i)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("popcnt")) return row_hw(sj, w, i);
#endif
    return row_sw(sj, w, i);
}
