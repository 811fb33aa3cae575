/*
 * rank_job.h - one rank's share of a Gram job over MPI ranks (docs/mpi.md).
 *
 * gram_ranks.c checks the arguments and fills this; dense_ranks.c (MPI-IO into one .npy)
 * and select_ranks.c (top-k gathered, threshold pairs funnelled to rank 0) run the part of
 * each output kind. Every part is a sequence of phases that end in oc_mpi_agree (comm.h).
 * A rank's work is one or more ordinary oc_gram jobs on row views of the inputs
 * (matrix/matrix.h: oc_matrix_row_view): rows [r0, r1) of C against columns [c0, c1) is
 * oc_gram(rows r0..r1 of A, rows c0..c1 of B), which every backend computes exactly as the
 * whole job would, so the bytes cannot depend on the rank count.
 */
#ifndef OC_MPI_RANK_JOB_H
#define OC_MPI_RANK_JOB_H

#include <stdint.h>

#include "outcore.h"

typedef struct oc_rank_job {
    oc_context *ctx;
    const oc_matrix *a, *b; /* b == a for A·Aᵀ */
    int symmetric;
    int64_t n, p;         /* C is n x p */
    oc_dtype dtype;       /* the resolved result dtype */
    oc_gram_options opts; /* the caller's, without the progress callback */
    const char *path;     /* the output file */
    int rank, size;
    int64_t row0, row1;    /* the rows of C this rank computes (set by each part) */
    oc_gram_stats stats;   /* this rank's sub-jobs, summed */
    double seconds;        /* this rank's time in its part (sub-jobs and its writes) */
    int64_t bytes_written; /* this rank's bytes into the output (or sent to rank 0) */
    int fail_mode;         /* OUTCORE_MPI_FAIL_RANK names this rank: 1 fail, 2 kill */
} oc_rank_job;

/* Rows [r0, r1) of C against columns [c0, c1), with options o, into out: one oc_gram on row
 * views; its figures are added to j->stats. OC_ERR_CANCELLED at once after a cancel. */
oc_status oc_rank_subjob(oc_rank_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const oc_gram_options *o,
                         const oc_output *out);

/* st, or OC_ERR_CANCELLED ("cancelled") when st is OC_OK and the job was cancelled
 * (oc_context_cancel, at any time since oc_gram_ranks began): the status each phase before
 * the commit agrees on, so that a cancel on any rank ends the job on every rank. */
oc_status oc_rank_cancelled(oc_rank_job *j, oc_status st);

/* The end of a rank's compute phase: a cancel (oc_rank_cancelled), else the fault a test
 * asked for on this rank (OUTCORE_MPI_FAIL_RANK): returns the injected failure, kills the
 * process, or returns st unchanged. */
oc_status oc_rank_fault(oc_rank_job *j, oc_status st);

oc_status oc_ranks_dense(oc_rank_job *j);
oc_status oc_ranks_topk(oc_rank_job *j);
oc_status oc_ranks_pairs(oc_rank_job *j, int64_t *pairs);

#endif
