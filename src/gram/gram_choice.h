/*
 * gram_choice.h - dense or sparse: the prediction behind `--algorithm auto` and `--explain`.
 *
 * Device agnostic: it reads the packed matrices and the job's options and predicts two
 * times: the dense path (the cost model's prediction on the chosen backend, cost/cost.h:
 * n·p·m bit-MACs at the measured kernel rate, every result element once, and on a GPU its
 * start-up and transfers) and the sparse path from per-operation costs (src/gram/cpu/sparse/gram_sparse.c:
 * one pair update per column shared by two rows, Σ_j ca_j·cb_j, except for the hub columns,
 * which are swept as dense bit words: rows-with-a-hub of A x of B x hub words). The hub split
 * that minimises the sparse prediction is the one the sparse path uses, so the plan carries it.
 */
#ifndef OC_GRAM_GRAM_CHOICE_H
#define OC_GRAM_GRAM_CHOICE_H

#include <stdint.h>
#include "cost/cost.h"
#include "gram/gram_job.h"

/* Hub columns are held as up to this many bits per row (8 words: one AVX-512 vector). */
#define OC_SPARSE_MAX_HUBS 512
/* The sparse path's task: a block of this many rows of A (enough blocks for dynamic
 * scheduling; a threshold chunk each). A job runs at most one thread per block. */
#define OC_SPARSE_BLOCK_ROWS 64

typedef struct oc_sparse_plan {
    int use_sparse;                       /* the decision */
    int64_t hubs;                         /* hub columns, hub_cols[hubs], densest first */
    uint32_t *hub_cols;                   /* owned; NULL when hubs == 0 */
    double ones_a, ones_b;                /* set bits */
    double pair_updates;                  /* Σ over non-hub columns of ca_j·cb_j */
    double hub_rows_a, hub_rows_b;        /* rows holding a hub (estimated as independent columns) */
    double hub_ones_a, hub_ones_b;        /* set bits in the hub columns */
    int threads;                          /* workers: the job's, at most one per block of rows, and as
                                           * many as the host budget holds beside the index */
    double peak_bytes;                    /* the sparse path's index and buffers (sparse_memory.h) */
    double sparse_seconds, dense_seconds; /* predictions; < 0 when not predicted */
    char explain[320];                    /* one line for --explain */
} oc_sparse_plan;

/* Fills plan for the job and decides (opts->algorithm: forced, or auto by the predictions).
 * rates: the machine's (cost.h); gpu_dense_seconds: the cost model's prediction of the dense
 * path on the GPU that would run it, or < 0 when the dense path runs on the CPU. Fails only
 * on allocation. */
oc_status oc_gram_choose_algorithm(oc_context *ctx, const oc_gram_job *job, const oc_cost_rates *rates,
                                   double gpu_dense_seconds, oc_sparse_plan *plan);

/* The sparse algorithm asked for: refused (OC_ERR_INVALID_ARGUMENT, one line) when its tables
 * of every column (counts, weights sorted by size) take more than half the host budget; they
 * need only the column count, so a job whose inputs are still in their files is checked before
 * they are read. */
oc_status oc_gram_sparse_tables_check(oc_context *ctx, const oc_gram_job *job);

void oc_sparse_plan_free(oc_sparse_plan *plan);

#endif
