/*
 * gram_b1.cu - the binary Gram tile on 1-bit tensor cores:
 * mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc (sm_80 and later).
 *
 * Structure (one CTA = 8 warps = one 128 x 256 block of the output tile):
 *
 *   global --cp.async 16 B--> shared, STAGES-deep ring of K blocks of 1024 bits
 *   shared --ldmatrix.x4-----> registers (A: 4 m16 fragments, B: 8 n8 fragments per warp)
 *   registers --mma b1 AND+POPC--> int32 accumulators, 64 x 64 per warp (128 per thread)
 *   accumulators --metric (src/core/metric.h)--> the converted tile in global memory, or
 *   accumulators --metric, key, floor--> top-k / threshold buckets (fused selection,
 *                gram_tile.h): the tile itself is never written
 *
 * "row.col" wants A as rows with K contiguous and B as columns with K contiguous: the rows
 * of A and the rows of B in our packed layout, unchanged. A fragment register holds 32
 * consecutive K bits of one row; which bit is which does not matter for AND+POPC as long
 * as A and B agree, and both are loaded the same way from the same layout.
 *
 * Shared layout: each row of a stage is 128 bytes (eight 16-byte chunks). ldmatrix reads
 * eight consecutive rows of one chunk; rows 128 bytes apart would put all eight in the same
 * banks (8-way conflict), so chunk c of row r is stored at chunk c ^ (r & 7): the eight
 * rows of a read then cover all 32 banks once. cp.async writes the same permutation.
 *
 * Rows past the tile's edge, and the second half of the last K block when the row holds an
 * odd number of 512-bit blocks, are zero-filled by cp.async (source size 0): they add
 * nothing. A 1024-bit K block halves the barriers per MMA against 512 bits, which ran slower
 * (bench/RESULTS.md). Stages: 4 (192 KiB) where the device allows
 * (sm_90), 3 (144 KiB) on sm_80. The kernel does no error handling; the entry point checks
 * the configuration with the launch planner and the launch itself.
 */
#include <cuda_runtime.h>

/* The core headers have no C++ guards: give their declarations C linkage here, before
 * the headers below include them again (their include guards keep this first copy). */
extern "C" {
#include "core/error.h"
#include "core/gpu_arch.h"
#include "matrix/matrix.h"
}
#include "engine/cuda/cuda_check.h"
#include "gram/cuda/gram_b1.cuh"
#include "gram/cuda/gram_b1_block.cuh"

namespace {

constexpr int CHUNKS = KW / 2;                  /* 16-byte chunks per row and stage */
constexpr int ROWS_PER_PASS = THREADS / CHUNKS; /* rows one pass of cp.async covers: 32 */

__device__ __forceinline__ uint32_t swizzle(int row, int chunk)
{
    return (uint32_t)(row * ROW_BYTES + ((chunk ^ (row & 7)) << 4));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void mma_b1(int (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Output block `block` of the tile (in the order of the grouped rasterisation). */
template <int STAGES, int SEL>
__device__ __forceinline__ void gram_b1_block(const oc_gram_tile &t, int block, unsigned char *smem)
{
    int bm, bn;
    if (!b1_block_coords(t, block, bm, bn)) return;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp & 1, wn = warp >> 1; /* 2 x 4 warps of 64 x 64 */
    const uint32_t s_base = (uint32_t)__cvta_generic_to_shared(smem);
    const int kblocks = (int)((t.words + KW - 1) / KW);
    const int rows_left = t.rows - bm * BM, cols_left = t.cols - bn * BN;

    /* Each thread copies chunk `ch` of rows row0 + 32 i in every stage: 4 rows of A, 8 of
     * B. Since 32 is a multiple of 8, the swizzle is the same for all of them. */
    const int ch = tid % CHUNKS, row0 = tid / CHUNKS;
    const uint64_t *src_a = t.a + ((size_t)bm * BM + row0) * (size_t)t.words + ch * 2;
    const uint64_t *src_b = t.b + ((size_t)bn * BN + row0) * (size_t)t.words + ch * 2;
    const uint32_t dst0 = swizzle(row0, ch);
    const size_t pass_stride = (size_t)ROWS_PER_PASS * (size_t)t.words;
    auto load_stage = [&](int stage, int kb) {
        const uint32_t s = s_base + stage * STAGE_BYTES + dst0;
        const int64_t k = (int64_t)kb * KW;
        const bool k_ok = k + ch * 2 < t.words; /* the odd 512-bit half past the row's end */
#pragma unroll
        for (int i = 0; i < BM / ROWS_PER_PASS; ++i) {
            const bool ok = k_ok && row0 + i * ROWS_PER_PASS < rows_left;
            cp_async16(s + i * ROWS_PER_PASS * ROW_BYTES, ok ? src_a + i * pass_stride + k : t.a, ok);
        }
#pragma unroll
        for (int i = 0; i < BN / ROWS_PER_PASS; ++i) {
            const bool ok = k_ok && row0 + i * ROWS_PER_PASS < cols_left;
            cp_async16(s + A_BYTES + i * ROWS_PER_PASS * ROW_BYTES, ok ? src_b + i * pass_stride + k : t.b, ok);
        }
    };

    /* ldmatrix.x4: lane l addresses row (l & 7) of matrix l >> 3. For A, matrices are
     * (rows 0-7, chunk lo), (rows 8-15, lo), (rows 0-7, hi), (rows 8-15, hi) = a0..a3 of
     * m16n8k256; for a pair of B n8 tiles, (n 0-7, lo), (n 0-7, hi), (n 8-15, lo),
     * (n 8-15, hi) = b0, b1 of each. lo/hi are the two 128-bit halves of a 256-bit K step. */
    const int q = lane >> 3, r8 = lane & 7;
    const int a_row = wm * 64 + (q & 1) * 8 + r8, a_hi = q >> 1;
    const int b_row = wn * 64 + (q >> 1) * 8 + r8, b_hi = q & 1;

    int acc[4][8][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0;

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < kblocks) load_stage(s, s);
        cp_async_commit();
    }

    for (int kb = 0; kb < kblocks; ++kb) {
        /* Stage kb has landed once at most STAGES-2 younger groups are pending; the barrier
         * also tells every warp that the stage read in iteration kb-1 is free to refill. */
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int pf = kb + STAGES - 1;
        if (pf < kblocks) load_stage(pf % STAGES, pf);
        cp_async_commit();

        const uint32_t sa = s_base + (kb % STAGES) * STAGE_BYTES, sb = sa + A_BYTES;
#pragma unroll
        for (int ks = 0; ks < KW / 4; ++ks) {
            uint32_t af[4][4], bf[4][4];
#pragma unroll
            for (int mt = 0; mt < 4; ++mt) ldmatrix_x4(af[mt], sa + swizzle(a_row + mt * 16, ks * 2 + a_hi));
#pragma unroll
            for (int np = 0; np < 4; ++np) ldmatrix_x4(bf[np], sb + swizzle(b_row + np * 16, ks * 2 + b_hi));
#pragma unroll
            for (int mt = 0; mt < 4; ++mt)
#pragma unroll
                for (int nt = 0; nt < 8; ++nt)
                    mma_b1(acc[mt][nt], af[mt], bf[nt >> 1][(nt & 1) * 2], bf[nt >> 1][(nt & 1) * 2 + 1]);
        }
    }
    cp_async_wait<0>();

    /* Accumulator e of fragment (mt, nt): row g (+8 for e >= 2), columns 2*(lane&3) + (e&1). */
    const int g = lane >> 2, c2 = (lane & 3) * 2;
    b1_epilogue<SEL, STAGES * STAGE_BYTES>(t, bm, bn, smem, [&](auto f) {
#pragma unroll
        for (int mt = 0; mt < 4; ++mt)
#pragma unroll
            for (int nt = 0; nt < 8; ++nt) {
                const int rl = wm * 64 + mt * 16 + g, cl = wn * 64 + nt * 8 + c2;
                f(rl, cl, acc[mt][nt][0]);
                f(rl, cl + 1, acc[mt][nt][1]);
                f(rl + 8, cl, acc[mt][nt][2]);
                f(rl + 8, cl + 1, acc[mt][nt][3]);
            }
    });
}

/* One CTA per output block; or, for the dense pass of a fused tile (run_if), a CTA per SM
 * that returns at once unless the tile overflowed, and then walks the blocks in turn: a
 * grid of one CTA per block would make every block claim a whole SM's shared memory only to
 * return, between the CTAs of the tiles that compute. */
template <int STAGES, int SEL> __global__ void __launch_bounds__(THREADS, 1) gram_b1_kernel(const oc_gram_tile t)
{
    extern __shared__ __align__(128) unsigned char smem[];
    if (SEL == OC_TILE_DENSE && t.run_if) {
        if (*t.run_if == 0) return;
        const int blocks = ((t.rows + BM - 1) / BM) * ((t.cols + BN - 1) / BN);
        for (int b = blockIdx.x; b < blocks; b += gridDim.x) {
            gram_b1_block<STAGES, SEL>(t, b, smem);
            __syncthreads(); /* every warp is done with the stages before the next block's loads */
        }
        return;
    }
    gram_b1_block<STAGES, SEL>(t, blockIdx.x, smem);
}

/* Checks the configuration with the launch planner and launches one instance. */
template <int STAGES, int SEL>
oc_status launch_b1(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *tile, long long blocks,
                    cudaStream_t stream)
{
    static const char *const names[4][2] = {{"gram_b1_kernel<3>", "gram_b1_kernel<4>"},
                                            {"gram_b1_kernel<3, topk>", "gram_b1_kernel<4, topk>"},
                                            {"gram_b1_kernel<3, pairs>", "gram_b1_kernel<4, pairs>"},
                                            {"gram_b1_kernel<3, topk int>", "gram_b1_kernel<4, topk int>"}};
    const char *name = names[SEL][STAGES == 4];
    OC_CHECK(ctx, oc_cuda_launch_prepare(ctx, dev, (const void *)gram_b1_kernel<STAGES, SEL>, name, THREADS,
                                         STAGES * STAGE_BYTES));
    const long long grid = tile->run_if && blocks > dev->sm_count ? dev->sm_count : blocks;
    gram_b1_kernel<STAGES, SEL><<<(unsigned)grid, THREADS, STAGES * STAGE_BYTES, stream>>>(*tile);
    CUDA_CHECK_LAUNCH(ctx, "gram_b1_kernel");
    return OC_OK;
}

template <int STAGES>
oc_status launch_b1_mode(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *tile, long long blocks,
                         cudaStream_t stream)
{
    switch (tile->select) {
    case OC_TILE_TOPK:
        if (!oc_gram_metric_is_float(tile->metric))
            return launch_b1<STAGES, SEL_TOPK_INT>(ctx, dev, tile, blocks, stream);
        return launch_b1<STAGES, OC_TILE_TOPK>(ctx, dev, tile, blocks, stream);
    case OC_TILE_PAIRS:
        return launch_b1<STAGES, OC_TILE_PAIRS>(ctx, dev, tile, blocks, stream);
    default:
        return launch_b1<STAGES, OC_TILE_DENSE>(ctx, dev, tile, blocks, stream);
    }
}

} // namespace

extern "C" oc_status oc_cuda_gram_b1(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *tile,
                                     cudaStream_t stream, double *bit_macs)
{
    if (dev->cc < 80)
        return oc_fail(ctx, OC_ERR_UNSUPPORTED,
                       "cuda:%d (%s, sm_%d) has no 1-bit tensor-core MMA (needs sm_80 or later)", dev->index, dev->name,
                       dev->cc);
    if ((tile->stride > 0 && tile->stride != tile->words) || tile->acc_in)
        return oc_fail(ctx, OC_ERR_INTERNAL, "gram_b1: tiles split on K run on the wgmma kernel only");
    if (tile->words % OC_ROW_WORD_ALIGN != 0)
        return oc_fail(ctx, OC_ERR_INTERNAL, "gram_b1: %lld words per row is not a multiple of %d",
                       (long long)tile->words, OC_ROW_WORD_ALIGN);
    if (tile->rows <= 0 || tile->cols <= 0) return OC_OK;
    const long long blocks = (long long)((tile->rows + BM - 1) / BM) * ((tile->cols + BN - 1) / BN);
    /* Four stages where the device grants 192 KiB to a block, else three (sm_80: 163 KiB). */
    if (dev->smem_optin >= 4 * (size_t)STAGE_BYTES) OC_CHECK(ctx, launch_b1_mode<4>(ctx, dev, tile, blocks, stream));
    else OC_CHECK(ctx, launch_b1_mode<3>(ctx, dev, tile, blocks, stream));
    /* The kernel runs whole 1024-bit blocks; a zero-filled half still occupies the MMAs. */
    *bit_macs = (double)oc_gram_tile_blocks(tile, BM, BN) * BM * BN * (double)((tile->words + KW - 1) / KW * KW) * 64.0;
    return OC_OK;
}
