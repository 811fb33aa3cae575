/*
 * gram_cuda.c - the Gram job on the CUDA engine: what is specific to A·Aᵀ and A·Bᵀ, for one
 * logical device (gram_part.h; gram_devices.c runs the parts of a job).
 *
 * The engine (engine.h) places panels, walks the tiles and delivers results; this file gives
 * it the job: the kernel (1-bit tensor cores: wgmma on Hopper, mma.sync on other sm_80 and
 * later; popcounts before sm_80), the
 * metric's row popcounts counted from each uploaded panel, the top-k or threshold
 * selection on the device, and for a dense A·Aᵀ the mirror of each tile.
 *
 * For a dense A·Aᵀ the mirror kernel (gram_mirror.cu) writes, next to each tile in its output
 * slot, the block the tile stands for at (J, I) (for a diagonal tile: the whole symmetric
 * block), so the sinks copy only whole rows; a transposed scatter on the host ran at a
 * fraction of the rate of row copies and bounded the dense job. Only when the budget cannot
 * hold output slots twice the size does the plan leave the mirror to the sinks.
 *
 * Why pinned staging rather than page-locking A or the destination (cudaHostRegister), as
 * measured (bench/RESULTS.md): registering large ranges is slow, its
 * unregistering too, and DMA into registered 4 KiB pages of a large destination ran slower
 * than the staging ring and its sinks; for out-of-core panels the registration cost more
 * than the staging it saved.
 */
#include "gram/cuda/gram_part.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/dtype.h"
#include "core/metric.h"
#include "core/threads.h"
#include "core/trace.h"
#include "core/env.h"
#include "gram/backend.h"
#include "gram/cuda/gram_cuda.h"
#include "gram/gram_resume.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/engine.h"
#include "engine/cuda/engine_trace.h"
#include "gram/cuda/gram_b1.cuh"
#include "gram/cuda/gram_tile.h"
#include "gram/cuda/gram_mirror.cuh"
#include "gram/cuda/gram_popc.cuh"
#include "gram/cuda/row_popc.cuh"
#include "gram/select/cuda/select_cuda.h"

#define TILE_GRANULARITY 256 /* the b1 kernel's CTA is 128 x 256 */
/* The b1 kernel's rate per SM, as measured on an sm_90 GPU (one CTA per SM; bench/RESULTS.md):
 * the planner's kernel model. On another device only its ratio to the transfer rates is off, by that
 * device's clock. */
#define B1_RATE_PER_SM 2.55e13

typedef oc_gram_part gram_cuda;
#define KERNEL_B1 OC_GRAM_KERNEL_B1
#define KERNEL_WGMMA OC_GRAM_KERNEL_WGMMA
#define KERNEL_POPC OC_GRAM_KERNEL_POPC

/* OUTCORE_CUDA_KERNEL's names, one per kernel. */
static const char *const kernel_names[] = {[KERNEL_B1] = "b1", [KERNEL_WGMMA] = "wgmma", [KERNEL_POPC] = "popc"};
_Static_assert(sizeof kernel_names / sizeof kernel_names[0] == OC_GRAM_KERNEL_COUNT,
               "kernel_names[] needs one row per oc_gram_kernel");

/* The wgmma kernel needs sm_90 and a build that holds sm_90a code. */
static int has_wgmma(const oc_cuda_device *dev)
{
#ifdef OC_HAVE_SM90A
    return dev->cc == 90;
#else
    (void)dev;
    return 0;
#endif
}

#ifndef OC_HAVE_SM90A
/* A build without sm_90a code (PTX only, or nvcc before 12.0): has_wgmma() never picks the
 * wgmma kernel, and a direct call is refused as on a device that is not Hopper. */
oc_status oc_cuda_gram_wgmma(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *tile, cudaStream_t stream,
                             double *bit_macs)
{
    return oc_fail(ctx, OC_ERR_UNSUPPORTED, "cuda:%d (%s, sm_%d): this build has no sm_90a code (the wgmma kernel)",
                   dev->index, dev->name, dev->cc);
}
#endif

static oc_status choose_kernel(gram_cuda *g)
{
    oc_context *ctx = g->ctx;
    const oc_cuda_device *dev = g->dev;
    const char *force = getenv("OUTCORE_CUDA_KERNEL");
    /* The fastest the device has: wgmma on Hopper (1.4x mma.sync, bench/RESULTS.md). */
    g->kernel = has_wgmma(dev) ? KERNEL_WGMMA : dev->cc >= 80 ? KERNEL_B1 : KERNEL_POPC;
    if (!force || !*force) return OC_OK;
    int named = oc_names_find(kernel_names, OC_GRAM_KERNEL_COUNT, force);
    if (named < 0) {
        char names[64];
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "OUTCORE_CUDA_KERNEL=%s: expected %s", force,
                       oc_names_join(kernel_names, OC_GRAM_KERNEL_COUNT, names, sizeof names));
    }
    g->kernel = (oc_gram_kernel)named;
    if (g->kernel == KERNEL_B1 && dev->cc < 80)
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "OUTCORE_CUDA_KERNEL=b1: cuda:%d (%s, sm_%d) has no 1-bit tensor cores",
                       dev->index, dev->name, dev->cc);
    if (g->kernel == KERNEL_WGMMA && !has_wgmma(dev))
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "OUTCORE_CUDA_KERNEL=wgmma: cuda:%d (%s, sm_%d) %s", dev->index,
                       dev->name, dev->cc,
                       dev->cc == 90 ? "is Hopper, but this build has no sm_90a code" : "is not Hopper (sm_90)");
    return OC_OK;
}

/* One tile on the chosen 1-bit kernel. */
static oc_status run_b1(gram_cuda *g, oc_gram_tile *tile, cudaStream_t stream, double *bit_macs)
{
    if (g->kernel == KERNEL_WGMMA) return oc_cuda_gram_wgmma(g->ctx, g->dev, tile, stream, bit_macs);
    return oc_cuda_gram_b1(g->ctx, g->dev, tile, stream, bit_macs);
}

/* A thread count from the environment: 0 when unset or empty, -1 when not a whole number
 * from 1 up (oc_engine_plan_threads refuses it, naming the variable). */
static int env_count(const char *name)
{
    int64_t n = 0;
    const int set = oc_env_whole(name, 1, INT_MAX, &n);
    return set > 0 ? (int)n : set;
}

/* What the job needs, as the plan takes it. */
static oc_status make_plan(gram_cuda *g)
{
    oc_context *ctx = g->ctx;
    oc_gram_job *job = g->job;
    const oc_gram_options *o = job->opts;
    const oc_cuda_device *dev = g->dev;
    int b1 = g->kernel != KERNEL_POPC;
    /* Selection on the device orders its updates on its own stream; the tiles may then
     * overlap on two, except when the selection reads dense tiles it cannot keep apart
     * (the popc kernel, or k past the device lists: one stream). */
    g->two_streams = !job->select || oc_cuda_select_can_fuse(job, b1);
    char name[300];
    char logical[32];
    oc_logical_device_name(g->ldev, logical, sizeof logical);
    snprintf(name, sizeof name, "%s (%s)", logical, dev->name);
    oc_engine_plan_input in = {.tiles = {.n = job->n,
                                         .p = job->p,
                                         .row_bytes = g->words * 8 + (g->pops ? 4 : 0),
                                         .elem_size = g->elem + oc_cuda_select_extra_elem_bytes(job),
                                         .symmetric = job->symmetric,
                                         .keep_output = job->dense != NULL,
                                         .mirror_output = job->symmetric && job->dense != NULL,
                                         .fixed_bytes = oc_cuda_select_fixed_bytes(job),
                                         .out_edge_bytes = oc_cuda_select_edge_bytes(job, b1),
                                         .tile = g->force_tile > 0 ? g->force_tile
                                                 : oc_resume_tile_edge(job->resume) > 0
                                                     ? oc_resume_tile_edge(job->resume)
                                                     : o->tile,
                                         .granularity = TILE_GRANULARITY,
                                         .overlap_tiles = g->two_streams,
                                         .selection_frees = job->select && oc_cuda_select_can_fuse(job, b1)},
                               .device_total = (int64_t)dev->total_mem,
                               .device_free = (int64_t)dev->free_mem_at_open,
                               .gpu_mem_bytes = g->ldev->budget_bytes,
                               .gpu_mem_fraction = g->ldev->budget_fraction,
                               .host_budget = g->host_budget,
                               .cores = oc_cpu_cores(),
                               .row_bytes = g->words * 8,
                               .elem_size = g->elem,
                               .dense_output = job->dense != NULL,
                               .force_sinks = env_count("OUTCORE_CUDA_SINKS"),
                               .force_copy_threads = env_count("OUTCORE_CUDA_COPY_THREADS"),
                               .device_name = name};
    if (b1) {
        /* One BM x BN CTA per SM over K rounded up to its 1024-bit blocks (gram_b1_block.cuh). */
        double bits = (double)((g->words * 64 + 1023) / 1024 * 1024);
        in.tiles.cta_rows = OC_GRAM_B1_BM;
        in.tiles.cta_cols = OC_GRAM_B1_BN;
        in.tiles.concurrent_ctas = dev->sm_count;
        in.tiles.cta_seconds = (double)OC_GRAM_B1_BM * OC_GRAM_B1_BN * bits / B1_RATE_PER_SM;
    }
    OC_CHECK(ctx, oc_engine_plan_make(ctx, &in, &g->plan));
    g->gpu_mirror = g->plan.tiles.mirror_output;
    return OC_OK;
}

/* ---------------------------------------------------------------- the job's callbacks */
/* The row popcounts of a panel live behind its rows. */
static int32_t *panel_pops(const gram_cuda *g, const void *panel)
{
    return (int32_t *)((char *)panel + g->plan.tiles.tile * g->words * 8);
}

static oc_status panel_loaded(void *user, void *panel, int64_t rows, cudaStream_t h2d)
{
    gram_cuda *g = user;
    if (!g->pops) return OC_OK;
    return oc_cuda_row_popcounts(g->ctx, g->dev, panel, g->words, (int)rows, panel_pops(g, panel), h2d);
}

/* Words [k0, k1) of the tile's rows: a slice of K of panels whose rows stay g->words apart,
 * and the partial counts' row length (gram_tile.h). */
static void k_slice(const gram_cuda *g, const oc_engine_tile *t, int64_t k0, int64_t k1, oc_gram_tile *tile)
{
    tile->a = (const uint64_t *)t->panel_a + k0;
    tile->b = (const uint64_t *)t->panel_b + k0;
    tile->words = k1 - k0;
    tile->stride = g->words;
    tile->acc_ld = g->plan.tiles.tile;
}

static oc_status compute(void *user, const oc_engine_tile *t, double *macs)
{
    gram_cuda *g = user;
    oc_context *ctx = g->ctx;
    oc_gram_job *job = g->job;
    const int64_t T = g->plan.tiles.tile;
    g->tile = (oc_gram_tile){.a = t->panel_a,
                             .b = t->panel_b,
                             .words = g->words,
                             .rows = t->rows,
                             .cols = t->cols,
                             .pop_a = g->pops ? panel_pops(g, t->panel_a) : NULL,
                             .pop_b = g->pops ? panel_pops(g, t->panel_b) : NULL,
                             .out = t->out,
                             .ld = T,
                             .metric = job->metric,
                             .dtype = job->dtype,
                             .upper_only = job->symmetric && t->I == t->J};
    oc_gram_tile *tile = &g->tile;
    if (t->partial) { /* the last slice of a tile split on K: the counts so far come in */
        k_slice(g, t, t->k0, g->words, tile);
        tile->acc_in = t->partial;
    }
    double done = 0, again = 0;
    if (g->select) OC_CHECK(ctx, oc_cuda_select_tile_begin(g->select, t->t, t->out_slot, t->I, t->J, tile, t->stream));
    if (g->kernel != KERNEL_POPC) OC_CHECK(ctx, run_b1(g, tile, t->stream, &done));
    else OC_CHECK(ctx, oc_cuda_gram_popc(ctx, g->dev, tile, t->stream, &done));
    if (tile->select != OC_TILE_DENSE && tile->may_overflow) {
        /* The dense pass a fused tile needs when a bucket overflowed; it returns at once
         * otherwise (its bit-MACs are not counted). Not launched when no bucket can
         * overflow (oc_gram_topk_may_overflow). */
        oc_gram_tile dense = *tile;
        dense.select = OC_TILE_DENSE;
        dense.run_if = tile->over;
        OC_CHECK(ctx, run_b1(g, &dense, t->stream, &again));
    }
    if (g->gpu_mirror)
        OC_CHECK(ctx, oc_cuda_gram_mirror(ctx, g->dev, t->out, (char *)t->out + T * T * g->elem, t->rows, t->cols,
                                          (int)T, (int)g->elem, t->I == t->J, t->stream));
    *macs += done;
    return OC_OK;
}

/* A slice of a tile split on K but its last: its counts into the tile's partial counts. */
static oc_status partial(void *user, const oc_engine_tile *t, int64_t k0, int64_t k1, double *macs)
{
    gram_cuda *g = user;
    oc_context *ctx = g->ctx;
    oc_gram_tile tile = {.rows = t->rows,
                         .cols = t->cols,
                         .out = t->partial,
                         .ld = g->plan.tiles.tile,
                         .metric = OC_METRIC_COUNTS,
                         .dtype = OC_DTYPE_INT32,
                         .upper_only = g->job->symmetric && t->I == t->J,
                         .acc_in = k0 > 0 ? t->partial : NULL};
    k_slice(g, t, k0, k1, &tile);
    double done = 0;
    OC_CHECK(ctx, oc_cuda_gram_wgmma(ctx, g->dev, &tile, t->stream, &done));
    *macs += done;
    return OC_OK;
}

int oc_gram_part_splits_k(const gram_cuda *g) { return g->kernel == KERNEL_WGMMA && !g->job->resume; }

static int consume(void *user, const oc_engine_tile *t, cudaStream_t d2h, cudaEvent_t slot_free, oc_status *st)
{
    gram_cuda *g = user;
    if (!g->select) return 0;
    *st = oc_cuda_select_tile_done(g->select, &g->tile, t->out_slot, t->stream, d2h, slot_free);
    return 1;
}

/* A dense A·Aᵀ tile's second half holds its mirror: the whole symmetric block of a diagonal
 * tile (sent instead of the tile), or the block at (J, I). */
static int blocks(void *user, const oc_engine_tile *t, oc_engine_block out[2])
{
    gram_cuda *g = user;
    const int64_t T = g->plan.tiles.tile;
    const char *mirror = (const char *)t->out + T * T * g->elem;
    int64_t i0 = t->I * T, j0 = t->J * T;
    if (!g->gpu_mirror) return 1;
    if (t->I == t->J) {
        out[0] = (oc_engine_block){mirror, i0, j0, t->rows, t->cols};
        return 1;
    }
    out[1] = (oc_engine_block){mirror, j0, i0, t->cols, t->rows};
    return 2;
}

static oc_status finish(void *user, cudaStream_t d2h)
{
    gram_cuda *g = user;
    return g->select ? oc_cuda_select_finish(g->select, d2h) : OC_OK;
}

/* ---------------------------------------------------------------- the part */
static void trace_selection(const gram_cuda *g)
{
    if (!oc_tracing()) return;
    if (g->job->dense && g->job->symmetric)
        fprintf(stderr, "outcore cuda: mirror on the %s\n", g->gpu_mirror ? "device" : "host");
    if (!g->select) return;
    int64_t fused, over;
    oc_cuda_select_counts(g->select, &fused, &over);
    double wait, work;
    oc_cuda_select_host_seconds(g->select, &wait, &work);
    fprintf(stderr,
            "outcore cuda: selection: %lld of %lld tiles fused in the kernel, %lld overflowed; host waited %.4f s for "
            "threshold pairs, handled them in %.4f s\n",
            (long long)fused, (long long)g->plan.tiles.ntiles, (long long)over, wait, work);
    int64_t imports = oc_cuda_select_floor_imports(g->select);
    if (imports > 0)
        fprintf(stderr, "outcore cuda: selection: %lld fused tiles first took the other devices' floors\n",
                (long long)imports);
}

oc_status oc_gram_part_open(gram_cuda *g)
{
    oc_context *ctx = g->ctx;
    oc_gram_job *job = g->job;
    if (job->m >= (1LL << 31))
        return oc_fail(ctx, OC_ERR_UNSUPPORTED,
                       "the CUDA kernels count in 32 bits: %lld columns is too many (at most %lld)", (long long)job->m,
                       (1LL << 31) - 1);
    g->words = job->a->words_per_row;
    g->elem = (int64_t)oc_dtype_size(job->dtype);
    g->pops = oc_metric_info_of(job->metric)->popcounts;
    OC_CHECK(ctx, oc_engine_worker_open(ctx, g->ldev->physical, &g->worker));
    g->dev = oc_engine_worker_device(g->worker);
    OC_CHECK(ctx, choose_kernel(g));
    OC_CHECK(ctx, make_plan(g));
    return OC_OK;
}

oc_status oc_gram_part_replan(gram_cuda *g) { return make_plan(g); }

const char *oc_gram_part_kernel_desc(const gram_cuda *g)
{
    if (!g->dev) return "";
    if (g->kernel == KERNEL_WGMMA) return "b1-wgmma";
    return g->kernel == KERNEL_B1 ? "b1-mma" : g->dev->cc >= 80 ? "popc" : "popc (no b1 mma before sm_80)";
}

/* A resumable job (gram_resume.h): the tiles an earlier run did are passed by; the others
 * go on record at the engine's checkpoints. */
static int skip_tile(void *user, int64_t I, int64_t J)
{
    const gram_cuda *g = user;
    return oc_resume_skip(g->job->resume, I, J);
}

static oc_status fetch_lists(void *user, int64_t row0, int64_t rows, uint64_t *dest)
{
    gram_cuda *g = user;
    return oc_cuda_select_lists_fetch(g->select, row0, rows, dest);
}

static oc_status tiles_delivered(void *user, const int64_t *tiles, int64_t count)
{
    gram_cuda *g = user;
    /* Top-k lists on the device: they hold exactly the tiles this part enqueued so far (the
     * engine calls this between tiles), which the resume layer merges into the job's lists at
     * its checkpoints, fetching the device's. */
    if (g->select && oc_cuda_select_topk_on_device(g->job))
        return oc_resume_topk_lists(g->ctx, g->job->resume, g->job, g->shared ? g->share.index : 0, tiles, count, 0,
                                    fetch_lists, g);
    for (int64_t k = 0; k < count; ++k) oc_resume_tile_done(g->job->resume, g->job, tiles[2 * k], tiles[2 * k + 1]);
    return oc_resume_checkpoint(g->ctx, g->job->resume, g->job, 0);
}

/* The selection, once the worker runs (engine.h: prepare): its device allocations and pinned
 * buffers are a visible part of each part's set-up, which the slices split on K now run
 * beside (bench/RESULTS.md). */
static oc_status prepare(void *user)
{
    gram_cuda *g = user;
    oc_context *ctx = g->ctx;
    oc_gram_job *job = g->job;
    if (job->select) {
        double t = oc_now();
        char who[48];
        oc_logical_device_name(g->ldev, who, (int)sizeof who);
        OC_CHECK(ctx, oc_cuda_select_open(ctx, g->dev, job, g->plan.tiles.tile, oc_engine_worker_out_slots(g->worker),
                                          g->plan.tiles.out_slots, g->kernel != KERNEL_POPC,
                                          g->shared ? &g->share : NULL, &g->select));
        oc_trace_phase(&t, who, "selection set-up");
    }
    return OC_OK;
}

oc_status oc_gram_part_setup(gram_cuda *g, const oc_cuda_select_share *share, int progress)
{
    oc_gram_job *job = g->job;
    /* Fused top-k of A·Aᵀ seeds each panel's lists from its diagonal tile first. */
    oc_engine_job ej = {.user = g,
                        .a = job->a,
                        .b = job->b,
                        .symmetric = job->symmetric,
                        .two_streams = g->two_streams,
                        .seeded_order = job->select && oc_gram_part_seeds_first(g),
                        .dense = job->dense,
                        .host_mirror = job->symmetric && job->dense && !g->gpu_mirror,
                        .gpu_mem_mode = job->opts->gpu_mem_mode,
                        .progress = progress ? job->opts->progress : NULL,
                        .progress_user = job->opts->progress_user,
                        .panel_loaded = panel_loaded,
                        .compute = compute,
                        .partial = oc_gram_part_splits_k(g) ? partial : NULL,
                        .prepare = prepare,
                        .consume = consume,
                        .blocks = blocks,
                        .finish = finish};
    if (job->resume) {
        /* Dense and threshold tiles go on record as the host has them; top-k lists on the
         * device are merged into the host's at the checkpoints (tiles_delivered). */
        ej.skip = skip_tile;
        ej.delivered = tiles_delivered;
        ej.deliver_every = 4 * (int64_t)g->plan.tiles.out_slots;
    }
    g->shared = share != NULL;
    if (share) g->share = *share;
    return oc_engine_worker_setup(g->worker, &g->plan, &ej);
}

int oc_gram_part_seeds_first(const gram_cuda *g)
{
    return oc_cuda_select_seeds_first(g->job, g->kernel != KERNEL_POPC);
}

void oc_gram_part_trace(const gram_cuda *g)
{
    oc_engine_worker_trace(g->worker);
    trace_selection(g);
}

void oc_gram_part_close(gram_cuda *g)
{
    /* The part's device first: a close runs on a thread of its own after the job, where a
     * runtime call without a current device would make device 0's context. */
    if (g->dev) (void)cudaSetDevice(g->dev->index);
    oc_cuda_select_close(g->select);
    g->select = NULL;
    oc_engine_worker_close(g->worker);
    g->worker = NULL;
    g->dev = NULL;
}

/* ---------------------------------------------------------------- backend table */
const oc_backend_vtbl oc_backend_cuda = {OC_BACKEND_ABI, "cuda", oc_cuda_device_usable,
                                         oc_cuda_gram,   1,      oc_cuda_gram_plan};
