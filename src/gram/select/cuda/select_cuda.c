/*
 * select_cuda.c - the pipeline side of device selection (see select_cuda.h).
 *
 * Every tile's selection runs on the selection stream, after the tile's Gram kernels (an
 * event from their stream), in tile order: the lists, floors, pair buffer and row offsets
 * are shared by all tiles, and one stream orders their updates.
 *
 * Order of a threshold tile t in output slot s (all calls on the driving thread):
 *   selection stream: wait for tile t's kernels -> (dense kernels | bucket sort) into slot
 *            s's pair buffer -> D2H of the row counts and the overflow flag (pinned) ->
 *            record slot s's counts_ready -> clear the slot's bucket counts -> record the
 *            slot free
 *   at the next tile of slot s (t + 2 with two slots; its Gram kernel already enqueued) or
 *            at finish: wait counts_ready, copy exactly the tile's pairs on d2h, wait for
 *            them, hand them to the host selection and deliver the complete row blocks; only
 *            then is that tile's selection enqueued, so a pair buffer is never overwritten
 *            before it was read. Two slots let the driving thread wait for the tile before
 *            last while the last one still computes; on a busy host that wait still leaves
 *            the GPU idle at times (bench/RESULTS.md), which more pair buffers than output
 *            slots would avoid.
 */
#include "gram/select/cuda/select_cuda.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"
#include "core/trace.h"
#include "gram/select/select.h"
#include "engine/cuda/cuda_check.h"
#include "core/env.h"
#include "gram/cuda/gram_select.cuh"
#include "gram/select/cuda/select_floors.cuh"

/* Pinned staging for a tile's pairs: it starts small and grows (doubling, up to the most)
 * when a tile brings more; more than the most goes through pageable memory. Pinning is slow
 * (the most, pinned up front, took longer than a selective job's whole selection:
 * bench/RESULTS.md), and a selective threshold keeps kilobytes per tile. */
#define PINNED_PAIRS_FIRST (1LL << 20)
#define PINNED_PAIRS_MOST (32LL << 20)
#define PINNED_TILE_BYTES (64LL << 20) /* host top-k: row slices of a tile */
#define ALIGN 256
/* Bucket slots per tile row of a fused tile (OUTCORE_CUDA_SELECT_BUCKET=N overrides, for
 * tests). Top-k: each CTA adds at most kept keys to a row's bucket and to a column's, so a
 * row's first tile, whose floor is still 0, adds kept per CTA across it (240 for k = 10 and
 * tiles of 6144: 24 CTAs of 256 columns; a column 480: 48 CTAs of 128 rows); later tiles,
 * under floors that are the kept-th best of thousands, add a few. Threshold: a selective
 * threshold keeps few pairs per row and tile. */
#define TOPK_BUCKET 512
#define PAIRS_BUCKET 128

typedef struct slot_state {
    uint64_t *row_keys, *col_keys; /* tile x bucket each */
    uint32_t *counts;              /* rows: tile + 2 (the scan's total, then the overflow flag); columns: tile */
} slot_state;

/* A threshold tile's pairs on their way to the host, in the tail of its output slot. */
typedef struct pair_slot {
    uint32_t *d_offsets, *d_cols, *d_counts; /* d_counts: dense tiles of a job without buckets */
    void *d_values;
    uint32_t *h_counts; /* pinned: tile + 1 counts, then the overflow flag */
    cudaEvent_t counts_ready;
    int pending; /* a tile's pairs wait on the device */
    int fused;
    int64_t seq, i0, j0, rows; /* seq: the tile's place in the order */
} pair_slot;

struct oc_cuda_select {
    oc_context *ctx;
    oc_gram_job *job;
    oc_select *sel;
    oc_cuda_device *dev;
    int64_t tile;
    size_t elem;
    int host_topk;          /* k above the device limit: tiles selected on the host */
    cudaStream_t stream;    /* the selection's own stream */
    cudaEvent_t *gram_done; /* per slot: the tile's Gram kernels are done */
    int nslots;
    slot_state *slots;
    int fused; /* tiles may be fused */
    int bucket;
    int64_t tiles, fused_tiles, overflowed;
    int64_t npanels;
    int64_t *seed_tile;   /* top-k: the tile that first selected each panel's lists, -1 none */
    cudaEvent_t *seed_ev; /* recorded once that tile's selection is done */
    uint64_t *d_lists, *d_floors;
    uint32_t *d_overflows; /* top-k: fused tiles that overflowed, counted on the device */
    /* threshold */
    pair_slot *pairs;       /* one per output slot */
    unsigned char *h_pairs; /* pinned: h_pairs_bytes */
    int64_t h_pairs_bytes;
    int pairs_dense;                   /* recent threshold tiles overflowed: select them dense */
    double wait_seconds, work_seconds; /* in consume_pairs: waiting for the device, the rest */
    /* host top-k */
    unsigned char *h_tile;
    int64_t h_tile_bytes;
    /* several devices (oc_cuda_select_share) */
    int worker;              /* this device's worker index in the selection */
    int drain;               /* delivers pairs: the device on the caller's thread */
    uint64_t *topk_dest;     /* where the lists come back: the selection's, or the caller's buffer */
    oc_cuda_floors *floors;  /* top-k: the devices' floors, shared (select_floors.cuh); NULL: own only */
    int64_t floor_imports;   /* fused tiles that took the other devices' floors first */
    uint64_t *d_base_floors; /* a resumed top-k job: the floors of the lists restored on the host */
};

/* Each device's floors array, published by its selection once zeroed (NULL before). */
struct oc_cuda_floors {
    int count;
    uint64_t *_Atomic at[OC_MAX_LOGICAL_DEVICES];
};

oc_cuda_floors *oc_cuda_floors_create(int count)
{
    if (count < 2 || count > OC_MAX_LOGICAL_DEVICES) return NULL;
    oc_cuda_floors *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->count = count;
    for (int d = 0; d < count; ++d) atomic_init(&f->at[d], NULL);
    return f;
}

void oc_cuda_floors_free(oc_cuda_floors *f) { free(f); }

/* The other devices' floors raise this device's for tile rows [i0, i0 + rows) and, of
 * A·Aᵀ, columns [j0, j0 + cols), on `stream` before the tile's kernel. */
static oc_status import_floors(oc_cuda_select *s, const oc_gram_tile *tile, cudaStream_t stream)
{
    const uint64_t *peers[OC_MAX_LOGICAL_DEVICES];
    int n = 0;
    /* A resumed job's restored lists bound the job's as a peer's do (their tiles are skipped,
     * so no key of theirs comes again). */
    if (s->d_base_floors) peers[n++] = s->d_base_floors;
    for (int d = 0; s->floors && d < s->floors->count && n < OC_MAX_LOGICAL_DEVICES; ++d) {
        uint64_t *p = atomic_load(&s->floors->at[d]);
        if (d != s->worker && p) peers[n++] = p;
    }
    if (n == 0) return OC_OK;
    s->floor_imports++;
    const int64_t nb = s->job->symmetric && tile->j0 != tile->i0 ? tile->cols : 0;
    return oc_cuda_floors_import(s->ctx, s->dev, s->d_floors, peers, n, tile->i0, tile->rows, tile->j0, nb, stream);
}

static int select_on_device(const oc_gram_job *job)
{
    return job->select &&
           (oc_select_get_mode(job->select) == OC_SELECT_PAIRS || oc_select_kept(job->select) <= OC_CUDA_SELECT_MAX_K);
}

static int bucket_size(const oc_gram_job *job)
{
    int64_t b = oc_select_get_mode(job->select) == OC_SELECT_TOPK ? TOPK_BUCKET : PAIRS_BUCKET;
    (void)oc_env_whole("OUTCORE_CUDA_SELECT_BUCKET", INT64_MIN, INT64_MAX, &b); /* unset or no number: b stays */
    return b < 1 ? 1 : (b > OC_CUDA_SELECT_MAX_BUCKET ? OC_CUDA_SELECT_MAX_BUCKET : (int)b);
}

int oc_cuda_select_can_fuse(const oc_gram_job *job, int b1_kernel)
{
    if (!b1_kernel || !select_on_device(job)) return 0;
    return oc_select_get_mode(job->select) == OC_SELECT_PAIRS || oc_select_kept(job->select) > 0;
}

int64_t oc_cuda_select_fixed_bytes(const oc_gram_job *job)
{
    if (!select_on_device(job) || oc_select_get_mode(job->select) != OC_SELECT_TOPK) return 0;
    /* the lists, their floors and the overflow count; resumed, the restored lists' floors */
    const int64_t base = job->resume ? job->n * 8 + ALIGN : 0;
    return (job->n * (oc_select_kept(job->select) + 1) * 8 + base + 4 * ALIGN - 1) / ALIGN * ALIGN;
}

int64_t oc_cuda_select_extra_elem_bytes(const oc_gram_job *job)
{
    if (!job->select || oc_select_get_mode(job->select) != OC_SELECT_PAIRS) return 0;
    /* a column and a value per pair, and one byte per element for the row offsets and
     * counts (8 T + 8 <= T * T bytes for T >= 16), with alignment slack */
    return 4 + (int64_t)oc_dtype_size(job->dtype) + 1;
}

int64_t oc_cuda_select_edge_bytes(const oc_gram_job *job, int b1_kernel)
{
    /* Per tile row: a row and a column bucket of 8-byte entries and their two counts; the
     * 8 bytes of slack per row cover the two extra counts and the alignment (T >= 256). */
    return oc_cuda_select_can_fuse(job, b1_kernel) ? 16 * (int64_t)bucket_size(job) + 16 : 0;
}

static uint64_t align_up(uint64_t v) { return (v + ALIGN - 1) / ALIGN * ALIGN; }

static oc_status open_threshold(oc_cuda_select *s, void *const *slots)
{
    oc_context *ctx = s->ctx;
    const int64_t tile = s->tile;
    const uint64_t tt = (uint64_t)(tile * tile);
    s->pairs = calloc((size_t)s->nslots, sizeof *s->pairs);
    if (!s->pairs) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the threshold's slot table");
    for (int i = 0; i < s->nslots; ++i) {
        /* The pair buffer, its offsets and counts behind the tile in the output slot. */
        pair_slot *ps = &s->pairs[i];
        char *base = slots[i];
        uint64_t at = align_up(tt * s->elem);
        ps->d_cols = (uint32_t *)(base + at);
        at = align_up(at + tt * 4);
        ps->d_values = base + at;
        at = align_up(at + tt * s->elem);
        ps->d_offsets = (uint32_t *)(base + at);
        at = align_up(at + (uint64_t)tile * 4);
        ps->d_counts = (uint32_t *)(base + at);
        at += (uint64_t)(tile + 2) * 4;
        if (at > tt * (s->elem + (uint64_t)oc_cuda_select_extra_elem_bytes(s->job)))
            return oc_fail(ctx, OC_ERR_INTERNAL, "pair buffer of tile %lld overflows its output slot", (long long)tile);
        OC_CHECK(ctx, oc_pool_host_alloc(ctx, s->dev->pool, (size_t)(tile + 2) * 4, "pinned pair counts",
                                         (void **)&ps->h_counts));
        CUDA_CHECK(ctx, cudaEventCreateWithFlags(&ps->counts_ready, cudaEventDisableTiming | cudaEventBlockingSync));
    }
    s->h_pairs_bytes = PINNED_PAIRS_FIRST;
    return oc_pool_host_alloc(ctx, s->dev->pool, (size_t)s->h_pairs_bytes, "pinned pairs", (void **)&s->h_pairs);
}

/* Each slot's buckets and their counts (the dense kernels write a dense tile's row counts
 * there too), after the slot's tile and pair buffer; none when tiles are not fused. The
 * counts are zeroed on the selection's stream, which oc_cuda_select_open then waits for. */
static oc_status open_slots(oc_cuda_select *s, void *const *slots)
{
    oc_context *ctx = s->ctx;
    const int64_t tile = s->tile;
    const uint64_t region =
        align_up((uint64_t)(tile * tile) * (s->elem + (uint64_t)oc_cuda_select_extra_elem_bytes(s->job)));
    const uint64_t keys = (uint64_t)tile * (uint64_t)s->bucket * 8;
    s->slots = calloc((size_t)s->nslots, sizeof *s->slots);
    if (!s->slots) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the selection's slot table");
    if (!s->fused) return OC_OK;
    for (int i = 0; i < s->nslots; ++i) {
        char *base = (char *)slots[i] + region;
        slot_state *st = &s->slots[i];
        st->row_keys = (uint64_t *)base;
        st->col_keys = (uint64_t *)(base + align_up(keys));
        st->counts = (uint32_t *)(base + 2 * align_up(keys));
        CUDA_CHECK(ctx, cudaMemsetAsync(st->counts, 0, (size_t)(2 * tile + 2) * 4, s->stream));
    }
    return OC_OK;
}

/* A resumed top-k job (gram_resume.h): the lists restored on the host stay there, and this
 * device's start empty; their floors (each list's kept-th key) become the device's first
 * floors and, before each fused tile, a bound like another device's (import_floors). */
static oc_status restore_floors(oc_cuda_select *s)
{
    oc_context *ctx = s->ctx;
    const int64_t n = s->job->n, kept = oc_select_kept(s->sel);
    const uint64_t *keys = oc_select_topk_keys(s->sel);
    uint64_t *floors = malloc((size_t)n * 8);
    if (!floors) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the restored top-k floors");
    int any = 0;
    for (int64_t i = 0; i < n; ++i) any |= (floors[i] = keys[i * kept + kept - 1]) != 0;
    oc_status st = OC_OK;
    if (any)
        st = oc_pool_alloc(ctx, s->dev->pool, (size_t)n * 8, "the restored top-k floors", (void **)&s->d_base_floors);
    /* After the floors' zeroing on the selection's stream, which the copies follow. */
    cudaError_t e = cudaSuccess;
    if (any && st == OC_OK)
        e = cudaMemcpyAsync(s->d_base_floors, floors, (size_t)n * 8, cudaMemcpyHostToDevice, s->stream);
    if (any && st == OC_OK && e == cudaSuccess)
        e = cudaMemcpyAsync(s->d_floors, floors, (size_t)n * 8, cudaMemcpyHostToDevice, s->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s->stream); /* before floors is freed */
    if (st == OC_OK && e != cudaSuccess)
        st = oc_cuda_fail_at(ctx, e, "uploading the restored top-k floors", __FILE__, __LINE__);
    free(floors);
    return st;
}

int oc_cuda_select_topk_on_device(const oc_gram_job *job)
{
    return select_on_device(job) && oc_select_get_mode(job->select) == OC_SELECT_TOPK;
}

oc_status oc_cuda_select_lists_fetch(oc_cuda_select *s, int64_t row0, int64_t rows, uint64_t *dest)
{
    oc_context *ctx = s->ctx;
    const int64_t kept = oc_select_kept(s->sel);
    const size_t bytes = (size_t)(rows * kept) * 8;
    if (!s->d_lists) {
        memset(dest, 0, bytes);
        return OC_OK;
    }
    CUDA_CHECK(ctx, cudaStreamSynchronize(s->stream));
    CUDA_CHECK(ctx, cudaMemcpy(dest, s->d_lists + row0 * kept, bytes, cudaMemcpyDeviceToHost));
    s->job->stats->bytes_d2h += (int64_t)bytes;
    return OC_OK;
}

oc_status oc_cuda_select_begin(oc_context *ctx, oc_gram_job *job, int64_t tile, int devices)
{
    if (!job->select) return OC_OK;
    const int host_topk = oc_select_get_mode(job->select) == OC_SELECT_TOPK && !select_on_device(job);
    return oc_select_begin(ctx, job->select, tile, host_topk ? devices : 0);
}

/* Waits, once before the first tile, for the set-up's zeroing on the selection's stream: the
 * slots' bucket counts and overflow flags, and for top-k the lists, floors and overflow count.
 * The lists and the overflow count are touched only on this stream later, but the tiles'
 * kernels run on the compute streams, which nothing else orders after this stream: a slot's
 * first tile appends to its buckets (it waits for no slot_free) and every fused top-k tile
 * reads the floors. (Zeroed with cudaMemset, on the legacy default stream, none of it was
 * ordered before the tiles, the pipeline's streams being non-blocking; run after a device's
 * first tiles, behind other work on that stream such as another logical device's synchronous
 * copy of its lists, it erased their keys from the buckets or from the lists.) */
static oc_status zeroed(oc_cuda_select *s)
{
    CUDA_CHECK(s->ctx, cudaStreamSynchronize(s->stream));
    return OC_OK;
}

oc_status oc_cuda_select_open(oc_context *ctx, oc_cuda_device *dev, oc_gram_job *job, int64_t tile, void *const *slots,
                              int nslots, int b1_kernel, const oc_cuda_select_share *share, oc_cuda_select **out)
{
    oc_cuda_select *s = calloc(1, sizeof *s);
    if (!s) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the device selection state");
    *out = s;
    s->ctx = ctx, s->job = job, s->sel = job->select, s->dev = dev, s->tile = tile, s->nslots = nslots;
    s->elem = oc_dtype_size(job->dtype);
    s->fused = oc_cuda_select_can_fuse(job, b1_kernel);
    s->bucket = bucket_size(job);
    oc_select_mode mode = oc_select_get_mode(s->sel);
    s->host_topk = mode == OC_SELECT_TOPK && !select_on_device(job);
    s->worker = share ? share->index : 0;
    s->drain = s->worker == 0;
    s->topk_dest = share && share->topk_keys ? share->topk_keys : oc_select_topk_keys(s->sel);
    snprintf(job->stats->select_desc, sizeof job->stats->select_desc, "%s",
             s->host_topk ? "host (k above the device's 128)"
             : s->fused   ? "device, fused in the Gram kernel"
                          : "device");
    /* The selection's kernels are short and the tiles' wait for them (their output slot,
     * the floors, the threshold's pairs); at equal priority their blocks found no SM until
     * both compute streams' Gram CTAs drained from one. At the highest priority the block
     * scheduler gives them the first SM a Gram CTA leaves. */
    int least = 0, greatest = 0;
    CUDA_CHECK(ctx, cudaDeviceGetStreamPriorityRange(&least, &greatest));
    CUDA_CHECK(ctx, cudaStreamCreateWithPriority(&s->stream, cudaStreamNonBlocking, greatest));
    s->gram_done = calloc((size_t)nslots, sizeof *s->gram_done);
    if (!s->gram_done) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the selection's events");
    for (int i = 0; i < nslots; ++i)
        CUDA_CHECK(ctx, cudaEventCreateWithFlags(&s->gram_done[i], cudaEventDisableTiming));
    OC_CHECK(ctx, open_slots(s, slots));
    if (mode == OC_SELECT_TOPK) {
        if (s->host_topk) {
            s->h_tile_bytes =
                tile * tile * (int64_t)s->elem < PINNED_TILE_BYTES ? tile * tile * (int64_t)s->elem : PINNED_TILE_BYTES;
            return oc_pool_host_alloc(ctx, dev->pool, (size_t)s->h_tile_bytes, "a pinned top-k tile slice",
                                      (void **)&s->h_tile);
        }
        size_t bytes = (size_t)(job->n * oc_select_kept(s->sel) * 8);
        if (bytes == 0) return zeroed(s);
        OC_CHECK(ctx, oc_pool_alloc(ctx, dev->pool, bytes, "the top-k lists", (void **)&s->d_lists));
        OC_CHECK(ctx, oc_pool_alloc(ctx, dev->pool, (size_t)job->n * 8, "the top-k floors", (void **)&s->d_floors));
        OC_CHECK(ctx, oc_pool_alloc(ctx, dev->pool, 4, "the overflow count", (void **)&s->d_overflows));
        CUDA_CHECK(ctx, cudaMemsetAsync(s->d_overflows, 0, 4, s->stream));
        CUDA_CHECK(ctx, cudaMemsetAsync(s->d_lists, 0, bytes, s->stream));
        CUDA_CHECK(ctx, cudaMemsetAsync(s->d_floors, 0, (size_t)job->n * 8, s->stream));
        if (job->resume && s->fused) OC_CHECK(ctx, restore_floors(s));
        OC_CHECK(ctx, zeroed(s));
        if (share && share->floors && s->fused) {
            /* Published only once zero: another device may read them from its next tile. */
            s->floors = share->floors;
            atomic_store(&s->floors->at[s->worker], s->d_floors);
        }
        s->npanels = (job->n + tile - 1) / tile;
        s->seed_tile = malloc((size_t)s->npanels * sizeof *s->seed_tile);
        s->seed_ev = calloc((size_t)s->npanels, sizeof *s->seed_ev);
        if (!s->seed_tile || !s->seed_ev)
            return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the selection's panel table");
        for (int64_t i = 0; i < s->npanels; ++i) {
            s->seed_tile[i] = -1;
            CUDA_CHECK(ctx, cudaEventCreateWithFlags(&s->seed_ev[i], cudaEventDisableTiming));
        }
        return OC_OK;
    }
    OC_CHECK(ctx, open_threshold(s, slots));
    return zeroed(s);
}

void oc_cuda_select_host_seconds(const oc_cuda_select *s, double *wait, double *work)
{
    *wait = s ? s->wait_seconds : 0;
    *work = s ? s->work_seconds : 0;
}

int64_t oc_cuda_select_floor_imports(const oc_cuda_select *s) { return s ? s->floor_imports : 0; }

void oc_cuda_select_counts(const oc_cuda_select *s, int64_t *fused, int64_t *overflowed)
{
    *fused = s ? s->fused_tiles : 0;
    *overflowed = s ? s->overflowed : 0;
}

int oc_cuda_select_seeds_first(const oc_gram_job *job, int b1_kernel)
{
    return job->select && job->symmetric && oc_select_get_mode(job->select) == OC_SELECT_TOPK &&
           oc_cuda_select_can_fuse(job, b1_kernel);
}

oc_status oc_cuda_select_tile_begin(oc_cuda_select *s, int64_t t, int slot, int64_t I, int64_t J, oc_gram_tile *tile,
                                    cudaStream_t stream)
{
    oc_context *ctx = s->ctx;
    const int sym = s->job->symmetric;
    tile->i0 = I * s->tile, tile->j0 = J * s->tile;
    tile->kind = oc_select_key_kind(s->sel);
    tile->symmetric = sym;
    s->tiles++;
    if (!s->fused) return OC_OK;
    int fuse = 1;
    if (oc_select_get_mode(s->sel) == OC_SELECT_TOPK) {
        /* Every tile is fused: the floors prune once a list is full, and until then each CTA
         * appends only its best kept per row and column, which costs the epilogue every
         * score and kept rounds of a warp maximum. So a panel's lists are seeded by the
         * first tile that covers it, and later tiles wait for that tile's selection: they
         * then run with floors that prune. (Floors raised concurrently by other tiles' merges
         * only let more keys through while they are lower.) */
        const int64_t panels[2] = {I, J};
        tile->seed = 1;
        for (int p = 0; p < (sym ? 2 : 1); ++p) {
            const int64_t P = panels[p];
            if (s->seed_tile[P] < 0) s->seed_tile[P] = t;
            else if (s->seed_tile[P] != t) CUDA_CHECK(ctx, cudaStreamWaitEvent(stream, s->seed_ev[P], 0));
            if (s->seed_tile[P] != t) tile->seed = 0;
        }
        tile->floors = s->d_floors;
        tile->kept = (int)oc_select_kept(s->sel);
        tile->may_overflow = oc_gram_topk_may_overflow(tile->rows, tile->cols, sym, tile->kept, s->bucket);
        if (s->floors || s->d_base_floors) OC_CHECK(ctx, import_floors(s, tile, stream));
    } else {
        tile->may_overflow = 1; /* a threshold keeps every pair that passes */
        uint64_t mk = oc_select_min_key(s->sel);
        fuse = !s->pairs_dense && mk <= 0xFFFFFFFFu;
        if (fuse) tile->min_key = (uint32_t)mk;
    }
    if (!fuse) return OC_OK;
    const slot_state *st = &s->slots[slot];
    tile->select = oc_select_get_mode(s->sel) == OC_SELECT_TOPK ? OC_TILE_TOPK : OC_TILE_PAIRS;
    tile->bucket = s->bucket;
    tile->row_keys = st->row_keys, tile->col_keys = st->col_keys;
    tile->row_count = st->counts, tile->col_count = st->counts + s->tile + 2;
    tile->over = st->counts + s->tile + 1;
    s->fused_tiles++;
    return OC_OK;
}

/* Copies the pairs a slot holds to the host and hands them to the selection. */
static oc_status consume_pairs(oc_cuda_select *s, pair_slot *ps, cudaStream_t d2h)
{
    oc_context *ctx = s->ctx;
    if (!ps->pending) return OC_OK;
    ps->pending = 0;
    double t0 = oc_now();
    CUDA_CHECK(ctx, cudaEventSynchronize(ps->counts_ready));
    double t1 = oc_now();
    s->wait_seconds += t1 - t0;
    const uint32_t *counts = ps->h_counts;
    const int64_t rows = ps->rows, count = counts[rows];
    /* Adapt: after an overflow the next tiles go dense, until a dense tile shows rows far
     * from the bucket size again. */
    if (ps->fused && counts[rows + 1]) {
        s->overflowed++;
        s->pairs_dense = 1;
    } else if (!ps->fused && s->pairs_dense) {
        uint32_t most = 0;
        for (int64_t r = 0; r < rows; ++r) most = counts[r] > most ? counts[r] : most;
        if (most <= (uint32_t)s->bucket / 4) s->pairs_dense = 0;
    }
    const size_t bytes = (size_t)count * (4 + s->elem);
    if ((int64_t)bytes > s->h_pairs_bytes && s->h_pairs_bytes < PINNED_PAIRS_MOST) {
        int64_t grown = s->h_pairs_bytes;
        while (grown < (int64_t)bytes && grown < PINNED_PAIRS_MOST) grown *= 2;
        oc_pool_host_free(s->dev->pool, s->h_pairs);
        s->h_pairs = NULL, s->h_pairs_bytes = 0;
        OC_CHECK(ctx, oc_pool_host_alloc(ctx, s->dev->pool, (size_t)grown, "pinned pairs", (void **)&s->h_pairs));
        s->h_pairs_bytes = grown;
    }
    unsigned char *host = s->h_pairs, *heap = NULL;
    if ((int64_t)bytes > s->h_pairs_bytes) {
        /* Rare (a threshold that keeps most pairs): pageable memory, slower but unbounded by
         * the pinned budget. */
        host = heap = malloc(bytes);
        if (!heap)
            return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate %lld threshold pairs of one tile", (long long)count);
    }
    oc_status st = OC_OK;
    if (count > 0) {
        cudaError_t e = cudaMemcpyAsync(host, ps->d_cols, (size_t)count * 4, cudaMemcpyDeviceToHost, d2h);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(host + count * 4, ps->d_values, (size_t)count * s->elem, cudaMemcpyDeviceToHost, d2h);
        if (e == cudaSuccess) e = cudaStreamSynchronize(d2h);
        if (e != cudaSuccess) st = oc_cuda_fail_at(ctx, e, "copying threshold pairs to the host", __FILE__, __LINE__);
        s->job->stats->bytes_d2h += (int64_t)bytes;
    }
    if (st == OC_OK)
        st = oc_select_add_pairs(s->sel, ps->i0, ps->j0, rows, counts, (const uint32_t *)host, host + count * 4, count);
    free(heap);
    if (st != OC_OK) return oc_select_check(ctx, s->sel);
    /* Pairs reach the writer or callback on the caller's thread only (outcore.h). */
    if (s->drain) st = oc_select_drain(ctx, s->sel);
    s->work_seconds += oc_now() - t1;
    return st;
}

/* k above the device limit: the tile in row slices through pinned memory to the host. */
static oc_status host_topk_tile(oc_cuda_select *s, const oc_gram_tile *t, cudaStream_t d2h)
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
        if (oc_select_tile(s->sel, s->worker, t->i0 + r0, t->j0, nr, t->cols, s->h_tile, t->cols) != OC_OK)
            return oc_select_check(ctx, s->sel);
    }
    return OC_OK;
}

/* The threshold part of oc_cuda_select_tile_done, on the selection stream. */
static oc_status threshold_tile(oc_cuda_select *s, const oc_gram_tile *t, oc_select_tile_args *a, pair_slot *ps,
                                uint32_t *counts, cudaStream_t d2h)
{
    oc_context *ctx = s->ctx;
    OC_CHECK(ctx, consume_pairs(s, ps, d2h)); /* the slot's previous tile */
    uint64_t mk = oc_select_min_key(s->sel);
    if (mk > 0xFFFFFFFFu) { /* nothing can pass: the tile has no pairs */
        memset(ps->h_counts, 0, (size_t)(t->rows + 1) * 4);
        if (oc_select_add_pairs(s->sel, t->i0, t->j0, t->rows, ps->h_counts, NULL, NULL, 0) != OC_OK)
            return oc_select_check(ctx, s->sel);
        return s->drain ? oc_select_drain(ctx, s->sel) : OC_OK;
    }
    a->min_key = (uint32_t)mk;
    a->row_counts = counts, a->row_offsets = ps->d_offsets, a->pair_cols = ps->d_cols, a->pair_values = ps->d_values;
    OC_CHECK(ctx, oc_cuda_select_tile(ctx, s->dev, a, s->stream));
    CUDA_CHECK(ctx,
               cudaMemcpyAsync(ps->h_counts, counts, (size_t)(t->rows + 1) * 4, cudaMemcpyDeviceToHost, s->stream));
    ps->h_counts[t->rows + 1] = 0;
    if (a->fused)
        CUDA_CHECK(ctx, cudaMemcpyAsync(ps->h_counts + t->rows + 1, a->over, 4, cudaMemcpyDeviceToHost, s->stream));
    CUDA_CHECK(ctx, cudaEventRecord(ps->counts_ready, s->stream));
    s->job->stats->bytes_d2h += (int64_t)(t->rows + 1) * 4;
    ps->pending = 1, ps->fused = a->fused, ps->seq = s->tiles, ps->i0 = t->i0, ps->j0 = t->j0, ps->rows = t->rows;
    return OC_OK;
}

oc_status oc_cuda_select_tile_done(oc_cuda_select *s, const oc_gram_tile *t, int slot, cudaStream_t stream,
                                   cudaStream_t d2h, cudaEvent_t slot_free)
{
    oc_context *ctx = s->ctx;
    CUDA_CHECK(ctx, cudaEventRecord(s->gram_done[slot], stream));
    if (s->host_topk) {
        CUDA_CHECK(ctx, cudaStreamWaitEvent(d2h, s->gram_done[slot], 0));
        OC_CHECK(ctx, host_topk_tile(s, t, d2h));
        CUDA_CHECK(ctx, cudaEventRecord(slot_free, d2h));
        return OC_OK;
    }
    CUDA_CHECK(ctx, cudaStreamWaitEvent(s->stream, s->gram_done[slot], 0));
    const slot_state *st = &s->slots[slot];
    const int fused = t->select != OC_TILE_DENSE;
    oc_select_tile_args a = {.tile = t->out,
                             .ld = t->ld,
                             .rows = t->rows,
                             .cols = t->cols,
                             .i0 = t->i0,
                             .j0 = t->j0,
                             .kind = oc_select_key_kind(s->sel),
                             .symmetric = s->job->symmetric,
                             .fused = fused,
                             .over = t->over,
                             .may_overflow = t->may_overflow,
                             .bucket = t->bucket,
                             .row_keys = t->row_keys,
                             .col_keys = t->col_keys,
                             .col_counts = t->col_count};
    if (oc_select_get_mode(s->sel) == OC_SELECT_TOPK) {
        /* No list keeps an entry (a single row of A·Aᵀ has no other column): no lists were
         * allocated and there is nothing to select. */
        if (!s->d_lists) {
            CUDA_CHECK(ctx, cudaEventRecord(slot_free, s->stream));
            return OC_OK;
        }
        a.topk_lists = s->d_lists;
        a.kept = (int)oc_select_kept(s->sel);
        a.floors = s->d_floors;
        a.overflows = s->d_overflows;
        a.row_counts = t->row_count;
        OC_CHECK(ctx, oc_cuda_select_tile(ctx, s->dev, &a, s->stream));
    } else {
        pair_slot *ps = &s->pairs[slot];
        OC_CHECK(ctx, threshold_tile(s, t, &a, ps, st->counts ? st->counts : ps->d_counts, d2h));
    }
    /* The next tile of this slot starts from empty buckets (a dense tile's row counts
     * were written there too). */
    if (s->fused) CUDA_CHECK(ctx, cudaMemsetAsync(st->counts, 0, (size_t)(2 * s->tile + 2) * 4, s->stream));
    if (s->seed_tile) {
        const int64_t I = t->i0 / s->tile, J = t->j0 / s->tile;
        if (s->seed_tile[I] == s->tiles - 1) CUDA_CHECK(ctx, cudaEventRecord(s->seed_ev[I], s->stream));
        if (J != I && s->job->symmetric && s->seed_tile[J] == s->tiles - 1)
            CUDA_CHECK(ctx, cudaEventRecord(s->seed_ev[J], s->stream));
    }
    CUDA_CHECK(ctx, cudaEventRecord(slot_free, s->stream));
    return OC_OK;
}

oc_status oc_cuda_select_finish(oc_cuda_select *s, cudaStream_t d2h)
{
    oc_context *ctx = s->ctx;
    if (s->fused)
        snprintf(s->job->stats->select_desc, sizeof s->job->stats->select_desc,
                 "device, %lld of %lld tiles fused in the Gram kernel", (long long)s->fused_tiles, (long long)s->tiles);
    if (oc_select_get_mode(s->sel) == OC_SELECT_PAIRS) {
        /* The slots' last tiles, oldest first. */
        for (;;) {
            pair_slot *next = NULL;
            for (int i = 0; i < s->nslots; ++i)
                if (s->pairs[i].pending && (!next || s->pairs[i].seq < next->seq)) next = &s->pairs[i];
            if (!next) return OC_OK;
            OC_CHECK(ctx, consume_pairs(s, next, d2h));
        }
    }
    if (!s->d_lists) return OC_OK;
    double t = oc_now();
    size_t bytes = (size_t)(s->job->n * oc_select_kept(s->sel) * 8);
    /* The destination's pages are mapped while the device finishes (a copy into fresh
     * pages takes their faults on the copy, several times slower than into mapped ones). */
    memset(s->topk_dest, 0, bytes);
    CUDA_CHECK(ctx, cudaStreamSynchronize(s->stream));
    oc_trace_phase(&t, "cuda", "lists wait");
    CUDA_CHECK(ctx, cudaMemcpy(s->topk_dest, s->d_lists, bytes, cudaMemcpyDeviceToHost));
    oc_trace_phase(&t, "cuda", "lists D2H");
    uint32_t over = 0;
    CUDA_CHECK(ctx, cudaMemcpy(&over, s->d_overflows, 4, cudaMemcpyDeviceToHost));
    if (over & OC_CUDA_SELECT_UNEXPECTED)
        return oc_fail(ctx, OC_ERR_INTERNAL,
                       "a fused top-k tile overflowed a bucket that could not overflow (k = %lld, "
                       "bucket %d): its selection was lost",
                       (long long)oc_select_kept(s->sel), s->bucket);
    s->overflowed += over;
    s->job->stats->bytes_d2h += (int64_t)bytes;
    return OC_OK;
}

void oc_cuda_select_close(oc_cuda_select *s)
{
    if (!s) return;
    for (int i = 0; s->pairs && i < s->nslots; ++i)
        if (s->pairs[i].counts_ready) (void)cudaEventDestroy(s->pairs[i].counts_ready);
    free(s->pairs);
    for (int i = 0; s->gram_done && i < s->nslots; ++i)
        if (s->gram_done[i]) (void)cudaEventDestroy(s->gram_done[i]);
    if (s->stream) (void)cudaStreamDestroy(s->stream);
    for (int64_t i = 0; s->seed_ev && i < s->npanels; ++i)
        if (s->seed_ev[i]) (void)cudaEventDestroy(s->seed_ev[i]);
    free(s->seed_ev);
    free(s->seed_tile);
    free(s->gram_done);
    free(s->slots);
    free(s);
}
