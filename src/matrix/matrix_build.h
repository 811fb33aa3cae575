/*
 * matrix_build.h - packing caller or file data into an oc_matrix, shared by the public
 * constructors (matrix_build.c) and the file readers (src/io).
 */
#ifndef OC_MATRIX_MATRIX_BUILD_H
#define OC_MATRIX_MATRIX_BUILD_H

#include <stddef.h>
#include <stdint.h>
#include "matrix/matrix.h"

/* What the bytes of a dense source hold, and so how a value other than 0 or 1 is told. */
typedef enum oc_dense_bytes {
    OC_DENSE_BYTES = 0, /* bool or uint8 from memory: the value is shown unsigned */
    OC_DENSE_INT8,      /* int8: the value is shown signed */
    OC_DENSE_UINT8,     /* uint8 without --bits (a file's, or an array's read by its dtype):
                            where the row's bytes look like numpy.packbits output, the
                            message adds which --bits fit */
    OC_DENSE_BINARIZE,  /* any nonzero byte is a one; no value is an error */
} oc_dense_bytes;

/* Packs nrows rows of dense bytes (stride bytes apart, cols bytes each) into dst
 * (nrows * words_per_row words) and records no message: returns the first row
 * (0-based from src) holding a value other than 0 or 1, its column in *bad_col, or -1.
 * Writes nothing but dst and *bad_col, so threads may call it at once. */
int64_t oc_pack_dense_rows(const unsigned char *src, int64_t nrows, int64_t stride, int64_t cols, int64_t words_per_row,
                           oc_dense_bytes kind, uint64_t *dst, int64_t *bad_col);

/* Records the message of a value other than 0 or 1 at row, col of the matrix named name
 * with cols columns, row_bytes that row's bytes as read; returns OC_ERR_INPUT. */
oc_status oc_dense_value_error(oc_context *ctx, const char *name, oc_dense_bytes kind, int64_t cols, int64_t row,
                               int64_t col, const unsigned char *row_bytes);

/* Bytes of one value of an oc_map_dtype code (0 for no code). */
size_t oc_value_type_size(int type);
/* A matrix named name from rows x cols values of oc_map_dtype `type` (rows `stride` bytes
 * apart, or with column_major the columns, as a Fortran-order array lies; checked by the
 * caller), by the one rule of matrix_values.c: values 0 and 1 only, or with binarize any
 * nonzero value a one; NaN is an error either way, the first in row order named. A cancel of
 * ctx stops it (oc_read_cancel_point, below). */
oc_status oc_values_to_matrix(oc_context *ctx, const char *name, const unsigned char *data, int64_t rows, int64_t cols,
                              int64_t stride, int column_major, int type, int binarize, oc_matrix **out);

/* The file readers and the constructors from memory are jobs that oc_context_cancel stops: each
 * checks the cancel about every OC_CANCEL_CHECK_BYTES of its input and fails through
 * oc_read_cancelled (OC_ERR_CANCELLED, "NAME: reading was cancelled"), leaving nothing
 * allocated. oc_read_cancel_point is that check for a reader that walks its input in order:
 * when done (the bytes read so far) has reached *next, *next moves OC_CANCEL_CHECK_BYTES on
 * and a cancel fails the read; *next starts at 0, so the first call checks. */
#define OC_CANCEL_CHECK_BYTES ((int64_t)4 << 20)
oc_status oc_read_cancelled(oc_context *ctx, const char *name);
oc_status oc_read_cancel_point(oc_context *ctx, const char *name, int64_t done, int64_t *next);

/* Packs rows [0, rows) of a matrix of cols columns whose source bytes lie column after
 * column (Fortran order): source column c of those rows at src + (c - c0) * stride, row 0
 * first, c0 the first source column of word w0. A source column is a column of 0/1 bytes
 * holding `kind`, or with `packed` a column of numpy.packbits bytes (MSB first), ceil(cols /
 * 8) of them. Writes words [w0, w1) of each row at dst (row i's word w0 at dst + i * ld), the
 * words past the columns zero; a caller covering a row in several calls gives word-aligned
 * ranges. Returns the first row (in row order, then column order: the first bad value of the
 * rows as a C-order reader meets it) holding a byte above 1 (never with OC_DENSE_BINARIZE),
 * or with `packed` a bit set past cols, its column in *bad_col; or -1. dst's words are then
 * unspecified. Transposes in registers (pack_columns.c): of the order of the row packers'
 * speed. Writes nothing but dst and *bad_col, so threads may call it at once. */
int64_t oc_pack_columns(const unsigned char *src, int64_t stride, int64_t rows, int64_t cols, int packed,
                        oc_dense_bytes kind, int64_t w0, int64_t w1, uint64_t *dst, int64_t ld, int64_t *bad_col);

/* Where the rows of a resident matrix come from when they are packed in parallel. */
typedef struct oc_pack_source {
    const unsigned char *data; /* row 0 (column 0 when column_major) */
    int64_t stride;            /* bytes from one row to the next (column_major: column) */
    int packed;                /* nonzero: packed rows of ceil(cols / 8) bytes in `order`;
                                * zero: cols bytes holding `kind` */
    oc_bit_order order;        /* column_major: OC_BITS_MSB_FIRST only */
    oc_dense_bytes kind;
    int column_major; /* nonzero: the bytes lie column after column (oc_pack_columns) */
    /* May be NULL. Called by the worker that packed the source bytes of rows [row0, row0 +
     * rows) and source columns [col0, col0 + cols) (a column: a byte of the row, packed or
     * not), on that worker and concurrently with others: the .npy reader drops the source
     * pages behind. A row-major source gives whole rows; a column-major one whole columns
     * (rows = m->rows) once every row of them is packed, and, when its columns are taller
     * than a band of tiles holds (see oc_pack_rows_parallel), each tile's part of them. */
    void (*block_packed)(void *user, int64_t row0, int64_t rows, int64_t col0, int64_t cols);
    void *user;
} oc_pack_source;

/* Packs every row of src into m->bits (every word written, padding included, so m may come
 * from oc_matrix_alloc_uninit) on `threads` threads (0 = all cores: the caller and the
 * context's worker pool, grown if needed; ctx must run no job meanwhile), in tasks of about
 * OC_PACK_TASK_BYTES of source; a matrix of one task is packed on the calling thread. A
 * column-major source is cut into bands of columns that give each row one cache line of
 * words (a band of at most 8 tasks) or, for taller columns, one word, and each band into
 * tiles of rows, taken band after band: a band's source is one run of the file. Sets
 * *bad_row to -1, or to the first row (in row order, whatever the thread count) holding a
 * bad value, with *bad_col the column: for dense bytes the first byte other than 0 or 1
 * (never with OC_DENSE_BINARIZE), for packed rows the first bit set past m->cols. The
 * caller words the message. Fails only when ctx is cancelled (OC_ERR_CANCELLED, checked
 * between tasks, named by m's name as oc_read_cancel_point names it); threads that cannot
 * start leave the work to the caller. */
#define OC_PACK_TASK_BYTES ((int64_t)4 << 20)
oc_status oc_pack_rows_parallel(oc_context *ctx, oc_matrix *m, const oc_pack_source *src, int threads, int64_t *bad_row,
                                int64_t *bad_col);

#endif
