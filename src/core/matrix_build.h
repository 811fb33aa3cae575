/*
 * matrix_build.h - packing caller or file data into an oc_matrix, shared by the public
 * constructors (matrix_build.c) and the file readers (src/io).
 */
#ifndef OC_CORE_MATRIX_BUILD_H
#define OC_CORE_MATRIX_BUILD_H

#include <stdint.h>
#include "core/matrix.h"

/* What the bytes of a dense source hold, and so how a value other than 0 or 1 is told. */
typedef enum oc_dense_bytes {
    OC_DENSE_BYTES = 0,  /* bool or uint8 from memory: the value is shown unsigned */
    OC_DENSE_INT8,       /* int8: the value is shown signed */
    OC_DENSE_UINT8_FILE, /* uint8 read from a file without --bits: the message adds that such
                            bytes look like numpy.packbits output and which --bits fit */
    OC_DENSE_BINARIZE,   /* any nonzero byte is a one; no value is an error */
} oc_dense_bytes;

/* Packs nrows rows of dense bytes (stride bytes apart, cols bytes each) into dst
 * (nrows * words_per_row words) and records no message: returns the first row
 * (0-based from src) holding a value other than 0 or 1, its column in *bad_col, or -1.
 * Writes nothing but dst and *bad_col, so threads may call it at once. */
int64_t oc_pack_dense_rows(const unsigned char *src, int64_t nrows, int64_t stride, int64_t cols,
                           int64_t words_per_row, oc_dense_bytes kind, uint64_t *dst, int64_t *bad_col);

/* Records the message of a value other than 0 or 1 (the byte as read) at row, col of the
 * matrix named name with cols columns; returns OC_ERR_INPUT. */
oc_status oc_dense_value_error(oc_context *ctx, const char *name, oc_dense_bytes kind, int64_t cols, int64_t row,
                               int64_t col, unsigned char byte);

/* Packs rows [row0, row0 + nrows) of m from dense bytes: src points at row row0, rows are
 * stride bytes apart, m->cols bytes each. Unless kind is OC_DENSE_BINARIZE, a byte other
 * than 0 or 1 fails with OC_ERR_INPUT naming m's name and the 0-based row and column. */
oc_status oc_matrix_pack_dense_rows(oc_context *ctx, oc_matrix *m, int64_t row0, int64_t nrows,
                                    const unsigned char *src, int64_t stride, oc_dense_bytes kind);

#endif
