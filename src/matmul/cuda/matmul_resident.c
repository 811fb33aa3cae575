/*
 * matmul_resident.c - the resident plan of the CUDA matmul backend (matmul_resident.h).
 */
#include "matmul/cuda/matmul_resident.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "core/threads.h"
#include "core/trace.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/device.h"
#include "matmul/cuda/matmul_gemm.h"
#include "matmul/matmul_dtype.h"
#include "matmul/cuda/kernels/matmul_mirror.cuh"
#include "matmul/cuda/kernels/matmul_pack.cuh"
#include "matmul/cuda/kernels/matmul_round.cuh"
#include "mem/pool.h"

typedef struct resident {
    oc_mm_shared *sh;
    oc_mm_device_result *res;
    oc_cuda_device dev;
    oc_mm_gemm gemm;
    /* The product's scratch and cuBLASLt's workspace in one block (layout below), kept by the
     * context between products when small enough (engine/cuda/device.h says why); the
     * packing and accumulator of a product too large for that, from the job's pool. */
    oc_kept_device *work;
    void *pooled;
    /* int8's B in chunks: a chunk packed (on compute2) and its buffer free again (on compute),
     * per buffer. */
    cudaEvent_t packed[2], used[2];
} resident;

/* Where a resident product's scratch lies, each part from a 256-byte boundary: int8's packing
 * of B (whole) and of A, and a half-precision result's float32 accumulator or a bool one's
 * int32 sums (the parts), then int8's two chunks of B; from `before`, cuBLASLt's workspace.
 * All of it is in the block the context keeps when it fits OC_CUDA_KEPT_MAX with the plan's
 * whole workspace (which a first product of a shape may take to measure its algorithms): a
 * cudaMalloc and a cudaFree cost more than a product of a few microseconds. Otherwise the
 * parts (`pooled` bytes, offsets from the pooled buffer) come from the job's pool, and the
 * block holds the chunks and the workspace. */
typedef struct layout {
    size_t b, a, acc, chunks, before, pooled;
} layout;

static size_t aligned(int64_t bytes) { return ((size_t)bytes + OC_POOL_ALIGN - 1) / OC_POOL_ALIGN * OC_POOL_ALIGN; }

static layout layout_of(const oc_mm_cuda_plan *p)
{
    layout l = {0};
    size_t parts = 0;
    if (p->pack_b && !p->b_chunk) l.b = parts, parts += aligned(p->in.n * p->kpad);
    if (p->pack_a) l.a = parts, parts += aligned(p->in.m * p->kpad);
    if (p->acc_bytes) l.acc = parts, parts += aligned(p->acc_bytes);
    const size_t chunks = aligned(p->chunk_bytes);
    if (parts + chunks + (size_t)p->workspace <= OC_CUDA_KEPT_MAX) l.chunks = parts, l.before = parts + chunks;
    else l.pooled = parts, l.chunks = 0, l.before = chunks;
    return l;
}

/* A place in the block, before the block is taken: the algorithms are chosen on the operands'
 * alignment, which is the block's start (at least 256 bytes) plus the part's offset. */
static void *in_block(const resident *d, size_t offset)
{
    return (void *)((d->work ? (uintptr_t)d->work->ptr : (uintptr_t)OC_POOL_ALIGN) + offset);
}

/* A part (B's or A's packing, the accumulator) at offset: in the block, or the pooled buffer. */
static void *part(const resident *d, const layout *l, size_t offset)
{
    return l->pooled ? (char *)d->pooled + offset : in_block(d, offset);
}

/* The block for the scratch before `before` and the workspace the products ask (need bytes,
 * a few for most algorithms; none for some), not the plan's whole, which its budget holds. */
static oc_status take_block(oc_context *ctx, resident *d, size_t before, size_t need)
{
    OC_CHECK(ctx, oc_cuda_kept_take(
                      ctx, d->dev.index, before + need, before + (size_t)d->sh->plan->workspace,
                      before ? "a product's scratch and the cuBLASLt workspace" : "the cuBLASLt workspace", &d->work));
    oc_mm_gemm_use_workspace(&d->gemm, d->work ? (char *)d->work->ptr + before : NULL, need);
    return OC_OK;
}

/* Columns [col0, col0 + cols) of B (stored k x n, or n x k when tb) packed K-contiguous into
 * dst, cols rows of kpad: transposed, or re-strided when B is given as Bᵀ. */
static oc_status pack_b(oc_context *ctx, resident *d, const int8_t *b, int tb, int64_t col0, int64_t cols, int8_t *dst,
                        cudaStream_t stream)
{
    const oc_mm_cuda_plan *plan = d->sh->plan;
    const int64_t n = plan->in.n, k = plan->in.k;
    if (tb) return oc_mm_pack_rows_i8(ctx, &d->dev, b + col0 * k, cols, k, dst, plan->kpad, stream);
    return oc_mm_transpose_i8(ctx, &d->dev, b + col0, k, cols, n, dst, plan->kpad, cols, stream);
}

/* The workspace the products of chunks `w` wide (the last `last` wide) ask, their algorithms
 * chosen now. */
static oc_status chunk_workspace(oc_context *ctx, resident *d, const void *a, const int8_t *buf, int32_t *c, int64_t w,
                                 int64_t last, size_t *need)
{
    const int64_t m = d->sh->plan->in.m, k = d->sh->plan->in.k;
    size_t other = 0;
    OC_CHECK(ctx, oc_mm_gemm_workspace_need(ctx, &d->gemm, m, w, k, a, buf, c, need));
    if (last != w) OC_CHECK(ctx, oc_mm_gemm_workspace_need(ctx, &d->gemm, m, last, k, a, buf, c, &other));
    if (other > *need) *need = other;
    return OC_OK;
}

/* int8 with B packed in chunks of plan->b_chunk columns (matmul_cuda_plan.c says when) into
 * the block's two chunk buffers (d->work taken): chunk j is packed on compute2 into buffer
 * j % 2 once the product of chunk j - 2 has read it, and its product, on compute, writes C's
 * columns of the chunk once it is packed. The packing of a chunk overlaps the product of the
 * one before; both streams have the device's highest priority, so that a packing is not left
 * waiting for a product's last wave. */
static oc_status run_chunks(oc_context *ctx, resident *d, const layout *l, const void *a, const int8_t *b, int tb,
                            int32_t *c)
{
    const oc_mm_cuda_plan *plan = d->sh->plan;
    const int64_t m = plan->in.m, n = plan->in.n, k = plan->in.k, w = plan->b_chunk;
    int least = 0, greatest = 0;
    CUDA_CHECK(ctx, cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CUDA_CHECK(ctx, cudaStreamCreateWithPriority(&d->dev.compute2, cudaStreamNonBlocking, greatest));
    for (int i = 0; i < 2; ++i) {
        CUDA_CHECK(ctx, cudaEventCreateWithFlags(&d->packed[i], cudaEventDisableTiming));
        CUDA_CHECK(ctx, cudaEventCreateWithFlags(&d->used[i], cudaEventDisableTiming));
    }
    int8_t *buf[2] = {(int8_t *)d->work->ptr + l->chunks, (int8_t *)d->work->ptr + l->chunks + w * plan->kpad};
    cudaStream_t compute = d->dev.compute, packing = d->dev.compute2;
    for (int64_t j = 0, col0 = 0; col0 < n; ++j, col0 += w) {
        const int64_t cols = n - col0 < w ? n - col0 : w;
        const int s = (int)(j % 2);
        if (j >= 2) CUDA_CHECK(ctx, cudaStreamWaitEvent(packing, d->used[s], 0));
        OC_CHECK(ctx, pack_b(ctx, d, b, tb, col0, cols, buf[s], packing));
        CUDA_CHECK(ctx, cudaEventRecord(d->packed[s], packing));
        CUDA_CHECK(ctx, cudaStreamWaitEvent(compute, d->packed[s], 0));
        OC_CHECK(ctx, oc_mm_gemm_run(ctx, &d->gemm, m, cols, k, a, buf[s], c + col0, 0, compute));
        CUDA_CHECK(ctx, cudaEventRecord(d->used[s], compute));
    }
    return OC_OK;
}

/* The product's end: its work awaited, C mirrored first for A·Aᵀ (the whole product was
 * computed; its upper triangle mirrored makes it exactly symmetric, as the tiled plan's
 * is), and the job's counts. */
static oc_status finish(oc_context *ctx, resident *d, void *c, double *t)
{
    const oc_matmul_job *job = d->sh->job;
    if (job->symmetric)
        OC_CHECK(ctx, oc_mm_mirror(ctx, &d->dev, c, job->n, job->n, oc_mm_type_size(job->out_type), d->dev.compute));
    CUDA_CHECK(ctx, cudaStreamSynchronize(d->dev.compute));
    oc_trace_phase(t, "matmul", "product");
    d->res->tiles = 1;
    d->res->bytes_straight = (job->m + job->n) * job->k * (int64_t)oc_mm_type_size(job->in_type);
    atomic_fetch_add(&d->sh->tiles_done, 1);
    return OC_OK;
}

/* One product from A and B into C where they are in device memory (int8: packed beside them
 * first; an FP16/BF16 result: through a float32 accumulator rounded into C, a bool one
 * through int32 sums). cuBLASLt does not read C with beta 0, so whatever C held stays out of
 * the result. */
static oc_status run(oc_context *ctx, resident *d, int device)
{
    const oc_mm_cuda_plan *plan = d->sh->plan;
    const oc_matmul_job *job = d->sh->job;
    double t = oc_now();
    OC_CHECK(ctx, oc_cuda_device_open_compute(ctx, device, &d->dev));
    oc_trace_phase(&t, "matmul", "device open");
    int64_t lda = 0, ldb = 0, ldc = 0;
    int ta = 0, tb = 0;
    const void *a = job->stored_memory(job, OC_MM_A, &lda, &ta), *b = job->stored_memory(job, OC_MM_B, &ldb, &tb);
    void *c = job->tile_memory(job, 0, 0, &ldc);
    if (!a || !b || !c || ta != plan->in.ta || tb != plan->in.tb || lda != (ta ? job->m : job->k) ||
        ldb != (tb ? job->k : job->n) || ldc != job->n)
        return oc_fail(ctx, OC_ERR_INTERNAL, "matmul: a resident plan whose operands are not where it was made");
    OC_CHECK(ctx, oc_mm_gemm_open(ctx, d->sh->lt, plan, NULL, &d->gemm));
    d->gemm.c_ld = job->n; /* C whole, or its blocks of columns (int8's B in chunks) */
    oc_trace_phase(&t, "matmul", "cuBLASLt handle");
    const int64_t m = job->m, n = job->n, k = job->k;
    const int i8 = plan->in.in_type == OC_MM_INT8;
    const layout l = layout_of(plan);
    if (l.pooled) {
        const oc_mem_ops ops = oc_cuda_mem_ops(ctx);
        OC_CHECK(ctx, oc_pool_create(ctx, &ops, device, plan->in.device_budget, OC_GPU_MEM_GROW, 4096, &d->dev.pool));
        OC_CHECK(ctx, oc_pool_alloc(ctx, d->dev.pool, l.pooled, "a product's int8 packing or accumulator", &d->pooled));
    }
    /* The operands as the products read them: int8's packed where the plan packs them (both
     * K-contiguous with rows of kpad from aligned memory: matmul_cuda_plan.c), C or the
     * accumulator; places in the block until it is taken. */
    const void *pa = plan->pack_a ? part(d, &l, l.a) : a, *pb = plan->pack_b ? part(d, &l, l.b) : b;
    const void *acc = plan->acc_bytes ? part(d, &l, l.acc) : c;
    size_t need = 0;
    if (plan->b_chunk)
        OC_CHECK(ctx, chunk_workspace(ctx, d, pa, in_block(d, l.chunks), (int32_t *)acc, plan->b_chunk,
                                      n - (n - 1) / plan->b_chunk * plan->b_chunk, &need));
    else OC_CHECK(ctx, oc_mm_gemm_workspace_need(ctx, &d->gemm, m, n, k, pa, pb, acc, &need));
    OC_CHECK(ctx, take_block(ctx, d, l.before, need));
    oc_trace_phase(&t, "matmul", "cuBLASLt algorithm, scratch and workspace");
    cudaStream_t stream = d->dev.compute;
    if (i8) {
        /* A transposed or re-strided into its place; B into its own, whole here or a chunk at
         * a time beside the products (run_chunks). */
        int8_t *packed_a = part(d, &l, l.a), *packed_b = part(d, &l, l.b);
        if (plan->pack_a) {
            if (ta) OC_CHECK(ctx, oc_mm_transpose_i8(ctx, &d->dev, a, k, m, m, packed_a, plan->kpad, m, stream));
            else OC_CHECK(ctx, oc_mm_pack_rows_i8(ctx, &d->dev, a, m, k, packed_a, plan->kpad, stream));
            a = packed_a;
        }
        if (plan->b_chunk) { /* int32 sums into C, or into the accumulator a bool result rounds */
            int32_t *sums = plan->acc_bytes ? part(d, &l, l.acc) : c;
            OC_CHECK(ctx, run_chunks(ctx, d, &l, a, b, tb, sums));
            if (plan->acc_bytes)
                OC_CHECK(ctx, oc_mm_round_acc(ctx, &d->dev, sums, m, n, n, plan->in.out_type, c, stream));
            return finish(ctx, d, c, &t);
        }
        if (plan->pack_b) OC_CHECK(ctx, pack_b(ctx, d, b, tb, 0, n, packed_b, stream));
        if (plan->pack_b) b = packed_b;
        if (oc_tracing()) { /* the packing's own time, for OUTCORE_TRACE */
            CUDA_CHECK(ctx, cudaStreamSynchronize(stream));
            oc_trace_phase(&t, "matmul", "int8 packing");
        }
    }
    void *acc_at = plan->acc_bytes ? part(d, &l, l.acc) : c;
    OC_CHECK(ctx, oc_mm_gemm_run(ctx, &d->gemm, m, n, k, a, b, acc_at, 0, stream));
    if (plan->acc_bytes) OC_CHECK(ctx, oc_mm_round_acc(ctx, &d->dev, acc_at, m, n, n, plan->in.out_type, c, stream));
    return finish(ctx, d, c, &t);
}

/* The device's state given back: its streams' work awaited, then the block to the context,
 * the handle, the events, the pool and its buffer, and the streams. */
static void close_device(oc_context *ctx, resident *d)
{
    if (d->dev.compute) (void)cudaStreamSynchronize(d->dev.compute);
    if (d->dev.compute2) (void)cudaStreamSynchronize(d->dev.compute2);
    (void)cudaGetLastError();
    d->res->peak_device_bytes = d->work ? (int64_t)d->work->bytes : 0;
    if (d->dev.pool) {
        oc_pool_stats ps;
        oc_pool_get_stats(d->dev.pool, &ps);
        d->res->peak_device_bytes += ps.peak;
    }
    oc_cuda_kept_give(ctx, d->work);
    oc_mm_gemm_close(&d->gemm);
    for (int i = 0; i < 2; ++i) {
        if (d->packed[i]) (void)cudaEventDestroy(d->packed[i]);
        if (d->used[i]) (void)cudaEventDestroy(d->used[i]);
    }
    oc_cuda_device_close(&d->dev);
    (void)cudaGetLastError();
}

void oc_mm_resident_run(oc_context *ctx, oc_mm_shared *sh, int device, oc_mm_device_result *res)
{
    memset(res, 0, sizeof *res);
    resident d = {.sh = sh, .res = res};
    const oc_status st = run(ctx, &d, device);
    if (st != OC_OK) oc_mm_device_failed(sh, res, st, 0, oc_context_last_error(ctx));
    double t = oc_now();
    close_device(ctx, &d);
    oc_trace_phase(&t, "matmul", "device teardown");
}
