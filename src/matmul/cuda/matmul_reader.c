/*
 * matmul_reader.c - the reader of a device's share of a CUDA matmul job (matmul_device.h
 * draws it among the device's three threads).
 */
#include "matmul/cuda/matmul_reader.h"

#include <stdio.h>

#include "core/error.h"
#include "core/threads.h"
#include "matmul/cuda/matmul_device_state.h"

/* Rows of one operand's panel read into a pinned upload slot, cut among the read crew. */
typedef struct read_split {
    const oc_matmul_job *job;
    oc_mm_operand which;
    int64_t row0, rows, col0, cols, elem; /* read_panel's rows and columns of op(X) */
    void *host;
    atomic_int st; /* the first failure of a part (its message is on the job's context) */
} read_split;

static void read_part(void *arg, int part, int parts)
{
    read_split *r = arg;
    const int64_t r0 = r->rows * part / parts, r1 = r->rows * (part + 1) / parts;
    if (r1 <= r0) return;
    const oc_status st = r->job->read_panel(r->job, r->which, r->row0 + r0, r1 - r0, r->col0, r->cols,
                                            (char *)r->host + r0 * r->cols * r->elem);
    oc_first_failure(&r->st, st);
}

static void upload_failed(oc_mm_device *d, cudaError_t e, int64_t row0, int64_t col0)
{
    oc_mm_dev_copy_failed(d, e, "the upload of a panel of", row0, col0);
}

/* ---------------------------------------------------------------- reader */

/* Reads `rows` rows of operand `which`'s panel (read_panel's rows from row0, columns col0 to
 * col0 + cols) through the pinned upload slots in turn, whole rows a piece, each oc_mm_piece
 * uploaded to dst (the rows contiguous) while the next is read. Returns 0 on a failure. */
static int upload_rows(oc_mm_device *d, oc_mm_operand which, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                       int64_t elem, char *dst, int64_t tile_row0, int64_t tile_col0)
{
    const oc_mm_cuda_plan *plan = d->plan;
    const int64_t row_bytes = cols * elem,
                  step = plan->up_slot_bytes / row_bytes > 0 ? plan->up_slot_bytes / row_bytes : 1;
    for (int64_t r = 0; r < rows; r += step) {
        const int64_t n = oc_mm_min64(step, rows - r);
        const int u = (int)(d->up_seq++ % d->nup);
        cudaError_t e = d->up_busy[u] ? cudaEventSynchronize(d->ev_up[u]) : cudaSuccess;
        if (e != cudaSuccess) {
            upload_failed(d, e, tile_row0, tile_col0);
            return 0;
        }
        d->up_busy[u] = 0;
        if (!oc_mm_dev_pin_slot(d, d->reader_ctx, &d->up_host[u], plan->up_slot_bytes, "a pinned upload slot"))
            return 0;
        read_split rs = {.job = d->job,
                         .which = which,
                         .row0 = row0 + r,
                         .rows = n,
                         .col0 = col0,
                         .cols = cols,
                         .elem = elem,
                         .host = d->up_host[u]};
        atomic_init(&rs.st, OC_OK);
        const int parts = oc_mm_dev_copy_parts(d, n * row_bytes);
        if (parts > 1) oc_workers_split_max(d->read_crew, parts, d->copy_threads, read_part, &rs);
        else read_part(&rs, 0, 1);
        const oc_status st = (oc_status)atomic_load(&rs.st);
        if (st != OC_OK) {
            oc_mm_dev_fail(d, st, 1, NULL);
            return 0;
        }
        e = cudaMemcpyAsync(dst + r * row_bytes, d->up_host[u], (size_t)(n * row_bytes), cudaMemcpyHostToDevice,
                            d->dev.h2d);
        if (e == cudaSuccess) e = cudaEventRecord(d->ev_up[u], d->dev.h2d);
        if (e != cudaSuccess) {
            upload_failed(d, e, tile_row0, tile_col0);
            return 0;
        }
        d->up_busy[u] = 1;
        d->res->bytes_read += n * row_bytes;
    }
    return 1;
}

/* Uploads one K panel of the tile at (row0, col0) into device panel slot ds: A's panel (rows
 * x depth), then B's (depth x cols) at oc_mm_cuda_b_offset, each from page-locked or device
 * caller memory where it lies there as the product takes it, else read through the upload
 * slots. OC_MM_EV_UPLOADED[ds] ends them. Returns 0 on a failure. */
static int upload_panel(oc_mm_device *d, int ds, int64_t row0, int64_t rows, int64_t col0, int64_t cols, int64_t k0,
                        int64_t depth)
{
    const oc_matmul_job *job = d->job;
    const int64_t ea = d->plan->elem[0], eb = d->plan->elem[1]; /* bytes of an element as uploaded */
    const int64_t a_bytes = rows * depth * ea, b_bytes = depth * cols * eb;
    char *dev_a = d->d_panel[ds], *dev_b = dev_a + oc_mm_cuda_b_offset(a_bytes);
    const void *straight[2] = {NULL, NULL};
    int64_t ld[2] = {0, 0};
    if (job->panel_memory) {
        straight[0] = job->panel_memory(job, OC_MM_A, row0, k0, &ld[0]);
        straight[1] = job->panel_memory(job, OC_MM_B, k0, col0, &ld[1]);
        if (!d->whole[0] && !oc_mm_dev_straight_span(straight[0], rows, depth, ld[0], ea)) straight[0] = NULL;
        if (!d->whole[1] && !oc_mm_dev_straight_span(straight[1], depth, cols, ld[1], eb)) straight[1] = NULL;
    }
    /* The products that last read this slot are done before it is written. */
    cudaError_t e = cudaStreamWaitEvent(d->dev.h2d, d->ev[OC_MM_EV_SLOT_FREE][ds], 0);
    if (e == cudaSuccess && straight[0])
        e = cudaMemcpy2DAsync(dev_a, (size_t)(depth * ea), straight[0], (size_t)(ld[0] * ea), (size_t)(depth * ea),
                              (size_t)rows, cudaMemcpyDefault, d->dev.h2d);
    if (e == cudaSuccess && straight[1])
        e = cudaMemcpy2DAsync(dev_b, (size_t)(cols * eb), straight[1], (size_t)(ld[1] * eb), (size_t)(cols * eb),
                              (size_t)depth, cudaMemcpyDefault, d->dev.h2d);
    if (e != cudaSuccess) {
        upload_failed(d, e, row0, col0);
        return 0;
    }
    if (!straight[0] && !upload_rows(d, OC_MM_A, row0, rows, k0, depth, ea, dev_a, row0, col0)) return 0;
    if (!straight[1] && !upload_rows(d, OC_MM_B, k0, depth, col0, cols, eb, dev_b, row0, col0)) return 0;
    if ((e = cudaEventRecord(d->ev[OC_MM_EV_UPLOADED][ds], d->dev.h2d)) != cudaSuccess) {
        upload_failed(d, e, row0, col0);
        return 0;
    }
    d->res->bytes_straight += (straight[0] ? a_bytes : 0) + (straight[1] ? b_bytes : 0);
    d->res->bytes_to_device += (d->on_device[0] ? 0 : a_bytes) + (d->on_device[1] ? 0 : b_bytes);
    return 1;
}

/* Claims tiles from the queue and puts each K panel's uploads on the copy stream into the
 * device panel slots in turn, once the driver has put the products that last read the slot
 * on the compute stream. */
void *oc_mm_reader_main(void *arg)
{
    oc_mm_device *d = arg;
    oc_matmul_job *job = d->job;
    const oc_mm_cuda_plan *plan = d->plan;
    int64_t seq = 0;
    cudaError_t e = cudaSetDevice(d->dev.index);
    if (e != cudaSuccess) upload_failed(d, e, 0, 0);
    while (!oc_mm_dev_stopped(d)) {
        const int64_t t = atomic_fetch_add(&d->sh->next_tile, 1);
        if (t >= plan->ntiles) break;
        int64_t row0, rows, col0, cols;
        oc_mm_cuda_plan_tile(plan, t, &row0, &rows, &col0, &cols);
        if (job->tile_done && job->tile_done(job, row0, col0)) { /* in the result from an earlier run */
            atomic_fetch_add(&d->sh->tiles_done, 1);
            continue;
        }
        for (int64_t p = 0; p < plan->panels && !oc_mm_dev_stopped(d); ++p) {
            const int ds = (int)(seq % 2);
            oc_mm_panel_slot *s = &d->slot[ds];
            pthread_mutex_lock(&d->mu);
            while (s->filled && !oc_mm_dev_stopped(d)) oc_mm_dev_wait(d);
            pthread_mutex_unlock(&d->mu);
            if (oc_mm_dev_stopped(d)) break;
            if (oc_cancelled(job->ctx)) {
                oc_mm_dev_fail(d, OC_ERR_CANCELLED, 0, "cancelled");
                break;
            }
            const int64_t k0 = p * plan->kp, depth = oc_mm_min64(plan->kp, plan->in.k - k0);
            if (!upload_panel(d, ds, row0, rows, col0, cols, k0, depth)) break;
            pthread_mutex_lock(&d->mu);
            *s = (oc_mm_panel_slot){
                .filled = 1, .panel = p, .row0 = row0, .rows = rows, .col0 = col0, .cols = cols, .depth = depth};
            pthread_cond_broadcast(&d->cv);
            pthread_mutex_unlock(&d->mu);
            ++seq;
        }
    }
    pthread_mutex_lock(&d->mu);
    d->reader_done = 1;
    d->panels_read = seq;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return NULL;
}
