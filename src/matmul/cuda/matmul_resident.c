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
#include "matmul/cuda/matmul_pack.cuh"
#include "mem/pool.h"

typedef struct resident {
    oc_mm_shared *sh;
    oc_mm_device_result *res;
    oc_cuda_device dev;
    oc_mm_gemm gemm;
    void *pack, *acc;
    /* cuBLASLt's workspace (after int8's two chunks of B, when B goes in chunks), kept by
     * the context between products */
    oc_kept_device *work;
    /* int8's B in chunks: a chunk packed (on compute2) and its buffer free again (on compute),
     * per buffer. */
    cudaEvent_t packed[2], used[2];
} resident;

/* The workspace the products ask (need bytes, a few for most algorithms; none for some), not
 * the plan's whole, after `before` bytes of other scratch (int8's chunks of B), in the block
 * the context keeps between products (engine/cuda/device.h says why). The plan's budget holds
 * the plan's whole workspace. */
static oc_status take_workspace(oc_context *ctx, resident *d, size_t before, size_t need)
{
    OC_CHECK(ctx, oc_cuda_kept_take(ctx, d->dev.index, before + need, before + (size_t)d->sh->plan->workspace,
                                    before ? "int8's chunks of B and the cuBLASLt workspace" : "the cuBLASLt workspace",
                                    &d->work));
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

/* int8 with B packed in chunks of plan->b_chunk columns (matmul_cuda_plan.c says when): chunk
 * j is packed on compute2 into buffer j % 2 once the product of chunk j - 2 has read it, and
 * its product, on compute, writes C's columns of the chunk once it is packed. The packing of
 * a chunk overlaps the product of the one before; both streams have the device's highest
 * priority, so that a packing is not left waiting for a product's last wave. */
static oc_status run_chunks(oc_context *ctx, resident *d, const void *a, const int8_t *b, int tb, int32_t *c)
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
    /* The algorithms are chosen on the chunks' place in the block before it is taken: their
     * alignment is the block's start, plus a multiple of 256. */
    const size_t chunks = (size_t)plan->chunk_bytes;
    size_t need = 0;
    OC_CHECK(ctx,
             chunk_workspace(ctx, d, a, (const int8_t *)(uintptr_t)OC_POOL_ALIGN, c, w, n - (n - 1) / w * w, &need));
    OC_CHECK(ctx, take_workspace(ctx, d, chunks, need));
    int8_t *buf[2] = {d->work->ptr, (int8_t *)d->work->ptr + w * plan->kpad};
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
 * first; an FP16/BF16 result: through a float32 accumulator rounded into C). cuBLASLt does
 * not read C with beta 0, so whatever C held stays out of the result. */
static oc_status run(oc_context *ctx, resident *d, int device)
{
    const oc_mm_cuda_plan *plan = d->sh->plan;
    const oc_matmul_job *job = d->sh->job;
    double t = oc_now();
    OC_CHECK(ctx, oc_cuda_device_open_compute(ctx, device, &d->dev));
    oc_trace_phase(&t, "matmul", "device open");
    const oc_mem_ops ops = oc_cuda_mem_ops(ctx);
    OC_CHECK(ctx, oc_pool_create(ctx, &ops, device, plan->in.device_budget, OC_GPU_MEM_GROW, 4096, &d->dev.pool));
    int64_t lda = 0, ldb = 0, ldc = 0;
    int ta = 0, tb = 0;
    const void *a = job->stored_memory(job, OC_MM_A, &lda, &ta), *b = job->stored_memory(job, OC_MM_B, &ldb, &tb);
    void *c = job->tile_memory(job, 0, 0, &ldc);
    if (!a || !b || !c || ta != plan->in.ta || tb != plan->in.tb || lda != (ta ? job->m : job->k) ||
        ldb != (tb ? job->k : job->n) || ldc != job->n)
        return oc_fail(ctx, OC_ERR_INTERNAL, "matmul: a resident plan whose operands are not where it was made");
    if (plan->pack_bytes)
        OC_CHECK(ctx, oc_pool_alloc(ctx, d->dev.pool, (size_t)plan->pack_bytes, "the int8 packed operands", &d->pack));
    if (plan->acc_bytes)
        OC_CHECK(ctx, oc_pool_alloc(ctx, d->dev.pool, (size_t)plan->acc_bytes, "a matmul accumulator", &d->acc));
    oc_trace_phase(&t, "matmul", "buffers");
    OC_CHECK(ctx, oc_mm_gemm_open(ctx, d->sh->lt, plan, NULL, &d->gemm));
    d->gemm.c_ld = job->n; /* C whole, or its blocks of columns (int8's B in chunks) */
    oc_trace_phase(&t, "matmul", "cuBLASLt handle");
    const int64_t m = job->m, n = job->n, k = job->k;
    cudaStream_t stream = d->dev.compute;
    if (plan->in.in_type == OC_MM_INT8) {
        /* Both operands K-contiguous with rows of kpad from aligned memory (the plan's
         * pack_a, pack_b: matmul_cuda_plan.c); otherwise A is transposed or re-strided into
         * the packing buffer after B's part, and B into that part: whole here, or a chunk at
         * a time beside the products (run_chunks). */
        int8_t *b_part = d->pack, *next = d->pack;
        if (plan->pack_b && !plan->b_chunk) next += n * plan->kpad;
        if (plan->pack_a) {
            if (ta) OC_CHECK(ctx, oc_mm_transpose_i8(ctx, &d->dev, a, k, m, m, next, plan->kpad, m, stream));
            else OC_CHECK(ctx, oc_mm_pack_rows_i8(ctx, &d->dev, a, m, k, next, plan->kpad, stream));
            a = next;
        }
        if (plan->b_chunk) {
            OC_CHECK(ctx, run_chunks(ctx, d, a, b, tb, c));
            return finish(ctx, d, c, &t);
        }
        if (plan->pack_b) OC_CHECK(ctx, pack_b(ctx, d, b, tb, 0, n, b_part, stream));
        if (plan->pack_b) b = b_part;
        if (oc_tracing()) { /* the packing's own time, for OUTCORE_TRACE */
            CUDA_CHECK(ctx, cudaStreamSynchronize(stream));
            oc_trace_phase(&t, "matmul", "int8 packing");
        }
    }
    void *acc = plan->acc_bytes ? d->acc : c;
    size_t need = 0;
    OC_CHECK(ctx, oc_mm_gemm_workspace_need(ctx, &d->gemm, m, n, k, a, b, acc, &need));
    OC_CHECK(ctx, take_workspace(ctx, d, 0, need));
    oc_trace_phase(&t, "matmul", "cuBLASLt algorithm and workspace");
    OC_CHECK(ctx, oc_mm_gemm_run(ctx, &d->gemm, m, n, k, a, b, acc, 0, stream));
    if (plan->acc_bytes) OC_CHECK(ctx, oc_mm_round_f32(ctx, &d->dev, acc, m, n, n, plan->in.out_type, c, stream));
    return finish(ctx, d, c, &t);
}

/* The device's state given back: its streams' work awaited, then the workspace to the
 * context, the handle, the events, the pool and its buffers, and the streams. */
static void close_device(oc_context *ctx, resident *d)
{
    if (d->dev.compute) (void)cudaStreamSynchronize(d->dev.compute);
    if (d->dev.compute2) (void)cudaStreamSynchronize(d->dev.compute2);
    (void)cudaGetLastError();
    d->res->peak_device_bytes = d->work ? (int64_t)d->work->bytes : 0;
    oc_cuda_kept_give(ctx, d->work);
    oc_mm_gemm_close(&d->gemm);
    for (int i = 0; i < 2; ++i) {
        if (d->packed[i]) (void)cudaEventDestroy(d->packed[i]);
        if (d->used[i]) (void)cudaEventDestroy(d->used[i]);
    }
    if (d->dev.pool) {
        oc_pool_stats ps;
        oc_pool_get_stats(d->dev.pool, &ps);
        d->res->peak_device_bytes += ps.peak;
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
