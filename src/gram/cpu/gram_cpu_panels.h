/*
 * gram_cpu_panels.h - the CPU backend's row panels (gram_cpu_panels.c).
 *
 * Rows per panel of each input: the whole matrix when it is resident (one panel, never
 * loaded), else a multiple of the tile. Panels take at most half of the host budget left
 * after the resident inputs; the other half is for what the job keeps beside them (row
 * popcounts, tile buffers, the selection). A·Aᵀ holds two panels of A (a row and a column
 * panel), A·Bᵀ one of each file-backed input. Resident inputs make one panel pair that
 * covers the whole job.
 *
 * The fixed cost (docs/memory.md) holds each worker's tile buffers up to
 * OC_CPU_TILE_BUFFERS_FIXED bytes, which every tile the planner picks itself stays under; a
 * larger tile (--tile, or a resumed job's) counts the rest in the budget like a resident input.
 */
#ifndef OC_GRAM_CPU_GRAM_CPU_PANELS_H
#define OC_GRAM_CPU_GRAM_CPU_PANELS_H

#include <stdint.h>
#include "gram/gram_job.h"

typedef struct oc_cpu_panel_plan {
    int64_t a_rows, b_rows;   /* rows per panel */
    int64_t a_count, b_count; /* panels along n and along p */
    int a_file, b_file;       /* the input is file-backed: its panels are loaded */
    int64_t a_bytes, b_bytes; /* the panel buffers */
    int64_t tile_bytes;       /* the workers' tile buffers counted in the budget */
} oc_cpu_panel_plan;

#define OC_CPU_TILE_BUFFERS_FIXED ((int64_t)1 << 20) /* per worker, inside the fixed cost */

/* Each worker converts its tile's counts into a buffer of its own unless the result is the int32
 * counts themselves. */
int oc_cpu_tile_converts(const oc_gram_job *job);

/* The tile buffers of `threads` workers at tile edge t beyond what the fixed cost holds: what
 * they take of the host budget (0 for every tile the planner picks itself). */
int64_t oc_cpu_tile_buffers_counted(const oc_gram_job *job, int64_t t, int threads);

/* Plans the panels of job for tile edge t and `threads` workers. Fails with
 * OC_ERR_INVALID_ARGUMENT, saying what the smallest panels need, when not even one tile's rows
 * fit in the budget beside the workers' counted tile buffers. */
oc_status oc_cpu_plan_panels(oc_context *ctx, const oc_gram_job *job, int64_t t, int threads, oc_cpu_panel_plan *pp);

/* Lists the tiles (I, J) into task_tiles, panel pair by panel pair (A panel I, B panel J; for
 * A·Aᵀ J >= I), row-major inside a pair, with their progress weights (computed areas);
 * pair_first[k] is the first task of pair k and pair_first[pairs] the task count. */
void oc_cpu_order_tasks(const oc_gram_job *job, const oc_cpu_panel_plan *pp, int64_t t, int32_t *task_tiles,
                        int64_t *weights, int64_t *pair_first);

#endif
