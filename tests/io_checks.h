/*
 * io_checks.h - what the readers' tests share: files written into the test's temporary
 * directory, and the checks that a file reads as a given 0/1 matrix (its bits, its shape,
 * zero padding past the last column).
 */
#ifndef OC_TESTS_IO_CHECKS_H
#define OC_TESTS_IO_CHECKS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "matrix/matrix.h"
#include "outcore.h"

/* The context the test's calls use (created by its main). */
static oc_context *ctx;

static inline const char *write_file(const char *name, const void *bytes, size_t len)
{
    const char *path = oc_test_tmp_path(name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, len, f) != len) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
    return path;
}

static inline const char *write_text(const char *name, const char *text)
{
    return write_file(name, text, strlen(text));
}

static inline void check_equals_dense(const oc_matrix *m, const unsigned char *a, int rows, int cols)
{
    CHECK_EQ_I64(oc_matrix_rows(m), rows);
    CHECK_EQ_I64(oc_matrix_cols(m), cols);
    if (oc_matrix_rows(m) != rows || oc_matrix_cols(m) != cols) return;
    int bad = 0;
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) bad += oc_matrix_get(m, i, j) != (a[i * cols + j] != 0);
    CHECK_EQ_I64(bad, 0);
    /* The padding past the last column must be zero: kernels count it. */
    int64_t pops[64], want = 0;
    CHECK(oc_matrix_row_popcounts(NULL, m, 1, pops) == OC_OK);
    for (int i = 0; i < rows; ++i) {
        int64_t row_ones = 0;
        for (int j = 0; j < cols; ++j) row_ones += a[i * cols + j] != 0;
        want += pops[i] == row_ones;
    }
    CHECK_EQ_I64(want, rows);
}

/* Reads path with opts and checks that it reads as the dense rows x cols matrix want (only
 * the shape when want is NULL). */
static inline void check_read_with(const char *path, const oc_read_options *opts, const unsigned char *want, int rows,
                                   int cols)
{
    oc_matrix *m = NULL;
    oc_status st = oc_matrix_read(ctx, path, opts, &m);
    CHECK_MSG(st == OC_OK, "%s: %s", path, oc_context_last_error(ctx));
    if (m && want) check_equals_dense(m, want, rows, cols);
    if (m) CHECK(oc_matrix_rows(m) == rows && oc_matrix_cols(m) == cols);
    oc_matrix_free(m);
}

static inline void check_reads_as(const char *path, int64_t bits, const unsigned char *want, int rows, int cols)
{
    oc_read_options opts = OC_READ_OPTIONS_INIT;
    opts.bits = bits;
    check_read_with(path, &opts, want, rows, cols);
}

#endif
