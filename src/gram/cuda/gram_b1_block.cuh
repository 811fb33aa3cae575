/*
 * gram_b1_block.cuh - what the two 1-bit tensor-core Gram kernels share: the CTA block
 * (128 x 256 of the output tile, 256 threads), its grouped rasterisation, cp.async, and the
 * block's epilogue (dense stores, or the fused top-k / threshold selection through the stage
 * memory). gram_b1.cu (mma.sync, sm_80+) and gram_b1_sm90a.cu (wgmma, sm_90a) differ only in
 * how they stage K blocks and run the MMAs; each hands its accumulators to b1_epilogue
 * through a visitor that calls f(row, column, count) for every accumulator of the thread
 * (block-local row and column), so both produce the same bytes by construction.
 * Included by those two files only (the anonymous namespace gives each its own copy).
 */
#ifndef OC_GRAM_CUDA_GRAM_B1_BLOCK_CUH
#define OC_GRAM_CUDA_GRAM_B1_BLOCK_CUH

#include "gram/cuda/gram_epilogue.cuh"
#include "gram/cuda/gram_tile.h"

namespace {

constexpr int BM = OC_GRAM_B1_BM; /* CTA rows (128) */
constexpr int BN = OC_GRAM_B1_BN; /* CTA columns (256) */
constexpr int KW = 16;            /* 64-bit words per stage and row: 1024 bits */
constexpr int ROW_BYTES = KW * 8; /* 128 */
constexpr int THREADS = 256;
constexpr int A_BYTES = BM * ROW_BYTES;
constexpr int STAGE_BYTES = (BM + BN) * ROW_BYTES; /* 48 KiB */
constexpr int GROUP_M = 16;                        /* CTA rows per raster group: concurrent CTAs share panels in L2 */

static_assert(KW % OC_ROW_WORD_ALIGN == 0 || OC_ROW_WORD_ALIGN % KW == 0, "K blocks and row padding must nest");
/* Top-k of an integer metric (counts, hamming): its own instance of the kernel, whose
 * exact keys are a few integer operations (gram_epilogue.cuh), not a float metric's test. */
constexpr int SEL_TOPK_INT = 3;

/* The fused epilogue's counts (rows padded against bank conflicts) and floors. */
constexpr int FUSE_LD = BN + 1;
constexpr int FUSE_COUNT_BYTES = BM * FUSE_LD * 4;
static_assert(FUSE_COUNT_BYTES + (BM + BN) * 24 <= 3 * STAGE_BYTES, "the fused epilogue fits the stage memory");
/* Keys per line the block can stage in SMEM bytes of shared memory after the counts, the
 * floors, bounds and popcounts (20 bytes a line) and each line's count (4 bytes): 18 with
 * four stages, 2 with three. */
template <int SMEM> constexpr int FUSE_STAGE_KEPT = (SMEM - FUSE_COUNT_BYTES - (BM + BN) * 24) / ((BM + BN) * 8);

__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

/* Output block `block` of the tile in the grouped rasterisation: GROUP_M block rows advance
 * together across the columns, so the CTAs resident at one time read few distinct panels and
 * mostly hit in L2. False when the block lies wholly below the diagonal (nothing to do). */
__device__ __forceinline__ bool b1_block_coords(const oc_gram_tile &t, int block, int &bm, int &bn)
{
    const int grid_m = (t.rows + BM - 1) / BM, grid_n = (t.cols + BN - 1) / BN;
    const int per_group = GROUP_M * grid_n;
    const int group = block / per_group, first_m = group * GROUP_M;
    const int group_m = min(grid_m - first_m, GROUP_M);
    const int in_group = block % per_group;
    bm = first_m + in_group % group_m;
    bn = in_group / group_m;
    return !(t.upper_only && (bn + 1) * BN <= bm * BM);
}

/* The columns of the block that count for tile row r: inside the tile and, for A·Aᵀ,
 * right of the diagonal: [lo, hi) of the block's BN. */
__device__ __forceinline__ void row_span(const oc_gram_tile &t, int r, int bn, int &lo, int &hi)
{
    lo = t.symmetric ? max(0, (int)(t.i0 + r + 1 - t.j0) - bn * BN) : 0;
    hi = min(BN, t.cols - bn * BN);
}

/* Top-k: a warp per row of the block's counts, and for A·Aᵀ per column, offers its list the
 * keys that beat the floor (oc_fuse_line): into the list's bucket, or when STAGED into the
 * line's slots in shared memory (sn, sk: lines 0..BM-1 the rows, BM.. the columns, kept keys
 * each), which oc_fuse_flush then moves to the buckets. */
template <bool INT, bool STAGED>
__device__ __forceinline__ void fuse_lines(const oc_gram_tile &t, const oc_fuse_int &ik, const int *cs, const int *pr,
                                           const int *pc, const float *qr, const float *qc, const uint64_t *fr,
                                           const uint64_t *fc, const float *br, const float *bc, uint32_t *sn,
                                           uint64_t *sk, int bm, int bn, int last_row, int warp, int lane)
{
#pragma unroll 1
    for (int rl = warp; rl < last_row; rl += THREADS / 32) {
        const int r = bm * BM + rl;
        int lo, hi;
        row_span(t, r, bn, lo, hi);
        auto offer = [&](const auto &sink) {
            oc_fuse_line<INT, BN / 32>(t, ik, cs + rl * FUSE_LD, 1, pr[rl], pc, qc, t.j0 + bn * BN, lo, hi, fr[rl],
                                       br[rl], sink, lane);
        };
        if (STAGED) offer(oc_fuse_staged{sn + rl, sk + (size_t)rl * t.kept});
        else offer(oc_fuse_bucket{t.row_count + r, t.row_keys + (size_t)r * t.bucket});
    }
    if (!t.symmetric) return;
#pragma unroll 1
    for (int cl = warp; cl < BN; cl += THREADS / 32) {
        const int c = bn * BN + cl;
        if (c >= t.cols) break;
        /* Rows that count: above the diagonal of the result. */
        const int hi = min(last_row, (int)(t.j0 + c - t.i0) - bm * BM);
        auto offer = [&](const auto &sink) {
            oc_fuse_line<INT, BM / 32>(t, ik, cs + cl, FUSE_LD, pc[cl], pr, qr, t.i0 + bm * BM, 0, hi, fc[cl], bc[cl],
                                       sink, lane);
        };
        if (STAGED) offer(oc_fuse_staged{sn + BM + cl, sk + (size_t)(BM + cl) * t.kept});
        else offer(oc_fuse_bucket{t.col_count + c, t.col_keys + (size_t)c * t.bucket});
    }
}

/* Offers every line of the block, staged when the kernel's shared memory (SMEM bytes) holds
 * kept keys per line beside the counts. */
template <int SMEM, bool INT>
__device__ __forceinline__ void fuse_block(const oc_gram_tile &t, const oc_fuse_int &ik, unsigned char *smem, int bm,
                                           int bn, int last_row, int warp, int lane)
{
    uint64_t *fr = (uint64_t *)(smem + FUSE_COUNT_BYTES), *fc = fr + BM;
    float *br = (float *)(fc + BN), *bc = br + BM;
    int *pr = (int *)(bc + BN), *pc = pr + BM;
    float *qr = (float *)(pc + BN), *qc = qr + BM;
    uint32_t *sn = (uint32_t *)(qc + BN);
    uint64_t *sk = (uint64_t *)(sn + BM + BN);
    const int *cs = (const int *)smem;
    if (t.kept > FUSE_STAGE_KEPT<SMEM>) {
        fuse_lines<INT, false>(t, ik, cs, pr, pc, qr, qc, fr, fc, br, bc, sn, sk, bm, bn, last_row, warp, lane);
        return;
    }
    fuse_lines<INT, true>(t, ik, cs, pr, pc, qr, qc, fr, fc, br, bc, sn, sk, bm, bn, last_row, warp, lane);
    __syncthreads();
    oc_fuse_flush(t, sn, sk, BM + BN, [&](int l) {
        if (l < BM) return oc_fuse_bucket{t.row_count + bm * BM + l, t.row_keys + (size_t)(bm * BM + l) * t.bucket};
        const int c = bn * BN + l - BM;
        return oc_fuse_bucket{t.col_count + c, t.col_keys + (size_t)c * t.bucket};
    });
}

/* The block's epilogue. `each(f)` calls f(row, column, count) for every accumulator the
 * thread holds (block-local coordinates). Dense: each element converted and stored. Fused
 * selection: the accumulators go to the stage memory (free once every warp has left the K
 * loop: the caller guarantees no copy or MMA still reads it), rows FUSE_LD apart (odd: a
 * warp reading a column hits 32 banks), and compact loops select from there: unrolled over
 * a thread's 128 accumulators the selection's code outgrew the instruction cache (the kernel
 * ran much slower than the dense one with few more instructions: bench/RESULTS.md). */
template <int SEL, int SMEM, class Each>
__device__ __forceinline__ void b1_epilogue(const oc_gram_tile &t, int bm, int bn, unsigned char *smem, Each each)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int rows_left = t.rows - bm * BM;
    if (SEL == OC_TILE_DENSE) {
        each([&](int rl, int cl, int v) { oc_gram_store(t, bm * BM + rl, bn * BN + cl, v); });
        return;
    }
    __syncthreads();
    int *cs = (int *)smem;
    each([&](int rl, int cl, int v) { cs[rl * FUSE_LD + cl] = v; });
    const int last_row = min(BM, rows_left);
    /* The block's floors (top-k), their bounds and the rows' and columns' popcounts; then a
     * warp per row, and for top-k of A·Aᵀ per column, offers the elements that pass (top-k:
     * at most kept of them). An element is first tested in a few operations
     * (gram_epilogue.cuh); only those that pass get their exact score and key. */
    uint64_t *fr = (uint64_t *)(smem + FUSE_COUNT_BYTES), *fc = fr + BM;
    float *br = (float *)(fc + BN), *bc = br + BM;
    int *pr = (int *)(bc + BN), *pc = pr + BM;
    float *qr = (float *)(pc + BN), *qc = qr + BM; /* the popcounts as floats, for the bound test */
    for (int i = tid; i < BM + BN; i += THREADS) {
        const bool row = i < BM;
        const int local = row ? i : i - BM;
        const int tl = row ? bm * BM + local : bn * BN + local;
        const bool inside = row ? tl < t.rows : tl < t.cols;
        if (SEL != OC_TILE_PAIRS) {
            uint64_t key = ~0ull;
            if (inside && (row || t.symmetric)) key = t.floors[(row ? t.i0 : t.j0) + tl];
            (row ? fr[local] : fc[local]) = key;
            (row ? br[local] : bc[local]) = oc_fuse_bound(t.metric, key);
        }
        const int pop = inside && oc_gram_metric_reads_pops(t.metric) ? (row ? t.pop_a : t.pop_b)[tl] : 0;
        (row ? pr[local] : pc[local]) = pop;
        (row ? qr[local] : qc[local]) = (float)pop;
        ((uint32_t *)(qc + BN))[i] = 0; /* the line's staged keys (fuse_block) */
    }
    __syncthreads();
    if (SEL == OC_TILE_PAIRS) {
        /* The threshold's bound: the top-k floor test with min_key as every row's floor. */
        const float bound = oc_fuse_bound(t.metric, (uint64_t)t.min_key << 32);
        const bool int_metric = !oc_gram_metric_is_float(t.metric);
        const oc_fuse_int ik = oc_fuse_int_make(t);
#pragma unroll 1
        for (int rl = warp; rl < last_row; rl += THREADS / 32) {
            const int r = bm * BM + rl;
            int lo, hi;
            row_span(t, r, bn, lo, hi);
            oc_fuse_pair_line<BN / 32>(t, ik, int_metric, cs + rl * FUSE_LD, pr[rl], pc, qc, bn * BN, lo, hi, bound,
                                       t.row_count + r, t.row_keys + (size_t)r * t.bucket, lane);
        }
        return;
    }
    if (SEL == SEL_TOPK_INT) {
        fuse_block<SMEM, true>(t, oc_fuse_int_make(t), smem, bm, bn, last_row, warp, lane);
    } else if (t.seed) {
        /* No list of this tile has a floor yet, so every element needs its exact score, in
         * both passes: compute each once, in place, and let the passes read the score keys
         * (an integer key with the identity transform). Four elements per thread and step,
         * inline: a double division's latency, one element at a time, made a seeding tile's
         * epilogue as long as half its K loop. */
        constexpr int U = 4;
#pragma unroll 1
        for (int e0 = tid; e0 < last_row * BN; e0 += U * THREADS) {
            uint32_t sk[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int e = e0 + u * THREADS, rl = e / BN, cl = e % BN;
                sk[u] = e < last_row * BN && oc_fuse_valid(t, bm * BM + rl, bn * BN + cl)
                            ? oc_fuse_float_key(t, cs[rl * FUSE_LD + cl], pr[rl], pc[cl])
                            : 0u;
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int e = e0 + u * THREADS;
                if (e < last_row * BN) cs[(e / BN) * FUSE_LD + e % BN] = (int)sk[u];
            }
        }
        __syncthreads();
        const oc_fuse_int identity = {0u, 1u, 0xFFFFFFFFu, 0u};
        fuse_block<SMEM, true>(t, identity, smem, bm, bn, last_row, warp, lane);
    } else {
        fuse_block<SMEM, false>(t, oc_fuse_int(), smem, bm, bn, last_row, warp, lane);
    }
}

} // namespace

#endif
