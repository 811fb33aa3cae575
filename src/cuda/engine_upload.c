/*
 * engine_upload.c - staged panel uploads (engine_upload.h).
 */
#include "cuda/engine_upload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/threads.h"
#include "cuda/cuda_check.h"
#include "exec/sink.h"
#include "mem/staging.h"

struct oc_engine_upload {
    oc_staging_ring *ring;
    cudaEvent_t *read_done;  /* per slot: recorded after the copy that read it */
    int slots;
    int copy_threads;
    oc_workers *workers;
};

/* One piece being staged: bytes [0, bytes) of src into dst. */
typedef struct piece {
    unsigned char *dst;
    const unsigned char *src;
    int64_t bytes;
} piece;

/* Part `part` of `parts` of a piece, with non-temporal stores through the dense sink's row
 * copy (one 1-row block). */
static void copy_part(void *arg, int part, int parts)
{
    const piece *p = arg;
    int64_t per = (p->bytes + parts - 1) / parts, off = part * per;
    if (off >= p->bytes) return;
    int64_t len = p->bytes - off < per ? p->bytes - off : per;
    oc_dense_sink row = {.base = (char *)p->dst + off, .ld = len, .elem_size = 1};
    oc_dense_sink_put(&row, 0, 0, 1, len, p->src + off, len);
}

static int wait_read_done(void *user, int slot, char *why, size_t why_size)
{
    oc_engine_upload *u = user;
    cudaError_t e = cudaEventSynchronize(u->read_done[slot]);
    if (e == cudaSuccess) return 0;
    (void)cudaGetLastError();
    snprintf(why, why_size, "cudaEventSynchronize: %s", cudaGetErrorString(e));
    return 1;
}

oc_status oc_engine_upload_open(oc_context *ctx, oc_pool *pool, const oc_engine_plan *plan, size_t alloc_bytes,
                                oc_workers *workers, oc_engine_upload **out)
{
    oc_engine_upload *u = calloc(1, sizeof *u);
    if (!u) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the upload state");
    oc_status st = OC_OK;
    u->slots = plan->h2d_slots;
    u->copy_threads = plan->copy_threads;
    u->workers = workers;
    u->read_done = calloc((size_t)u->slots, sizeof *u->read_done);
    if (!u->read_done) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the upload events");
        goto cleanup;
    }
    /* The driving thread sleeps on these rather than spin beside the copy threads. */
    for (int k = 0; k < u->slots; ++k)
        CUDA_CHECK_GOTO(ctx, cudaEventCreateWithFlags(&u->read_done[k], cudaEventDisableTiming | cudaEventBlockingSync));
    oc_staging_ops ops = {.user = u, .wait_reusable = wait_read_done};
    OC_CHECK_GOTO(oc_staging_create(ctx, pool, u->slots, plan->h2d_slot_bytes, alloc_bytes, "the pinned upload ring",
                                    &ops, &u->ring));
    *out = u;
    return OC_OK;
cleanup:
    oc_engine_upload_close(u);
    return st;
}

oc_status oc_engine_upload_rows(oc_context *ctx, oc_engine_upload *u, const oc_matrix *m, int64_t row0, int64_t rows,
                                void *dst, cudaStream_t h2d, double *seconds, double *waited)
{
    double t0 = oc_now();
    int64_t row_bytes = m->words_per_row * 8, bytes = rows * row_bytes;
    int64_t slot_bytes = oc_staging_slot_bytes(u->ring) / row_bytes * row_bytes;
    const unsigned char *src = (const unsigned char *)(m->bits + row0 * m->words_per_row);
    for (int64_t off = 0; off < bytes; off += slot_bytes) {
        int64_t len = bytes - off < slot_bytes ? bytes - off : slot_bytes;
        int k;
        OC_CHECK(oc_staging_acquire(ctx, u->ring, &k, waited));
        unsigned char *pin = oc_staging_slot(u->ring, k);
        piece p = {pin, src + off, len};
        /* Small pieces are not worth waking the pool for. */
        oc_workers_split(u->workers, len < (1 << 20) ? 1 : u->copy_threads, copy_part, &p);
        cudaError_t e = cudaMemcpyAsync((char *)dst + off, pin, (size_t)len, cudaMemcpyHostToDevice, h2d);
        if (e == cudaSuccess) e = cudaEventRecord(u->read_done[k], h2d);
        oc_staging_release(u->ring, k);
        CUDA_CHECK(ctx, e);
    }
    *seconds += oc_now() - t0;
    return OC_OK;
}

void oc_engine_upload_close(oc_engine_upload *u)
{
    if (!u) return;
    oc_staging_free(u->ring);
    for (int k = 0; u->read_done && k < u->slots; ++k)
        if (u->read_done[k]) (void)cudaEventDestroy(u->read_done[k]);
    free(u->read_done);
    free(u);
}
