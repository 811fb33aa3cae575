/*
 * engine_sinks.c - the download ring and its sink tasks (engine_sinks.h).
 *
 * Each slot has its own ready event and its own task record, so a posted task owns its slot
 * until it releases it and nothing is allocated per block.
 */
#include "engine/cuda/engine_sinks.h"

#include <stdlib.h>

#include "core/error.h"
#include "engine/cuda/cuda_check.h"
#include "mem/staging.h"

typedef struct sink_task {
    oc_engine_sinks *sinks;
    int slot;
    int64_t i0, j0, rows, cols;
} sink_task;

struct oc_engine_sinks {
    oc_staging_ring *ring;
    cudaEvent_t *ready;
    sink_task *tasks;
    int slots;
    int device;
    oc_dense_sink *dense;
    int host_mirror;
    oc_workers *workers;
    size_t elem;
};

/* The device current on this thread, as this file last set it (-1: none yet). */
static _Thread_local int thread_device = -1;

/* On a pool worker: the slot's rows to the destination once its copy has landed. */
static void deliver(void *arg)
{
    sink_task *t = arg;
    oc_engine_sinks *s = t->sinks;
    /* The runtime's current device is per thread, and pool threads serve every device; it is
     * set only when it changes, since setting it takes the driver's locks that the driving
     * thread's copies and events need too. */
    cudaError_t e = cudaSuccess;
    if (thread_device != s->device) {
        e = cudaSetDevice(s->device);
        if (e == cudaSuccess) thread_device = s->device;
    }
    if (e == cudaSuccess) e = cudaEventSynchronize(s->ready[t->slot]);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        oc_staging_fail(s->ring, oc_cuda_status(e), "cuda:%d: waiting for the copy of tile rows %lld.. : %s", s->device,
                        (long long)t->i0, cudaGetErrorString(e));
    } else if (!oc_staging_failed(s->ring)) {
        const void *rows = oc_staging_slot(s->ring, t->slot);
        if (s->host_mirror) oc_dense_sink_store(s->dense, t->i0, t->j0, t->rows, t->cols, rows, t->cols);
        else oc_dense_sink_put(s->dense, t->i0, t->j0, t->rows, t->cols, rows, t->cols);
    }
    oc_staging_release(s->ring, t->slot);
}

oc_status oc_engine_sinks_open(oc_context *ctx, oc_pool *pool, const oc_engine_plan *plan, size_t alloc_bytes,
                               int device, oc_dense_sink *dense, int host_mirror, oc_workers *workers,
                               oc_engine_sinks **out)
{
    oc_engine_sinks *s = calloc(1, sizeof *s);
    if (!s) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the sinks");
    oc_status st = OC_OK;
    s->slots = plan->d2h_slots;
    s->device = device;
    s->dense = dense;
    s->host_mirror = host_mirror;
    s->workers = workers;
    s->elem = dense->elem_size;
    s->ready = calloc((size_t)s->slots, sizeof *s->ready);
    s->tasks = calloc((size_t)s->slots, sizeof *s->tasks);
    if (!s->ready || !s->tasks) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the sinks' slot tables");
        goto cleanup;
    }
    OC_CHECK_GOTO(ctx, st,
                  oc_staging_create(ctx, pool, s->slots, plan->d2h_slot_bytes, alloc_bytes, "the pinned download ring",
                                    NULL, &s->ring),
                  cleanup);
    /* Sinks sleep on these events rather than spin: a dozen spinning threads would take the
     * cores the copies need. No timing: they only order work. */
    for (int k = 0; k < s->slots; ++k)
        CUDA_CHECK_GOTO(ctx, st, cudaEventCreateWithFlags(&s->ready[k], cudaEventDisableTiming | cudaEventBlockingSync),
                        cleanup);
    *out = s;
    return OC_OK;
cleanup:
    oc_engine_sinks_close(s);
    return st;
}

oc_status oc_engine_sinks_download(oc_context *ctx, oc_engine_sinks *s, const char *src, size_t pitch, int64_t i0,
                                   int64_t j0, int64_t rows, int64_t cols, cudaStream_t d2h, int64_t *bytes,
                                   double *waited)
{
    size_t width = (size_t)cols * s->elem;
    *bytes += rows * (int64_t)width;
    int64_t chunk_rows = oc_staging_slot_bytes(s->ring) / (int64_t)width;
    for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
        int64_t nr = rows - r0 < chunk_rows ? rows - r0 : chunk_rows;
        int k = 0;
        OC_CHECK(ctx, oc_staging_acquire(ctx, s->ring, &k, waited));
        cudaError_t e = cudaMemcpy2DAsync(oc_staging_slot(s->ring, k), width, src + (size_t)r0 * pitch, pitch, width,
                                          (size_t)nr, cudaMemcpyDeviceToHost, d2h);
        if (e == cudaSuccess) e = cudaEventRecord(s->ready[k], d2h);
        if (e != cudaSuccess) {
            oc_staging_release(s->ring, k);
            CUDA_CHECK(ctx, e);
        }
        s->tasks[k] = (sink_task){s, k, i0 + r0, j0, nr, cols};
        oc_status st = oc_workers_post(ctx, s->workers, deliver, &s->tasks[k]);
        if (st != OC_OK) {
            /* The copy is enqueued: the slot stays held until the device is done with it. */
            (void)cudaEventSynchronize(s->ready[k]);
            oc_staging_release(s->ring, k);
            return oc_trace_at(ctx, st, __FILE__, __LINE__);
        }
    }
    return OC_OK;
}

oc_status oc_engine_sinks_drain(oc_context *ctx, oc_engine_sinks *s) { return oc_staging_drain(ctx, s->ring); }

void oc_engine_sinks_close(oc_engine_sinks *s)
{
    if (!s) return;
    if (s->ring) {
        oc_context *ignore = NULL;
        (void)oc_staging_drain(ignore, s->ring);
        oc_staging_free(s->ring);
    }
    for (int k = 0; s->ready && k < s->slots; ++k)
        if (s->ready[k]) (void)cudaEventDestroy(s->ready[k]);
    free(s->ready);
    free(s->tasks);
    free(s);
}
