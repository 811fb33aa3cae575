/*
 * gram_epilogue.cuh - the fused epilogues of the Gram kernels: one count in, and either one
 * converted element out (dense) or the element offered to the selection's buckets (fused
 * top-k and threshold, gram_tile.h). Scores go through the same metric functions as the CPU
 * (src/core/metric.h) and the same keys (src/exec/select_key.h), so the device stores and
 * selects exactly what the CPU would.
 */
#ifndef OC_CUDA_GRAM_EPILOGUE_CUH
#define OC_CUDA_GRAM_EPILOGUE_CUH

#include "outcore.h"
#include "../core/metric.h"
#include "../exec/select_key.h"
#include "gram_tile.h"

/* The floating metrics stay out of line: a double division inlined at every one of a
 * thread's 128 stores would bloat the kernel and its register pressure for a step that
 * runs once per element. */
__device__ __noinline__ static float oc_gram_float_metric(int metric, int count, int pa, int pb)
{
    return metric == OC_METRIC_JACCARD ? oc_metric_jaccard(count, pa, pb) : oc_metric_cosine(count, pa, pb);
}

__device__ __forceinline__ void oc_gram_store(const oc_gram_tile &t, int r, int c, int count)
{
    if (r >= t.rows || c >= t.cols) return;
    size_t off = (size_t)r * (size_t)t.ld + (size_t)c;
    if (t.metric == OC_METRIC_JACCARD || t.metric == OC_METRIC_COSINE) {
        ((float *)t.out)[off] = oc_gram_float_metric(t.metric, count, t.pop_a[r], t.pop_b[c]);
        return;
    }
    int64_t v = t.metric == OC_METRIC_HAMMING ? oc_metric_hamming(count, t.pop_a[r], t.pop_b[c]) : count;
    if (t.dtype == OC_DTYPE_UINT16)
        ((uint16_t *)t.out)[off] = (uint16_t)v;
    else
        ((int32_t *)t.out)[off] = (int32_t)v;
}

/* ------------------------------------------------------------------ fused selection */

/* An approximate float score for the prefilter. OC_FUSE_MARGIN (gram_tile.h) is its
 * relative margin: the exact score (double arithmetic rounded once to float) and this one
 * (integers rounded to float, a fast division or reciprocal square root of at most 2 ulp)
 * each lie within a few 2^-24 of the true ratio; 1e-5 is two orders of magnitude more, so
 * an element the prefilter rejects can never pass. */
__device__ __forceinline__ float oc_fuse_approx(int metric, int count, int pa, int pb)
{
    if (metric == OC_METRIC_JACCARD) {
        int uni = pa + pb - count;
        return uni == 0 ? 1.0f : __fdividef((float)count, (float)uni);
    }
    return (pa == 0 || pb == 0) ? 0.0f : (float)count * rsqrtf((float)pa * (float)pb);
}

/* The prefilter bound of a floor key: a float score below it cannot beat the floor
 * (-inf: no bound, the exact score decides). */
__device__ __forceinline__ float oc_fuse_bound(uint64_t floor_key)
{
    if (floor_key == 0) return -INFINITY;
    float v = oc_key_f32_value((uint32_t)(floor_key >> 32));
    return v > 0.0f ? v * (1.0f - OC_FUSE_MARGIN) : -INFINITY;
}

/* The element's exact value in the job's dtype as 32 bits (float bits, int32, uint16 zero
 * extended) and its score key. */
__device__ __forceinline__ uint32_t oc_fuse_value(const oc_gram_tile &t, int count, int pa, int pb, uint32_t *score_key)
{
    if (t.metric == OC_METRIC_JACCARD || t.metric == OC_METRIC_COSINE) {
        float f = oc_gram_float_metric(t.metric, count, pa, pb);
        *score_key = oc_key_score(t.kind, &f, 0);
        return __float_as_uint(f);
    }
    int64_t v = t.metric == OC_METRIC_HAMMING ? oc_metric_hamming(count, pa, pb) : count;
    if (t.dtype == OC_DTYPE_UINT16) {
        uint16_t h = (uint16_t)v;
        *score_key = oc_key_score(t.kind, &h, 0);
        return h;
    }
    int32_t w = (int32_t)v;
    *score_key = oc_key_score(t.kind, &w, 0);
    return (uint32_t)w;
}

__device__ __forceinline__ void oc_fuse_push(const oc_gram_tile &t, uint32_t *count, uint64_t *keys, uint64_t key)
{
    uint32_t slot = atomicAdd(count, 1u);
    if (slot < (uint32_t)t.bucket) keys[slot] = key;
    else *t.over = 1u;
}

/* Per-CTA copies of the floors the CTA's elements are compared with (top-k). */
struct oc_fuse_floors {
    const uint64_t *row, *col; /* keys, by CTA-local row and column */
    const float *row_bound, *col_bound;
};

/* Element (r, c) of the tile (rl, cl within the CTA's block) with its count. */
template <int SEL>
__device__ __forceinline__ void oc_fuse_offer(const oc_gram_tile &t, const oc_fuse_floors &f, int r, int c, int rl, int cl,
                                              int count)
{
    if (r >= t.rows || c >= t.cols) return;
    const int64_t gi = t.i0 + r, gj = t.j0 + c;
    if (t.symmetric && gj <= gi) return;
    const bool fl = t.metric == OC_METRIC_JACCARD || t.metric == OC_METRIC_COSINE;
    int pa = 0, pb = 0;
    if (t.metric != OC_METRIC_COUNTS) pa = t.pop_a[r], pb = t.pop_b[c];
    if (SEL == OC_TILE_TOPK) {
        if (fl) {
            float ap = oc_fuse_approx(t.metric, count, pa, pb);
            if (ap < f.row_bound[rl] && !(t.symmetric && ap >= f.col_bound[cl])) return;
        }
        uint32_t sk;
        (void)oc_fuse_value(t, count, pa, pb, &sk);
        /* A key beats a floor only if its score key reaches the floor's. */
        if (sk < (uint32_t)(f.row[rl] >> 32) && !(t.symmetric && sk >= (uint32_t)(f.col[cl] >> 32))) return;
        const uint64_t kr = oc_key_make(sk, gj);
        if (kr > f.row[rl]) oc_fuse_push(t, t.row_count + r, t.row_keys + (size_t)r * t.bucket, kr);
        if (t.symmetric) {
            const uint64_t kc = oc_key_make(sk, gi);
            if (kc > f.col[cl]) oc_fuse_push(t, t.col_count + c, t.col_keys + (size_t)c * t.bucket, kc);
        }
    } else {
        if (fl && oc_fuse_approx(t.metric, count, pa, pb) < t.approx_min) return;
        uint32_t sk;
        const uint32_t v = oc_fuse_value(t, count, pa, pb, &sk);
        /* ~column in the high half: sorting entries descending puts columns ascending, and
         * no entry is 0 (the padding of the sort). */
        if (sk >= t.min_key)
            oc_fuse_push(t, t.row_count + r, t.row_keys + (size_t)r * t.bucket, (uint64_t)(~(uint32_t)c) << 32 | v);
    }
}

#endif
