/*
 * gram_cpu_panels.h - the CPU backend's row panels (gram_cpu_panels.c).
 *
 * Rows per panel of each input: the whole matrix when it is resident (one panel, never
 * loaded), else a multiple of the tile. Panels take at most half of the host budget left
 * after the resident inputs; the other half is for what the job keeps beside them (row
 * popcounts, tile buffers, the selection). A·Aᵀ holds two panels of A (a row and a column
 * panel), A·Bᵀ one of each file-backed input. Resident inputs make one panel pair that
 * covers the whole job.
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
} oc_cpu_panel_plan;

/* Plans the panels of job for tile edge t. Fails with OC_ERR_NO_MEMORY, saying what the
 * smallest panels need, when not even one tile's rows fit in the budget. */
oc_status oc_cpu_plan_panels(oc_context *ctx, const oc_gram_job *job, int64_t t, oc_cpu_panel_plan *pp);

/* Lists the tiles (I, J) into task_tiles, panel pair by panel pair (A panel I, B panel J; for
 * A·Aᵀ J >= I), row-major inside a pair, with their progress weights (computed areas);
 * pair_first[k] is the first task of pair k and pair_first[pairs] the task count. */
void oc_cpu_order_tasks(const oc_gram_job *job, const oc_cpu_panel_plan *pp, int64_t t, int32_t *task_tiles,
                        int64_t *weights, int64_t *pair_first);

#endif
