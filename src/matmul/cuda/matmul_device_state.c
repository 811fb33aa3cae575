/*
 * matmul_device_state.c - the steps the three threads of a device's share of a CUDA matmul
 * job all take (matmul_device_state.h).
 */
#include "matmul/cuda/matmul_device_state.h"

#include <stdio.h>
#include <time.h>

#include "core/error.h"
#include "engine/cuda/cuda_check.h"
#include "mem/pool.h"

/* How often a waiting device thread looks for a stop that another device set. */
#define STOP_POLL_NS (20 * 1000 * 1000)

/* Waits on the device's condition with mu held; wakes at least every STOP_POLL_NS to see a
 * stop that another device set. */
void oc_mm_dev_wait(oc_mm_device *d)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += STOP_POLL_NS;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&d->cv, &d->mu, &ts);
}

void oc_mm_device_failed(oc_mm_shared *sh, oc_mm_device_result *res, oc_status st, int on_job, const char *message)
{
    if (res->st == OC_OK) {
        res->st = st;
        res->order = atomic_fetch_add(&sh->failures, 1) + 1;
        res->message_on_job = on_job;
        snprintf(res->message, sizeof res->message, "%s", message ? message : "");
    }
    atomic_store(&sh->stop, 1);
}

/* Records the device's first failure (its message already on the job's context, or given),
 * stops every device and wakes this device's reader and writer. */
void oc_mm_dev_fail(oc_mm_device *d, oc_status st, int on_job, const char *message)
{
    pthread_mutex_lock(&d->mu);
    oc_mm_device_failed(d->sh, d->res, st, on_job, message);
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* ---------------------------------------------------------------- caller memory */
/* Whether byte p is memory a device copies from and to directly: page-locked host memory or
 * device memory (of any device: copies between devices go through peer access or the driver). */
static int copyable(const void *p) { return oc_cuda_host_pinned(p) || oc_cuda_memory_device(p) >= 0; }

/* Whether rows x cols elements of elem bytes from p, ld elements between rows, are such
 * memory at both ends (one allocation or registration holds them: a copy from memory that is
 * not pinned after all is still right, only slower). */
int oc_mm_dev_straight_span(const void *p, int64_t rows, int64_t cols, int64_t ld, int64_t elem)
{
    if (!p || rows <= 0 || cols <= 0) return 0;
    const unsigned char *first = p, *last = first + ((rows - 1) * ld + cols) * elem - 1;
    return copyable(first) && copyable(last);
}

/* ---------------------------------------------------------------- copies */
/* Below this many bytes a copy is not cut: the parts' hand-over would cost more than it saves. */
#define COPY_PART_BYTES (4LL << 20)

/* Into how many parts to cut a copy of `bytes` (1: the calling thread alone). */
int oc_mm_dev_copy_parts(const oc_mm_device *d, int64_t bytes)
{
    const int64_t parts = bytes / COPY_PART_BYTES;
    return parts < 1 ? 1 : parts < d->copy_threads ? (int)parts : d->copy_threads;
}

/* ---------------------------------------------------------------- pinned slots */
/* Pins a slot of `bytes` into *host the first time it is needed (a no-op after), from the
 * device's pool, on the reader's or the writer's thread (ctx: that thread's, for the
 * message): pinning costs the driver time per page, and the devices of a job pin one after
 * another, so no slot is pinned before it is needed. Returns 0 when it failed (the job then
 * stops). Past set-up only these calls use the pool, one at a time (pin_mu). */
int oc_mm_dev_pin_slot(oc_mm_device *d, oc_context *ctx, void **host, int64_t bytes, const char *what)
{
    if (*host) return 1;
    pthread_mutex_lock(&d->pin_mu);
    const oc_status st = oc_pool_host_alloc(ctx, d->dev.pool, (size_t)bytes, what, host);
    pthread_mutex_unlock(&d->pin_mu);
    if (st == OC_OK) return 1;
    oc_mm_dev_fail(d, st, 0, oc_context_last_error(ctx));
    return 0;
}

/* Fails the job on a CUDA error of a copy for the tile at (row0, col0): `what`, "the upload
 * of a panel of" or "the download of". */
void oc_mm_dev_copy_failed(oc_mm_device *d, cudaError_t e, const char *what, int64_t row0, int64_t col0)
{
    (void)cudaGetLastError();
    char message[400];
    snprintf(message, sizeof message, "%s the tile at row %lld, column %lld: %s", what, (long long)row0,
             (long long)col0, cudaGetErrorString(e));
    oc_mm_dev_fail(d, oc_cuda_status(e), 0, message);
}
