/*
 * matrix_coords.c - a sparse matrix (matrix.h's column lists) from coordinates: what the
 * readers of sparse formats and oc_matrix_from_csr build, instead of packed bits.
 *
 * A counting sort by row (two passes over the coordinates, in the row index itself: the
 * memory it takes is the result's), then each row sorted and its
 * duplicates dropped in place, then the rows closed up: O(ones + rows), plus the rows' sorts.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "matrix/matrix.h"

static int u32_ascending(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

oc_status oc_matrix_from_coords(oc_context *ctx, int64_t rows, int64_t cols, const char *name, const uint32_t *row,
                                const uint32_t *col, int64_t count, oc_matrix **out)
{
    OC_CHECK(ctx, oc_matrix_check_dims(ctx, rows, cols, name));
    int64_t *ptr = calloc((size_t)rows + 1, sizeof *ptr);
    uint32_t *idx = malloc((size_t)(count ? count : 1) * sizeof *idx);
    if (!ptr || !idx) {
        free(ptr);
        free(idx);
        /* The row index grows with the declared rows, not with the ones: say which failed. */
        if (!ptr)
            return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate the row index of %lld rows (%lld bytes)", name,
                           (long long)rows, (long long)(rows + 1) * 8);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate the column lists of %lld ones", name,
                       (long long)count);
    }
    /* ptr[i + 1] counts row i, then ptr[i] becomes where row i ends so far: filling moves
     * each ptr[i] from row i's start to its end, which is row i + 1's start, so one shift
     * back turns the array into the row starts; no second array of rows. */
    for (int64_t k = 0; k < count; ++k) ptr[row[k] + 1]++;
    for (int64_t i = 0; i < rows; ++i) ptr[i + 1] += ptr[i];
    for (int64_t k = 0; k < count; ++k) idx[ptr[row[k]]++] = col[k];
    memmove(ptr + 1, ptr, (size_t)rows * sizeof *ptr);
    ptr[0] = 0;
    int64_t kept = 0;
    for (int64_t i = 0; i < rows; ++i) {
        uint32_t *r = idx + ptr[i];
        const int64_t n = ptr[i + 1] - ptr[i];
        int sorted = 1;
        for (int64_t e = 1; e < n && sorted; ++e) sorted = r[e - 1] < r[e];
        if (!sorted) qsort(r, (size_t)n, sizeof *r, u32_ascending);
        const int64_t start = kept;
        for (int64_t e = 0; e < n; ++e)
            if (kept == start || idx[kept - 1] != r[e]) idx[kept++] = r[e];
        ptr[i] = start;
    }
    ptr[rows] = kept;
    return oc_matrix_alloc_csr(ctx, rows, cols, name, ptr, idx, out);
}
