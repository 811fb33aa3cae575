/*
 * sparse_rows.c - one row of the sparse Gram path (see sparse_rows.h for the algorithm).
 */
#include <stdlib.h>
#include <string.h>

#include "core/metric.h"
#include "gram/cpu/sparse/sparse_hub_sweep.h"
#include "gram/cpu/sparse/sparse_rows.h"

/* Step 1: +1 into acc for each B row sharing a non-hub column; the first touch is listed. */
static inline __attribute__((always_inline)) int64_t scatter(const sparse_job *sj, sparse_worker *w, int64_t i,
                                                             int64_t from_row, int words)
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
        if (words) { /* the entries' hub words and popcounts come along with the first touch */
            const int64_t at = r - ix->post_rows;
            const uint64_t *hub = ix->pairs.post_hub + at;
            const uint32_t *pop = ix->pairs.post_pop + at;
            for (int64_t k = 0; k < end - r; ++k)
                if (acc[r[k]]++ == 0) {
                    w->touched_hub[nt] = hub[k];
                    w->touched_pop[nt] = pop[k];
                    touched[nt++] = r[k];
                }
            continue;
        }
        for (; r < end; ++r)
            if (acc[*r]++ == 0) touched[nt++] = *r;
    }
    w->updates += updates;
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
    const int empty_pairs = oc_metric_info_of(sj->job->metric)->empty_pair_best && rs->pa == 0;
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
    if (oc_metric_info_of(sj->job->metric)->empty_pair_best && rs->pa == 0) {
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
    const int64_t nt = scatter(sj, w, i, 0, 0);
    if (has_hub)
        for (int64_t j = 0; j < p; ++j) w->full[j] = w->acc[j] + (uint32_t)hub_count(ha, ix->b.hub + j * hw, hw);
    else memcpy(w->full, w->acc, (size_t)p * sizeof *w->full);
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
            if (!(job->symmetric && j == i))
                heap_offer(w->heap, &n, sj->kept, full_key(oc_key_score(sj->kind, result, j), j));
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
    uint32_t *acc = w->acc;
    /* With one hub word the touched rows' words and popcounts come with the lists' entries. */
    const int words = ix->pairs.post_hub != NULL;
    const int64_t nt = words ? scatter(sj, w, i, from, 1) : scatter(sj, w, i, from, 0);
    for (int64_t t = 0; t < nt; ++t) {
        const uint32_t j = w->touched[t];
        const int64_t c = acc[j];
        acc[j] = DONE;
        if (words) offer_pop(&rs, j, c + __builtin_popcountll(ha[0] & w->touched_hub[t]), w->touched_pop[t]);
        else offer(&rs, j, has_hub ? c + hub_count(ha, ix->b.hub + (int64_t)j * hw, hw) : c);
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
