/*
 * stream_plan.h - the plan of an oc_stream_run job: chunk size, chunks in flight, pinned
 * staging and threads, decided from the budgets before the device is touched (pure: tested
 * without a GPU in tests/test_stream_plan.c).
 *
 * Device memory, under the budget of engine_plan.h (--gpu-mem, or a share of free memory
 * less the headroom):
 *
 *   | side inputs (once) | slot 0: one buffer per chunked array | slot 1 | ... | slot k-1 |
 *
 * k = chunks in flight (3: one uploading, one computing, one downloading). A chunk's rows
 * are the fewest of:
 *   - what the budget leaves each slot: (budget - side) / (k * device bytes per row);
 *   - a chunk whose copies stay near OC_STREAM_CHUNK_TRANSFER bytes, so that the pipeline
 *     fills and drains quickly (the first upload and the last download overlap nothing);
 *   - the extent cut into k chunks, so that even a small job overlaps its copies;
 * rounded down to a multiple of 256 rows when larger than that, so that chunk boundaries
 * fall on whole warps and blocks of the user's kernel. A chunk that moves nothing (scratch
 * and device-only work) takes what the budget allows, at most OC_STREAM_MAX_ROWS rows: more
 * threads than any GPU runs at once, and chunks short enough for progress and cancellation.
 *
 * Pinned staging: an upload ring of OC_STREAM_H2D_SLOTS slots and a download ring of one
 * slot per sink and four more, in equal shares of a quarter of the host budget (at most
 * 8 MiB per upload and 4 MiB per download slot, whole pages); a chunk crosses in
 * slot-sized pieces. Threads: the engine's sinks (deliver downloads) and copy threads
 * (fill upload slots).
 */
#ifndef OC_STREAM_STREAM_PLAN_H
#define OC_STREAM_STREAM_PLAN_H

#include <stdint.h>

#include "outcore.h"

#define OC_STREAM_IN_FLIGHT 3
#define OC_STREAM_CHUNK_TRANSFER (256LL << 20)
#define OC_STREAM_H2D_SLOTS 3
#define OC_STREAM_MAX_ROWS (1LL << 24)

typedef struct oc_stream_plan_input {
    int64_t extent;       /* rows of the chunk extent */
    int64_t up_row_bytes; /* per row: bytes uploaded, downloaded, held on the device */
    int64_t down_row_bytes;
    int64_t dev_row_bytes;
    int64_t chunked_buffers; /* device buffers per slot (one per chunked array) */
    int64_t side_bytes;      /* side inputs and results (whole arrays on the device) */
    int64_t side_buffers;
    int64_t result_bytes; /* results: downloaded once, after the last chunk */
    /* the device budget, as engine_plan.h takes it */
    int64_t device_total, device_free, gpu_mem_bytes;
    double gpu_mem_fraction;
    int64_t host_budget; /* 0: OC_ENGINE_DEFAULT_STAGING of staging (4x that as budget) */
    int cores;
    int64_t chunk_rows; /* > 0: forced */
    int in_flight;      /* > 0: forced */
    const char *device_name;
} oc_stream_plan_input;

typedef struct oc_stream_plan {
    int64_t device_budget;
    int device_budget_given;
    int in_flight;
    int64_t chunk_rows, chunks;
    int64_t device_bytes; /* what the plan allocates on the device */
    int64_t host_budget;
    int h2d_slots; /* 0 when nothing is uploaded (no inputs, no side inputs) */
    int64_t h2d_slot_bytes;
    int d2h_slots; /* 0 when nothing is downloaded (no outputs, no results) */
    int64_t d2h_slot_bytes;
    int64_t pinned_bytes;
    int sinks, copy_threads, workers;
} oc_stream_plan;

oc_status oc_stream_plan_make(oc_context *ctx, const oc_stream_plan_input *in, oc_stream_plan *plan);

#endif
