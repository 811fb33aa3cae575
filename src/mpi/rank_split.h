/*
 * rank_split.h - which rows of the result each rank computes (docs/mpi.md).
 *
 * Plain arithmetic, no MPI: unit-tested in tests/test_mpi_split.c.
 *  - even: rows cut into R runs whose lengths differ by at most one (A·Bᵀ, where every row
 *    costs the same, and top-k of A·Aᵀ, whose rows are computed whole);
 *  - triangle: for the upper triangle of an n x n result, rank r computes rows
 *    [b_r, b_{r+1}) against columns [b_r, n), and b_r = n (1 - sqrt(1 - r / R)) makes each
 *    rank's trapezoid hold about n² / 2R elements.
 * Both give runs in rank order that cover [0, n) exactly; a rank may get none (R > n).
 */
#ifndef OC_MPI_RANK_SPLIT_H
#define OC_MPI_RANK_SPLIT_H

#include <stdint.h>

typedef void (*oc_rank_rows_fn)(int64_t n, int rank, int ranks, int64_t *row0, int64_t *row1);

/* Rows [*row0, *row1) of rank `rank` of `ranks` for an n-row result. */
void oc_rank_rows_even(int64_t n, int rank, int ranks, int64_t *row0, int64_t *row1);
void oc_rank_rows_triangle(int64_t n, int rank, int ranks, int64_t *row0, int64_t *row1);

/* Rows per sub-job in a rank's part of the upper triangle: a chunk [c0, c1) is computed
 * against columns [c0, n) as a full rectangle, so the half of its diagonal block below the
 * diagonal is computed for nothing; chunks of at most n/16 rows (64 at least) keep that under
 * about 1/16 of the triangle whatever the rank count (one chunk per rank would compute R=1's
 * whole square). */
int64_t oc_rank_triangle_chunk(int64_t n);

/* Rows per chunk of a dense part: as many rows of `width` elements of elem_size bytes as fit
 * in `bytes`, at least one, at most `left`. */
int64_t oc_rank_chunk_rows(int64_t bytes, int64_t width, int64_t elem_size, int64_t left);

#endif
