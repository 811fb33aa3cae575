/*
 * gram_select.cu - top-k and threshold selection of a Gram tile on the device.
 *
 * Top-k (one warp per list it updates):
 *   the warp loads its row's list (kept keys, best first) into shared memory; its floor is
 *   the kept-th key. The warp walks the candidates 32 at a time; a lane whose key beats the
 *   floor appends it behind the list (ballot + popc give each lane its slot). When the
 *   appended keys would overflow the warp's SORT_N-key area, the warp sorts list and
 *   candidates together (bitonic, descending), keeps the best kept and raises the floor.
 *   After the row's first tiles the floor is high, nearly nothing is appended and the walk
 *   is one coalesced read of the tile row. At the end the list goes back to global memory.
 *   Rows: a warp per tile row, lanes across columns (coalesced). Columns (A·Aᵀ mirror): a
 *   warp per tile column, lanes down the rows; the 8 warps of a block take 8 adjacent
 *   columns, so each 32-byte sector a warp fetches serves the block's other warps from L1.
 *   The row launch and the column launch are separate kernels on one stream: a diagonal
 *   tile's rows and columns are the same lists, and stream order keeps them apart.
 * Threshold (deterministic, no atomics): a warp per row counts its passing pairs, one block
 *   turns the counts into exclusive offsets and the total, and a warp per row writes its
 *   pairs at its offset in column order: the pairs come out sorted by (row, col).
 * Kernels do no error handling; the entry point checks each launch.
 */
#include <cuda_runtime.h>

extern "C" {
#include "../core/error.h"
}
#include "../exec/select_key.h"
#include "cuda_check.h"
#include "gram_select.cuh"

namespace {

constexpr int WARPS = 8;             /* warps per block */
constexpr int SORT_N = 512;          /* keys per warp in shared memory: the list and candidates */
constexpr int SCAN_THREADS = 1024;

static_assert(2 * OC_CUDA_SELECT_MAX_K <= SORT_N, "room for at least as many candidates as list keys");

/* Sorts buf[0..n) descending; n a power of two; the whole warp calls it. */
__device__ void warp_sort_desc(uint64_t *buf, int n, int lane)
{
    for (int k = 2; k <= n; k <<= 1)
        for (int j = k >> 1; j > 0; j >>= 1) {
            for (int i = lane; i < n; i += 32) {
                int x = i ^ j;
                if (x > i) {
                    uint64_t a = buf[i], b = buf[x];
                    bool desc = (i & k) == 0;
                    if (desc ? a < b : a > b) buf[i] = b, buf[x] = a;
                }
            }
            __syncwarp();
        }
}

/* Sorts the list and the `count` candidates behind it; the best `kept` end up in front. */
__device__ void warp_merge(uint64_t *buf, int kept, int count, int lane)
{
    int total = kept + count, n = 32;
    while (n < total) n <<= 1;
    for (int i = total + lane; i < n; i += 32) buf[i] = 0;
    __syncwarp();
    warp_sort_desc(buf, n, lane);
}

/* The list of `target` fed by the candidates (score at tile[e(t)], index idx(t)) for t in
 * [0, count): the row kernel walks a tile row, the column kernel a tile column. */
template <bool COLUMN>
__global__ void __launch_bounds__(WARPS * 32) topk_kernel(const oc_select_tile_args a)
{
    __shared__ uint64_t smem[WARPS][SORT_N];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int line = blockIdx.x * WARPS + warp; /* the tile row (or column) of this warp */
    if (line >= (COLUMN ? a.cols : a.rows)) return;
    const int64_t target = COLUMN ? a.j0 + line : a.i0 + line;
    /* A·Aᵀ counts element (r, c) only when its global column exceeds its global row. */
    int first = 0, count;
    if (COLUMN) {
        count = a.rows;
        if (a.symmetric) {
            int64_t lim = a.j0 + line - a.i0; /* rows r < lim */
            count = lim < 0 ? 0 : (lim < a.rows ? (int)lim : a.rows);
        }
    } else {
        count = a.cols;
        if (a.symmetric) {
            int64_t f = a.i0 + line + 1 - a.j0;
            first = f < 0 ? 0 : (f > a.cols ? a.cols : (int)f);
        }
    }
    if (first >= count) return;
    uint64_t *buf = smem[warp];
    uint64_t *list = a.topk_lists + target * a.kept;
    const int kept = a.kept, cap = SORT_N - kept;
    for (int i = lane; i < kept; i += 32) buf[i] = list[i];
    __syncwarp();
    uint64_t floor = buf[kept - 1];
    int ncand = 0;
    for (int t0 = first; t0 < count; t0 += 32) {
        const int t = t0 + lane;
        uint64_t key = 0;
        if (t < count) {
            int64_t e = COLUMN ? (int64_t)t * a.ld + line : (int64_t)line * a.ld + t;
            int64_t index = COLUMN ? a.i0 + t : a.j0 + t;
            key = oc_key_make(oc_key_score(a.kind, a.tile, e), index);
        }
        unsigned pass = __ballot_sync(0xFFFFFFFFu, key > floor);
        if (!pass) continue;
        if (ncand + __popc(pass) > cap) {
            warp_merge(buf, kept, ncand, lane);
            ncand = 0;
            floor = buf[kept - 1];
            pass = __ballot_sync(0xFFFFFFFFu, key > floor);
        }
        if (key > floor) buf[kept + ncand + __popc(pass & ((1u << lane) - 1))] = key;
        ncand += __popc(pass);
        __syncwarp();
    }
    if (ncand) warp_merge(buf, kept, ncand, lane);
    for (int i = lane; i < kept; i += 32) list[i] = buf[i];
}

/* Threshold: the first column of tile row `row` that counts (A·Aᵀ: global column > row). */
__device__ __forceinline__ int pairs_first(const oc_select_tile_args &a, int row)
{
    if (!a.symmetric) return 0;
    int64_t f = a.i0 + row + 1 - a.j0;
    return f < 0 ? 0 : (f > a.cols ? a.cols : (int)f);
}

template <bool WRITE>
__global__ void __launch_bounds__(WARPS * 32) pairs_kernel(const oc_select_tile_args a)
{
    const int lane = threadIdx.x & 31, row = blockIdx.x * WARPS + (threadIdx.x >> 5);
    if (row >= a.rows) return;
    uint32_t at = WRITE ? a.row_offsets[row] : 0;
    const size_t elem = a.kind == OC_KEY_F32 || a.kind == OC_KEY_I32 || a.kind == OC_KEY_I32_REV ? 4 : 2;
    for (int c0 = pairs_first(a, row); c0 < a.cols; c0 += 32) {
        const int c = c0 + lane;
        const int64_t e = (int64_t)row * a.ld + c;
        const bool ok = c < a.cols && oc_key_score(a.kind, a.tile, e) >= a.min_key;
        const unsigned pass = __ballot_sync(0xFFFFFFFFu, ok);
        if (WRITE && ok) {
            uint32_t slot = at + __popc(pass & ((1u << lane) - 1));
            a.pair_cols[slot] = (uint32_t)c;
            if (elem == 4) ((uint32_t *)a.pair_values)[slot] = ((const uint32_t *)a.tile)[e];
            else ((uint16_t *)a.pair_values)[slot] = ((const uint16_t *)a.tile)[e];
        }
        at += __popc(pass);
    }
    if (!WRITE && lane == 0) a.row_counts[row] = at;
}

/* Exclusive prefix sums of the row counts, and the total in row_counts[rows]: one block. */
__global__ void __launch_bounds__(SCAN_THREADS) pairs_scan_kernel(const oc_select_tile_args a)
{
    __shared__ uint32_t part[SCAN_THREADS];
    const int t = threadIdx.x, per = (a.rows + SCAN_THREADS - 1) / SCAN_THREADS;
    const int r0 = t * per, r1 = r0 + per < a.rows ? r0 + per : a.rows;
    uint32_t sum = 0;
    for (int r = r0; r < r1; ++r) sum += a.row_counts[r];
    part[t] = sum;
    __syncthreads();
    for (int d = 1; d < SCAN_THREADS; d <<= 1) { /* Hillis-Steele inclusive scan */
        uint32_t v = t >= d ? part[t - d] : 0;
        __syncthreads();
        part[t] += v;
        __syncthreads();
    }
    uint32_t run = part[t] - sum;
    for (int r = r0; r < r1; ++r) {
        a.row_offsets[r] = run;
        run += a.row_counts[r];
    }
    if (t == SCAN_THREADS - 1) a.row_counts[a.rows] = part[t];
}

} // namespace

extern "C" oc_status oc_cuda_select_tile(oc_context *ctx, oc_cuda_device *dev, const oc_select_tile_args *args,
                                         cudaStream_t stream)
{
    (void)dev;
    if (args->rows <= 0 || args->cols <= 0) return OC_OK;
    const unsigned row_blocks = (unsigned)((args->rows + WARPS - 1) / WARPS);
    if (args->topk_lists) {
        if (args->kept <= 0) return OC_OK;
        if (args->kept > OC_CUDA_SELECT_MAX_K)
            return oc_fail(ctx, OC_ERR_INTERNAL, "device top-k with k = %d > %d", args->kept, OC_CUDA_SELECT_MAX_K);
        topk_kernel<false><<<row_blocks, WARPS * 32, 0, stream>>>(*args);
        CUDA_CHECK_LAUNCH(ctx, "topk_kernel<rows>");
        if (args->symmetric) {
            topk_kernel<true><<<(unsigned)((args->cols + WARPS - 1) / WARPS), WARPS * 32, 0, stream>>>(*args);
            CUDA_CHECK_LAUNCH(ctx, "topk_kernel<columns>");
        }
        return OC_OK;
    }
    pairs_kernel<false><<<row_blocks, WARPS * 32, 0, stream>>>(*args);
    CUDA_CHECK_LAUNCH(ctx, "pairs_kernel<count>");
    pairs_scan_kernel<<<1, SCAN_THREADS, 0, stream>>>(*args);
    CUDA_CHECK_LAUNCH(ctx, "pairs_scan_kernel");
    pairs_kernel<true><<<row_blocks, WARPS * 32, 0, stream>>>(*args);
    CUDA_CHECK_LAUNCH(ctx, "pairs_kernel<write>");
    return OC_OK;
}
