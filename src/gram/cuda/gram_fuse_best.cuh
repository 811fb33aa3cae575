/*
 * gram_fuse_best.cuh - the fused top-k's warp selection: a warp's keys for one list (a row or
 * a column of a CTA's block), cut to the list's best kept, and where they go (the list's
 * bucket in global memory, or the line's slots in shared memory that the block flushes to the
 * buckets at the end). Included by gram_epilogue.cuh, whose line functions call it.
 */
#ifndef OC_GRAM_CUDA_GRAM_FUSE_BEST_CUH
#define OC_GRAM_CUDA_GRAM_FUSE_BEST_CUH

#include <stdint.h>

#include "gram/cuda/gram_tile.h"

/* The sum of v over the warp's lanes. */
__device__ __forceinline__ int oc_warp_sum(int v)
{
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, d);
    return v;
}

/* Top-k, more than kept of a warp's keys (0 = none, all distinct) offered to one list: cuts
 * them towards the kept best and returns how many remain. The kept-th largest of the lanes'
 * maxima, found by a bitonic sort of the 32 maxima across the warp, bounds the kept best from
 * below (kept lanes hold a key at least that large), so every key below it goes; when fewer
 * than kept more remain, the smallest go one warp-wide minimum at a time, leaving exactly the
 * kept best. A line whose every element passes (a seeding tile: no floor yet) thus costs a
 * sort of 32 keys and a few rounds, where kept rounds of a warp-wide maximum over all its
 * keys made the seeding tiles' epilogue as long as their K loop (bench/RESULTS.md). */
template <int N> __device__ __forceinline__ int oc_fuse_trim(int kept, uint64_t (&k)[N], int total, int lane)
{
    if (kept > 32) return total;
    uint64_t v = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) v = k[j] > v ? k[j] : v;
#pragma unroll
    for (int size = 2; size <= 32; size <<= 1)
#pragma unroll
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            const uint64_t o = __shfl_xor_sync(0xFFFFFFFFu, v, stride);
            const bool keep_max = ((lane & stride) == 0) == ((lane & size) == 0); /* descending at the end */
            v = keep_max == (o > v) ? o : v;
        }
    const uint64_t least = __shfl_sync(0xFFFFFFFFu, v, kept - 1);
    if (least == 0) return total; /* fewer than kept lanes hold keys */
    int mine = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) {
        k[j] = k[j] >= least ? k[j] : 0;
        mine += k[j] != 0;
    }
    total = oc_warp_sum(mine);
    if (total - kept >= kept) return total; /* many left: the caller's rounds of maxima are cheaper */
    for (; total > kept; --total) {
        uint64_t lo = ~0ull;
#pragma unroll
        for (int j = 0; j < N; ++j) lo = k[j] != 0 && k[j] < lo ? k[j] : lo;
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) {
            const uint64_t o = __shfl_xor_sync(0xFFFFFFFFu, lo, d);
            lo = o < lo ? o : lo;
        }
#pragma unroll
        for (int j = 0; j < N; ++j) k[j] = k[j] == lo ? 0 : k[j];
    }
    return total;
}

/* Where a line's keys go. The list's bucket in global memory: a slot range claimed with one
 * atomic, whose result the warp waits for. */
struct oc_fuse_bucket {
    uint32_t *count;
    uint64_t *keys;
    /* The whole warp: the first of n slots (lane 0 claims them for all). */
    __device__ __forceinline__ uint32_t claim(const oc_gram_tile &t, int n, int lane) const
    {
        uint32_t base = 0;
        if (lane == 0) base = atomicAdd(count, (uint32_t)n);
        base = __shfl_sync(0xFFFFFFFFu, base, 0);
        if (base + (uint32_t)n > (uint32_t)t.bucket && lane == 0) *t.over = 1u;
        return base;
    }
    __device__ __forceinline__ void put(const oc_gram_tile &t, uint32_t at, uint64_t key) const
    {
        if (at < (uint32_t)t.bucket) keys[at] = key;
    }
};

/* Or the line's slots in the block's shared memory (at most kept keys and their number),
 * which the block moves to the buckets at the end, every line's atomic in flight at once
 * (oc_fuse_flush): a warp that waited for its atomic on each of its 48 lines spent the
 * seeding tiles' epilogue mostly waiting. */
struct oc_fuse_staged {
    uint32_t *n;
    uint64_t *keys;
    __device__ __forceinline__ uint32_t claim(const oc_gram_tile &, int count, int lane) const
    {
        if (lane == 0) *n = (uint32_t)count;
        return 0;
    }
    __device__ __forceinline__ void put(const oc_gram_tile &, uint32_t at, uint64_t key) const { keys[at] = key; }
};

/* Top-k: a warp offers one list the keys its lanes hold (N each, 0 = none,
 * every one already known to beat the list's floor). At most kept of them can be in the
 * list's top kept, so when more pass only the warp's best kept are appended: a block of
 * 128 x 256 elements adds at most kept keys to each row's and column's bucket, whatever the
 * floors. The whole warp calls it. */
template <int N, class Sink>
__device__ __forceinline__ void oc_fuse_push_best(const oc_gram_tile &t, uint64_t (&k)[N], const Sink &sink, int lane)
{
    int mine = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) mine += k[j] != 0;
    if (!__any_sync(0xFFFFFFFFu, mine)) return; /* most lines, once the floors prune: one vote */
    int total = oc_warp_sum(mine);
    if (total > t.kept) {
        total = oc_fuse_trim<N>(t.kept, k, total, lane);
        mine = 0;
#pragma unroll
        for (int j = 0; j < N; ++j) mine += k[j] != 0;
    }
    const int n = total < t.kept ? total : t.kept;
    const uint32_t base = sink.claim(t, n, lane);
    if (total <= t.kept) {
        int before = mine; /* exclusive prefix of the lanes' counts */
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            int v = __shfl_up_sync(0xFFFFFFFFu, before, d);
            if (lane >= d) before += v;
        }
        uint32_t at = base + (uint32_t)(before - mine);
#pragma unroll
        for (int j = 0; j < N; ++j)
            if (k[j]) sink.put(t, at++, k[j]);
        return;
    }
    /* Still more than kept: kept rounds of a warp-wide maximum (keys are distinct). */
    for (int i = 0; i < n; ++i) {
        uint64_t best = 0;
#pragma unroll
        for (int j = 0; j < N; ++j) best = k[j] > best ? k[j] : best;
        uint64_t top = best;
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) {
            uint64_t o = __shfl_xor_sync(0xFFFFFFFFu, top, d);
            top = o > top ? o : top;
        }
        if (best == top) {
#pragma unroll
            for (int j = 0; j < N; ++j)
                if (k[j] == top) k[j] = 0;
            sink.put(t, base + (uint32_t)i, top);
        }
    }
}

/* The block's staged lines (oc_fuse_staged: `lines` of them, n[l] keys at keys + l * kept)
 * into their buckets, a thread per line; bucket(l) names line l's bucket. The whole block
 * calls it after a barrier. */
template <class Bucket>
__device__ __forceinline__ void oc_fuse_flush(const oc_gram_tile &t, const uint32_t *n, const uint64_t *keys, int lines,
                                              Bucket bucket)
{
    for (int l = threadIdx.x; l < lines; l += blockDim.x) {
        const uint32_t c = n[l];
        if (!c) continue;
        const oc_fuse_bucket b = bucket(l);
        const uint32_t base = atomicAdd(b.count, c);
        if (base + c > (uint32_t)t.bucket) *t.over = 1u;
        for (uint32_t i = 0; i < c; ++i) b.put(t, base + i, keys[(size_t)l * t.kept + i]);
    }
}

#endif
