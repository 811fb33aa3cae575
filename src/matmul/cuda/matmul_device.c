/*
 * matmul_device.c - one device's share of a CUDA matmul job: its set-up, the driver (the
 * calling thread) and its teardown, the reader (matmul_reader.c) and the writer
 * (matmul_writer.c) beside it (matmul_device.h draws the three threads and the events between
 * the streams).
 */
#include "matmul/cuda/matmul_device.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/threads.h"
#include "core/trace.h"
#include "core/workers.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/device.h"
#include "matmul/cuda/matmul_gemm.h"
#include "matmul/matmul_dtype.h"
#include "matmul/cuda/kernels/matmul_pack.cuh"
#include "matmul/cuda/kernels/matmul_promote.cuh"
#include "matmul/cuda/kernels/matmul_round.cuh"
#include "matmul/cuda/matmul_reader.h"
#include "matmul/cuda/matmul_writer.h"
#include "mem/pool.h"

/* ---------------------------------------------------------------- driver */
/* Rounds (FP16/BF16 and bool output) the finished accumulator c and hands it to the writer. */
static oc_status finish_tile(oc_mm_device *d, int c, const oc_mm_panel_slot *s)
{
    oc_context *ctx = d->ctx;
    const oc_mm_cuda_plan *plan = d->plan;
    const int64_t ldc = oc_mm_cuda_ldc(plan, s->cols);
    const void *src = d->d_acc[c];
    int64_t ld = ldc, elem = (int64_t)oc_mm_type_size(plan->acc_type);
    if (d->d_round[c]) {
        OC_CHECK(ctx, oc_mm_round_acc(ctx, &d->dev, d->d_acc[c], s->rows, s->cols, ldc, plan->in.out_type,
                                      d->d_round[c], d->dev.compute));
        src = d->d_round[c], ld = s->cols, elem = (int64_t)oc_mm_type_size(plan->in.out_type);
    }
    CUDA_CHECK(ctx, cudaEventRecord(d->ev[OC_MM_EV_COMPUTED][c], d->dev.compute));
    pthread_mutex_lock(&d->mu);
    d->ready[c] = (oc_mm_ready_tile){1, src, s->row0, s->rows, s->col0, s->cols, ld, elem};
    d->tiles_sent++;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return OC_OK;
}

/* Before a tile's first product into accumulator c: the writer has put the download of the
 * tile that last used c on its stream (its event then orders the product after it). */
static void wait_accumulator(oc_mm_device *d, int64_t tile_seq)
{
    pthread_mutex_lock(&d->mu);
    while (d->downloads_enqueued < tile_seq - 1 && !oc_mm_dev_stopped(d)) oc_mm_dev_wait(d);
    pthread_mutex_unlock(&d->mu);
}

/* One K panel in device slot ds, once uploaded: (a mixed pair: promote, int8: pack,)
 * multiply into accumulator c. */
static oc_status compute_panel(oc_mm_device *d, int ds, int c, const oc_mm_panel_slot *s)
{
    oc_context *ctx = d->ctx;
    const oc_mm_cuda_plan *plan = d->plan;
    cudaStream_t compute = d->dev.compute;
    CUDA_CHECK(ctx, cudaStreamWaitEvent(compute, d->ev[OC_MM_EV_UPLOADED][ds], 0));
    if (s->panel == 0) CUDA_CHECK(ctx, cudaStreamWaitEvent(compute, d->ev[OC_MM_EV_DOWNLOADED][c], 0));
    const void *a = d->d_panel[ds], *b = (const char *)a + oc_mm_cuda_b_offset(s->rows * s->depth * plan->elem[0]);
    if (d->d_promoted) { /* a mixed pair: the stored operand converted to the compute type */
        const int64_t in = (int64_t)oc_mm_type_size(plan->in.in_type);
        char *pa = d->d_promoted,
             *pb = pa + (plan->in.from[0] != OC_MATMUL_DEFAULT ? oc_mm_cuda_b_offset(plan->tm * plan->kp * in) : 0);
        if (plan->in.from[0] != OC_MATMUL_DEFAULT) {
            OC_CHECK(ctx, oc_mm_promote(ctx, &d->dev, plan->in.from[0], a, s->rows * s->depth, plan->in.in_type, pa,
                                        compute));
            a = pa;
        }
        if (plan->in.from[1] != OC_MATMUL_DEFAULT) {
            OC_CHECK(ctx, oc_mm_promote(ctx, &d->dev, plan->in.from[1], b, s->depth * s->cols, plan->in.in_type, pb,
                                        compute));
            b = pb;
        }
    }
    if (plan->in.in_type == OC_MM_INT8) {
        const int64_t kpad = (s->depth + 15) / 16 * 16;
        int8_t *pa = d->d_pack, *pb = pa + plan->tm * plan->kpad;
        OC_CHECK(ctx, oc_mm_pack_rows_i8(ctx, &d->dev, a, s->rows, s->depth, pa, kpad, compute));
        OC_CHECK(ctx, oc_mm_transpose_i8(ctx, &d->dev, b, s->depth, s->cols, s->cols, pb, kpad,
                                         oc_mm_cuda_ldc(plan, s->cols), compute));
        CUDA_CHECK(ctx, cudaEventRecord(d->ev[OC_MM_EV_SLOT_FREE][ds], compute));
        a = pa, b = pb;
    }
    OC_CHECK(ctx, oc_mm_gemm_run(ctx, &d->gemm, s->rows, s->cols, s->depth, a, b, d->d_acc[c], s->panel > 0, compute));
    if (plan->in.in_type != OC_MM_INT8) CUDA_CHECK(ctx, cudaEventRecord(d->ev[OC_MM_EV_SLOT_FREE][ds], compute));
    return OC_OK;
}

static oc_status drive(oc_mm_device *d)
{
    int64_t tile_seq = 0;
    for (int64_t seq = 0;; ++seq) {
        oc_mm_panel_slot *s = &d->slot[seq % 2];
        pthread_mutex_lock(&d->mu);
        while (!s->filled && !(d->reader_done && seq >= d->panels_read) && !oc_mm_dev_stopped(d)) oc_mm_dev_wait(d);
        const int have = s->filled && !oc_mm_dev_stopped(d);
        pthread_mutex_unlock(&d->mu);
        if (!have) return OC_OK;
        const oc_mm_panel_slot meta = *s;
        const int c = (int)(tile_seq % 2);
        if (meta.panel == 0 && tile_seq >= 2) {
            wait_accumulator(d, tile_seq);
            if (oc_mm_dev_stopped(d)) return OC_OK; /* another thread's failure ends the job */
        }
        oc_status st = compute_panel(d, (int)(seq % 2), c, &meta);
        if (st != OC_OK) return st;
        pthread_mutex_lock(&d->mu);
        s->filled = 0;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
        if (meta.panel == 0 && oc_tracing_tiles())
            fprintf(stderr, "outcore %s: tile at (%lld, %lld) first panel %.6f s\n", d->who, (long long)meta.row0,
                    (long long)meta.col0, oc_now() - d->started);
        if (meta.panel == d->plan->panels - 1) {
            if ((st = finish_tile(d, c, &meta)) != OC_OK) return st;
            ++tile_seq;
        }
    }
}

/* ---------------------------------------------------------------- set-up */
/* Whether operand `which` (rows x cols of op(X)) lies wholly in page-locked or device caller
 * memory; *on_device: device memory. */
static int whole_straight(const oc_matmul_job *job, oc_mm_operand which, int64_t rows, int64_t cols, int64_t elem,
                          int *on_device)
{
    int64_t ld = 0;
    const void *p = job->panel_memory ? job->panel_memory(job, which, 0, 0, &ld) : NULL;
    *on_device = p && oc_cuda_memory_device(p) >= 0;
    return oc_mm_dev_straight_span(p, rows, cols, ld, elem);
}

static oc_status setup(oc_mm_device *d, int device)
{
    oc_context *ctx = d->ctx;
    const oc_mm_cuda_plan *plan = d->plan;
    double t = oc_now();
    OC_CHECK(ctx, oc_cuda_device_open(ctx, device, &d->dev));
    oc_trace_phase(&t, d->who, "open");
    const oc_matmul_job *job = d->job;
    d->whole[0] = whole_straight(job, OC_MM_A, job->m, job->k, plan->elem[0], &d->on_device[0]);
    d->whole[1] = whole_straight(job, OC_MM_B, job->k, job->n, plan->elem[1], &d->on_device[1]);
    int64_t ldc = 0;
    void *c = job->tile_memory ? job->tile_memory(job, 0, 0, &ldc) : NULL;
    d->whole_c = oc_mm_dev_straight_span(c, job->m, job->n, ldc, (int64_t)oc_mm_type_size(job->out_type));
    d->on_device_c = c && oc_cuda_memory_device(c) >= 0;
    const oc_mem_ops ops = oc_cuda_mem_ops(ctx);
    OC_CHECK(ctx, oc_pool_create(ctx, &ops, device, plan->in.device_budget, OC_GPU_MEM_GROW, plan->pinned_bytes + 4096,
                                 &d->dev.pool));
    oc_pool *pool = d->dev.pool;
    for (int i = 0; i < 2; ++i) {
        OC_CHECK(ctx, oc_pool_alloc(ctx, pool, (size_t)plan->panel_bytes, "a matmul panel slot", &d->d_panel[i]));
        OC_CHECK(ctx, oc_pool_alloc(ctx, pool, (size_t)plan->acc_bytes, "a matmul accumulator", &d->d_acc[i]));
        if (plan->round_bytes)
            OC_CHECK(ctx, oc_pool_alloc(ctx, pool, (size_t)plan->round_bytes, "a rounded matmul tile", &d->d_round[i]));
    }
    oc_trace_phase(&t, d->who, "device slots");
    for (int i = 0; i < OC_MM_OUT_SLOTS; ++i)
        CUDA_CHECK(ctx, cudaEventCreateWithFlags(&d->ev_piece[i], cudaEventDisableTiming));
    /* The host's threads shared among the devices, for each device's reader and writer. */
    const int nd = d->sh->plan->in.ndevices > 0 ? d->sh->plan->in.ndevices : 1;
    const int threads = oc_threads_resolve(d->job->threads) / nd;
    d->copy_threads = threads > 1 ? threads : 1;
    if (d->copy_threads > 1) {
        OC_CHECK(ctx, oc_workers_create(ctx, d->copy_threads - 1, &d->read_crew));
        OC_CHECK(ctx, oc_workers_create(ctx, d->copy_threads - 1, &d->write_crew));
        d->copy_threads =
            1 + (oc_workers_count(d->read_crew) < oc_workers_count(d->write_crew) ? oc_workers_count(d->read_crew)
                                                                                  : oc_workers_count(d->write_crew));
    }
    if (plan->pack_bytes)
        OC_CHECK(ctx, oc_pool_alloc(ctx, pool, (size_t)plan->pack_bytes, "the int8 packed panels", &d->d_pack));
    if (plan->promoted_bytes)
        OC_CHECK(ctx, oc_pool_alloc(ctx, pool, (size_t)plan->promoted_bytes, "the promoted panels", &d->d_promoted));
    if (plan->workspace)
        OC_CHECK(ctx, oc_pool_alloc(ctx, pool, (size_t)plan->workspace, "the cuBLASLt workspace", &d->d_work));
    oc_trace_phase(&t, d->who, "workers");
    /* The pinned upload and download slots are taken by the reader and the writer as they
     * first need them (oc_mm_dev_pin_slot). */
    d->nup = plan->up_slots < OC_MM_UP_SLOTS ? plan->up_slots : OC_MM_UP_SLOTS;
    for (int i = 0; i < d->nup; ++i) CUDA_CHECK(ctx, cudaEventCreateWithFlags(&d->ev_up[i], cudaEventDisableTiming));
    /* A first panel multiplies with beta 0, which BLAS defines as not reading C; zeroed
     * accumulators keep that true (no NaN from fresh memory) should an algorithm read it. */
    for (int i = 0; i < 2; ++i)
        CUDA_CHECK(ctx, cudaMemsetAsync(d->d_acc[i], 0, (size_t)plan->acc_bytes, d->dev.compute));
    for (int k = 0; k < OC_MM_EV_KINDS; ++k)
        for (int i = 0; i < 2; ++i) CUDA_CHECK(ctx, cudaEventCreateWithFlags(&d->ev[k][i], cudaEventDisableTiming));
    return oc_mm_gemm_open(ctx, d->sh->lt, plan, d->d_work, &d->gemm);
}

static void teardown(oc_mm_device *d)
{
    if (d->dev.compute) (void)cudaStreamSynchronize(d->dev.compute);
    if (d->dev.h2d) (void)cudaStreamSynchronize(d->dev.h2d);
    if (d->dev.d2h) (void)cudaStreamSynchronize(d->dev.d2h);
    (void)cudaGetLastError();
    oc_mm_gemm_close(&d->gemm);
    for (int k = 0; k < OC_MM_EV_KINDS; ++k)
        for (int i = 0; i < 2; ++i)
            if (d->ev[k][i]) (void)cudaEventDestroy(d->ev[k][i]);
    for (int i = 0; i < OC_MM_OUT_SLOTS; ++i)
        if (d->ev_piece[i]) (void)cudaEventDestroy(d->ev_piece[i]);
    for (int i = 0; i < OC_MM_UP_SLOTS; ++i)
        if (d->ev_up[i]) (void)cudaEventDestroy(d->ev_up[i]);
    oc_workers_free(d->read_crew);
    oc_workers_free(d->write_crew);
    if (d->dev.pool) {
        oc_pool_stats ps;
        oc_pool_get_stats(d->dev.pool, &ps);
        d->res->peak_device_bytes = ps.peak;
        d->res->peak_pinned_bytes = ps.host_peak;
    }
    oc_cuda_device_close(&d->dev); /* the pool and its buffers with it */
    (void)cudaGetLastError();
}

/* The tiled plan: set-up, then the reader and the writer beside the driver (this thread). */
static void run_tiles(oc_mm_device *d, int device)
{
    oc_context *ctx = d->ctx;
    pthread_t reader, writer;
    int readers = 0, writers = 0;
    double t = d->started = oc_now();
    oc_status st = setup(d, device);
    oc_trace_phase(&t, d->who, "set-up");
    if (st == OC_OK) {
        readers = oc_thread_start(&reader, 0, oc_mm_reader_main, d) == 0;
        writers = oc_thread_start(&writer, 0, oc_mm_writer_main, d) == 0;
        if (!readers || !writers)
            st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot start the threads of CUDA device %d", device);
    }
    if (st == OC_OK) st = drive(d);
    if (st != OC_OK) oc_mm_dev_fail(d, st, 0, oc_context_last_error(ctx));
    if (oc_tracing()) { /* when the last product ended (a wait only a trace pays) */
        if (d->dev.compute) (void)cudaStreamSynchronize(d->dev.compute);
        oc_trace_phase(&t, d->who, "products");
    }
    pthread_mutex_lock(&d->mu);
    d->driver_done = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    if (readers) pthread_join(reader, NULL);
    if (writers) pthread_join(writer, NULL);
    oc_trace_phase(&t, d->who, "last writes");
}

void oc_mm_device_run(oc_context *ctx, oc_mm_shared *sh, int device, oc_mm_device_result *res)
{
    memset(res, 0, sizeof *res);
    oc_mm_device *d = calloc(1, sizeof *d);
    if (!d || oc_context_create(&d->reader_ctx) != OC_OK || oc_context_create(&d->writer_ctx) != OC_OK) {
        char message[64];
        snprintf(message, sizeof message, "cannot allocate the state of CUDA device %d", device);
        oc_mm_device_failed(sh, res, OC_ERR_NO_MEMORY, 0, message);
        if (d) oc_context_free(d->reader_ctx), free(d);
        return;
    }
    d->ctx = ctx, d->sh = sh, d->plan = sh->plan, d->job = sh->job, d->res = res;
    snprintf(d->who, sizeof d->who, "matmul cuda:%d", device);
    pthread_mutex_init(&d->mu, NULL);
    pthread_mutex_init(&d->pin_mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    run_tiles(d, device);
    double t = oc_now();
    teardown(d);
    oc_trace_phase(&t, d->who, "teardown");
    oc_context_free(d->reader_ctx);
    oc_context_free(d->writer_ctx);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    pthread_mutex_destroy(&d->pin_mu);
    free(d);
}
