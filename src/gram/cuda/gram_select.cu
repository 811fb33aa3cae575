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
 *   warp per tile column; the block stages 256 rows of its 8 adjacent columns in shared
 *   memory (one full 32-byte sector per row) and each warp walks its column there.
 *   The row launch and the column launch are separate kernels on one stream: a diagonal
 *   tile's rows and columns are the same lists, and stream order keeps them apart.
 * Threshold (deterministic, no atomics): a warp per row counts its passing pairs, one block
 *   turns the counts into exclusive offsets and the total, and a warp per row writes its
 *   pairs at its offset in column order: the pairs come out sorted by (row, col).
 * Fused tiles (the Gram kernel filled bounded buckets instead of writing the tile): top-k
 *   merges each list's bucket(s) with the same warp_list code, a warp per list; threshold
 *   sorts each row's bucket by column and writes it at the row's offset. Only when a bucket
 *   overflowed (*over) did a dense pass write the tile; then the dense kernels above run
 *   and the bucket kernels return at once, so either path alone selects each tile.
 * Kernels do no error handling; the entry point checks each launch.
 */
#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
}
#include "gram/select/select_key.h"
#include "engine/cuda/cuda_check.h"
#include "gram/cuda/gram_select.cuh"

namespace {

constexpr int WARPS = 8;    /* warps per block */
constexpr int SORT_N = 512; /* keys per warp in shared memory: the list and candidates */
constexpr int SCAN_THREADS = 1024;
constexpr int UNROLL = 4; /* loads in flight per lane in the row walks */

static_assert(2 * OC_CUDA_SELECT_MAX_K <= SORT_N, "room for at least as many candidates as list keys");
static_assert(OC_CUDA_SELECT_MAX_BUCKET <= SORT_N, "a threshold bucket sorts in one warp's keys");

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

/* The candidate loop of one list, shared by the row and the column kernels: the warp
 * offers 32 keys at a time (0 = no candidate) and keeps the list in buf[0..kept). */
struct warp_list {
    uint64_t *buf;
    int kept, cap, ncand, lane;
    uint64_t floor;

    __device__ void begin(const uint64_t *list, uint64_t *shared, int k, int l)
    {
        buf = shared, kept = k, cap = SORT_N - k, ncand = 0, lane = l;
        for (int i = lane; i < kept; i += 32) buf[i] = list[i];
        __syncwarp();
        floor = buf[kept - 1];
    }
    /* The whole warp calls offer with one key per lane. */
    __device__ void offer(uint64_t key)
    {
        unsigned pass = __ballot_sync(0xFFFFFFFFu, key > floor);
        if (!pass) return;
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
    /* Writes the list back and, when kept, its floor (the kept-th key). */
    __device__ void end(uint64_t *list, uint64_t *floor_out)
    {
        if (ncand) warp_merge(buf, kept, ncand, lane);
        for (int i = lane; i < kept; i += 32) list[i] = buf[i];
        if (floor_out && lane == 0) *floor_out = buf[kept - 1];
    }
};

/* Rows: a warp per tile row, lanes across its columns (coalesced reads). */
__device__ void topk_row(const oc_select_tile_args &a, int row, uint64_t *smem, int lane)
{
    /* A·Aᵀ counts element (r, c) only when its global column exceeds its global row. */
    int first = 0;
    if (a.symmetric) {
        int64_t f = a.i0 + row + 1 - a.j0;
        first = f < 0 ? 0 : (f > a.cols ? a.cols : (int)f);
    }
    if (first >= a.cols) return;
    uint64_t *list = a.topk_lists + (a.i0 + row) * a.kept;
    warp_list wl;
    wl.begin(list, smem, a.kept, lane);
    /* UNROLL loads in flight per lane before the ballots that need them: one load at a time
     * leaves the warp waiting a memory latency per 32 elements. */
    for (int c0 = first; c0 < a.cols; c0 += 32 * UNROLL) {
        uint64_t key[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const int c = c0 + u * 32 + lane;
            key[u] = c < a.cols ? oc_key_make(oc_key_score(a.kind, a.tile, (int64_t)row * a.ld + c), a.j0 + c) : 0;
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) wl.offer(key[u]);
    }
    wl.end(list, a.floors ? a.floors + a.i0 + row : NULL);
}

/* The kernels walk their units (rows, column groups, lists) grid-stride: on a fused tile
 * they are launched with a small grid, since they return at once unless it overflowed. */
__global__ void __launch_bounds__(WARPS * 32) topk_rows_kernel(const oc_select_tile_args a)
{
    __shared__ uint64_t smem[WARPS][SORT_N];
    if (a.fused && *a.over == 0) return; /* the buckets hold this tile */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int row = blockIdx.x * WARPS + warp; row < a.rows; row += gridDim.x * WARPS)
        topk_row(a, row, smem[warp], lane);
}

constexpr int CHUNK = WARPS * 32; /* tile rows staged per step of the column kernel */

/* Columns (the mirror of A·Aᵀ): a warp per tile column. A column read directly would touch
 * one 32-byte sector per element; instead the block stages CHUNK rows of its WARPS adjacent
 * columns in shared memory (WARPS 4-byte columns are one sector per row: nothing fetched is
 * wasted), and each warp walks its column there. */
struct cols_shared {
    uint64_t lists[WARPS][SORT_N];
    uint32_t stage[CHUNK][WARPS + 1]; /* +1: lanes reading one column hit distinct banks */
};

/* The WARPS columns from c0; the whole block calls it (it synchronises). */
__device__ void topk_col_group(const oc_select_tile_args &a, int c0, cols_shared &sh)
{
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, col = c0 + warp;
    uint64_t(*smem)[SORT_N] = sh.lists;
    uint32_t(*stage)[WARPS + 1] = sh.stage;
    const bool two = !(a.kind == OC_KEY_F32 || a.kind == OC_KEY_I32 || a.kind == OC_KEY_I32_REV);
    /* Rows that count for a column: r < j0 + col - i0 for A·Aᵀ; the block's last column has
     * the most. */
    auto limit = [&](int c) -> int {
        if (c >= a.cols) return 0;
        if (!a.symmetric) return a.rows;
        int64_t l = a.j0 + c - a.i0;
        return l < 0 ? 0 : (l < a.rows ? (int)l : a.rows);
    };
    const int lim = limit(col);
    const int block_lim = limit(c0 + WARPS - 1 < a.cols ? c0 + WARPS - 1 : a.cols - 1);
    uint64_t *list = a.topk_lists + (a.j0 + col) * a.kept;
    warp_list wl;
    if (lim > 0) wl.begin(list, smem[warp], a.kept, lane);
    for (int t0 = 0; t0 < block_lim; t0 += CHUNK) {
        __syncthreads(); /* the previous chunk has been read */
        const int r = t0 + (int)threadIdx.x;
        if (r < block_lim) {
            const int64_t e = (int64_t)r * a.ld + c0;
            for (int w = 0; w < WARPS; ++w)
                stage[threadIdx.x][w] = c0 + w >= a.cols ? 0u
                                        : two            ? (uint32_t)((const uint16_t *)a.tile)[e + w]
                                                         : ((const uint32_t *)a.tile)[e + w];
        }
        __syncthreads();
        if (t0 >= lim) continue;
        for (int tt = 0; tt < CHUNK && t0 + tt < lim; tt += 32) {
            const int t = t0 + tt + lane;
            uint64_t key = 0;
            if (t < lim) {
                uint32_t raw = stage[tt + lane][warp];
                uint16_t half = (uint16_t)raw;
                key = oc_key_make(oc_key_score(a.kind, two ? (const void *)&half : (const void *)&raw, 0), a.i0 + t);
            }
            wl.offer(key);
        }
    }
    if (lim > 0) wl.end(list, a.floors ? a.floors + a.j0 + col : NULL);
}

__global__ void __launch_bounds__(WARPS * 32) topk_cols_kernel(const oc_select_tile_args a)
{
    __shared__ cols_shared sh;
    if (a.fused && *a.over == 0) return;
    for (int c0 = blockIdx.x * WARPS; c0 < a.cols; c0 += gridDim.x * WARPS) {
        topk_col_group(a, c0, sh);
        __syncthreads(); /* the lists and the stage are free for the next group */
    }
}

/* List w of a fused tile's merge (topk_merge_kernel). */
__device__ void merge_list(const oc_select_tile_args &a, int w, bool diag, uint64_t *smem, int lane)
{
    const uint32_t cap = (uint32_t)a.bucket;
    const uint64_t *src[2] = {NULL, NULL};
    uint32_t cnt[2] = {0, 0};
    int64_t list;
    if (w < a.rows) {
        list = a.i0 + w;
        src[0] = a.row_keys + (size_t)w * cap, cnt[0] = min(a.row_counts[w], cap);
        if (diag) src[1] = a.col_keys + (size_t)w * cap, cnt[1] = min(a.col_counts[w], cap);
    } else {
        const int c = w - a.rows;
        list = a.j0 + c;
        src[0] = a.col_keys + (size_t)c * cap, cnt[0] = min(a.col_counts[c], cap);
    }
    if (cnt[0] + cnt[1] == 0) return;
    warp_list wl;
    wl.begin(a.topk_lists + list * a.kept, smem, a.kept, lane);
    for (int s = 0; s < 2; ++s)
        for (uint32_t i = 0; i < cnt[s]; i += 32) wl.offer(i + lane < cnt[s] ? src[s][i + lane] : 0);
    wl.end(a.topk_lists + list * a.kept, a.floors + list);
}

/* A fused tile's buckets into the lists: a warp per list. A·Aᵀ: the row lists of panel I take
 * the row buckets, those of panel J the column buckets; on a diagonal tile they are the same
 * lists and one warp takes both. */
__global__ void __launch_bounds__(WARPS * 32) topk_merge_kernel(const oc_select_tile_args a)
{
    __shared__ uint64_t smem[WARPS][SORT_N];
    if (*a.over) { /* the dense kernels selected this tile */
        if (a.overflows && blockIdx.x == 0 && threadIdx.x == 0)
            atomicAdd(a.overflows, a.may_overflow ? 1u : OC_CUDA_SELECT_UNEXPECTED);
        return;
    }
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const bool diag = a.symmetric && a.i0 == a.j0;
    const int lists = a.rows + (a.symmetric && !diag ? a.cols : 0);
    for (int w = blockIdx.x * WARPS + warp; w < lists; w += gridDim.x * WARPS) merge_list(a, w, diag, smem[warp], lane);
}

/* Threshold: the first column of tile row `row` that counts (A·Aᵀ: global column > row). */
__device__ __forceinline__ int pairs_first(const oc_select_tile_args &a, int row)
{
    if (!a.symmetric) return 0;
    int64_t f = a.i0 + row + 1 - a.j0;
    return f < 0 ? 0 : (f > a.cols ? a.cols : (int)f);
}

template <bool WRITE> __device__ void pairs_row(const oc_select_tile_args &a, int row, int lane)
{
    uint32_t at = WRITE ? a.row_offsets[row] : 0;
    const size_t elem = a.kind == OC_KEY_F32 || a.kind == OC_KEY_I32 || a.kind == OC_KEY_I32_REV ? 4 : 2;
    for (int c0 = pairs_first(a, row); c0 < a.cols; c0 += 32 * UNROLL) {
        bool ok[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) { /* the loads first, as in topk_rows_kernel */
            const int c = c0 + u * 32 + lane;
            ok[u] = c < a.cols && oc_key_score(a.kind, a.tile, (int64_t)row * a.ld + c) >= a.min_key;
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) { /* then the pairs in column order */
            const int c = c0 + u * 32 + lane;
            const unsigned pass = __ballot_sync(0xFFFFFFFFu, ok[u]);
            if (WRITE && ok[u]) {
                const int64_t e = (int64_t)row * a.ld + c;
                uint32_t slot = at + __popc(pass & ((1u << lane) - 1));
                a.pair_cols[slot] = (uint32_t)c;
                if (elem == 4) ((uint32_t *)a.pair_values)[slot] = ((const uint32_t *)a.tile)[e];
                else ((uint16_t *)a.pair_values)[slot] = ((const uint16_t *)a.tile)[e];
            }
            at += __popc(pass);
        }
    }
    if (!WRITE && lane == 0) a.row_counts[row] = at;
}

template <bool WRITE> __global__ void __launch_bounds__(WARPS * 32) pairs_kernel(const oc_select_tile_args a)
{
    if (a.fused && *a.over == 0) return;
    const int lane = threadIdx.x & 31;
    for (int row = blockIdx.x * WARPS + (threadIdx.x >> 5); row < a.rows; row += gridDim.x * WARPS)
        pairs_row<WRITE>(a, row, lane);
}

/* A fused tile's pairs: a warp per row sorts its bucket (entries ~column << 32 | value, so
 * descending is by column ascending) and writes it at the row's offset. */
__device__ void pairs_bucket_row(const oc_select_tile_args &a, int row, uint64_t *buf, int lane)
{
    const int n = (int)a.row_counts[row]; /* <= bucket: nothing overflowed */
    if (n == 0) return;
    const uint64_t *src = a.row_keys + (size_t)row * a.bucket;
    for (int i = lane; i < n; i += 32) buf[i] = src[i];
    warp_merge(buf, 0, n, lane);
    const uint32_t at = a.row_offsets[row];
    const bool four = a.kind == OC_KEY_F32 || a.kind == OC_KEY_I32 || a.kind == OC_KEY_I32_REV;
    for (int i = lane; i < n; i += 32) {
        const uint64_t e = buf[i];
        a.pair_cols[at + i] = ~(uint32_t)(e >> 32);
        if (four) ((uint32_t *)a.pair_values)[at + i] = (uint32_t)e;
        else ((uint16_t *)a.pair_values)[at + i] = (uint16_t)e;
    }
}

__global__ void __launch_bounds__(WARPS * 32) pairs_bucket_kernel(const oc_select_tile_args a)
{
    __shared__ uint64_t smem[WARPS][SORT_N];
    if (*a.over) return;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int row = blockIdx.x * WARPS + warp; row < a.rows; row += gridDim.x * WARPS)
        pairs_bucket_row(a, row, smem[warp], lane);
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

/* Blocks of WARPS warps for `units` warp units, at most `cap` (0: no cap). */
unsigned grid(int units, int cap)
{
    int blocks = (units + WARPS - 1) / WARPS;
    return (unsigned)(cap > 0 && blocks > cap ? cap : blocks);
}

/* Every launch goes through the launch planner (device.c), then is checked. */
oc_status launch(oc_context *ctx, oc_cuda_device *dev, void (*kernel)(oc_select_tile_args), const char *name,
                 unsigned blocks, int threads, const oc_select_tile_args *args, cudaStream_t stream)
{
    OC_CHECK(ctx, oc_cuda_launch_prepare(ctx, dev, (const void *)kernel, name, threads, 0));
    kernel<<<blocks, threads, 0, stream>>>(*args);
    CUDA_CHECK_LAUNCH(ctx, "a selection kernel");
    return OC_OK;
}

} // namespace

extern "C" oc_status oc_cuda_select_tile(oc_context *ctx, oc_cuda_device *dev, const oc_select_tile_args *args,
                                         cudaStream_t stream)
{
    if (args->rows <= 0 || args->cols <= 0) return OC_OK;
    /* On a fused tile the dense kernels return at once unless it overflowed (then they walk
     * the tile grid-stride), and the bucket kernels have little to do: small grids. */
    const int fused = args->fused;
    const unsigned row_blocks = grid(args->rows, fused ? dev->sm_count : 0);
    const unsigned bucket_blocks = grid(args->rows, 4 * dev->sm_count);
    if (args->topk_lists) {
        if (args->kept <= 0) return OC_OK;
        if (args->kept > OC_CUDA_SELECT_MAX_K)
            return oc_fail(ctx, OC_ERR_INTERNAL, "device top-k with k = %d > %d", args->kept, OC_CUDA_SELECT_MAX_K);
        /* A fused tile whose buckets cannot overflow needs no dense kernels (launched, they
         * would return at once). */
        const int dense = !fused || args->may_overflow;
        if (dense)
            OC_CHECK(ctx, launch(ctx, dev, topk_rows_kernel, "topk_rows_kernel", row_blocks, WARPS * 32, args, stream));
        if (dense && args->symmetric) {
            OC_CHECK(ctx, launch(ctx, dev, topk_cols_kernel, "topk_cols_kernel",
                                 grid(args->cols, fused ? dev->sm_count : 0), WARPS * 32, args, stream));
        }
        if (args->fused) {
            const int lists = args->rows + (args->symmetric && args->i0 != args->j0 ? args->cols : 0);
            OC_CHECK(ctx, launch(ctx, dev, topk_merge_kernel, "topk_merge_kernel", grid(lists, 4 * dev->sm_count),
                                 WARPS * 32, args, stream));
        }
        return OC_OK;
    }
    if (args->fused && (args->bucket < 1 || args->bucket > SORT_N))
        return oc_fail(ctx, OC_ERR_INTERNAL, "fused threshold bucket of %d (1 to %d)", args->bucket, SORT_N);
    OC_CHECK(ctx, launch(ctx, dev, pairs_kernel<false>, "pairs_kernel<count>", row_blocks, WARPS * 32, args, stream));
    OC_CHECK(ctx, launch(ctx, dev, pairs_scan_kernel, "pairs_scan_kernel", 1, SCAN_THREADS, args, stream));
    OC_CHECK(ctx, launch(ctx, dev, pairs_kernel<true>, "pairs_kernel<write>", row_blocks, WARPS * 32, args, stream));
    if (args->fused) {
        OC_CHECK(ctx,
                 launch(ctx, dev, pairs_bucket_kernel, "pairs_bucket_kernel", bucket_blocks, WARPS * 32, args, stream));
    }
    return OC_OK;
}
