/*
 * gram_epilogue.cuh - the fused epilogues of the Gram kernels: one count in, and either one
 * converted element out (dense) or the element offered to the selection's buckets (fused
 * top-k and threshold, gram_tile.h). Scores go through the same metric functions as the CPU
 * (src/core/metric.h) and the same keys (src/gram/select/select_key.h), so the device stores and
 * selects exactly what the CPU would.
 */
#ifndef OC_GRAM_CUDA_GRAM_EPILOGUE_CUH
#define OC_GRAM_CUDA_GRAM_EPILOGUE_CUH

#include <float.h>

#include "outcore.h"
#include "core/metric.h"
#include "gram/select/select_key.h"
#include "gram/cuda/gram_fuse_best.cuh"
#include "gram/cuda/gram_tile.h"

/* Jaccard as metric.h defines it (the double quotient rounded to float), by one float
 * division while the union |a| + |b| - c is at most 2^24: then c and the union are exact in
 * float, and rounding the quotient to double and then to float equals rounding it to float
 * once (53 >= 2 * 24 + 2: the argument and reference in src/gram/cpu/kernels/epilogue_blocks.h,
 * which the CPU's float lanes use). A float division is a fraction of the double one's
 * cost: no 64-bit conversions, no double reciprocal. */
__device__ __forceinline__ float oc_gram_jaccard(int count, int pa, int pb)
{
    const int64_t uni = (int64_t)pa + pb - count;
    if (uni <= (1 << 24)) return uni == 0 ? 1.0f : __fdiv_rn((float)count, (float)uni);
    return oc_metric_jaccard(count, pa, pb);
}

/* Every function below selects by explicit metric; device code gets no -Wswitch-enum, so a
 * metric added to oc_metric stops the build here until each switch has its case. The host
 * checks a job's metric (core/metric.h) before any tile reaches a kernel: the cases of the
 * other kind are unreachable. */
static_assert(OC_METRIC_COUNT == 4, "gram_epilogue.cuh: give the new metric its case in every switch of this file "
                                    "and in the kernels' integer/float split (gram_b1.cu, gram_b1_sm90a.cu)");

/* Whether the metric's result is a float32 score (else an integer in int32 or uint16). */
__host__ __device__ __forceinline__ bool oc_gram_metric_is_float(int metric)
{
    switch ((oc_metric)metric) {
    case OC_METRIC_JACCARD:
    case OC_METRIC_COSINE:
        return true;
    case OC_METRIC_COUNTS:
    case OC_METRIC_HAMMING:
    case OC_METRIC_COUNT:
        break;
    }
    return false;
}

/* Whether the metric's formula reads the rows' popcounts (a counts job has none). */
__host__ __device__ __forceinline__ bool oc_gram_metric_reads_pops(int metric)
{
    switch ((oc_metric)metric) {
    case OC_METRIC_JACCARD:
    case OC_METRIC_COSINE:
    case OC_METRIC_HAMMING:
        return true;
    case OC_METRIC_COUNTS:
    case OC_METRIC_COUNT:
        break;
    }
    return false;
}

/* A float metric's score (oc_gram_metric_is_float). */
__device__ __forceinline__ float oc_gram_float_score(int metric, int count, int pa, int pb)
{
    switch ((oc_metric)metric) {
    case OC_METRIC_JACCARD:
        return oc_gram_jaccard(count, pa, pb);
    case OC_METRIC_COSINE:
        return oc_metric_cosine(count, pa, pb);
    case OC_METRIC_COUNTS:
    case OC_METRIC_HAMMING:
    case OC_METRIC_COUNT:
        break;
    }
    __builtin_unreachable();
}

/* An integer metric's value (not oc_gram_metric_is_float). The popcounts are read only by a
 * metric whose formula uses them: counts jobs have none. */
__device__ __forceinline__ int64_t oc_gram_int_score(int metric, int count, const int32_t *pa, const int32_t *pb)
{
    switch ((oc_metric)metric) {
    case OC_METRIC_COUNTS:
        return count;
    case OC_METRIC_HAMMING:
        return oc_metric_hamming(count, *pa, *pb);
    case OC_METRIC_JACCARD:
    case OC_METRIC_COSINE:
    case OC_METRIC_COUNT:
        break;
    }
    __builtin_unreachable();
}

/* The floating metrics stay out of line: a division inlined at every one of a thread's 128
 * stores would bloat the kernel and its register pressure for a step that runs once per
 * element. */
__device__ __noinline__ static float oc_gram_float_metric(int metric, int count, int pa, int pb)
{
    return oc_gram_float_score(metric, count, pa, pb);
}

__device__ __forceinline__ void oc_gram_store(const oc_gram_tile &t, int r, int c, int count)
{
    if (r >= t.rows || c >= t.cols) return;
    size_t off = (size_t)r * (size_t)t.ld + (size_t)c;
    if (oc_gram_metric_is_float(t.metric)) {
        ((float *)t.out)[off] = oc_gram_float_metric(t.metric, count, t.pop_a[r], t.pop_b[c]);
        return;
    }
    int64_t v = oc_gram_int_score(t.metric, count, t.pop_a + r, t.pop_b + c);
    if (t.dtype == OC_DTYPE_UINT16) ((uint16_t *)t.out)[off] = (uint16_t)v;
    else ((int32_t *)t.out)[off] = (int32_t)v;
}

/* ------------------------------------------------------------------ fused selection */

/* The bound of a floor key (top-k: a list's floor; threshold: min_key in the high half) for
 * a cheap first test of the elements against it (float metrics): jaccard
 * c / (|a| + |b| - c) >= f holds only if c >= (|a| + |b|) f / (1 + f), and cosine
 * c / sqrt(|a||b|) >= f only if c^2 >= |a||b| f^2. The bound is that factor lowered
 * by OC_FUSE_MARGIN (gram_tile.h), 1e-5 relative: the exact score (double arithmetic rounded
 * once to float) and the float products of the test (integers rounded to float) are each
 * within a few 2^-24 of the true values, so an element the test rejects can never beat the
 * floor. -FLT_MAX: no bound (an empty list, a floor of score 0, counts and hamming, whose
 * exact keys cost no more than the test); +inf: outside the tile (never tested). The test
 * itself is in oc_fuse_line. */
__device__ __forceinline__ float oc_fuse_bound(int metric, uint64_t floor_key)
{
    if (floor_key == ~0ull) return INFINITY;
    if (floor_key == 0 || !oc_gram_metric_is_float(metric)) return -FLT_MAX;
    const float f = oc_key_f32_value((uint32_t)(floor_key >> 32));
    if (!(f > 0.0f)) return -FLT_MAX;
    switch ((oc_metric)metric) {
    case OC_METRIC_JACCARD:
        return f * (1.0f - OC_FUSE_MARGIN) / (1.0f + f);
    case OC_METRIC_COSINE:
        return f * f * (1.0f - OC_FUSE_MARGIN);
    case OC_METRIC_COUNTS:
    case OC_METRIC_HAMMING:
    case OC_METRIC_COUNT:
        break;
    }
    __builtin_unreachable();
}

/* The bound test of one line (a row or a column of a CTA's block) in one form for both
 * float metrics, so that the per-element test has no branch (a branch per element kept each
 * element's shared-memory load from overlapping the next, and the jaccard top-k kernel ran
 * longer than the counts one: bench/RESULTS.md). An element with count c and the
 * other popcount q passes when c * (square ? c : 1) >= b q + l:
 *   jaccard: c >= bound |a| + bound q      (b = bound, l = bound |a|)
 *   cosine:  c^2 >= (bound |a|) q          (b = bound |a|, l = 0)
 *   no bound (-FLT_MAX): b = 0, l = -inf, every element passes.
 * The products and sums are those of the two tests written out, so the margin argument of
 * oc_fuse_bound holds unchanged. */
struct oc_fuse_ftest {
    float b, l;
    bool square;
};

__device__ __forceinline__ oc_fuse_ftest oc_fuse_ftest_make(int metric, float bound, int fixed_pop)
{
    oc_fuse_ftest f;
    switch ((oc_metric)metric) {
    case OC_METRIC_JACCARD:
        f.square = false;
        break;
    case OC_METRIC_COSINE:
        f.square = true;
        break;
    case OC_METRIC_COUNTS: /* integer metrics take the exact key instead: no bound test */
    case OC_METRIC_HAMMING:
    case OC_METRIC_COUNT:
        f.square = true;
        break;
    }
    if (!(bound > -FLT_MAX)) f.b = 0.0f, f.l = -INFINITY;
    else if (!f.square) f.b = bound, f.l = bound * (float)fixed_pop;
    else f.b = bound * (float)fixed_pop, f.l = 0.0f;
    return f;
}

__device__ __forceinline__ bool oc_fuse_ftest_pass(const oc_fuse_ftest &f, int count, float other_pop)
{
    const float cf = (float)count;
    return cf * (f.square ? cf : 1.0f) >= fmaf(f.b, other_pop, f.l);
}

/* A warp's bits of one line: bit j for element i = lane + 32 j (count counts[i * stride],
 * other popcount fpops[i]) when it passes the bound test and lies in [lo, hi). */
template <int N>
__device__ __forceinline__ unsigned oc_fuse_ftest_bits(const oc_fuse_ftest &f, const int *counts, int stride,
                                                       const float *fpops, int lo, int hi, int lane)
{
    unsigned bits = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        const int i = lane + 32 * j;
        bits |= (unsigned)(oc_fuse_ftest_pass(f, counts[i * stride], fpops[i]) && i >= lo && i < hi) << j;
    }
    return bits;
}

/* The element's exact value in the job's dtype as 32 bits (float bits, int32, uint16 zero
 * extended) and its score key. */
__device__ __forceinline__ uint32_t oc_fuse_value(const oc_gram_tile &t, int count, int pa, int pb, uint32_t *score_key)
{
    if (oc_gram_metric_is_float(t.metric)) {
        float f = oc_gram_float_metric(t.metric, count, pa, pb);
        *score_key = oc_key_score(t.kind, &f, 0);
        return __float_as_uint(f);
    }
    const int32_t pops[2] = {pa, pb};
    int64_t v = oc_gram_int_score(t.metric, count, &pops[0], &pops[1]);
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

/* The exact score key of a float metric's element, inline (for loops that keep several
 * in flight). */
__device__ __forceinline__ uint32_t oc_fuse_float_key(const oc_gram_tile &t, int count, int pa, int pb)
{
    float f = oc_gram_float_score(t.metric, count, pa, pb);
    return oc_key_score(t.kind, &f, 0);
}

/* The exact score key of an element. */
__device__ __forceinline__ uint32_t oc_fuse_score_key(const oc_gram_tile &t, int count, int pa, int pb)
{
    uint32_t sk;
    (void)oc_fuse_value(t, count, pa, pb, &sk);
    return sk;
}

/* The exact score key of an integer metric (counts, hamming) in a few operations: the value
 * is |a| + |b| - 2c (hamming) or c (counts), exact in 32-bit unsigned arithmetic since it
 * lies in [0, 2^31); the key of select_key.h is then (value & mask) ^ flip: int32 flips the
 * sign bit (and, lower first, every other bit), uint16 keeps 16 bits (lower first: 0xFFFF -
 * v, which is v ^ 0xFFFF). */
struct oc_fuse_int {
    uint32_t pops, mul, mask, flip;
};

__device__ __forceinline__ oc_fuse_int oc_fuse_int_make(const oc_gram_tile &t)
{
    bool ham = false;
    switch ((oc_metric)t.metric) {
    case OC_METRIC_HAMMING:
        ham = true;
        break;
    case OC_METRIC_COUNTS:
    case OC_METRIC_JACCARD: /* float metrics do not use the integer key */
    case OC_METRIC_COSINE:
    case OC_METRIC_COUNT:
        break;
    }
    const bool u16 = t.dtype == OC_DTYPE_UINT16;
    oc_fuse_int k;
    k.pops = ham ? 1u : 0u;
    k.mul = ham ? (uint32_t)-2 : 1u;
    k.mask = u16 ? 0xFFFFu : 0xFFFFFFFFu;
    k.flip = u16 ? (ham ? 0xFFFFu : 0u) : (ham ? 0x7FFFFFFFu : 0x80000000u);
    return k;
}

__device__ __forceinline__ uint32_t oc_fuse_int_key(const oc_fuse_int &k, int count, int pa, int pb)
{
    const uint32_t v = k.pops * ((uint32_t)pa + (uint32_t)pb) + k.mul * (uint32_t)count;
    return (v & k.mask) ^ k.flip;
}

/* Whether element (r, c) of the tile is a candidate at all: inside the tile and, for A·Aᵀ,
 * above the diagonal of the result. */
__device__ __forceinline__ bool oc_fuse_valid(const oc_gram_tile &t, int r, int c)
{
    return r < t.rows && c < t.cols && (!t.symmetric || t.j0 + c > t.i0 + r);
}

/* Top-k: one row (or, for A·Aᵀ, one column) of a CTA's block offers its keys to its list.
 * The warp's lanes take every 32nd element: element i has its count at counts[i * stride],
 * the popcount pops[i] of its column (row) and the line's own fixed_pop (the metrics are
 * symmetric in the two popcounts), and index index0 + i in the list; elements outside
 * [lo, hi) are not candidates. */
template <bool INT, int N, class Sink>
__device__ __forceinline__ void oc_fuse_line(const oc_gram_tile &t, const oc_fuse_int &ik, const int *counts,
                                             int stride, int fixed_pop, const int *pops, const float *fpops,
                                             int64_t index0, int lo, int hi, uint64_t floor, float bound,
                                             const Sink &sink, int lane)
{
    uint64_t k[N];
    if (INT) {
#pragma unroll
        for (int j = 0; j < N; ++j) {
            const int i = lane + 32 * j;
            const uint64_t key = oc_key_make(oc_fuse_int_key(ik, counts[i * stride], fixed_pop, pops[i]), index0 + i);
            k[j] = i >= lo && i < hi && key > floor ? key : 0;
        }
        oc_fuse_push_best(t, k, sink, lane);
        return;
    }
    /* Float metrics: first the bound test (oc_fuse_ftest), branch-free, one bit per
     * element. Only when a lane of the warp has a bit set (rarely, once the floors prune)
     * are exact scores computed: a branch per element around the exact score made the
     * kernel slower than the integer metrics' (bench/RESULTS.md). */
    const unsigned bits =
        oc_fuse_ftest_bits<N>(oc_fuse_ftest_make(t.metric, bound, fixed_pop), counts, stride, fpops, lo, hi, lane);
    if (!__any_sync(0xFFFFFFFFu, bits)) return;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        const int i = lane + 32 * j;
        k[j] = 0;
        if ((bits >> j) & 1u) {
            const uint64_t key = oc_key_make(oc_fuse_score_key(t, counts[i * stride], fixed_pop, pops[i]), index0 + i);
            k[j] = key > floor ? key : 0;
        }
    }
    oc_fuse_push_best(t, k, sink, lane);
}

/* Threshold: one row of a CTA's block offers its bucket the pairs that pass. The lanes
 * take every 32nd element as in oc_fuse_line (counts[i], the column's popcount pops[i] and
 * fpops[i], the row's fixed_pop; tile-local column col0 + i; only [lo, hi) are candidates).
 * First a branch-free test per element: integer metrics compare the exact key with min_key
 * (a few integer operations), float metrics the count with the threshold's bound (one
 * multiply-add, the floor test of oc_fuse_line with min_key as the floor); only when a lane
 * of the warp has a candidate are exact values and keys computed. An entry is
 * ~column << 32 | value: sorting a bucket descending puts the columns ascending, and no
 * entry is 0 (the padding of the sort). */
template <int N>
__device__ __forceinline__ void oc_fuse_pair_line(const oc_gram_tile &t, const oc_fuse_int &ik, bool int_metric,
                                                  const int *counts, int fixed_pop, const int *pops, const float *fpops,
                                                  int col0, int lo, int hi, float bound, uint32_t *count,
                                                  uint64_t *keys, int lane)
{
    /* One loop per kind of test: a test chosen inside the loop is a branch per element. */
    unsigned bits = 0;
    if (int_metric) {
#pragma unroll
        for (int j = 0; j < N; ++j) {
            const int i = lane + 32 * j;
            bits |= (unsigned)(oc_fuse_int_key(ik, counts[i], fixed_pop, pops[i]) >= t.min_key && i >= lo && i < hi)
                    << j;
        }
    } else {
        bits = oc_fuse_ftest_bits<N>(oc_fuse_ftest_make(t.metric, bound, fixed_pop), counts, 1, fpops, lo, hi, lane);
    }
    if (!__any_sync(0xFFFFFFFFu, bits)) return;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        if (!((bits >> j) & 1u)) continue;
        const int i = lane + 32 * j;
        uint32_t sk;
        const uint32_t v = oc_fuse_value(t, counts[i], fixed_pop, pops[i], &sk);
        if (sk >= t.min_key) oc_fuse_push(t, count, keys, (uint64_t)(~(uint32_t)(col0 + i)) << 32 | v);
    }
}

#endif
