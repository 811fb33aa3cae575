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
    oc_kept_device *work; /* cuBLASLt's workspace, kept by the context between products */
} resident;

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
    oc_trace_phase(&t, "matmul", "cuBLASLt handle");
    const int64_t m = job->m, n = job->n, k = job->k;
    cudaStream_t stream = d->dev.compute;
    if (plan->in.in_type == OC_MM_INT8) {
        /* Both operands K-contiguous with rows of kpad from aligned memory (the plan's
         * pack_a, pack_b: matmul_cuda_plan.c); otherwise B, then A, are transposed or
         * re-strided into the packing buffer. */
        int8_t *next = d->pack;
        if (plan->pack_b) {
            if (tb) OC_CHECK(ctx, oc_mm_pack_rows_i8(ctx, &d->dev, b, n, k, next, plan->kpad, stream));
            else OC_CHECK(ctx, oc_mm_transpose_i8(ctx, &d->dev, b, k, n, next, plan->kpad, n, stream));
            b = next, next += n * plan->kpad;
        }
        if (plan->pack_a) {
            if (ta) OC_CHECK(ctx, oc_mm_transpose_i8(ctx, &d->dev, a, k, m, next, plan->kpad, m, stream));
            else OC_CHECK(ctx, oc_mm_pack_rows_i8(ctx, &d->dev, a, m, k, next, plan->kpad, stream));
            a = next;
        }
        if (oc_tracing()) { /* the packing's own time, for OUTCORE_TRACE */
            CUDA_CHECK(ctx, cudaStreamSynchronize(stream));
            oc_trace_phase(&t, "matmul", "int8 packing");
        }
    }
    void *acc = plan->acc_bytes ? d->acc : c;
    /* The workspace its algorithm asks for (a few bytes for most; none for some), not the
     * plan's whole, in the block the context keeps between products (engine/cuda/device.h
     * says why). The plan's budget holds the plan's whole workspace. */
    size_t need = 0;
    OC_CHECK(ctx, oc_mm_gemm_workspace_need(ctx, &d->gemm, m, n, k, a, b, acc, &need));
    OC_CHECK(ctx, oc_cuda_kept_take(ctx, device, need, (size_t)plan->workspace, "the cuBLASLt workspace", &d->work));
    oc_mm_gemm_use_workspace(&d->gemm, d->work ? d->work->ptr : NULL, need);
    oc_trace_phase(&t, "matmul", "cuBLASLt algorithm and workspace");
    OC_CHECK(ctx, oc_mm_gemm_run(ctx, &d->gemm, m, n, k, a, b, acc, 0, stream));
    if (plan->acc_bytes) OC_CHECK(ctx, oc_mm_round_f32(ctx, &d->dev, acc, m, n, n, plan->in.out_type, c, stream));
    /* A·Aᵀ: the whole product was computed; its upper triangle mirrored makes it exactly
     * symmetric, as the tiled plan's is. */
    if (job->symmetric) OC_CHECK(ctx, oc_mm_mirror(ctx, &d->dev, c, n, n, oc_mm_type_size(plan->in.out_type), stream));
    CUDA_CHECK(ctx, cudaStreamSynchronize(stream));
    oc_trace_phase(&t, "matmul", "product");
    d->res->tiles = 1;
    d->res->bytes_straight = (m + n) * k * (int64_t)oc_mm_type_size(plan->in.in_type);
    atomic_fetch_add(&d->sh->tiles_done, 1);
    return OC_OK;
}

/* The device's state given back: its stream's work awaited, then the workspace to the
 * context, the handle, the pool and its buffers, and the stream. */
static void close_device(oc_context *ctx, resident *d)
{
    if (d->dev.compute) (void)cudaStreamSynchronize(d->dev.compute);
    (void)cudaGetLastError();
    d->res->peak_device_bytes = d->work ? (int64_t)d->work->bytes : 0;
    oc_cuda_kept_give(ctx, d->work);
    oc_mm_gemm_close(&d->gemm);
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
    if (st != OC_OK) {
        res->st = st;
        res->order = atomic_fetch_add(&sh->failures, 1) + 1;
        snprintf(res->message, sizeof res->message, "%s", oc_context_last_error(ctx));
        atomic_store(&sh->stop, 1);
    }
    double t = oc_now();
    close_device(ctx, &d);
    oc_trace_phase(&t, "matmul", "device teardown");
}
