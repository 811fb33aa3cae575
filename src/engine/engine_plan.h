/*
 * engine_plan.h - the plan of a streamed job: everything the device worker allocates and
 * every thread it uses, decided before it touches the device.
 *
 * Device agnostic and pure: made from the device's memory figures and the budgets
 * (--gpu-mem, --host-mem, the headroom kept for the CUDA context and libraries), the host's
 * cores, and what the job needs, all passed in as data; tests check plans without a GPU and
 * `outcore gram --plan` prints one without running it. It holds:
 *   - the tile plan (tile_plan.h): tile edge, panel and output slots, the tile order's
 *     grouping, the kernel and transfer estimates;
 *   - the staging: pinned upload slots (a panel goes up in slot-sized pieces) and, when the
 *     result comes back to the host, pinned download slots, all within the host budget;
 *   - the threads: sinks (deliver downloaded rows) and copy threads (stage uploads), which
 *     share one pool of sinks + copy threads - 1 workers besides the driving thread, the
 *     sinks' tasks capped at their count so that copies always find free threads.
 */
#ifndef OC_ENGINE_ENGINE_PLAN_H
#define OC_ENGINE_ENGINE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "outcore.h"
#include "engine/tile_plan.h"

/* Device memory left to the CUDA context and libraries (cuBLAS handles, the framework beside
 * us), whatever the budget. */
#define OC_ENGINE_HEADROOM (256LL << 20)
/* Pinned staging when the job gives no host budget. */
#define OC_ENGINE_DEFAULT_STAGING (1LL << 30)

typedef struct oc_engine_plan_input {
    oc_tile_plan_input tiles; /* budget and budget_given are filled by the plan */
    /* the device budget */
    int64_t device_total;    /* bytes of device memory */
    int64_t device_free;     /* bytes free when the job started */
    int64_t gpu_mem_bytes;   /* --gpu-mem SIZE, else 0 */
    double gpu_mem_fraction; /* --gpu-mem PCT (or the default) when gpu_mem_bytes == 0 */
    /* the host */
    int64_t
        host_budget; /* the job's host budget (pinned staging takes at most a quarter); 0 = OC_ENGINE_DEFAULT_STAGING */
    int cores;       /* host cores */
    int64_t row_bytes;       /* bytes of one input row as uploaded */
    int64_t elem_size;       /* bytes of one result element as downloaded */
    int dense_output;        /* the result comes back to the host */
    int force_sinks;         /* > 0: that many sinks (OUTCORE_CUDA_SINKS); < 0: set but not a count */
    int force_copy_threads;  /* > 0: that many copy threads (OUTCORE_CUDA_COPY_THREADS); < 0: likewise */
    const char *device_name; /* "cuda:0 (NVIDIA H100 ...)", for messages */
} oc_engine_plan_input;

typedef struct oc_engine_plan {
    oc_tile_plan tiles;
    int64_t device_budget; /* what the pool may hold */
    int device_budget_given;
    int64_t host_budget;
    int h2d_slots;          /* pinned upload slots */
    int64_t h2d_slot_bytes; /* usable bytes of one, whole rows */
    int d2h_slots;          /* pinned download slots (0 without dense output) */
    int64_t d2h_slot_bytes; /* whole output rows of a tile */
    int64_t pinned_bytes;   /* both rings, page-rounded slots */
    int sinks, copy_threads;
    int workers; /* the pool the two share */
    /* estimates (seconds) of the stages the plan overlaps, and the one that bounds it */
    double upload_seconds, download_seconds;
    const char *bound; /* "kernels", "uploads", "output" */
} oc_engine_plan;

/* The plan, or OC_ERR_DEVICE_NO_MEMORY / OC_ERR_INVALID_ARGUMENT naming what the smallest
 * plan needs against the budget that was given. */
oc_status oc_engine_plan_make(oc_context *ctx, const oc_engine_plan_input *in, oc_engine_plan *plan);

/* Two parts of the plan that other streamed jobs (stream/stream_plan.c) share: the device
 * budget from device_total, device_free, gpu_mem_bytes and gpu_mem_fraction (sets
 * device_budget and device_budget_given), and the sink and copy threads from cores,
 * dense_output and the forced counts (sets sinks, copy_threads and workers). */
oc_status oc_engine_plan_device_budget(oc_context *ctx, const oc_engine_plan_input *in, oc_engine_plan *plan);
oc_status oc_engine_plan_threads(oc_context *ctx, const oc_engine_plan_input *in, oc_engine_plan *plan);

/* The tile order: plan->tiles.ntiles pairs (I, J). `seeded` (fused top-k of A·Aᵀ with
 * every panel resident) puts each diagonal tile, which seeds its panel's lists, one column
 * before the first tile that reads its floors. Returns NULL when memory is short. */
int64_t *oc_engine_plan_order(const oc_engine_plan *plan, int symmetric, int seeded);

/* The plan as text (one line per part, for --plan) or as a JSON object, into *out (the
 * caller frees). `where` names the device and kernel. */
oc_status oc_engine_plan_render(oc_context *ctx, const oc_engine_plan *plan, const char *where, int json, char **out);

#endif
