/* stream_copy.c - uploads and downloads of streamed chunks: through the pinned rings, or
 * straight between a pinned host array and the device (stream_copy.h). */
#include "stream/cuda/stream_copy.h"

#include <assert.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/device.h"
#include "mem/staging.h"

/* Below this a piece is gathered by the driving thread alone: a split's hand-off costs more. */
#define SPLIT_MIN (1LL << 20)

typedef struct delivery {
    oc_stream_copy *copy;
    int slot;
    const oc_stream_job_array *a;
    int64_t start, rows, off, len;
} delivery;

struct oc_stream_copy {
    oc_staging_ring *up, *down;
    cudaEvent_t *up_read;    /* per upload slot: its last H2D copy is done */
    cudaEvent_t *down_ready; /* per download slot: its D2H copy has landed */
    delivery *tasks;         /* per download slot */
    int up_slots, down_slots;
    int device;
    oc_workers *workers;
    int64_t bytes_h2d, bytes_d2h, bytes_direct;
    int64_t pinned_bytes;              /* the rings' slots */
    int direct_off;                    /* OUTCORE_PINNED_DIRECT=0: every array through the rings */
    const oc_stream_job_array *arrays; /* job->arrays: upload and download get its entries */
    int narrays;
    /* Per array of the job, by its place in arrays: copied straight. Asked of the driver once,
     * at open, since the answer holds for the whole job. */
    unsigned char *pinned;
};

/* The device current on this pool thread, as this file last set it (-1: none yet): setting
 * it takes driver locks that the driving thread's copies need, so only when it changes. */
static _Thread_local int thread_device = -1;

static int set_thread_device(int device)
{
    if (thread_device == device) return 0;
    if (cudaSetDevice(device) != cudaSuccess) return -1;
    thread_device = device;
    return 0;
}

static int wait_upload_slot(void *user, int slot, char *why, size_t why_size)
{
    oc_stream_copy *c = user;
    cudaError_t e = cudaEventSynchronize(c->up_read[slot]);
    if (e == cudaSuccess) return 0;
    (void)cudaGetLastError();
    snprintf(why, why_size, "cuda:%d: waiting for an upload: %s", c->device, cudaGetErrorString(e));
    return 1;
}

/* A ring's pinned bytes: a block the context's cache holds idle when one fits the staging
 * share of the host budget (a job after the first then pins nothing), else the need. */
static size_t ring_bytes(oc_context *ctx, const oc_stream_plan *plan, int slots, int64_t slot_bytes)
{
    int64_t need = oc_staging_bytes(slots, slot_bytes), limit = plan->host_budget / 4;
    return oc_cuda_staging_fit(ctx, (size_t)need, (size_t)(limit > need ? limit : need));
}

/* Whether a's host memory is pinned at both its ends (one allocation or registration holds
 * it: a copy from memory that is not pinned after all is still right, only slower). */
static int host_array_pinned(const oc_stream_job_array *a)
{
    const unsigned char *p = a->a.host;
    return oc_cuda_host_pinned(p) && oc_cuda_host_pinned(p + a->total_bytes - 1);
}

/* Whether a crosses straight between its host memory and the device, as open found. a is an
 * entry of the job's arrays, not a copy: its place there indexes the flags. */
static int array_pinned(const oc_stream_copy *c, const oc_stream_job_array *a)
{
    ptrdiff_t i = a - c->arrays;
    assert(i >= 0 && i < c->narrays);
    return c->pinned[i];
}

/* Rows [start, start + rows) of a, straight between its pinned host memory and dev: one
 * copy of `outer` runs, each rows * inner_bytes long, extent * inner_bytes apart on the host. */
static cudaError_t copy_direct(const oc_stream_job_array *a, int64_t start, int64_t rows, void *dev, int up,
                               cudaStream_t s)
{
    int64_t width = rows * a->inner_bytes, pitch = a->extent * a->inner_bytes;
    unsigned char *host = (unsigned char *)a->a.host + start * a->inner_bytes, *d = dev;
    enum cudaMemcpyKind kind = up ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    if (a->outer == 1 || width == pitch)
        return cudaMemcpyAsync(up ? (void *)d : host, up ? (void *)host : d, (size_t)(width * a->outer), kind, s);
    if (pitch <= INT_MAX)
        return cudaMemcpy2DAsync(up ? (void *)d : host, (size_t)(up ? width : pitch), up ? (void *)host : d,
                                 (size_t)(up ? pitch : width), (size_t)width, (size_t)a->outer, kind, s);
    cudaError_t e = cudaSuccess;
    for (int64_t o = 0; o < a->outer && e == cudaSuccess; ++o, host += pitch, d += width)
        e = cudaMemcpyAsync(up ? (void *)d : host, up ? (void *)host : d, (size_t)width, kind, s);
    return e;
}

oc_status oc_stream_copy_open(oc_context *ctx, oc_pool *pool, const oc_stream_plan *plan, const oc_stream_job *job,
                              int device, oc_workers *workers, oc_stream_copy **out)
{
    oc_stream_copy *c = calloc(1, sizeof *c);
    if (!c) return oc_fail(ctx, OC_ERR_NO_MEMORY, "stream: out of memory");
    oc_status st = OC_OK;
    int up = 0, down = 0; /* some array crosses through the upload / the download ring */
    c->device = device;
    c->workers = workers;
    const char *direct = getenv("OUTCORE_PINNED_DIRECT");
    c->direct_off = direct && strcmp(direct, "0") == 0;
    c->arrays = job->arrays;
    c->narrays = job->narrays;
    c->pinned = calloc((size_t)job->narrays + 1, sizeof *c->pinned);
    if (!c->pinned) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "stream: out of memory");
        goto cleanup;
    }
    /* A ring only where some array passes through it: pinning a ring is a fixed cost of the
     * job (on a context's first job, before the cache holds a block). Arrays never copied
     * (scratch: no host memory) are not asked about and stay unpinned. */
    for (int i = 0; i < job->narrays; ++i) {
        const oc_stream_job_array *a = &job->arrays[i];
        if (!a->upload && !a->download) continue;
        c->pinned[i] = !c->direct_off && host_array_pinned(a);
        if (!c->pinned[i]) up |= a->upload, down |= a->download;
    }
    c->up_slots = up ? plan->h2d_slots : 0;
    c->down_slots = down ? plan->d2h_slots : 0;
    c->up_read = calloc((size_t)c->up_slots + 1, sizeof *c->up_read);
    c->down_ready = calloc((size_t)c->down_slots + 1, sizeof *c->down_ready);
    c->tasks = calloc((size_t)c->down_slots + 1, sizeof *c->tasks);
    if (!c->up_read || !c->down_ready || !c->tasks) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "stream: out of memory");
        goto cleanup;
    }
    for (int i = 0; i < c->up_slots; ++i)
        CUDA_CHECK_GOTO(ctx, st, cudaEventCreateWithFlags(&c->up_read[i], cudaEventDisableTiming), cleanup);
    for (int i = 0; i < c->down_slots; ++i)
        CUDA_CHECK_GOTO(ctx, st, cudaEventCreateWithFlags(&c->down_ready[i], cudaEventDisableTiming), cleanup);
    if (c->up_slots) {
        /* A fresh event counts as done, so a slot never used waits for nothing. */
        oc_staging_ops ops = {c, wait_upload_slot};
        OC_CHECK_GOTO(ctx, st,
                      oc_staging_create(ctx, pool, c->up_slots, plan->h2d_slot_bytes,
                                        ring_bytes(ctx, plan, c->up_slots, plan->h2d_slot_bytes), "stream upload ring",
                                        &ops, &c->up),
                      cleanup);
    }
    if (c->down_slots)
        OC_CHECK_GOTO(ctx, st,
                      oc_staging_create(ctx, pool, c->down_slots, plan->d2h_slot_bytes,
                                        ring_bytes(ctx, plan, c->down_slots, plan->d2h_slot_bytes),
                                        "stream download ring", NULL, &c->down),
                      cleanup);
    c->pinned_bytes = (int64_t)c->up_slots * plan->h2d_slot_bytes + (int64_t)c->down_slots * plan->d2h_slot_bytes;
    *out = c;
    return OC_OK;
cleanup:
    oc_stream_copy_close(c);
    return st;
}

typedef struct gather_split {
    const oc_stream_job_array *a;
    int64_t start, rows, off, len;
    unsigned char *dst;
} gather_split;

static void gather_part(void *arg, int part, int parts)
{
    gather_split *g = arg;
    /* Parts on 64-byte boundaries, so no two threads write one cache line. */
    int64_t per = (g->len / parts + 63) / 64 * 64, lo = per * part, hi = lo + per < g->len ? lo + per : g->len;
    if (lo < hi) oc_stream_gather(g->a, g->start, g->rows, g->off + lo, hi - lo, g->dst + lo);
}

oc_status oc_stream_copy_upload(oc_context *ctx, oc_stream_copy *c, const oc_stream_job_array *a, int64_t start,
                                int64_t rows, void *dev, cudaStream_t h2d)
{
    const int64_t bytes = rows * a->row_bytes;
    if (array_pinned(c, a)) {
        cudaError_t e = copy_direct(a, start, rows, dev, 1, h2d);
        if (e != cudaSuccess) return oc_cuda_fail_at(ctx, e, "upload of a chunk", __FILE__, __LINE__);
        c->bytes_h2d += bytes, c->bytes_direct += bytes;
        return OC_OK;
    }
    const int64_t piece = oc_staging_slot_bytes(c->up); /* a ring exists: a has no pinned memory */
    for (int64_t off = 0; off < bytes; off += piece) {
        int64_t len = bytes - off < piece ? bytes - off : piece;
        int slot;
        OC_CHECK(ctx, oc_staging_acquire(ctx, c->up, &slot, NULL));
        gather_split g = {a, start, rows, off, len, oc_staging_slot(c->up, slot)};
        int parts = c->workers ? oc_workers_count(c->workers) + 1 : 1;
        if (len < SPLIT_MIN || parts < 2) gather_part(&g, 0, 1);
        else oc_workers_split(c->workers, parts, gather_part, &g);
        cudaError_t e = cudaMemcpyAsync((unsigned char *)dev + off, g.dst, (size_t)len, cudaMemcpyHostToDevice, h2d);
        if (e == cudaSuccess) e = cudaEventRecord(c->up_read[slot], h2d);
        oc_staging_release(c->up, slot);
        if (e != cudaSuccess) return oc_cuda_fail_at(ctx, e, "upload of a chunk", __FILE__, __LINE__);
        c->bytes_h2d += len;
    }
    return OC_OK;
}

/* On a pool worker: the piece into the host array once its copy has landed. */
static void deliver(void *arg)
{
    delivery *t = arg;
    oc_stream_copy *c = t->copy;
    cudaError_t e = set_thread_device(c->device) ? cudaGetLastError() : cudaSuccess;
    if (e == cudaSuccess) e = cudaEventSynchronize(c->down_ready[t->slot]);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        oc_staging_fail(c->down, oc_cuda_status(e), "cuda:%d: the download of '%s' rows %lld..%lld failed: %s",
                        c->device, t->a->a.name ? t->a->a.name : "?", (long long)t->start,
                        (long long)(t->start + t->rows), cudaGetErrorString(e));
    } else if (!oc_staging_failed(c->down)) {
        oc_stream_scatter(t->a, t->start, t->rows, t->off, t->len, oc_staging_slot(c->down, t->slot));
    }
    oc_staging_release(c->down, t->slot);
}

oc_status oc_stream_copy_download(oc_context *ctx, oc_stream_copy *c, const oc_stream_job_array *a, int64_t start,
                                  int64_t rows, const void *dev, cudaStream_t d2h)
{
    const int64_t bytes = rows * a->row_bytes;
    if (array_pinned(c, a)) {
        /* Done when d2h is: the run synchronises it before it returns, and the device
         * before it frees anything on failure. */
        cudaError_t e = copy_direct(a, start, rows, (void *)dev, 0, d2h);
        if (e != cudaSuccess) return oc_cuda_fail_at(ctx, e, "download of a chunk", __FILE__, __LINE__);
        c->bytes_d2h += bytes, c->bytes_direct += bytes;
        return OC_OK;
    }
    const int64_t piece = oc_staging_slot_bytes(c->down);
    for (int64_t off = 0; off < bytes; off += piece) {
        int64_t len = bytes - off < piece ? bytes - off : piece;
        int slot;
        OC_CHECK(ctx, oc_staging_acquire(ctx, c->down, &slot, NULL));
        cudaError_t e = cudaMemcpyAsync(oc_staging_slot(c->down, slot), (const unsigned char *)dev + off, (size_t)len,
                                        cudaMemcpyDeviceToHost, d2h);
        if (e == cudaSuccess) e = cudaEventRecord(c->down_ready[slot], d2h);
        if (e != cudaSuccess) {
            oc_staging_release(c->down, slot);
            return oc_cuda_fail_at(ctx, e, "download of a chunk", __FILE__, __LINE__);
        }
        c->tasks[slot] = (delivery){c, slot, a, start, rows, off, len};
        oc_status st = c->workers ? oc_workers_post(ctx, c->workers, deliver, &c->tasks[slot]) : OC_ERR_NO_MEMORY;
        if (st != OC_OK) deliver(&c->tasks[slot]); /* no queue room: deliver here, in order */
        c->bytes_d2h += len;
    }
    return OC_OK;
}

oc_status oc_stream_copy_drain(oc_context *ctx, oc_stream_copy *c)
{
    if (c->down) OC_CHECK(ctx, oc_staging_drain(ctx, c->down));
    if (c->up) OC_CHECK(ctx, oc_staging_drain(ctx, c->up));
    return OC_OK;
}

void oc_stream_copy_bytes(const oc_stream_copy *c, int64_t *h2d, int64_t *d2h, int64_t *direct)
{
    *h2d = c->bytes_h2d;
    *d2h = c->bytes_d2h;
    *direct = c->bytes_direct;
}

int64_t oc_stream_copy_pinned_bytes(const oc_stream_copy *c) { return c->pinned_bytes; }

void oc_stream_copy_close(oc_stream_copy *c)
{
    if (!c) return;
    if (c->down) (void)oc_staging_drain(NULL, c->down);
    oc_staging_free(c->down);
    oc_staging_free(c->up);
    for (int i = 0; i < c->up_slots && c->up_read; ++i)
        if (c->up_read[i]) (void)cudaEventDestroy(c->up_read[i]);
    for (int i = 0; i < c->down_slots && c->down_ready; ++i)
        if (c->down_ready[i]) (void)cudaEventDestroy(c->down_ready[i]);
    (void)cudaGetLastError();
    free(c->up_read);
    free(c->down_ready);
    free(c->tasks);
    free(c->pinned);
    free(c);
}
