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
/* A matrix named name from rows x cols values of oc_map_dtype `type` (row_stride bytes
 * apart, checked by the caller), by the one rule of matrix_values.c: values 0 and 1 only,
 * or with binarize any nonzero value a one; NaN is an error either way. A cancel of ctx
 * stops it (oc_read_cancel_point, below). */
oc_status oc_values_to_matrix(oc_context *ctx, const char *name, const unsigned char *data, int64_t rows, int64_t cols,
                              int64_t row_stride, int type, int binarize, oc_matrix **out);

/* The file readers and the constructors from memory are jobs that oc_context_cancel stops: each
 * checks the cancel about every OC_CANCEL_CHECK_BYTES of its input and fails through
 * oc_read_cancelled (OC_ERR_CANCELLED, "NAME: reading was cancelled"), leaving nothing
 * allocated. oc_read_cancel_point is that check for a reader that walks its input in order:
 * when done (the bytes read so far) has reached *next, *next moves OC_CANCEL_CHECK_BYTES on
 * and a cancel fails the read; *next starts at 0, so the first call checks. */
#define OC_CANCEL_CHECK_BYTES ((int64_t)4 << 20)
oc_status oc_read_cancelled(oc_context *ctx, const char *name);
oc_status oc_read_cancel_point(oc_context *ctx, const char *name, int64_t done, int64_t *next);

/* Where the rows of a resident matrix come from when they are packed in parallel. */
typedef struct oc_pack_source {
    const unsigned char *data; /* row 0 */
    int64_t stride;            /* bytes from one row to the next */
    int packed;                /* nonzero: packed rows of ceil(cols / 8) bytes in `order`;
                                * zero: cols bytes holding `kind` */
    oc_bit_order order;
    oc_dense_bytes kind;
    /* May be NULL. Called by the worker that packed rows [row0, row0 + rows), on that
     * worker and concurrently with others: the .npy reader drops the source pages behind. */
    void (*rows_packed)(void *user, int64_t row0, int64_t rows);
    void *user;
} oc_pack_source;

/* Packs every row of src into m->bits (every word written, padding included, so m may come
 * from oc_matrix_alloc_uninit) on `threads` threads (0 = all cores: the caller and the
 * context's worker pool, grown if needed; ctx must run no job meanwhile), in tasks of about
 * OC_PACK_TASK_BYTES of source; a matrix of one task is packed on the calling thread. Sets
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
