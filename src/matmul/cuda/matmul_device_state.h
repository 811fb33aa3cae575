/*
 * matmul_device_state.h - one device's share of a CUDA matmul job as its three threads see it
 * (matmul_device.h draws them): what the devices of a job share, the device's state, the slots
 * its threads hand each other, and the steps they all take: a failure that stops every
 * device, a wait that sees it, a pinned slot taken when first needed, a copy cut in parts.
 */
#ifndef OC_MATMUL_CUDA_MATMUL_DEVICE_STATE_H
#define OC_MATMUL_CUDA_MATMUL_DEVICE_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/workers.h"
#include "engine/cuda/device.h"
#include "matmul/cuda/cublaslt.h"
#include "matmul/cuda/matmul_cuda_plan.h"
#include "matmul/cuda/matmul_gemm.h"

/* What the devices of one job share. */
typedef struct oc_mm_shared {
    oc_matmul_job *job;
    const oc_mm_cuda_plan *plan;
    const oc_cublaslt_api *lt;
    atomic_llong next_tile;  /* the queue */
    atomic_llong tiles_done; /* written, for progress */
    atomic_int stop;         /* a device failed or the job was cancelled: everyone stops */
    atomic_int failures;     /* the order in which failures happened: the first is reported */
} oc_mm_shared;

/* A device's outcome. */
typedef struct oc_mm_device_result {
    oc_status st;
    int order;          /* 1 for the job's first failure */
    int message_on_job; /* the message is on job->ctx (read_panel, write_tile, cancelled) */
    char message[512];  /* else the message */
    int64_t tiles, bytes_read, bytes_to_device, bytes_from_device, peak_device_bytes, peak_pinned_bytes;
    int64_t bytes_straight; /* uploaded from caller memory without read_panel */
} oc_mm_device_result;

/* Records a device's failure in *res, unless it has one already (its first is its own), in
 * the job's order of failures, and stops every device of the job. on_job: the message is on
 * the job's context; else `message` is copied. */
void oc_mm_device_failed(oc_mm_shared *sh, oc_mm_device_result *res, oc_status st, int on_job, const char *message);

/* A device panel slot as the reader hands it to the driver: filled once the uploads of
 * panel `panel` of the tile at (row0, col0) are on the copy stream (OC_MM_EV_UPLOADED ends them). */
typedef struct oc_mm_panel_slot {
    int filled;
    int64_t panel, row0, rows, col0, cols, depth;
} oc_mm_panel_slot;

/* A finished tile in accumulator c, handed from the driver to the writer, which downloads it
 * piece by piece. */
typedef struct oc_mm_ready_tile {
    int pending;
    const void *src; /* the accumulator, or the rounded tile */
    int64_t row0, rows, col0, cols, ld, elem;
} oc_mm_ready_tile;

enum { OC_MM_EV_UPLOADED, OC_MM_EV_SLOT_FREE, OC_MM_EV_COMPUTED, OC_MM_EV_DOWNLOADED, OC_MM_EV_KINDS };

typedef struct oc_mm_device {
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
    cudaEvent_t ev[OC_MM_EV_KINDS][2];
    cudaEvent_t ev_piece[OC_MM_OUT_SLOTS];
    /* The threads that copy panels in and pieces out beside the reader and the writer (each
     * copy is cut into rows; the calling thread takes a part too). NULL: it copies alone. */
    oc_workers *read_crew, *write_crew;
    int copy_threads;
    pthread_mutex_t mu;     /* guards the slots, the counters below and res->st */
    pthread_mutex_t pin_mu; /* the pool's pinned allocations by the reader and the writer */
    pthread_cond_t cv;
    oc_mm_panel_slot slot[2]; /* the two device panel slots, d_panel[0] and d_panel[1] */
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
    oc_mm_ready_tile ready[2];
    void *out_host[OC_MM_OUT_SLOTS];
    /* OUTCORE_TRACE: the device's name in its lines, and when its set-up began. */
    char who[32];
    double started;
} oc_mm_device;

static inline int oc_mm_dev_stopped(oc_mm_device *d) { return atomic_load(&d->sh->stop); }

static inline int64_t oc_mm_min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Waits on the device's condition with mu held; wakes at least every few milliseconds to see
 * a stop that another device set. */
void oc_mm_dev_wait(oc_mm_device *d);

/* Records the device's first failure (its message already on the job's context when on_job,
 * else `message`), stops every device and wakes this device's threads. */
void oc_mm_dev_fail(oc_mm_device *d, oc_status st, int on_job, const char *message);

/* Fails the job on a CUDA error of a copy for the tile at (row0, col0): `what`, "the upload
 * of a panel of" or "the download of". */
void oc_mm_dev_copy_failed(oc_mm_device *d, cudaError_t e, const char *what, int64_t row0, int64_t col0);

/* Whether rows x cols elements of elem bytes from p, ld elements between rows, lie in memory a
 * device copies from and to directly (page-locked host memory or device memory) at both ends. */
int oc_mm_dev_straight_span(const void *p, int64_t rows, int64_t cols, int64_t ld, int64_t elem);

/* Into how many parts the reader or the writer cuts a copy of `bytes` (1: its thread alone). */
int oc_mm_dev_copy_parts(const oc_mm_device *d, int64_t bytes);

/* Pins a slot of `bytes` into *host the first time it is needed (a no-op after), on the
 * reader's or the writer's thread (ctx: that thread's, for the message). Returns 0 when it
 * failed (the job then stops). */
int oc_mm_dev_pin_slot(oc_mm_device *d, oc_context *ctx, void **host, int64_t bytes, const char *what);

#endif
