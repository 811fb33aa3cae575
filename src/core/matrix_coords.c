/*
 * matrix_coords.c - a sparse matrix (matrix.h's column lists) from coordinates: what the
 * readers of sparse formats and oc_matrix_from_csr build, instead of packed bits.
 *
 * A counting sort by row (two passes over the coordinates), then each row sorted and its
 * duplicates dropped in place, then the rows closed up: O(ones + rows), plus the rows' sorts.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/matrix.h"

static int u32_ascending(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

oc_status oc_matrix_from_coords(oc_context *ctx, int64_t rows, int64_t cols, const char *name, const uint32_t *row,
                                const uint32_t *col, int64_t count, oc_matrix **out)
{
    OC_CHECK(oc_matrix_check_dims(ctx, rows, cols, name));
    int64_t *ptr = calloc((size_t)rows + 1, sizeof *ptr), *at = malloc((size_t)rows * sizeof *at);
    uint32_t *idx = malloc((size_t)(count ? count : 1) * sizeof *idx);
    if (!ptr || !at || !idx) {
        free(ptr);
        free(at);
        free(idx);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate the column lists of %lld ones", name, (long long)count);
    }
    for (int64_t k = 0; k < count; ++k) ptr[row[k] + 1]++;
    for (int64_t i = 0; i < rows; ++i) ptr[i + 1] += ptr[i];
    memcpy(at, ptr, (size_t)rows * sizeof *at);
    for (int64_t k = 0; k < count; ++k) idx[at[row[k]]++] = col[k];
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
    free(at);
    return oc_matrix_alloc_csr(ctx, rows, cols, name, ptr, idx, out);
}
