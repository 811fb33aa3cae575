#include "mpi/rank_split.h"

#include <math.h>

void oc_rank_rows_even(int64_t n, int rank, int ranks, int64_t *row0, int64_t *row1)
{
    /* n * rank fits: n < 2^32 (select_key.h bounds every result) and ranks < 2^31. */
    *row0 = (int64_t)((__int128)n * rank / ranks);
    *row1 = (int64_t)((__int128)n * (rank + 1) / ranks);
}

/* Boundary r of the triangle split: the first row of rank r. */
static int64_t triangle_boundary(int64_t n, int r, int ranks)
{
    if (r <= 0) return 0;
    if (r >= ranks) return n;
    double b = (double)n * (1.0 - sqrt(1.0 - (double)r / (double)ranks));
    int64_t row = (int64_t)llround(b);
    return row < 0 ? 0 : row > n ? n : row;
}

void oc_rank_rows_triangle(int64_t n, int rank, int ranks, int64_t *row0, int64_t *row1)
{
    /* The boundary is monotonic in r (sqrt is), so the runs neither overlap nor leave gaps. */
    *row0 = triangle_boundary(n, rank, ranks);
    *row1 = triangle_boundary(n, rank + 1, ranks);
}

int64_t oc_rank_chunk_rows(int64_t bytes, int64_t width, int64_t elem_size, int64_t left)
{
    int64_t row_bytes = width * elem_size;
    int64_t rows = row_bytes > 0 ? bytes / row_bytes : left;
    if (rows < 1) rows = 1;
    return rows < left ? rows : left;
}

int64_t oc_rank_triangle_chunk(int64_t n)
{
    int64_t rows = (n + 15) / 16;
    return rows < 64 ? 64 : rows;
}
