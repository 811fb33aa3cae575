/*
 * select_cuda.c - the pipeline side of device selection (see select_cuda.h).
 *
 * Order of a threshold tile t (all calls on the driving thread):
 *   compute: Gram kernel t -> count, scan, write kernels -> D2H row counts (pinned)
 *            -> record counts_ready
 *   at tile t+1 (its Gram kernel already enqueued) or at finish: wait counts_ready, copy
 *            exactly the tile's pairs on d2h, wait for them, hand them to the host selection
 *            and deliver the complete row blocks; only then is t+1's write kernel enqueued,
 *            so the pair buffer is never overwritten before it was read.
 */
#include "select_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/select.h"
#include "cuda_check.h"
#include "gram_select.cuh"

#define PINNED_PAIRS_BYTES (32LL << 20)   /* staging for pairs; more goes through pageable memory */
#define PINNED_TILE_BYTES (64LL << 20)    /* host top-k: row slices of a tile */
#define ALIGN 256

struct oc_cuda_select {
    oc_context *ctx;
    oc_gram_job *job;
    oc_select *sel;
    oc_cuda_device *dev;
    int64_t tile;
    size_t elem;
    int host_topk;              /* k above the device limit: tiles selected on the host */
    uint64_t *d_lists;
    /* threshold */
    uint32_t *d_counts, *d_offsets, *d_cols;
    void *d_values;
    uint32_t *h_counts;         /* pinned: tile + 1 */
    unsigned char *h_pairs;     /* pinned: PINNED_PAIRS_BYTES */
    cudaEvent_t counts_ready;
    int pending;                /* a tile's pairs wait on the device */
    int64_t pending_i0, pending_j0, pending_rows;
    /* host top-k */
    unsigned char *h_tile;
    int64_t h_tile_bytes;
};

static int select_on_device(const oc_gram_job *job)
{
    return job->select && (oc_select_get_mode(job->select) == OC_SELECT_PAIRS ||
                           oc_select_kept(job->select) <= OC_CUDA_SELECT_MAX_K);
}

int64_t oc_cuda_select_fixed_bytes(const oc_gram_job *job)
{
    if (!select_on_device(job) || oc_select_get_mode(job->select) != OC_SELECT_TOPK) return 0;
    return (job->n * oc_select_kept(job->select) * 8 + ALIGN - 1) / ALIGN * ALIGN;
}

int64_t oc_cuda_select_extra_elem_bytes(const oc_gram_job *job)
{
    if (!job->select || oc_select_get_mode(job->select) != OC_SELECT_PAIRS) return 0;
    /* a column and a value per pair, and one byte per element for the row counts and
     * offsets (2 (T + 1) 4-byte words <= T * T bytes for T >= 16), with alignment slack */
    return 4 + (int64_t)oc_dtype_size(job->dtype) + 1;
}

static uint64_t align_up(uint64_t v) { return (v + ALIGN - 1) / ALIGN * ALIGN; }

oc_status oc_cuda_select_open(oc_context *ctx, oc_cuda_device *dev, oc_gram_job *job, int64_t tile, void *out_slot,
                              oc_cuda_select **out)
{
    oc_cuda_select *s = calloc(1, sizeof *s);
    if (!s) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the device selection state");
    *out = s;
    s->ctx = ctx, s->job = job, s->sel = job->select, s->dev = dev, s->tile = tile;
    s->elem = oc_dtype_size(job->dtype);
    oc_select_mode mode = oc_select_get_mode(s->sel);
    s->host_topk = mode == OC_SELECT_TOPK && !select_on_device(job);
    OC_CHECK(oc_select_begin(ctx, s->sel, tile, s->host_topk ? 1 : 0));
    snprintf(job->stats->select_desc, sizeof job->stats->select_desc, "%s",
             s->host_topk ? "host (k above the device's 128)" : "device");
    if (mode == OC_SELECT_TOPK) {
        if (s->host_topk) {
            s->h_tile_bytes = tile * tile * (int64_t)s->elem < PINNED_TILE_BYTES ? tile * tile * (int64_t)s->elem
                                                                                : PINNED_TILE_BYTES;
            return oc_pool_host_alloc(ctx, dev->pool, (size_t)s->h_tile_bytes, "a pinned top-k tile slice",
                                      (void **)&s->h_tile);
        }
        size_t bytes = (size_t)(job->n * oc_select_kept(s->sel) * 8);
        if (bytes == 0) return OC_OK;
        OC_CHECK(oc_pool_alloc(ctx, dev->pool, bytes, "the top-k lists", (void **)&s->d_lists));
        CUDA_CHECK(ctx, cudaMemset(s->d_lists, 0, bytes));
        return OC_OK;
    }
    /* The pair buffer and its counts behind the tile in the output slot. */
    uint64_t at = align_up((uint64_t)(tile * tile) * s->elem), tt = (uint64_t)(tile * tile);
    char *base = out_slot;
    s->d_cols = (uint32_t *)(base + at);
    at = align_up(at + tt * 4);
    s->d_values = base + at;
    at = align_up(at + tt * s->elem);
    s->d_counts = (uint32_t *)(base + at);
    at = align_up(at + (uint64_t)(tile + 1) * 4);
    s->d_offsets = (uint32_t *)(base + at);
    at += (uint64_t)tile * 4;
    if (at > tt * (s->elem + (uint64_t)oc_cuda_select_extra_elem_bytes(job)))
        return oc_fail(ctx, OC_ERR_INTERNAL, "pair buffer of tile %lld overflows its output slot", (long long)tile);
    OC_CHECK(oc_pool_host_alloc(ctx, dev->pool, (size_t)(tile + 1) * 4, "pinned pair counts", (void **)&s->h_counts));
    OC_CHECK(oc_pool_host_alloc(ctx, dev->pool, PINNED_PAIRS_BYTES, "pinned pairs", (void **)&s->h_pairs));
    CUDA_CHECK(ctx, cudaEventCreateWithFlags(&s->counts_ready, cudaEventDisableTiming | cudaEventBlockingSync));
    return OC_OK;
}

/* Copies the pending tile's pairs to the host and hands them to the selection. */
static oc_status consume_pairs(oc_cuda_select *s, cudaStream_t d2h)
{
    oc_context *ctx = s->ctx;
    if (!s->pending) return OC_OK;
    s->pending = 0;
    CUDA_CHECK(ctx, cudaEventSynchronize(s->counts_ready));
    const int64_t count = s->h_counts[s->pending_rows];
    const size_t bytes = (size_t)count * (4 + s->elem);
    unsigned char *host = s->h_pairs, *heap = NULL;
    if ((int64_t)bytes > PINNED_PAIRS_BYTES) {
        /* Rare (a threshold that keeps most pairs): pageable memory, slower but unbounded by
         * the pinned budget. */
        host = heap = malloc(bytes);
        if (!heap) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate %lld threshold pairs of one tile", (long long)count);
    }
    oc_status st = OC_OK;
    if (count > 0) {
        cudaError_t e = cudaMemcpyAsync(host, s->d_cols, (size_t)count * 4, cudaMemcpyDeviceToHost, d2h);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(host + count * 4, s->d_values, (size_t)count * s->elem, cudaMemcpyDeviceToHost, d2h);
        if (e == cudaSuccess) e = cudaStreamSynchronize(d2h);
        if (e != cudaSuccess) st = oc_cuda_fail_at(ctx, e, "copying threshold pairs to the host", __FILE__, __LINE__);
        s->job->stats->bytes_d2h += (int64_t)bytes;
    }
    if (st == OC_OK)
        st = oc_select_add_pairs(s->sel, s->pending_i0, s->pending_j0, s->pending_rows, s->h_counts,
                                 (const uint32_t *)host, host + count * 4, count);
    free(heap);
    if (st != OC_OK) return oc_select_check(ctx, s->sel);
    return oc_select_drain(ctx, s->sel);
}

/* k above the device limit: the tile in row slices through pinned memory to the host. */
static oc_status host_topk_tile(oc_cuda_select *s, const oc_gram_tile *t, int64_t i0, int64_t j0, cudaStream_t d2h)
{
    oc_context *ctx = s->ctx;
    const size_t width = (size_t)t->cols * s->elem, pitch = (size_t)t->ld * s->elem;
    const int64_t slice = s->h_tile_bytes / (int64_t)width;
    for (int64_t r0 = 0; r0 < t->rows; r0 += slice) {
        int64_t nr = t->rows - r0 < slice ? t->rows - r0 : slice;
        CUDA_CHECK(ctx, cudaMemcpy2DAsync(s->h_tile, width, (const char *)t->out + (size_t)r0 * pitch, pitch, width,
                                          (size_t)nr, cudaMemcpyDeviceToHost, d2h));
        CUDA_CHECK(ctx, cudaStreamSynchronize(d2h));
        s->job->stats->bytes_d2h += nr * (int64_t)width;
        if (oc_select_tile(s->sel, 0, i0 + r0, j0, nr, t->cols, s->h_tile, t->cols) != OC_OK)
            return oc_select_check(ctx, s->sel);
    }
    return OC_OK;
}

oc_status oc_cuda_select_tile_done(oc_cuda_select *s, const oc_gram_tile *t, int64_t i0, int64_t j0,
                                   cudaStream_t compute, cudaStream_t d2h)
{
    oc_context *ctx = s->ctx;
    oc_select_tile_args a = {.tile = t->out, .ld = t->ld, .rows = t->rows, .cols = t->cols, .i0 = i0, .j0 = j0,
                             .kind = oc_select_key_kind(s->sel), .symmetric = s->job->symmetric};
    if (oc_select_get_mode(s->sel) == OC_SELECT_TOPK) {
        if (s->host_topk) {
            /* The D2H stream must see the kernel's tile. */
            cudaEvent_t done;
            CUDA_CHECK(ctx, cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
            cudaError_t e = cudaEventRecord(done, compute);
            if (e == cudaSuccess) e = cudaStreamWaitEvent(d2h, done, 0);
            (void)cudaEventDestroy(done);
            CUDA_CHECK(ctx, e);
            return host_topk_tile(s, t, i0, j0, d2h);
        }
        a.topk_lists = s->d_lists;
        a.kept = (int)oc_select_kept(s->sel);
        return oc_cuda_select_tile(ctx, s->dev, &a, compute);
    }
    OC_CHECK(consume_pairs(s, d2h));
    uint64_t mk = oc_select_min_key(s->sel);
    if (mk > 0xFFFFFFFFu) { /* nothing can pass: the tile has no pairs */
        memset(s->h_counts, 0, (size_t)(t->rows + 1) * 4);
        return oc_select_add_pairs(s->sel, i0, j0, t->rows, s->h_counts, NULL, NULL, 0) == OC_OK
                   ? oc_select_drain(ctx, s->sel)
                   : oc_select_check(ctx, s->sel);
    }
    a.min_key = (uint32_t)mk;
    a.row_counts = s->d_counts, a.row_offsets = s->d_offsets, a.pair_cols = s->d_cols, a.pair_values = s->d_values;
    OC_CHECK(oc_cuda_select_tile(ctx, s->dev, &a, compute));
    CUDA_CHECK(ctx, cudaMemcpyAsync(s->h_counts, s->d_counts, (size_t)(t->rows + 1) * 4, cudaMemcpyDeviceToHost, compute));
    CUDA_CHECK(ctx, cudaEventRecord(s->counts_ready, compute));
    s->job->stats->bytes_d2h += (int64_t)(t->rows + 1) * 4;
    s->pending = 1, s->pending_i0 = i0, s->pending_j0 = j0, s->pending_rows = t->rows;
    return OC_OK;
}

oc_status oc_cuda_select_finish(oc_cuda_select *s, cudaStream_t compute, cudaStream_t d2h)
{
    oc_context *ctx = s->ctx;
    if (oc_select_get_mode(s->sel) == OC_SELECT_PAIRS) return consume_pairs(s, d2h);
    if (!s->d_lists) return OC_OK;
    CUDA_CHECK(ctx, cudaStreamSynchronize(compute));
    size_t bytes = (size_t)(s->job->n * oc_select_kept(s->sel) * 8);
    CUDA_CHECK(ctx, cudaMemcpy(oc_select_topk_keys(s->sel), s->d_lists, bytes, cudaMemcpyDeviceToHost));
    s->job->stats->bytes_d2h += (int64_t)bytes;
    return OC_OK;
}

void oc_cuda_select_close(oc_cuda_select *s)
{
    if (!s) return;
    if (s->counts_ready) (void)cudaEventDestroy(s->counts_ready);
    free(s);
}
