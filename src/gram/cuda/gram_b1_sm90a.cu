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
 * its stalls, the tensor pipe and L2 far from busy).
 *
 *   global --TMA boxes (tensor maps), 128-byte swizzle--> shared, 4 stages with mbarriers
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
 * Pipeline: thread 0 stages K blocks through the tensor memory accelerator (a 128 x 128-byte
 * box of A and a 256 x 128-byte box of B per block, zero-filled past the tile's rows and past
 * the rows' end), three blocks ahead, each completing on its stage's "full" mbarrier; the
 * warpgroups wait on that barrier, issue the block's four MMAs as one group, and when the
 * group before it has finished arrive on that stage's "empty" barrier, which thread 0 waits
 * on before refilling it. No CTA-wide barrier in the K loop. (The first version copied with
 * cp.async by all threads and met at a barrier every block, and was slower: both are
 * measured in bench/RESULTS.md.)
 *
 * Compiled for sm_90a only (CMakeLists.txt): on any other target the kernel body is empty
 * and the entry point refuses the device.
 */
#include <cuda.h> /* CUtensorMap and its enums only: the encoder is looked up at run time */
#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
#include "core/gpu_arch.h"
#include "matrix/matrix.h"
}
#include "engine/cuda/cuda_check.h"
#include "gram/cuda/gram_b1.cuh"
#include "gram/cuda/gram_b1_block.cuh"

namespace {

constexpr int STAGES = 4;
/* A tile split on K loads the counts of its earlier slices this many 16-byte loads at a time
 * a thread (wgmma_block). */
constexpr int ACC_BATCH = 8;
/* The stages, 1024-byte aligned, then a full and an empty barrier per stage. */
constexpr int SMEM_BYTES = 1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8;
static_assert(SMEM_BYTES <= 227 * 1024, "the stages fit Hopper's shared memory");
static_assert(A_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0, "swizzle atoms stay 1024-byte aligned");

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define OC_WGMMA 1
#endif

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
template <int N> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void mbar_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint32_t bar, int bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, int parity)
{
    asm volatile("{\n.reg .pred done;\n"
                 "wait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait_%=;\n}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}
/* One box of a 2-D tensor map into shared memory, completing on `bar`. */
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap *map, int x, int y, uint32_t bar)
{
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::
            "r"(dst),
        "l"((uint64_t)map), "r"(x), "r"(y), "r"(bar)
        : "memory");
}

/* D = A B + D, or D = A B when `accumulate` is 0 (the first K step: no zeroing of the
 * accumulators by ordinary instructions inside the MMA pipeline, which makes ptxas
 * serialise the wgmmas, warning C7515). */
__device__ __forceinline__ void wgmma_b1(int (&d)[128], uint64_t da, uint64_t db, int accumulate)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k256.s32.b1.b1.and.popc "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p;\n}\n"
        : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]), "+r"(d[7]), "+r"(d[8]),
          "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]), "+r"(d[14]), "+r"(d[15]), "+r"(d[16]),
          "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]), "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]),
          "+r"(d[25]), "+r"(d[26]), "+r"(d[27]), "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]),
          "+r"(d[33]), "+r"(d[34]), "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]),
          "+r"(d[41]), "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),
          "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]), "+r"(d[56]),
          "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]), "+r"(d[63]), "+r"(d[64]),
          "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]), "+r"(d[70]), "+r"(d[71]), "+r"(d[72]),
          "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]), "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]),
          "+r"(d[81]), "+r"(d[82]), "+r"(d[83]), "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]),
          "+r"(d[89]), "+r"(d[90]), "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]),
          "+r"(d[97]), "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]), "+r"(d[104]),
          "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]), "+r"(d[110]), "+r"(d[111]),
          "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]), "+r"(d[116]), "+r"(d[117]), "+r"(d[118]),
          "+r"(d[119]), "+r"(d[120]), "+r"(d[121]), "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]),
          "+r"(d[126]), "+r"(d[127])
        : "l"(da), "l"(db), "r"(accumulate));
}
#endif

/* Block `block` of the tile. `used` counts the K blocks this CTA has staged so far (the
 * barriers' phases follow it across the blocks of a persistent CTA). */
template <int SEL>
__device__ __forceinline__ void wgmma_block(const oc_gram_tile &t, const CUtensorMap *map_a, const CUtensorMap *map_b,
                                            int block, unsigned char *smem, int &used)
{
#ifdef OC_WGMMA
    int bm, bn;
    if (!b1_block_coords(t, block, bm, bn)) return;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, wg = warp >> 2;
    const uint32_t s_base = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u;
    const uint32_t full0 = s_base + STAGES * STAGE_BYTES, empty0 = full0 + STAGES * 8;
    const int kblocks = (int)((t.words + KW - 1) / KW);
    const int base = used;
    used += kblocks;

    /* Thread 0 stages K blocks with the tensor memory accelerator: a 128 x 128-byte box of A
     * and a 256 x 128-byte box of B per block, swizzled by the copy engine, zero-filled past
     * the tile's rows and the rows' end, completing on the stage's full barrier. Before it
     * refills a stage, both warpgroups have arrived on its empty barrier (their MMAs that
     * read it have finished). */
    auto stage_in = [&](int kb) {
        const int gi = base + kb, st = gi % STAGES, use = gi / STAGES;
        if (use > 0) mbar_wait(empty0 + st * 8, (use - 1) & 1);
        const uint32_t dst = s_base + st * STAGE_BYTES, bar = full0 + st * 8;
        mbar_expect(bar, STAGE_BYTES);
        tma_load(dst, map_a, kb * ROW_BYTES, bm * BM, bar);
        tma_load(dst + A_BYTES, map_b, kb * ROW_BYTES, bn * BN, bar);
    };
    /* Generic stores of the previous block's epilogue are ordered before the copies that
     * overwrite them (the async proxy), and every thread is past that epilogue. */
    fence_async_shared();
    __syncthreads();
    if (tid == 0)
        for (int kb = 0; kb < STAGES - 1 && kb < kblocks; ++kb) stage_in(kb);

    int acc[128]; /* the first K step writes them (accumulate 0) */

    for (int kb = 0; kb < kblocks; ++kb) {
        const int gi = base + kb, st = gi % STAGES;
        mbar_wait(full0 + st * 8, (gi / STAGES) & 1);
        const uint32_t sa = s_base + st * STAGE_BYTES, sb = sa + A_BYTES;
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < KW / 4; ++ks) {
            const uint64_t da = smem_desc(sa + (uint32_t)(wg * 64 * ROW_BYTES + ks * 32));
            const uint64_t db = smem_desc(sb + (uint32_t)(ks * 32));
            wgmma_b1(acc, da, db, kb > 0 || ks > 0);
        }
        wgmma_commit();
        wgmma_wait<1>(); /* the group of block kb - 1 has finished: its stage may be refilled */
        if (kb > 0 && (tid & 127) == 0) mbar_arrive(empty0 + ((gi - 1) % STAGES) * 8);
        if (tid == 0 && kb + STAGES - 1 < kblocks) stage_in(kb + STAGES - 1);
    }
    wgmma_wait<0>();
    if (kblocks > 0 && (tid & 127) == 0) mbar_arrive(empty0 + ((base + kblocks - 1) % STAGES) * 8);

    /* Accumulators of m64nNk: warp w of the warpgroup holds rows 16 (w & 3) + g (+8 for
     * e & 2) of the warpgroup's 64; n8 block j holds columns 8 j + 2 (lane & 3) + (e & 1). */
    const int g = lane >> 2, c2 = (lane & 3) * 2, r0 = wg * 64 + (warp & 3) * 16 + g;
    /* A tile split on K adds the counts of its earlier slices (gram_tile.h): the block's
     * counts cross into the stages' memory (free now: both warpgroups are past their last
     * MMA) in 16-byte loads by every thread, then each thread adds its accumulators' from
     * there. Loaded straight into the accumulators' scattered places, the 128 loads of a
     * thread left them waiting on memory in turn. Rows ACC_LD apart: the 8 rows a warp
     * reads at once fall into different banks. */
    if (t.acc_in) {
        constexpr int ACC_LD = BN + 8;
        static_assert(BM * ACC_LD * 4 <= STAGES * STAGE_BYTES, "the block's counts fit the stages");
        int *cs = (int *)(smem + (s_base - (uint32_t)__cvta_generic_to_shared(smem)));
        __syncthreads();
        const int rows = min(BM, t.rows - bm * BM), cols = min(BN, t.cols - bn * BN);
        const bool vec = t.acc_ld % 4 == 0;
        /* ACC_BATCH loads in flight a thread: waited on one at a time, a thread's 32 loads
         * held the SM from its next block for 32 trips to memory (bench_b1_split measures). */
        constexpr int EACH = BM * BN / 4 / THREADS;
        static_assert(EACH % ACC_BATCH == 0, "the loads come in whole batches");
#pragma unroll 1
        for (int b = 0; b < EACH; b += ACC_BATCH) {
            int4 v[ACC_BATCH];
#pragma unroll
            for (int k = 0; k < ACC_BATCH; ++k) {
                const int i = tid + (b + k) * THREADS, r = i / (BN / 4), c = (i % (BN / 4)) * 4;
                const int32_t *in = t.acc_in + (size_t)(bm * BM + r) * (size_t)t.acc_ld + bn * BN + c;
                v[k] = make_int4(0, 0, 0, 0);
                if (r < rows && c + 3 < cols && vec) {
                    v[k] = *(const int4 *)in;
                } else if (r < rows) {
                    if (c < cols) v[k].x = in[0];
                    if (c + 1 < cols) v[k].y = in[1];
                    if (c + 2 < cols) v[k].z = in[2];
                    if (c + 3 < cols) v[k].w = in[3];
                }
            }
#pragma unroll
            for (int k = 0; k < ACC_BATCH; ++k) {
                const int i = tid + (b + k) * THREADS, r = i / (BN / 4), c = (i % (BN / 4)) * 4;
                *(int4 *)(cs + r * ACC_LD + c) = v[k];
            }
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int2 v = *(const int2 *)(cs + (r0 + 8 * h) * ACC_LD + j * 8 + c2);
                acc[4 * j + 2 * h] += v.x;
                acc[4 * j + 2 * h + 1] += v.y;
            }
    }
    /* Dense int32 counts (a tile split on K writes its slices' so): each thread's two
     * neighbouring columns in one 8-byte store, a warp's stores filling whole 32-byte
     * sectors of 8 rows. */
    if (SEL == OC_TILE_DENSE && t.metric == OC_METRIC_COUNTS && t.dtype == OC_DTYPE_INT32 && t.ld % 2 == 0) {
        int32_t *out = (int32_t *)t.out;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = bm * BM + r0 + 8 * h, c = bn * BN + j * 8 + c2;
                if (r >= t.rows || c >= t.cols) continue;
                int32_t *o = out + (size_t)r * (size_t)t.ld + c;
                if (c + 1 < t.cols) *(int2 *)o = make_int2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
                else *o = acc[4 * j + 2 * h];
            }
        return;
    }
    b1_epilogue<SEL, STAGES * STAGE_BYTES>(t, bm, bn, smem, [&](auto f) {
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            f(r0, j * 8 + c2, acc[4 * j]);
            f(r0, j * 8 + c2 + 1, acc[4 * j + 1]);
            f(r0 + 8, j * 8 + c2, acc[4 * j + 2]);
            f(r0 + 8, j * 8 + c2 + 1, acc[4 * j + 3]);
        }
    });
#else
    (void)t, (void)map_a, (void)map_b, (void)block, (void)smem, (void)used;
#endif
}

/* As gram_b1_kernel: one CTA per output block, or a CTA per SM for a fused tile's dense pass.
 * Thread 0 initialises the stage barriers (full: one arrival plus the copies' bytes; empty:
 * one arrival per warpgroup). */
template <int SEL>
__global__ void __launch_bounds__(THREADS, 1)
    gram_wgmma_kernel(const oc_gram_tile t, const __grid_constant__ CUtensorMap map_a,
                      const __grid_constant__ CUtensorMap map_b)
{
    extern __shared__ __align__(128) unsigned char smem[];
    if (SEL == OC_TILE_DENSE && t.run_if && *t.run_if == 0) return;
#ifdef OC_WGMMA
    if (threadIdx.x == 0) {
        const uint32_t full0 = (((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u) + STAGES * STAGE_BYTES;
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(full0 + s * 8, 1);
            mbar_init(full0 + (STAGES + s) * 8, THREADS / 128);
        }
    }
#endif
    int used = 0;
    if (SEL == OC_TILE_DENSE && t.run_if) {
        const int blocks = ((t.rows + BM - 1) / BM) * ((t.cols + BN - 1) / BN);
        for (int b = blockIdx.x; b < blocks; b += gridDim.x) {
            wgmma_block<SEL>(t, &map_a, &map_b, b, smem, used);
            __syncthreads();
        }
        return;
    }
    wgmma_block<SEL>(t, &map_a, &map_b, blockIdx.x, smem, used);
}

/* cuTensorMapEncodeTiled, looked up through the runtime (the library links no libcuda). */
typedef CUresult (*encode_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                              const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                              CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static oc_status tensor_map(oc_context *ctx, CUtensorMap *map, const uint64_t *base, int64_t words, int64_t stride,
                            int rows, int box_rows)
{
    /* Looked up once (a C++ static: initialised once even with several devices' threads). */
    static const encode_fn encode = []() -> encode_fn {
        void *fn = NULL;
        enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
                cudaSuccess ||
            found != cudaDriverEntryPointSuccess)
            return NULL;
        return (encode_fn)fn;
    }();
    if (!encode) return oc_fail(ctx, OC_ERR_DEVICE, "gram_wgmma: the driver has no cuTensorMapEncodeTiled");
    const cuuint64_t dims[2] = {(cuuint64_t)words * 8, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)stride * 8};
    const cuuint32_t box[2] = {ROW_BYTES, (cuuint32_t)box_rows}, elem[2] = {1, 1};
    CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, (void *)base, dims, strides, box, elem,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return oc_fail(ctx, OC_ERR_DEVICE, "gram_wgmma: cuTensorMapEncodeTiled failed (%d) for %d rows of %lld words",
                       (int)r, rows, (long long)words);
    return OC_OK;
}

template <int SEL>
oc_status launch_wgmma(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *tile, long long blocks,
                       cudaStream_t stream)
{
    static const char *const names[4] = {"gram_wgmma_kernel", "gram_wgmma_kernel<topk>", "gram_wgmma_kernel<pairs>",
                                         "gram_wgmma_kernel<topk int>"};
    OC_CHECK(ctx,
             oc_cuda_launch_prepare(ctx, dev, (const void *)gram_wgmma_kernel<SEL>, names[SEL], THREADS, SMEM_BYTES));
    const long long grid = tile->run_if && blocks > dev->sm_count ? dev->sm_count : blocks;
    CUtensorMap map_a, map_b;
    const int64_t stride = tile->stride > 0 ? tile->stride : tile->words;
    OC_CHECK(ctx, tensor_map(ctx, &map_a, tile->a, tile->words, stride, tile->rows, BM));
    OC_CHECK(ctx, tensor_map(ctx, &map_b, tile->b, tile->words, stride, tile->cols, BN));
    gram_wgmma_kernel<SEL><<<(unsigned)grid, THREADS, SMEM_BYTES, stream>>>(*tile, map_a, map_b);
    CUDA_CHECK_LAUNCH(ctx, "gram_wgmma_kernel");
    return OC_OK;
}

} // namespace

extern "C" oc_status oc_cuda_gram_wgmma(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *tile,
                                        cudaStream_t stream, double *bit_macs)
{
    if (dev->cc != 90)
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "cuda:%d (%s, sm_%d): the wgmma kernel runs on sm_90 (Hopper) only",
                       dev->index, dev->name, dev->cc);
    if (tile->words <= 0 || tile->words % OC_ROW_WORD_ALIGN != 0)
        return oc_fail(ctx, OC_ERR_INTERNAL, "gram_wgmma: %lld words per row is not a positive multiple of %d",
                       (long long)tile->words, OC_ROW_WORD_ALIGN);
    if (tile->stride > 0 && (tile->stride < tile->words || tile->stride % OC_ROW_WORD_ALIGN != 0 ||
                             ((uintptr_t)tile->a | (uintptr_t)tile->b) % 16 != 0))
        return oc_fail(ctx, OC_ERR_INTERNAL,
                       "gram_wgmma: a K slice of %lld words in rows %lld words apart is not aligned",
                       (long long)tile->words, (long long)tile->stride);
    if (tile->rows <= 0 || tile->cols <= 0) return OC_OK;
    const long long blocks = (long long)((tile->rows + BM - 1) / BM) * ((tile->cols + BN - 1) / BN);
    switch (tile->select) {
    case OC_TILE_TOPK:
        if (!oc_gram_metric_is_float(tile->metric))
            OC_CHECK(ctx, launch_wgmma<SEL_TOPK_INT>(ctx, dev, tile, blocks, stream));
        else OC_CHECK(ctx, launch_wgmma<OC_TILE_TOPK>(ctx, dev, tile, blocks, stream));
        break;
    case OC_TILE_PAIRS:
        OC_CHECK(ctx, launch_wgmma<OC_TILE_PAIRS>(ctx, dev, tile, blocks, stream));
        break;
    default:
        OC_CHECK(ctx, launch_wgmma<OC_TILE_DENSE>(ctx, dev, tile, blocks, stream));
    }
    *bit_macs = (double)oc_gram_tile_blocks(tile, BM, BN) * BM * BN * (double)((tile->words + KW - 1) / KW * KW) * 64.0;
    return OC_OK;
}
