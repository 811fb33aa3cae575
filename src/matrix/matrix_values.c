/*
 * matrix_values.c - a 0/1 matrix from numbers of any numeric type: the one rule for what is
 * a one, shared by the public constructor (the Python binding's arrays) and the .npy reader
 * (files of wider types), so every caller reads the same values the same way:
 *   - without binarize, every value must be 0 or 1 (0.0, 1.0 and -0.0 included; a bool's
 *     value is its byte), else OC_ERR_INPUT naming the value, its row and column and the fix
 *     (binarize; an int8 or uint8 value as oc_dense_value_error tells it, with the packbits
 *     hint of a uint8 row that looks packed);
 *   - with binarize, a nonzero value is a one; NaN, neither zero nor nonzero, is an error.
 * Rows are converted to bytes one at a time and packed as dense bytes are; the cancel is
 * checked every OC_CANCEL_CHECK_BYTES of values (a float64 input of gigabytes takes seconds).
 * Values in Fortran order (a .npy's) are first gathered into rows a block at a time, as many
 * rows as fill a cache line of each column, so every line of the input is read once.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text_buf.h"
#include "core/context.h"
#include "core/error.h"
#include "matrix/matrix.h"
#include "matrix/matrix_build.h"

size_t oc_value_type_size(int type)
{
    static const unsigned char sizes[] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8}; /* in oc_map_dtype order */
    return type >= 0 && type < (int)sizeof sizes ? sizes[type] : 0;
}

/* Element col of a row of `type` as a double (exact for every 0 and 1; what is neither is
 * never read as one). */
static double value_at(const unsigned char *row, int type, int64_t col)
{
    const void *p = row + col * (int64_t)oc_value_type_size(type);
    switch (type) {
    case OC_MAP_BOOL: /* its byte: 2 is no 0 or 1, as in a bool .npy and oc_matrix_from_dense */
        return *(const unsigned char *)p;
    case OC_MAP_INT8:
        return *(const int8_t *)p;
    case OC_MAP_INT16: {
        int16_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case OC_MAP_INT32: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case OC_MAP_INT64: {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return (double)v;
    }
    case OC_MAP_UINT8:
        return *(const uint8_t *)p;
    case OC_MAP_UINT16: {
        uint16_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case OC_MAP_UINT32: {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    case OC_MAP_UINT64: {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        return (double)v;
    }
    case OC_MAP_FLOAT32: {
        float v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    default: {
        double v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    }
}

/* Element col as a message shows it: a 64-bit integer exactly (past 2^53 a double would
 * name another value), a float in the fewest digits that read back as it in its own type
 * (numpy's way: 0.1 for float32's 0.1, not 0.10000000149011612). */
static const char *value_text(const unsigned char *row, int type, int64_t col, char buf[40])
{
    const unsigned char *p = row + col * (int64_t)oc_value_type_size(type);
    if (type == OC_MAP_INT64 || type == OC_MAP_UINT64) {
        uint64_t u;
        memcpy(&u, p, sizeof u);
        if (type == OC_MAP_INT64) snprintf(buf, 40, "%" PRId64, (int64_t)u);
        else snprintf(buf, 40, "%" PRIu64, u);
        return buf;
    }
    return oc_shortest(value_at(row, type, col), type == OC_MAP_FLOAT32, buf);
}

/* Whether the element is nonzero, read in its own type (no int64 rounds to zero). */
static int nonzero_at(const unsigned char *row, int type, int64_t col)
{
    size_t size = oc_value_type_size(type);
    const unsigned char *p = row + col * (int64_t)size;
    if (type == OC_MAP_FLOAT32 || type == OC_MAP_FLOAT64) return value_at(row, type, col) != 0.0;
    for (size_t k = 0; k < size; ++k)
        if (p[k]) return 1;
    return 0;
}

/* Rows [row0, row0 + n) of values lying column after column (column j at data + j * stride)
 * into rows of row_bytes at block. */
static void gather_rows(const unsigned char *data, int64_t stride, int64_t cols, size_t size, int64_t row0, int64_t n,
                        unsigned char *block, int64_t row_bytes)
{
    for (int64_t j = 0; j < cols; ++j) {
        const unsigned char *p = data + j * stride + row0 * (int64_t)size;
        for (int64_t t = 0; t < n; ++t) memcpy(block + t * row_bytes + j * (int64_t)size, p + t * (int64_t)size, size);
    }
}

oc_status oc_values_to_matrix(oc_context *ctx, const char *name, const unsigned char *data, int64_t rows, int64_t cols,
                              int64_t stride, int column_major, int type, int binarize, oc_matrix **out)
{
    const char *type_name = oc_map_dtype_name(type);
    if (!type_name) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: value type %d is no oc_map_dtype", name, type);
    const size_t size = oc_value_type_size(type);
    const int64_t row_bytes = cols * (int64_t)size, block_rows = column_major ? 64 / (int64_t)size : 1;
    unsigned char *bytes = malloc((size_t)cols),
                  *block = column_major ? malloc((size_t)(block_rows * row_bytes)) : NULL;
    if (!bytes || (column_major && !block)) {
        free(bytes);
        free(block);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate a row of %" PRId64 " values", name, cols);
    }
    oc_matrix *m = NULL;
    oc_status st = oc_matrix_alloc_uninit(ctx, rows, cols, name, &m);
    int64_t next_check = 0;
    for (int64_t i = 0; st == OC_OK && i < rows; ++i) {
        if ((st = oc_read_cancel_point(ctx, name, i * row_bytes, &next_check)) != OC_OK) break;
        if (column_major && i % block_rows == 0)
            gather_rows(data, stride, cols, size, i, rows - i < block_rows ? rows - i : block_rows, block, row_bytes);
        const unsigned char *row = column_major ? block + i % block_rows * row_bytes : data + i * stride;
        for (int64_t j = 0; j < cols; ++j) {
            double v = value_at(row, type, j);
            if (isnan(v)) {
                st = oc_fail(ctx, OC_ERR_INPUT,
                             "%s: value NaN at row %" PRId64 ", column %" PRId64 " is neither 0 nor 1 "
                             "(rows and columns count from 0; not even --binarize, in Python binarize=True, reads it)",
                             name, i, j);
                break;
            }
            if (!binarize && v != 0.0 && v != 1.0) {
                if (type == OC_MAP_INT8 || type == OC_MAP_UINT8) {
                    /* Told as the .npy reader tells the same bytes: int8 signed, uint8 with the
                     * packbits hint where its row looks packed. */
                    st = oc_dense_value_error(ctx, name, type == OC_MAP_INT8 ? OC_DENSE_INT8 : OC_DENSE_UINT8, cols, i,
                                              j, row);
                    break;
                }
                char shown[40];
                st = oc_fail(ctx, OC_ERR_INPUT,
                             "%s: value %s at row %" PRId64 ", column %" PRId64 " is not 0 or 1 "
                             "(%s; rows and columns count from 0; --binarize, in Python binarize=True, reads any "
                             "nonzero value as 1)",
                             name, value_text(row, type, j, shown), i, j, type_name);
                break;
            }
            bytes[j] = (unsigned char)nonzero_at(row, type, j);
        }
        if (st == OC_OK) oc_pack_nonzero_row(bytes, cols, m->bits + i * m->words_per_row, m->words_per_row);
    }
    free(bytes);
    free(block);
    if (st != OC_OK) {
        oc_matrix_free(m);
        return st;
    }
    *out = m;
    return OC_OK;
}

oc_status oc_matrix_from_values(oc_context *ctx, const void *data, int64_t rows, int64_t cols, int64_t row_stride,
                                int value_type, int binarize, oc_matrix **out)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT; /* its workers pack large matrices */
    size_t size = oc_value_type_size(value_type);
    if (!size) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "A: value type %d is no oc_map_dtype", value_type);
    if (!out || !data) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "A: data and out must not be NULL");
    if (rows <= 0 || cols <= 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "A: the matrix has %" PRId64 " rows and %" PRId64 " columns; both must be positive", rows, cols);
    int64_t row_bytes;
    if (!oc_mul_i64(cols, (int64_t)size, &row_bytes) || row_stride < row_bytes ||
        !oc_mul_i64(rows - 1, row_stride, &(int64_t){0}))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "A: row_stride %" PRId64 " does not fit rows of %" PRId64 " %s values", row_stride, cols,
                       oc_map_dtype_name(value_type));
    oc_context_begin_job(ctx); /* a conversion is a job: oc_context_cancel stops it (matrix_build.h) */
    return oc_values_to_matrix(ctx, "A", data, rows, cols, row_stride, 0, value_type, binarize, out);
}
