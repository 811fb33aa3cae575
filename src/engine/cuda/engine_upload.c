/*
 * engine_upload.c - staged panel uploads (engine_upload.h).
 */
#include "engine/cuda/engine_upload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "core/threads.h"
#include "engine/cuda/cuda_check.h"
#include "engine/sink.h"
#include "mem/staging.h"

struct oc_engine_upload {
    oc_staging_ring *ring;
    cudaEvent_t *read_done; /* per slot: recorded after the copy that read it */
    int slots;
    int copy_threads;
    oc_workers *workers;
};

/* One piece being staged: bytes [0, bytes) of src into dst, or (src NULL) rows [row0, row0 +
 * rows) of m, or their slice of K, read into dst. */
typedef struct piece {
    unsigned char *dst;
    const unsigned char *src;
    int64_t bytes;
    oc_context *ctx;
    const oc_matrix *m;
    int64_t row0, rows;
    int64_t w0, w1;    /* words [w0, w1) of each row: a slice of K, or all of them */
    atomic_int failed; /* the first failure of a part's read (its message is on ctx) */
} piece;

/* Part `part` of `parts` of a piece, with non-temporal stores through the dense sink's row
 * copy (one 1-row block). */
static void copy_part(void *arg, int part, int parts)
{
    piece *p = arg;
    int64_t per = (p->bytes + parts - 1) / parts, off = part * per;
    if (off >= p->bytes) return;
    int64_t len = p->bytes - off < per ? p->bytes - off : per;
    oc_dense_sink row = {.base = (char *)p->dst + off, .ld = len, .elem_size = 1};
    oc_dense_sink_put(&row, 0, 0, 1, len, p->src + off, len);
}

/* Part `part` of a piece read from the matrix's file: a share of its rows, or of its words
 * for a source read in slices of columns, read and checked by the matrix's source, which may
 * run on several threads at once (matrix/matrix.h). */
static void load_part(void *arg, int part, int parts)
{
    piece *p = arg;
    oc_status st = oc_matrix_load_part(p->ctx, p->m, p->row0, p->rows, p->w0, p->w1, (uint64_t *)p->dst, p->w1 - p->w0,
                                       part, parts);
    oc_first_failure(&p->failed, st);
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
        CUDA_CHECK_GOTO(ctx, st,
                        cudaEventCreateWithFlags(&u->read_done[k], cudaEventDisableTiming | cudaEventBlockingSync),
                        cleanup);
    oc_staging_ops ops = {.user = u, .wait_reusable = wait_read_done};
    OC_CHECK_GOTO(ctx, st,
                  oc_staging_create(ctx, pool, u->slots, plan->h2d_slot_bytes, alloc_bytes, "the pinned upload ring",
                                    &ops, &u->ring),
                  cleanup);
    *out = u;
    return OC_OK;
cleanup:
    oc_engine_upload_close(u);
    return st;
}

oc_status oc_engine_upload_rows(oc_context *ctx, oc_engine_upload *u, const oc_matrix *m, int64_t row0, int64_t rows,
                                int64_t w0, int64_t w1, void *dst, cudaStream_t h2d, double *seconds, double *waited)
{
    double t0 = oc_now();
    const int64_t pitch = m->words_per_row * 8, width = (w1 - w0) * 8,
                  per_slot = oc_staging_slot_bytes(u->ring) / width;
    const int whole = width == pitch;
    if (per_slot < 1)
        return oc_fail(ctx, OC_ERR_INTERNAL, "a %lld-byte slice of a row does not fit an upload slot",
                       (long long)width);
    /* A matrix left in its file (matrix/matrix.h) is read straight into the pinned slots; whole
     * rows of one in memory are copied as one run of bytes. */
    const unsigned char *src =
        whole && oc_matrix_resident(m) ? (const unsigned char *)(m->bits + row0 * m->words_per_row) : NULL;
    for (int64_t r = 0; r < rows; r += per_slot) {
        const int64_t n = rows - r < per_slot ? rows - r : per_slot, len = n * width;
        int k;
        OC_CHECK(ctx, oc_staging_acquire(ctx, u->ring, &k, waited));
        unsigned char *pin = oc_staging_slot(u->ring, k);
        piece p = {.dst = pin, .bytes = len, .ctx = ctx, .m = m, .row0 = row0 + r, .rows = n, .w0 = w0, .w1 = w1};
        /* Small pieces are not worth waking the pool for. */
        int parts = len < (1 << 20) ? 1 : u->copy_threads;
        if (src) {
            p.src = src + r * pitch;
            oc_workers_split(u->workers, parts, copy_part, &p);
        } else {
            oc_workers_split(u->workers, parts, load_part, &p);
            const oc_status failed = (oc_status)atomic_load(&p.failed);
            if (failed != OC_OK) {
                /* A bad value: the message of one load of the piece, whatever the split. */
                oc_status st = oc_matrix_load_redo(ctx, m, p.row0, n, w0, w1, (uint64_t *)pin, w1 - w0, failed);
                oc_staging_release(u->ring, k);
                return oc_trace_at(ctx, st, __FILE__, __LINE__);
            }
        }
        char *at = (char *)dst + r * pitch + w0 * 8;
        cudaError_t e = whole ? cudaMemcpyAsync(at, pin, (size_t)len, cudaMemcpyHostToDevice, h2d)
                              : cudaMemcpy2DAsync(at, (size_t)pitch, pin, (size_t)width, (size_t)width, (size_t)n,
                                                  cudaMemcpyHostToDevice, h2d);
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
