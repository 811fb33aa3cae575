/*
 * matmul_writer.c - the writer of a device's share of a CUDA matmul job (matmul_device.h
 * draws it among the device's three threads).
 */
#include "matmul/cuda/matmul_writer.h"

#include <stdio.h>

#include "core/error.h"
#include "core/threads.h"
#include "core/trace.h"
#include "matmul/cuda/matmul_device_state.h"

/* A piece of a tile downloaded into a pinned download slot, waiting to be written; or
 * (slot -1) a whole tile downloaded straight into its place, waiting for its download. */
typedef struct piece {
    int slot;
    int last; /* the tile's last piece: the tile is done once it is written */
    int64_t row0, rows, col0, cols, ld;
    int acc; /* slot -1: the accumulator whose download event ends it */
} piece;

/* One downloaded piece, handed to write_tile by row ranges; A·Aᵀ's by column ranges: a
 * part then writes the mirror's rows of its columns alone (whole pages of the result, each
 * written by one thread) instead of a narrow strip of every mirror row beside every other
 * part. */
typedef struct write_split {
    const oc_matmul_job *job;
    const piece *pc;
    const unsigned char *host;
    int64_t elem;
    int by_columns;
    atomic_int st;
} write_split;

static void write_part(void *arg, int part, int parts)
{
    write_split *w = arg;
    const piece *pc = w->pc;
    const int64_t n = w->by_columns ? pc->cols : pc->rows, x0 = n * part / parts, x1 = n * (part + 1) / parts;
    if (x1 <= x0) return;
    const oc_status st = w->by_columns ? w->job->write_tile(w->job, pc->row0, pc->rows, pc->col0 + x0, x1 - x0,
                                                            w->host + x0 * w->elem, pc->ld)
                                       : w->job->write_tile(w->job, pc->row0 + x0, x1 - x0, pc->col0, pc->cols,
                                                            w->host + x0 * pc->ld * w->elem, pc->ld);
    oc_first_failure(&w->st, st);
}

/* ---------------------------------------------------------------- writer */
static void download_failed(oc_mm_device *d, cudaError_t e, int64_t row0, int64_t col0)
{
    oc_mm_dev_copy_failed(d, e, "the download of", row0, col0);
}

/* Writes a downloaded piece once its download is done (a tile downloaded into its place only
 * waits); the tile's last piece counts it. */
static int write_piece(oc_mm_device *d, const piece *pc, int64_t elem)
{
    oc_matmul_job *job = d->job;
    cudaError_t e = cudaEventSynchronize(pc->slot < 0 ? d->ev[OC_MM_EV_DOWNLOADED][pc->acc] : d->ev_piece[pc->slot]);
    if (e != cudaSuccess) {
        download_failed(d, e, pc->row0, pc->col0);
        return 0;
    }
    if (pc->slot >= 0) { /* a piece in a slot: to its place through write_tile */
        write_split w = {
            .job = job, .pc = pc, .host = d->out_host[pc->slot], .elem = elem, .by_columns = job->symmetric};
        atomic_init(&w.st, OC_OK);
        const int parts = oc_mm_dev_copy_parts(d, pc->rows * pc->cols * elem);
        if (parts > 1) oc_workers_split_max(d->write_crew, parts, d->copy_threads, write_part, &w);
        else write_part(&w, 0, 1);
        const oc_status st = (oc_status)atomic_load(&w.st);
        if (st != OC_OK) {
            oc_mm_dev_fail(d, st, 1, NULL);
            return 0;
        }
    }
    if (pc->last) {
        if (oc_tracing_tiles())
            fprintf(stderr, "outcore %s: tile at (%lld, %lld) written %.6f s\n", d->who, (long long)pc->row0,
                    (long long)pc->col0, oc_now() - d->started);
        d->res->tiles++;
        atomic_fetch_add(&d->sh->tiles_done, 1);
    }
    return 1;
}

/* Downloads the finished tiles the driver hands over, piece by piece through the pinned
 * download slots, writing each piece while the next one downloads (a tile whose place is
 * page-locked: there, whole). */
void *oc_mm_writer_main(void *arg)
{
    oc_mm_device *d = arg;
    const oc_mm_cuda_plan *plan = d->plan;
    if (cudaSetDevice(d->dev.index) != cudaSuccess) (void)cudaGetLastError(); /* the event wait below reports it */
    piece held = {0};
    int holding = 0;
    int64_t held_elem = 0, pseq = 0;
    for (int64_t wseq = 0;; ++wseq) {
        const int c = (int)(wseq % 2);
        pthread_mutex_lock(&d->mu);
        while (!d->ready[c].pending && !(d->driver_done && wseq >= d->tiles_sent) && !oc_mm_dev_stopped(d))
            oc_mm_dev_wait(d);
        const int have = d->ready[c].pending && !oc_mm_dev_stopped(d);
        const oc_mm_ready_tile t = d->ready[c];
        pthread_mutex_unlock(&d->mu);
        if (!have) break;
        int ok = 1;
        /* A tile whose place is page-locked caller memory is downloaded there whole, as one
         * piece without a slot; else piece by piece through the slots. */
        int64_t place_ld = 0;
        void *place = d->job->tile_memory ? d->job->tile_memory(d->job, t.row0, t.col0, &place_ld) : NULL;
        if (!d->whole_c && !oc_mm_dev_straight_span(place, t.rows, t.cols, place_ld, t.elem)) place = NULL;
        const int64_t step = place ? t.rows : plan->out_piece_rows;
        for (int64_t r0 = 0; r0 < t.rows && ok; r0 += step) {
            const int64_t rows = oc_mm_min64(step, t.rows - r0);
            const int slot = place ? -1 : (int)(pseq++ % OC_MM_OUT_SLOTS);
            if (slot >= 0 && !oc_mm_dev_pin_slot(d, d->writer_ctx, &d->out_host[slot], plan->out_slot_bytes,
                                                 "a pinned download slot")) {
                ok = 0;
                break;
            }
            const int last = r0 + rows >= t.rows;
            const char *from = (const char *)t.src + r0 * t.ld * t.elem;
            cudaError_t e = cudaStreamWaitEvent(d->dev.d2h, d->ev[OC_MM_EV_COMPUTED][c], 0);
            if (e == cudaSuccess && place)
                e = cudaMemcpy2DAsync(place, (size_t)(place_ld * t.elem), from, (size_t)(t.ld * t.elem),
                                      (size_t)(t.cols * t.elem), (size_t)rows, cudaMemcpyDefault, d->dev.d2h);
            else if (e == cudaSuccess)
                e = cudaMemcpyAsync(d->out_host[slot], from, (size_t)(rows * t.ld * t.elem), cudaMemcpyDeviceToHost,
                                    d->dev.d2h);
            if (e == cudaSuccess && !place) e = cudaEventRecord(d->ev_piece[slot], d->dev.d2h);
            if (e == cudaSuccess && last) e = cudaEventRecord(d->ev[OC_MM_EV_DOWNLOADED][c], d->dev.d2h);
            if (e != cudaSuccess) {
                download_failed(d, e, t.row0, t.col0);
                ok = 0;
                break;
            }
            if (!d->on_device_c) d->res->bytes_from_device += rows * (place ? t.cols : t.ld) * t.elem;
            if (last) {
                /* Every piece is on the stream: the accumulator may take the tile after next. */
                pthread_mutex_lock(&d->mu);
                d->ready[c].pending = 0;
                d->downloads_enqueued = wseq + 1;
                pthread_cond_broadcast(&d->cv);
                pthread_mutex_unlock(&d->mu);
            }
            /* The previous piece is written while this one downloads. */
            if (holding) ok = write_piece(d, &held, held_elem);
            held = (piece){slot, last, t.row0 + r0, rows, t.col0, t.cols, t.ld, c};
            held_elem = t.elem, holding = 1;
        }
        if (!ok || oc_mm_dev_stopped(d)) {
            holding = 0;
            break;
        }
    }
    if (holding && !oc_mm_dev_stopped(d)) (void)write_piece(d, &held, held_elem);
    return NULL;
}
