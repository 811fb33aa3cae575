/*
 * test_mpi_split.c - the rank decomposition (src/mpi/rank_split.h): every split covers the
 * rows exactly once in rank order, the even split's runs differ by at most one row, and the
 * triangle split gives each rank about the same share of the upper triangle's elements.
 * Skipped (77) in a build without MPI, which does not compile src/mpi.
 */
#include "harness.h"

#ifdef OC_HAVE_MPI
#include "mpi/rank_split.h"

/* Elements of the trapezoid rows [r0, r1) x columns [i, n) that the triangle split computes. */
static double trapezoid(int64_t n, int64_t r0, int64_t r1)
{
    double sum = 0;
    for (int64_t i = r0; i < r1; ++i) sum += (double)(n - i);
    return sum;
}

static void check_cover(int64_t n, int ranks, oc_rank_rows_fn split, const char *name)
{
    int64_t next = 0;
    for (int r = 0; r < ranks; ++r) {
        int64_t r0, r1;
        split(n, r, ranks, &r0, &r1);
        CHECK_MSG(r0 == next && r1 >= r0 && r1 <= n, "%s split of %lld rows over %d ranks: rank %d has [%lld, %lld)",
                  name, (long long)n, ranks, r, (long long)r0, (long long)r1);
        next = r1;
    }
    CHECK_MSG(next == n, "%s split of %lld rows over %d ranks ends at %lld", name, (long long)n, ranks,
              (long long)next);
}

int main(void)
{
    static const int64_t sizes[] = {1, 2, 3, 7, 100, 301, 1000, 65537, 1000003};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; ++s)
        for (int ranks = 1; ranks <= 17; ++ranks) {
            int64_t n = sizes[s];
            check_cover(n, ranks, oc_rank_rows_even, "even");
            check_cover(n, ranks, oc_rank_rows_triangle, "triangle");
            for (int r = 0; r < ranks; ++r) {
                int64_t r0, r1;
                oc_rank_rows_even(n, r, ranks, &r0, &r1);
                CHECK(r1 - r0 == n / ranks || r1 - r0 == n / ranks + 1);
            }
            if (n < 1000) continue;
            /* Balance: every rank within a few rows' worth of the ideal share. */
            double ideal = trapezoid(n, 0, n) / ranks;
            for (int r = 0; r < ranks; ++r) {
                int64_t r0, r1;
                oc_rank_rows_triangle(n, r, ranks, &r0, &r1);
                double share = trapezoid(n, r0, r1);
                CHECK_MSG(share > ideal - 2.0 * (double)n && share < ideal + 2.0 * (double)n,
                          "triangle split of %lld rows over %d ranks: rank %d holds %.0f elements, ideal %.0f",
                          (long long)n, ranks, r, share, ideal);
            }
        }
    CHECK_EQ_I64(oc_rank_chunk_rows(1000, 10, 4, 100), 25);
    CHECK_EQ_I64(oc_rank_chunk_rows(1000, 10, 4, 7), 7);
    CHECK_EQ_I64(oc_rank_chunk_rows(10, 10, 4, 7), 1); /* at least one row */
    CHECK_EQ_I64(oc_rank_triangle_chunk(100), 64);
    CHECK_EQ_I64(oc_rank_triangle_chunk(16000), 1000);
    CHECK_EQ_I64(oc_rank_triangle_chunk(16001), 1001);
    return oc_test_finish();
}
#else
int main(void)
{
    oc_test_skip("built without MPI (OUTCORE_MPI): src/mpi is not compiled");
    return oc_test_finish();
}
#endif
