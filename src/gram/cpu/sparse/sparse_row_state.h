/*
 * sparse_row_state.h - the row being processed by the sparse Gram path (sparse_rows.c) and
 * what every step does with a candidate: its score key, the row's top-k heap or pair list,
 * and the bounds a step tests before it counts a candidate. Static inline functions for
 * sparse_rows.c and sparse_hub_sweep.h only.
 */
#ifndef OC_GRAM_CPU_SPARSE_SPARSE_ROW_STATE_H
#define OC_GRAM_CPU_SPARSE_SPARSE_ROW_STATE_H

#include <math.h>
#include <stdint.h>

#include "core/metric.h"
#include "gram/cpu/sparse/sparse_job.h"

#define DONE 0x80000000u /* acc[j] of a B row already offered (counts stay far below it: < 2^31) */

/* The row being processed. */
typedef struct row_state {
    const sparse_job *sj;
    sparse_worker *w;
    int64_t i, pa;
    int64_t heap_n;     /* top-k: keys in w->heap */
    int64_t npairs;     /* pairs: candidates in w->sortbuf */
    uint32_t floor_key; /* top-k jaccard: the floor's score key that below was made for */
    double below;       /* c / union under this cannot score the floor (hopeless) */
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
    case OC_METRIC_JACCARD:
        return oc_key_f32(oc_metric_jaccard(c, pa, pb));
    case OC_METRIC_COSINE:
        return oc_key_f32(oc_metric_cosine(c, pa, pb));
    case OC_METRIC_COUNTS:
    case OC_METRIC_HAMMING: /* never a candidate mode (choose_mode): every element of the row */
    case OC_METRIC_COUNT:
        break;
    }
    return sj->kind == OC_KEY_I32 ? oc_key_i32((int32_t)c) : (uint32_t)c;
}

static inline uint64_t full_key(uint32_t score_key, int64_t j)
{
    return (uint64_t)score_key << 32 | (0xFFFFFFFFu - (uint32_t)j);
}

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

/* Top-k jaccard with a full heap: whether c / (|a| + pb - c) is sure to round below the
 * floor's score f, tested by one multiplication instead of the score's division. A quotient
 * x <= g, g the float below f, rounds to at most g < f; the product g * union is correct to
 * a relative 2^-53, which the factor 1 - 2^-40 more than covers. A score equal to the
 * floor's (which may still enter on its column) is never called hopeless. */
static inline int hopeless(row_state *rs, int64_t c, int64_t pb)
{
    const uint32_t fk = (uint32_t)(rs->w->heap[0] >> 32);
    if (fk != rs->floor_key) {
        const float f = oc_key_f32_value(fk);
        rs->floor_key = fk;
        rs->below = f > 0 ? (double)nextafterf(f, 0.0f) * (1.0 - 0x1p-40) : 0.0;
    }
    return (double)c < rs->below * (double)(rs->pa + pb - c);
}

/* Offers B row j, of popcount pb, with count c to the row's heap or pairs. */
static inline void offer_pop(row_state *rs, int64_t j, int64_t c, int64_t pb)
{
    const sparse_job *sj = rs->sj;
    if (sj->job->symmetric && (sj->mode == SPARSE_TOPK ? j == rs->i : j <= rs->i)) return;
    if (sj->mode == SPARSE_TOPK && sj->job->metric == OC_METRIC_JACCARD && rs->heap_n == sj->kept &&
        hopeless(rs, c, pb))
        return;
    const uint32_t sk = candidate_key(sj, c, rs->pa, pb);
    if (sj->mode == SPARSE_TOPK) heap_offer(rs->w->heap, &rs->heap_n, sj->kept, full_key(sk, j));
    else if (sk >= sj->min_key) rs->w->sortbuf[rs->npairs++] = (uint64_t)j << 32 | sk;
}

static inline void offer(row_state *rs, int64_t j, int64_t c) { offer_pop(rs, j, c, rs->sj->ix->b.pop[j]); }

/* Whether a score key as good as bound may still enter (top-k) or pass (threshold). */
static inline int could_pass(const row_state *rs, uint32_t bound)
{
    if (rs->sj->mode == SPARSE_PAIRS) return bound >= rs->sj->min_key;
    return rs->heap_n < rs->sj->kept || bound >= (uint32_t)(rs->w->heap[0] >> 32);
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

#endif
