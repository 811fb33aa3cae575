/*
 * stream_run.c - oc_stream_run on one CUDA device: the caller's kernel over streamed chunks.
 *
 *   plan (stream/stream_plan.c)  chunk rows, k chunks in flight, pinned slots, threads
 *   device slots               k sets of chunk buffers, one per chunked array (pool, budget)
 *   copies (stream_copy.c)     pinned rings between the host arrays and the device buffers
 *
 * The driving thread (the caller's) walks the chunks; chunk c uses slot s = c mod k:
 *
 *   1. wait (host) until chunk c-k's kernel is done: a fault surfaces here, named by its
 *      chunk, and the host never runs more than k chunks ahead of the device
 *   2. h2d:     wait freed[s] (c-k's downloads are done) -> upload c's inputs -> uploaded[s]
 *   3. compute: wait uploaded[s] and freed[s] -> launch(c) on compute or compute2, in turn
 *               -> computed[s]
 *   4. d2h:     (for chunk c-1, issued after c's uploads and launch, so that the host does
 *               not wait on c-1's copies while the copy engine could take c's inputs)
 *               wait computed -> downloads into pinned slots, delivered by pool workers
 *               -> freed
 *
 * Events only order the streams; the host blocks in step 1, for free pinned slots, and at
 * the end (drain). Side inputs and results go up once, before chunk 0, on h2d; results come
 * back once, after the last kernel. Scratch buffers are only allocated. Progress and cancellation are handled between chunks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "core/threads.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/device.h"
#include "engine/cuda/engine_trace.h"
#include "stream/cuda/stream_copy.h"
#include "stream/stream_job.h"
#include "stream/stream_plan.h"

typedef struct slot_state {
    void **data;     /* per array: this slot's chunk buffer (side inputs: the shared one) */
    int64_t *shapes; /* per array, OC_STREAM_MAX_DIMS each */
    cudaEvent_t uploaded, computed, freed;
    int64_t chunk; /* the chunk last launched in it, -1 before */
} slot_state;

typedef struct stream_run {
    oc_context *ctx;
    oc_stream_job *job;
    oc_cuda_device dev;
    oc_stream_plan plan;
    slot_state *slots;
    void **side; /* per array: its device copy when SIDE */
    oc_stream_copy *copy;
    double launch_seconds;
    int64_t launched; /* chunks launched so far */
} stream_run;

static oc_status make_plan(stream_run *r)
{
    oc_stream_job *job = r->job;
    oc_context *ctx = r->ctx;
    char where[300];
    snprintf(where, sizeof where, "cuda:%d (%s)", r->dev.index, r->dev.name);
    oc_stream_plan_input in = {.extent = job->extent,
                               .up_row_bytes = job->up_row_bytes,
                               .down_row_bytes = job->down_row_bytes,
                               .dev_row_bytes = job->dev_row_bytes,
                               .chunked_buffers = job->chunked_buffers,
                               .side_bytes = job->side_bytes,
                               .side_buffers = job->side_buffers,
                               .result_bytes = job->result_bytes,
                               .device_total = (int64_t)r->dev.total_mem,
                               .device_free = (int64_t)r->dev.free_mem_at_open,
                               .gpu_mem_bytes = job->opts.gpu_mem_bytes,
                               .gpu_mem_fraction = job->opts.gpu_mem_fraction,
                               .host_budget = job->opts.host_mem_bytes,
                               .cores = oc_cpu_cores(),
                               .chunk_rows = job->opts.chunk_rows,
                               .in_flight = job->opts.in_flight,
                               .device_name = where};
    OC_CHECK(ctx, oc_stream_plan_make(ctx, &in, &r->plan));
    if (oc_tracing())
        fprintf(stderr,
                "outcore stream: %s: %lld chunks of %lld rows, %d in flight, budget %.1f MiB (%.1f planned), pinned "
                "%d x %.2f MiB up, %d x %.2f MiB down, %d workers\n",
                where, (long long)r->plan.chunks, (long long)r->plan.chunk_rows, r->plan.in_flight,
                (double)r->plan.device_budget / 1048576.0, (double)r->plan.device_bytes / 1048576.0, r->plan.h2d_slots,
                (double)r->plan.h2d_slot_bytes / 1048576.0, r->plan.d2h_slots,
                (double)r->plan.d2h_slot_bytes / 1048576.0, r->plan.workers);
    return OC_OK;
}

/* Device buffers and events of every slot, and the side inputs, from the pool. */
static oc_status allocate(stream_run *r)
{
    oc_context *ctx = r->ctx;
    oc_stream_job *job = r->job;
    int n = job->narrays, k = r->plan.in_flight;
    r->side = calloc((size_t)n, sizeof *r->side);
    r->slots = calloc((size_t)k, sizeof *r->slots);
    if (!r->side || !r->slots) return oc_fail(ctx, OC_ERR_NO_MEMORY, "stream: out of memory");
    for (int a = 0; a < n; ++a) {
        const oc_stream_job_array *ja = &job->arrays[a];
        if (ja->chunked) continue;
        char what[120];
        snprintf(what, sizeof what, "%s '%s'", ja->download ? "result" : "side input", ja->a.name ? ja->a.name : "?");
        OC_CHECK(ctx, oc_pool_alloc(ctx, r->dev.pool, (size_t)ja->total_bytes, what, &r->side[a]));
    }
    for (int s = 0; s < k; ++s) {
        slot_state *sl = &r->slots[s];
        sl->chunk = -1;
        sl->data = calloc((size_t)n, sizeof *sl->data);
        sl->shapes = calloc((size_t)n * OC_STREAM_MAX_DIMS, sizeof *sl->shapes);
        if (!sl->data || !sl->shapes) return oc_fail(ctx, OC_ERR_NO_MEMORY, "stream: out of memory");
        CUDA_CHECK(ctx, cudaEventCreateWithFlags(&sl->uploaded, cudaEventDisableTiming));
        CUDA_CHECK(ctx, cudaEventCreateWithFlags(&sl->computed, cudaEventDisableTiming));
        CUDA_CHECK(ctx, cudaEventCreateWithFlags(&sl->freed, cudaEventDisableTiming));
        for (int a = 0; a < n; ++a) {
            const oc_stream_job_array *ja = &job->arrays[a];
            /* Only the array's own dimensions: the entries past ndim stay 0 (calloc). */
            memcpy(sl->shapes + a * OC_STREAM_MAX_DIMS, ja->a.shape, sizeof ja->a.shape[0] * (size_t)ja->a.ndim);
            if (!ja->chunked) {
                sl->data[a] = r->side[a];
                continue;
            }
            char what[120];
            snprintf(what, sizeof what, "chunk buffer of '%s' (%lld rows)", ja->a.name ? ja->a.name : "?",
                     (long long)r->plan.chunk_rows);
            OC_CHECK(ctx,
                     oc_pool_alloc(ctx, r->dev.pool, (size_t)(r->plan.chunk_rows * ja->row_bytes), what, &sl->data[a]));
        }
    }
    return OC_OK;
}

static void free_slots(stream_run *r)
{
    for (int s = 0; r->slots && s < r->plan.in_flight; ++s) {
        slot_state *sl = &r->slots[s];
        if (sl->uploaded) (void)cudaEventDestroy(sl->uploaded);
        if (sl->computed) (void)cudaEventDestroy(sl->computed);
        if (sl->freed) (void)cudaEventDestroy(sl->freed);
        free(sl->data);
        free(sl->shapes);
    }
    (void)cudaGetLastError();
    free(r->slots);
    free(r->side);
}

static int64_t chunk_start(const stream_run *r, int64_t c) { return c * r->plan.chunk_rows; }
static int64_t chunk_rows(const stream_run *r, int64_t c)
{
    int64_t left = r->job->extent - chunk_start(r, c);
    return left < r->plan.chunk_rows ? left : r->plan.chunk_rows;
}

/* Step 1: the kernel that last used slot s is done; a fault in it is reported by its chunk. */
static oc_status slot_wait(stream_run *r, slot_state *sl)
{
    if (sl->chunk < 0) return OC_OK;
    cudaError_t e = cudaEventSynchronize(sl->computed);
    if (e == cudaSuccess) return OC_OK;
    (void)cudaGetLastError();
    return oc_fail(
        r->ctx, oc_cuda_status(e), "stream: the kernel of chunk %lld (rows %lld..%lld) failed on cuda:%d: %s",
        (long long)sl->chunk, (long long)chunk_start(r, sl->chunk),
        (long long)(chunk_start(r, sl->chunk) + chunk_rows(r, sl->chunk)), r->dev.index, cudaGetErrorString(e));
}

/* Steps 2 and 3 for chunk c in slot s. */
static oc_status upload_and_launch(stream_run *r, int64_t c, slot_state *sl)
{
    oc_context *ctx = r->ctx;
    oc_stream_job *job = r->job;
    int64_t start = chunk_start(r, c), rows = chunk_rows(r, c);
    CUDA_CHECK(ctx, cudaStreamWaitEvent(r->dev.h2d, sl->freed, 0));
    for (int a = 0; a < job->narrays; ++a) {
        const oc_stream_job_array *ja = &job->arrays[a];
        if (!ja->chunked) continue;
        sl->shapes[a * OC_STREAM_MAX_DIMS + ja->a.axis] = rows;
        if (ja->upload) OC_CHECK(ctx, oc_stream_copy_upload(ctx, r->copy, ja, start, rows, sl->data[a], r->dev.h2d));
    }
    CUDA_CHECK(ctx, cudaEventRecord(sl->uploaded, r->dev.h2d));
    cudaStream_t stream = c % 2 ? r->dev.compute2 : r->dev.compute;
    CUDA_CHECK(ctx, cudaStreamWaitEvent(stream, sl->uploaded, 0));
    CUDA_CHECK(ctx, cudaStreamWaitEvent(stream, sl->freed, 0));
    oc_stream_chunk chunk = {.index = c,
                             .count = r->plan.chunks,
                             .start = start,
                             .rows = rows,
                             .narrays = job->narrays,
                             .data = sl->data,
                             .shapes = sl->shapes,
                             .stream = (void *)stream,
                             .device = r->dev.index};
    double t0 = oc_now();
    int rc = job->spec->launch(&chunk, job->spec->user);
    r->launch_seconds += oc_now() - t0;
    if (rc != 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "stream: the launch callback returned %d for chunk %lld (rows %lld..%lld)", rc, (long long)c,
                       (long long)start, (long long)(start + rows));
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return oc_fail(ctx, oc_cuda_status(e), "stream: launching chunk %lld (rows %lld..%lld) failed: %s",
                       (long long)c, (long long)start, (long long)(start + rows), cudaGetErrorString(e));
    CUDA_CHECK(ctx, cudaEventRecord(sl->computed, stream));
    sl->chunk = c;
    r->launched = c + 1;
    return OC_OK;
}

/* Step 4 for the chunk last launched in slot s. */
static oc_status download(stream_run *r, slot_state *sl)
{
    oc_context *ctx = r->ctx;
    oc_stream_job *job = r->job;
    int64_t c = sl->chunk, start = chunk_start(r, c), rows = chunk_rows(r, c);
    CUDA_CHECK(ctx, cudaStreamWaitEvent(r->dev.d2h, sl->computed, 0));
    for (int a = 0; a < job->narrays; ++a) {
        const oc_stream_job_array *ja = &job->arrays[a];
        if (ja->chunked && ja->download)
            OC_CHECK(ctx, oc_stream_copy_download(ctx, r->copy, ja, start, rows, sl->data[a], r->dev.d2h));
    }
    CUDA_CHECK(ctx, cudaEventRecord(sl->freed, r->dev.d2h));
    return OC_OK;
}

static oc_status upload_side(stream_run *r)
{
    oc_context *ctx = r->ctx;
    for (int a = 0; a < r->job->narrays; ++a) {
        const oc_stream_job_array *ja = &r->job->arrays[a];
        if (!ja->chunked) OC_CHECK(ctx, oc_stream_copy_upload(ctx, r->copy, ja, 0, 1, r->side[a], r->dev.h2d));
    }
    return OC_OK;
}

static oc_status run_chunks(stream_run *r)
{
    oc_context *ctx = r->ctx;
    oc_stream_job *job = r->job;
    OC_CHECK(ctx, upload_side(r));
    oc_progress_pace pace = oc_progress_pace_start(job->opts.progress, job->opts.progress_user);
    slot_state *prev = NULL;
    for (int64_t c = 0; c < r->plan.chunks; ++c) {
        if (oc_cancelled(ctx)) return oc_fail(ctx, OC_ERR_CANCELLED, "stream: cancelled at chunk %lld", (long long)c);
        slot_state *sl = &r->slots[c % r->plan.in_flight];
        OC_CHECK(ctx, slot_wait(r, sl));
        OC_CHECK(ctx, upload_and_launch(r, c, sl));
        if (prev) OC_CHECK(ctx, download(r, prev));
        prev = sl;
        oc_progress_report(&pace, (double)chunk_start(r, c), (double)job->extent, 0);
    }
    if (prev) OC_CHECK(ctx, download(r, prev));
    for (int s = 0; s < r->plan.in_flight; ++s) OC_CHECK(ctx, slot_wait(r, &r->slots[s]));
    /* Every kernel is done (waited for above): the results are final. */
    for (int a = 0; a < job->narrays; ++a) {
        const oc_stream_job_array *ja = &job->arrays[a];
        if (!ja->chunked && ja->download)
            OC_CHECK(ctx, oc_stream_copy_download(ctx, r->copy, ja, 0, 1, r->side[a], r->dev.d2h));
    }
    OC_CHECK(ctx, oc_stream_copy_drain(ctx, r->copy));
    CUDA_CHECK(ctx, cudaStreamSynchronize(r->dev.d2h));
    CUDA_CHECK(ctx, cudaStreamSynchronize(r->dev.h2d));
    oc_progress_report(&pace, (double)job->extent, (double)job->extent, 1);
    return OC_OK;
}

static oc_status cuda_run(oc_stream_job *job)
{
    oc_context *ctx = job->ctx;
    stream_run r = {.ctx = ctx, .job = job};
    oc_status st = OC_OK;
    OC_CHECK_GOTO(ctx, st, oc_cuda_device_open(ctx, job->opts.device, &r.dev), cleanup);
    OC_CHECK_GOTO(ctx, st, make_plan(&r), cleanup);
    oc_mem_ops ops = oc_cuda_mem_ops(ctx);
    OC_CHECK_GOTO(ctx, st,
                  oc_pool_create(ctx, &ops, r.dev.index, r.plan.device_budget, job->opts.gpu_mem_mode,
                                 r.plan.host_budget, &r.dev.pool),
                  cleanup);
    oc_workers *workers = NULL;
    OC_CHECK_GOTO(ctx, st, oc_context_workers(ctx, r.plan.workers, &workers), cleanup);
    oc_workers_limit_tasks(workers, r.plan.sinks);
    OC_CHECK_GOTO(ctx, st, oc_stream_copy_open(ctx, r.dev.pool, &r.plan, job, r.dev.index, workers, &r.copy), cleanup);
    OC_CHECK_GOTO(ctx, st, allocate(&r), cleanup);
    st = run_chunks(&r);
    /* A kernel fault is sticky: the next CUDA call of any kind reports it, often an event or a
     * copy of a later chunk. Say which chunks were on the device. */
    if (st == OC_ERR_DEVICE && r.launched > 0 && !strstr(oc_context_last_error(ctx), "chunk")) {
        char was[OC_MESSAGE_MAX];
        snprintf(was, sizeof was, "%s", oc_context_last_error(ctx));
        int64_t first = r.launched > r.plan.in_flight ? r.launched - r.plan.in_flight : 0;
        st = oc_fail(ctx, st, "stream: a kernel of chunks %lld..%lld (the ones on the device) or a copy failed: %s",
                     (long long)first, (long long)(r.launched - 1), was);
    }
cleanup:
    if (job->stats && r.dev.pool) {
        oc_pool_stats ps;
        oc_pool_get_stats(r.dev.pool, &ps);
        oc_stream_stats *s = job->stats;
        s->chunks = r.plan.chunks, s->chunk_rows = r.plan.chunk_rows, s->in_flight = r.plan.in_flight;
        if (r.copy) oc_stream_copy_bytes(r.copy, &s->bytes_h2d, &s->bytes_d2h, &s->bytes_direct);
        s->dev_budget_bytes = ps.budget, s->dev_peak_bytes = ps.peak;
        s->pinned_bytes = r.copy ? oc_stream_copy_pinned_bytes(r.copy) : 0;
        s->launch_seconds = r.launch_seconds;
    }
    /* On failure the device may still run copies into the pinned slots: wait for it before
     * the rings go back to the pool (close synchronises every stream). */
    if (st != OC_OK && r.dev.h2d) (void)cudaDeviceSynchronize(), (void)cudaGetLastError();
    oc_stream_copy_close(r.copy);
    free_slots(&r);
    oc_cuda_device_close(&r.dev);
    return st;
}

const oc_stream_backend oc_stream_backend_cuda = {"cuda", cuda_run};
