/*
 * matmul_device.c - one device's share of a CUDA matmul job (matmul_device.h draws the three
 * threads and the events between the streams).
 */
#include "matmul/cuda/matmul_device.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "core/threads.h"
#include "core/trace.h"
#include "core/workers.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/device.h"
#include "matmul/cuda/matmul_gemm.h"
#include "matmul/cuda/matmul_pack.cuh"
#include "matmul/cuda/matmul_promote.cuh"
#include "mem/pool.h"

/* A device panel slot as the reader hands it to the driver: filled once the uploads of
 * panel `panel` of the tile at (row0, col0) are on the copy stream (EV_UPLOADED ends them). */
typedef struct panel_slot {
    int filled;
    int64_t panel, row0, rows, col0, cols, depth;
} panel_slot;

/* A finished tile in accumulator c, handed from the driver to the writer, which downloads it
 * piece by piece. */
typedef struct ready_tile {
    int pending;
    const void *src; /* the accumulator, or the rounded tile */
    int64_t row0, rows, col0, cols, ld, elem;
} ready_tile;

/* A piece of a tile downloaded into a pinned download slot, waiting to be written; or
 * (slot -1) a whole tile downloaded straight into its place, waiting for its download. */
typedef struct piece {
    int slot;
    int last; /* the tile's last piece: the tile is done once it is written */
    int64_t row0, rows, col0, cols, ld;
    int acc; /* slot -1: the accumulator whose download event ends it */
} piece;

enum { EV_UPLOADED, EV_SLOT_FREE, EV_COMPUTED, EV_DOWNLOADED, EV_KINDS };

typedef struct mm_device {
    oc_context *ctx; /* the device's own: written by the driving thread only */
    /* The reader's and the writer's, for the messages of the pinned slots they take as they
     * first need them. */
    oc_context *reader_ctx, *writer_ctx;
    oc_mm_shared *sh;
    const oc_mm_cuda_plan *plan;
    oc_matmul_job *job;
    oc_mm_device_result *res;
    oc_cuda_device dev;
    oc_mm_gemm gemm;
    void *d_panel[2], *d_promoted, *d_pack, *d_acc[2], *d_round[2], *d_work;
    cudaEvent_t ev[EV_KINDS][2];
    cudaEvent_t ev_piece[OC_MM_OUT_SLOTS];
    /* The threads that copy panels in and pieces out beside the reader and the writer (each
     * copy is cut into rows; the calling thread takes a part too). NULL: it copies alone. */
    oc_workers *read_crew, *write_crew;
    int copy_threads;
    pthread_mutex_t mu;     /* guards the slots, the counters below and res->st */
    pthread_mutex_t pin_mu; /* the pool's pinned allocations by the reader and the writer */
    pthread_cond_t cv;
    panel_slot slot[2]; /* the two device panel slots, d_panel[0] and d_panel[1] */
    /* The pinned upload slots the reader reads pieces of panels into, in turn; ev_up[i] ends
     * the upload from slot i (up_busy[i]: one is on the stream). */
    void *up_host[OC_MM_UP_SLOTS];
    cudaEvent_t ev_up[OC_MM_UP_SLOTS];
    int up_busy[OC_MM_UP_SLOTS];
    int nup;
    int64_t up_seq;
    /* A (0), B (1) and C wholly in page-locked caller memory (panel_memory, tile_memory):
     * their panels and tiles go straight, and no pinned slot is made for them. */
    int whole[2], whole_c;
    /* ... and of those, in device memory: their copies do not cross PCIe (nor count as such). */
    int on_device[2], on_device_c;
    int reader_done, driver_done;
    int64_t panels_read, tiles_sent, downloads_enqueued;
    ready_tile ready[2];
    void *out_host[OC_MM_OUT_SLOTS];
    /* OUTCORE_TRACE: the device's name in its lines, and when its set-up began. */
    char who[32];
    double started;
} mm_device;

static int stopped(mm_device *d) { return atomic_load(&d->sh->stop); }

/* How often a waiting device thread looks for a stop that another device set. */
#define STOP_POLL_NS (20 * 1000 * 1000)

/* Waits on the device's condition with mu held; wakes at least every STOP_POLL_NS to see a
 * stop that another device set. */
static void wait_a_while(mm_device *d)
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
static void fail(mm_device *d, oc_status st, int on_job, const char *message)
{
    pthread_mutex_lock(&d->mu);
    oc_mm_device_failed(d->sh, d->res, st, on_job, message);
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ---------------------------------------------------------------- caller memory */
/* Whether byte p is memory a device copies from and to directly: page-locked host memory or
 * device memory (of any device: copies between devices go through peer access or the driver). */
static int copyable(const void *p) { return oc_cuda_host_pinned(p) || oc_cuda_memory_device(p) >= 0; }

/* Whether rows x cols elements of elem bytes from p, ld elements between rows, are such
 * memory at both ends (one allocation or registration holds them: a copy from memory that is
 * not pinned after all is still right, only slower). */
static int straight_span(const void *p, int64_t rows, int64_t cols, int64_t ld, int64_t elem)
{
    if (!p || rows <= 0 || cols <= 0) return 0;
    const unsigned char *first = p, *last = first + ((rows - 1) * ld + cols) * elem - 1;
    return copyable(first) && copyable(last);
}

/* ---------------------------------------------------------------- copies */
/* Below this many bytes a copy is not cut: the parts' hand-over would cost more than it saves. */
#define COPY_PART_BYTES (4LL << 20)

/* Into how many parts to cut a copy of `bytes` (1: the calling thread alone). */
static int copy_parts(const mm_device *d, int64_t bytes)
{
    const int64_t parts = bytes / COPY_PART_BYTES;
    return parts < 1 ? 1 : parts < d->copy_threads ? (int)parts : d->copy_threads;
}

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
    int ok = OC_OK;
    if (st != OC_OK) atomic_compare_exchange_strong(&r->st, &ok, (int)st);
}

/* One downloaded piece, handed to write_tile by row ranges. */
typedef struct write_split {
    const oc_matmul_job *job;
    const piece *pc;
    const unsigned char *host;
    int64_t elem;
    atomic_int st;
} write_split;

static void write_part(void *arg, int part, int parts)
{
    write_split *w = arg;
    const piece *pc = w->pc;
    const int64_t r0 = pc->rows * part / parts, r1 = pc->rows * (part + 1) / parts;
    if (r1 <= r0) return;
    const oc_status st =
        w->job->write_tile(w->job, pc->row0 + r0, r1 - r0, pc->col0, pc->cols, w->host + r0 * pc->ld * w->elem, pc->ld);
    int ok = OC_OK;
    if (st != OC_OK) atomic_compare_exchange_strong(&w->st, &ok, (int)st);
}

/* ---------------------------------------------------------------- pinned slots */
/* Pins a slot of `bytes` into *host the first time it is needed (a no-op after), from the
 * device's pool, on the reader's or the writer's thread (ctx: that thread's, for the
 * message): pinning costs the driver time per page, and the devices of a job pin one after
 * another, so no slot is pinned before it is needed. Returns 0 when it failed (the job then
 * stops). Past set-up only these calls use the pool, one at a time (pin_mu). */
static int pin_slot(mm_device *d, oc_context *ctx, void **host, int64_t bytes, const char *what)
{
    if (*host) return 1;
    pthread_mutex_lock(&d->pin_mu);
    const oc_status st = oc_pool_host_alloc(ctx, d->dev.pool, (size_t)bytes, what, host);
    pthread_mutex_unlock(&d->pin_mu);
    if (st == OC_OK) return 1;
    fail(d, st, 0, oc_context_last_error(ctx));
    return 0;
}

/* Fails the job on a CUDA error of a copy for the tile at (row0, col0): `what`, "the upload
 * of a panel of" or "the download of". */
static void copy_failed(mm_device *d, cudaError_t e, const char *what, int64_t row0, int64_t col0)
{
    (void)cudaGetLastError();
    char message[400];
    snprintf(message, sizeof message, "%s the tile at row %lld, column %lld: %s", what, (long long)row0,
             (long long)col0, cudaGetErrorString(e));
    fail(d, oc_cuda_status(e), 0, message);
}

static void upload_failed(mm_device *d, cudaError_t e, int64_t row0, int64_t col0)
{
    copy_failed(d, e, "the upload of a panel of", row0, col0);
}

/* ---------------------------------------------------------------- reader */

/* Reads `rows` rows of operand `which`'s panel (read_panel's rows from row0, columns col0 to
 * col0 + cols) through the pinned upload slots in turn, whole rows a piece, each piece
 * uploaded to dst (the rows contiguous) while the next is read. Returns 0 on a failure. */
static int upload_rows(mm_device *d, oc_mm_operand which, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                       int64_t elem, char *dst, int64_t tile_row0, int64_t tile_col0)
{
    const oc_mm_cuda_plan *plan = d->plan;
    const int64_t row_bytes = cols * elem,
                  step = plan->up_slot_bytes / row_bytes > 0 ? plan->up_slot_bytes / row_bytes : 1;
    for (int64_t r = 0; r < rows; r += step) {
        const int64_t n = min64(step, rows - r);
        const int u = (int)(d->up_seq++ % d->nup);
        cudaError_t e = d->up_busy[u] ? cudaEventSynchronize(d->ev_up[u]) : cudaSuccess;
        if (e != cudaSuccess) {
            upload_failed(d, e, tile_row0, tile_col0);
            return 0;
        }
        d->up_busy[u] = 0;
        if (!pin_slot(d, d->reader_ctx, &d->up_host[u], plan->up_slot_bytes, "a pinned upload slot")) return 0;
        read_split rs = {.job = d->job,
                         .which = which,
                         .row0 = row0 + r,
                         .rows = n,
                         .col0 = col0,
                         .cols = cols,
                         .elem = elem,
                         .host = d->up_host[u]};
        atomic_init(&rs.st, OC_OK);
        const int parts = copy_parts(d, n * row_bytes);
        if (parts > 1) oc_workers_split_max(d->read_crew, parts, d->copy_threads, read_part, &rs);
        else read_part(&rs, 0, 1);
        const oc_status st = (oc_status)atomic_load(&rs.st);
        if (st != OC_OK) {
            fail(d, st, 1, NULL);
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
 * slots. EV_UPLOADED[ds] ends them. Returns 0 on a failure. */
static int upload_panel(mm_device *d, int ds, int64_t row0, int64_t rows, int64_t col0, int64_t cols, int64_t k0,
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
        if (!d->whole[0] && !straight_span(straight[0], rows, depth, ld[0], ea)) straight[0] = NULL;
        if (!d->whole[1] && !straight_span(straight[1], depth, cols, ld[1], eb)) straight[1] = NULL;
    }
    /* The products that last read this slot are done before it is written. */
    cudaError_t e = cudaStreamWaitEvent(d->dev.h2d, d->ev[EV_SLOT_FREE][ds], 0);
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
    if ((e = cudaEventRecord(d->ev[EV_UPLOADED][ds], d->dev.h2d)) != cudaSuccess) {
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
static void *reader_main(void *arg)
{
    mm_device *d = arg;
    oc_matmul_job *job = d->job;
    const oc_mm_cuda_plan *plan = d->plan;
    int64_t seq = 0;
    cudaError_t e = cudaSetDevice(d->dev.index);
    if (e != cudaSuccess) upload_failed(d, e, 0, 0);
    while (!stopped(d)) {
        const int64_t t = atomic_fetch_add(&d->sh->next_tile, 1);
        if (t >= plan->ntiles) break;
        int64_t row0, rows, col0, cols;
        oc_mm_cuda_plan_tile(plan, t, &row0, &rows, &col0, &cols);
        if (job->tile_done && job->tile_done(job, row0, col0)) { /* in the result from an earlier run */
            atomic_fetch_add(&d->sh->tiles_done, 1);
            continue;
        }
        for (int64_t p = 0; p < plan->panels && !stopped(d); ++p) {
            const int ds = (int)(seq % 2);
            panel_slot *s = &d->slot[ds];
            pthread_mutex_lock(&d->mu);
            while (s->filled && !stopped(d)) wait_a_while(d);
            pthread_mutex_unlock(&d->mu);
            if (stopped(d)) break;
            if (oc_cancelled(job->ctx)) {
                fail(d, OC_ERR_CANCELLED, 0, "cancelled");
                break;
            }
            const int64_t k0 = p * plan->kp, depth = min64(plan->kp, plan->in.k - k0);
            if (!upload_panel(d, ds, row0, rows, col0, cols, k0, depth)) break;
            pthread_mutex_lock(&d->mu);
            *s = (panel_slot){
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

/* ---------------------------------------------------------------- writer */
static void download_failed(mm_device *d, cudaError_t e, int64_t row0, int64_t col0)
{
    copy_failed(d, e, "the download of", row0, col0);
}

/* Writes a downloaded piece once its download is done (a tile downloaded into its place only
 * waits); the tile's last piece counts it. */
static int write_piece(mm_device *d, const piece *pc, int64_t elem)
{
    oc_matmul_job *job = d->job;
    cudaError_t e = cudaEventSynchronize(pc->slot < 0 ? d->ev[EV_DOWNLOADED][pc->acc] : d->ev_piece[pc->slot]);
    if (e != cudaSuccess) {
        download_failed(d, e, pc->row0, pc->col0);
        return 0;
    }
    if (pc->slot >= 0) { /* a piece in a slot: to its place through write_tile */
        write_split w = {.job = job, .pc = pc, .host = d->out_host[pc->slot], .elem = elem};
        atomic_init(&w.st, OC_OK);
        const int parts = copy_parts(d, pc->rows * pc->cols * elem);
        if (parts > 1) oc_workers_split_max(d->write_crew, parts, d->copy_threads, write_part, &w);
        else write_part(&w, 0, 1);
        const oc_status st = (oc_status)atomic_load(&w.st);
        if (st != OC_OK) {
            fail(d, st, 1, NULL);
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
static void *writer_main(void *arg)
{
    mm_device *d = arg;
    const oc_mm_cuda_plan *plan = d->plan;
    if (cudaSetDevice(d->dev.index) != cudaSuccess) (void)cudaGetLastError(); /* the event wait below reports it */
    piece held = {0};
    int holding = 0;
    int64_t held_elem = 0, pseq = 0;
    for (int64_t wseq = 0;; ++wseq) {
        const int c = (int)(wseq % 2);
        pthread_mutex_lock(&d->mu);
        while (!d->ready[c].pending && !(d->driver_done && wseq >= d->tiles_sent) && !stopped(d)) wait_a_while(d);
        const int have = d->ready[c].pending && !stopped(d);
        const ready_tile t = d->ready[c];
        pthread_mutex_unlock(&d->mu);
        if (!have) break;
        int ok = 1;
        /* A tile whose place is page-locked caller memory is downloaded there whole, as one
         * piece without a slot; else piece by piece through the slots. */
        int64_t place_ld = 0;
        void *place = d->job->tile_memory ? d->job->tile_memory(d->job, t.row0, t.col0, &place_ld) : NULL;
        if (!d->whole_c && !straight_span(place, t.rows, t.cols, place_ld, t.elem)) place = NULL;
        const int64_t step = place ? t.rows : plan->out_piece_rows;
        for (int64_t r0 = 0; r0 < t.rows && ok; r0 += step) {
            const int64_t rows = min64(step, t.rows - r0);
            const int slot = place ? -1 : (int)(pseq++ % OC_MM_OUT_SLOTS);
            if (slot >= 0 &&
                !pin_slot(d, d->writer_ctx, &d->out_host[slot], plan->out_slot_bytes, "a pinned download slot")) {
                ok = 0;
                break;
            }
            const int last = r0 + rows >= t.rows;
            const char *from = (const char *)t.src + r0 * t.ld * t.elem;
            cudaError_t e = cudaStreamWaitEvent(d->dev.d2h, d->ev[EV_COMPUTED][c], 0);
            if (e == cudaSuccess && place)
                e = cudaMemcpy2DAsync(place, (size_t)(place_ld * t.elem), from, (size_t)(t.ld * t.elem),
                                      (size_t)(t.cols * t.elem), (size_t)rows, cudaMemcpyDefault, d->dev.d2h);
            else if (e == cudaSuccess)
                e = cudaMemcpyAsync(d->out_host[slot], from, (size_t)(rows * t.ld * t.elem), cudaMemcpyDeviceToHost,
                                    d->dev.d2h);
            if (e == cudaSuccess && !place) e = cudaEventRecord(d->ev_piece[slot], d->dev.d2h);
            if (e == cudaSuccess && last) e = cudaEventRecord(d->ev[EV_DOWNLOADED][c], d->dev.d2h);
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
        if (!ok || stopped(d)) {
            holding = 0;
            break;
        }
    }
    if (holding && !stopped(d)) (void)write_piece(d, &held, held_elem);
    return NULL;
}

/* ---------------------------------------------------------------- driver */
/* Rounds (FP16/BF16 output) the finished accumulator c and hands it to the writer. */
static oc_status finish_tile(mm_device *d, int c, const panel_slot *s)
{
    oc_context *ctx = d->ctx;
    const oc_mm_cuda_plan *plan = d->plan;
    const int64_t ldc = oc_mm_cuda_ldc(plan, s->cols);
    const void *src = d->d_acc[c];
    int64_t ld = ldc, elem = (int64_t)oc_mm_type_size(plan->acc_type);
    if (d->d_round[c]) {
        OC_CHECK(ctx, oc_mm_round_f32(ctx, &d->dev, d->d_acc[c], s->rows, s->cols, ldc, plan->in.out_type,
                                      d->d_round[c], d->dev.compute));
        src = d->d_round[c], ld = s->cols, elem = (int64_t)oc_mm_type_size(plan->in.out_type);
    }
    CUDA_CHECK(ctx, cudaEventRecord(d->ev[EV_COMPUTED][c], d->dev.compute));
    pthread_mutex_lock(&d->mu);
    d->ready[c] = (ready_tile){1, src, s->row0, s->rows, s->col0, s->cols, ld, elem};
    d->tiles_sent++;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return OC_OK;
}

/* Before a tile's first product into accumulator c: the writer has put the download of the
 * tile that last used c on its stream (its event then orders the product after it). */
static void wait_accumulator(mm_device *d, int64_t tile_seq)
{
    pthread_mutex_lock(&d->mu);
    while (d->downloads_enqueued < tile_seq - 1 && !stopped(d)) wait_a_while(d);
    pthread_mutex_unlock(&d->mu);
}

/* One K panel in device slot ds, once uploaded: (a mixed pair: promote, int8: pack,)
 * multiply into accumulator c. */
static oc_status compute_panel(mm_device *d, int ds, int c, const panel_slot *s)
{
    oc_context *ctx = d->ctx;
    const oc_mm_cuda_plan *plan = d->plan;
    cudaStream_t compute = d->dev.compute;
    CUDA_CHECK(ctx, cudaStreamWaitEvent(compute, d->ev[EV_UPLOADED][ds], 0));
    if (s->panel == 0) CUDA_CHECK(ctx, cudaStreamWaitEvent(compute, d->ev[EV_DOWNLOADED][c], 0));
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
        CUDA_CHECK(ctx, cudaEventRecord(d->ev[EV_SLOT_FREE][ds], compute));
        a = pa, b = pb;
    }
    OC_CHECK(ctx, oc_mm_gemm_run(ctx, &d->gemm, s->rows, s->cols, s->depth, a, b, d->d_acc[c], s->panel > 0, compute));
    if (plan->in.in_type != OC_MM_INT8) CUDA_CHECK(ctx, cudaEventRecord(d->ev[EV_SLOT_FREE][ds], compute));
    return OC_OK;
}

static oc_status drive(mm_device *d)
{
    int64_t tile_seq = 0;
    for (int64_t seq = 0;; ++seq) {
        panel_slot *s = &d->slot[seq % 2];
        pthread_mutex_lock(&d->mu);
        while (!s->filled && !(d->reader_done && seq >= d->panels_read) && !stopped(d)) wait_a_while(d);
        const int have = s->filled && !stopped(d);
        pthread_mutex_unlock(&d->mu);
        if (!have) return OC_OK;
        const panel_slot meta = *s;
        const int c = (int)(tile_seq % 2);
        if (meta.panel == 0 && tile_seq >= 2) {
            wait_accumulator(d, tile_seq);
            if (stopped(d)) return OC_OK; /* another thread's failure ends the job */
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
    return straight_span(p, rows, cols, ld, elem);
}

static oc_status setup(mm_device *d, int device)
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
    d->whole_c = straight_span(c, job->m, job->n, ldc, (int64_t)oc_mm_type_size(job->out_type));
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
     * first need them (pin_slot). */
    d->nup = plan->up_slots < OC_MM_UP_SLOTS ? plan->up_slots : OC_MM_UP_SLOTS;
    for (int i = 0; i < d->nup; ++i) CUDA_CHECK(ctx, cudaEventCreateWithFlags(&d->ev_up[i], cudaEventDisableTiming));
    /* A first panel multiplies with beta 0, which BLAS defines as not reading C; zeroed
     * accumulators keep that true (no NaN from fresh memory) should an algorithm read it. */
    for (int i = 0; i < 2; ++i)
        CUDA_CHECK(ctx, cudaMemsetAsync(d->d_acc[i], 0, (size_t)plan->acc_bytes, d->dev.compute));
    for (int k = 0; k < EV_KINDS; ++k)
        for (int i = 0; i < 2; ++i) CUDA_CHECK(ctx, cudaEventCreateWithFlags(&d->ev[k][i], cudaEventDisableTiming));
    return oc_mm_gemm_open(ctx, d->sh->lt, plan, d->d_work, &d->gemm);
}

static void teardown(mm_device *d)
{
    if (d->dev.compute) (void)cudaStreamSynchronize(d->dev.compute);
    if (d->dev.h2d) (void)cudaStreamSynchronize(d->dev.h2d);
    if (d->dev.d2h) (void)cudaStreamSynchronize(d->dev.d2h);
    (void)cudaGetLastError();
    oc_mm_gemm_close(&d->gemm);
    for (int k = 0; k < EV_KINDS; ++k)
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
static void run_tiles(mm_device *d, int device)
{
    oc_context *ctx = d->ctx;
    pthread_t reader, writer;
    int readers = 0, writers = 0;
    double t = d->started = oc_now();
    oc_status st = setup(d, device);
    oc_trace_phase(&t, d->who, "set-up");
    if (st == OC_OK) {
        readers = pthread_create(&reader, NULL, reader_main, d) == 0;
        writers = pthread_create(&writer, NULL, writer_main, d) == 0;
        if (!readers || !writers)
            st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot start the threads of CUDA device %d", device);
    }
    if (st == OC_OK) st = drive(d);
    if (st != OC_OK) fail(d, st, 0, oc_context_last_error(ctx));
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
    mm_device *d = calloc(1, sizeof *d);
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
