/*
 * gram_b1_sm90a.cu - the binary Gram tile on Hopper's warpgroup MMA:
 * wgmma.mma_async.sync.aligned.m64n256k256.s32.b1.b1.and.popc (sm_90a only).
 *
 * The same CTA block as gram_b1.cu (128 x 256 of the output tile, 256 threads, 4 stages of
 * 1024-bit K blocks in 193 KiB, grouped rasterisation, the shared epilogue of
 * gram_b1_block.cuh), with the MMAs issued by two warpgroups: warpgroup w computes rows
 * 64w..64w+63 against all 256 columns, one m64n256k256 instruction per 256-bit K step, A and
 * B read by the tensor cores straight from shared memory through matrix descriptors. One
 * instruction replaces 128 mma.sync m16n8k256 plus their ldmatrix loads: the mma.sync kernel
 * spends its time issuing (Nsight Compute, bench/RESULTS.md: math-pipe throttle first among
 * its stalls, tensor pipe 67% active, L2 at 45%).
 *
 *   global --cp.async 16 B, a row's 128 bytes per 8 lanes--> shared, 128-byte swizzle (below)
 *   shared --wgmma descriptors--> tensor cores --> 128 int32 accumulators per thread
 *   accumulators --b1_epilogue--> dense stores or fused top-k / threshold (as gram_b1.cu)
 *
 * Shared layout: the 128-byte swizzle of the tensor cores' K-major operands, which is the
 * layout gram_b1.cu already uses for ldmatrix: each row's 1024-bit K block is one 128-byte
 * line, and 16-byte chunk c of row r sits at chunk c ^ (r & 7) of its line. Eight rows make
 * one 1024-byte swizzle atom (the descriptor's stride byte offset); a 256-bit K step starts
 * 32 bytes further into the lines, and the tensor cores apply the swizzle to the address.
 * Atoms must start 1024-byte aligned: the stages do.
 *
 * Pipeline: cp.async two K blocks ahead; at block kb every thread waits for its copies of kb,
 * fences them to the async proxy (the tensor cores read shared memory through it) and meets
 * the others at a barrier, refills the stage of block kb - 2 (whose MMAs have finished: each
 * warpgroup waited for all but its latest group before that barrier), and issues kb's four
 * MMAs as one group (issuing the refill after the MMAs measured no faster). Rows past the tile's edge and the odd 512-bit half past a row's end are
 * zero-filled (cp.async source size 0): they add nothing.
 *
 * Compiled for sm_90a only (CMakeLists.txt): on any other target the kernel body is empty
 * and the entry point refuses the device.
 */
#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
#include "core/gpu_arch.h"
#include "core/matrix.h"
}
#include "cuda/cuda_check.h"
#include "cuda/gram_b1.cuh"
#include "cuda/gram_b1_block.cuh"

namespace {

constexpr int STAGES = 4;
constexpr int AHEAD = 2;                 /* K blocks in flight ahead of the one computed */
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024; /* + room to align the stages to 1024 bytes */
static_assert(SMEM_BYTES <= 227 * 1024, "the stages fit Hopper's shared memory");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0, "swizzle atoms stay 1024-byte aligned");
static_assert(AHEAD <= STAGES - 2, "a refilled stage's MMAs have finished");

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define OC_WGMMA 1
#endif

/* Offset of 16-byte chunk c of row r in a stage region (128-byte swizzle). */
__device__ __forceinline__ uint32_t swizzled(int r, int c) { return (uint32_t)(r * ROW_BYTES + ((c ^ (r & 7)) << 4)); }

/* A shared-memory matrix descriptor for a K-major operand in the 128-byte swizzle: start
 * address and stride byte offset (the next 8-row atom, 1024 bytes) in 16-byte units; the
 * leading byte offset is unused by this layout (1 by convention); mode 1 = 128-byte swizzle. */
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr)
{
    return (uint64_t)((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}

#ifdef OC_WGMMA
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ void wgmma_b1(int (&d)[128], uint64_t da, uint64_t db)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k256.s32.b1.b1.and.popc "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, 1;\n"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]),
                   "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]),
                   "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]),
                   "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]),
                   "+r"(d[32]), "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]),
                   "+r"(d[40]), "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]),
                   "+r"(d[48]), "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
                   "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]),
                   "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]),
                   "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]),
                   "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]),
                   "+r"(d[88]), "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]),
                   "+r"(d[96]), "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]),
                   "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]),
                   "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]),
                   "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
                 : "l"(da), "l"(db));
}
#endif

template <int SEL> __device__ __forceinline__ void wgmma_block(const oc_gram_tile &t, int block, unsigned char *smem)
{
#ifdef OC_WGMMA
    int bm, bn;
    if (!b1_block_coords(t, block, bm, bn)) return;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
    const uint32_t s_base = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u;
    const int kblocks = (int)((t.words + KW - 1) / KW);
    const int rows_left = t.rows - bm * BM, cols_left = t.cols - bn * BN;

    /* Thread tid copies chunk tid % 8 of rows tid / 8 + 32 i: eight lanes read one row's 128
     * bytes (whole 32-byte sectors of one line; lanes reading 32 different rows made each
     * sector travel from L2 twice and saturated it, bench/RESULTS.md) and write one swizzled
     * line of shared memory. Since 32 is a multiple of 8, the swizzle is the same for all i. */
    const int ch = tid % 8, row0 = tid / 8;
    const uint64_t *src_a = t.a + ((size_t)bm * BM + row0) * (size_t)t.words + ch * 2;
    const uint64_t *src_b = t.b + ((size_t)bn * BN + row0) * (size_t)t.words + ch * 2;
    const uint32_t dst0 = swizzled(row0, ch);
    const size_t pass_stride = (size_t)32 * (size_t)t.words;
    auto load_stage = [&](int stage, int kb) {
        const uint32_t s = s_base + stage * STAGE_BYTES + dst0;
        const int64_t k = (int64_t)kb * KW;
        const bool k_ok = k + ch * 2 < t.words; /* the odd 512-bit half past the row's end */
#pragma unroll
        for (int i = 0; i < BM / 32; ++i) {
            const bool ok = k_ok && row0 + i * 32 < rows_left;
            cp_async16(s + i * 32 * ROW_BYTES, ok ? src_a + i * pass_stride + k : t.a, ok);
        }
#pragma unroll
        for (int i = 0; i < BN / 32; ++i) {
            const bool ok = k_ok && row0 + i * 32 < cols_left;
            cp_async16(s + A_BYTES + i * 32 * ROW_BYTES, ok ? src_b + i * pass_stride + k : t.b, ok);
        }
    };

    int acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0;

#pragma unroll
    for (int s = 0; s < AHEAD; ++s) {
        if (s < kblocks) load_stage(s, s);
        cp_async_commit();
    }
    for (int kb = 0; kb < kblocks; ++kb) {
        cp_async_wait<AHEAD - 1>();
        fence_async_shared();
        __syncthreads();
        const int pf = kb + AHEAD;
        if (pf < kblocks) load_stage(pf % STAGES, pf);
        cp_async_commit();

        const uint32_t sa = s_base + (kb % STAGES) * STAGE_BYTES, sb = sa + A_BYTES;
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < KW / 4; ++ks) {
            const uint64_t da = smem_desc(sa + (uint32_t)(wg * 64 * ROW_BYTES + ks * 32));
            const uint64_t db = smem_desc(sb + (uint32_t)(ks * 32));
            wgmma_b1(acc, da, db);
        }
        wgmma_commit();
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    cp_async_wait<0>();

    /* Accumulators of m64nNk: warp w of the warpgroup holds rows 16 (w & 3) + g (+8 for
     * e & 2) of the warpgroup's 64; n8 block j holds columns 8 j + 2 (lane & 3) + (e & 1). */
    const int g = lane >> 2, c2 = (lane & 3) * 2, r0 = wg * 64 + (warp & 3) * 16 + g;
    b1_epilogue<SEL>(t, bm, bn, smem, [&](auto f) {
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            f(r0, j * 8 + c2, acc[4 * j]);
            f(r0, j * 8 + c2 + 1, acc[4 * j + 1]);
            f(r0 + 8, j * 8 + c2, acc[4 * j + 2]);
            f(r0 + 8, j * 8 + c2 + 1, acc[4 * j + 3]);
        }
    });
#else
    (void)t, (void)block, (void)smem;
#endif
}

/* As gram_b1_kernel: one CTA per output block, or a CTA per SM for a fused tile's dense pass. */
template <int SEL> __global__ void __launch_bounds__(THREADS, 1) gram_wgmma_kernel(const oc_gram_tile t)
{
    extern __shared__ __align__(128) unsigned char smem[];
    if (SEL == OC_TILE_DENSE && t.run_if) {
        if (*t.run_if == 0) return;
        const int blocks = ((t.rows + BM - 1) / BM) * ((t.cols + BN - 1) / BN);
        for (int b = blockIdx.x; b < blocks; b += gridDim.x) {
            wgmma_block<SEL>(t, b, smem);
            __syncthreads();
        }
        return;
    }
    wgmma_block<SEL>(t, blockIdx.x, smem);
}

template <int SEL>
oc_status launch_wgmma(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *tile, long long blocks, cudaStream_t stream)
{
    static const char *const names[4] = {"gram_wgmma_kernel", "gram_wgmma_kernel<topk>", "gram_wgmma_kernel<pairs>",
                                         "gram_wgmma_kernel<topk int>"};
    OC_CHECK(oc_cuda_launch_prepare(ctx, dev, (const void *)gram_wgmma_kernel<SEL>, names[SEL], THREADS, SMEM_BYTES));
    const long long grid = tile->run_if && blocks > dev->sm_count ? dev->sm_count : blocks;
    gram_wgmma_kernel<SEL><<<(unsigned)grid, THREADS, SMEM_BYTES, stream>>>(*tile);
    CUDA_CHECK_LAUNCH(ctx, "gram_wgmma_kernel");
    return OC_OK;
}

} // namespace

extern "C" oc_status oc_cuda_gram_wgmma(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *tile, cudaStream_t stream,
                                        double *bit_macs)
{
    if (dev->cc != 90)
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "cuda:%d (%s, sm_%d): the wgmma kernel runs on sm_90 (Hopper) only",
                       dev->index, dev->name, dev->cc);
    if (tile->words % OC_ROW_WORD_ALIGN != 0)
        return oc_fail(ctx, OC_ERR_INTERNAL, "gram_wgmma: %lld words per row is not a multiple of %d", (long long)tile->words,
                       OC_ROW_WORD_ALIGN);
    if (tile->rows <= 0 || tile->cols <= 0) return OC_OK;
    const long long blocks = (long long)((tile->rows + BM - 1) / BM) * ((tile->cols + BN - 1) / BN);
    switch (tile->select) {
    case OC_TILE_TOPK:
        if (tile->metric == OC_METRIC_COUNTS || tile->metric == OC_METRIC_HAMMING)
            OC_CHECK(launch_wgmma<SEL_TOPK_INT>(ctx, dev, tile, blocks, stream));
        else
            OC_CHECK(launch_wgmma<OC_TILE_TOPK>(ctx, dev, tile, blocks, stream));
        break;
    case OC_TILE_PAIRS: OC_CHECK(launch_wgmma<OC_TILE_PAIRS>(ctx, dev, tile, blocks, stream)); break;
    default: OC_CHECK(launch_wgmma<OC_TILE_DENSE>(ctx, dev, tile, blocks, stream));
    }
    *bit_macs = (double)oc_gram_tile_blocks(tile, BM, BN) * BM * BN * (double)((tile->words + KW - 1) / KW * KW) * 64.0;
    return OC_OK;
}
