/*
 * matrix_build.c - the public constructors of oc_matrix from caller memory: dense 0/1
 * bytes, packed bits, and sparse rows (CSR).
 *
 * Each one checks its arguments before it allocates, packs into the layout of matrix.h, and
 * keeps no pointer into the caller's buffers. Structural mistakes (NULL pointers, strides
 * shorter than a row, an index pointer that goes backwards, an index out of range) are
 * OC_ERR_INVALID_ARGUMENT; a value other than 0 or 1 in the data, and a set bit in the
 * padding of a packed row (past its columns), are OC_ERR_INPUT, like the same bytes in a file.
 * Each one (bytes, bits, numbers in matrix_values.c, sparse rows) starts a job on the context,
 * as a file's read does: oc_context_cancel stops it (OC_ERR_CANCELLED), and a cancel left over
 * from an earlier job does not.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"
#include "matrix/matrix.h"
#include "matrix/matrix_build.h"
#include "core/pages.h"
#include "core/context.h"
#include "core/threads.h"
#include "core/workers.h"

/* The name a matrix built from memory carries in messages until oc_matrix_set_name. */
#define OC_DEFAULT_NAME "A"

int64_t oc_pack_dense_rows(const unsigned char *src, int64_t nrows, int64_t stride, int64_t cols, int64_t words_per_row,
                           oc_dense_bytes kind, uint64_t *dst, int64_t *bad_col)
{
    for (int64_t k = 0; k < nrows; ++k) {
        const unsigned char *row = src + k * stride;
        uint64_t *out = dst + k * words_per_row;
        if (kind == OC_DENSE_BINARIZE) {
            oc_pack_nonzero_row(row, cols, out, words_per_row);
            continue;
        }
        int64_t bad = oc_pack_dense_row(row, cols, out, words_per_row);
        if (bad >= 0) {
            *bad_col = bad;
            return k;
        }
    }
    return -1;
}

/* Whether a row of bytes looks like numpy.packbits output rather than 0/1 bytes with a stray
 * value: at least half of its nonzero bytes are other than 1 (in packed random bits a byte
 * is 1 only when its last bit alone is set; a 0/1 row with one slip has one). */
static int looks_packed(const unsigned char *row, int64_t cols)
{
    int64_t nonzero = 0, other = 0;
    for (int64_t j = 0; j < cols; ++j) nonzero += row[j] != 0, other += row[j] > 1;
    return 2 * other >= nonzero;
}

oc_status oc_dense_value_error(oc_context *ctx, const char *name, oc_dense_bytes kind, int64_t cols, int64_t row,
                               int64_t col, const unsigned char *row_bytes)
{
    const unsigned char byte = row_bytes[col];
    int value = kind == OC_DENSE_INT8 ? (int)(signed char)byte : (int)byte;
    char hint[200] = "";
    if (kind == OC_DENSE_UINT8 && looks_packed(row_bytes, cols))
        snprintf(hint, sizeof hint,
                 "; uint8 rows holding bytes like this look like numpy.packbits output: add --bits M "
                 "(Python: bits=M) with M the true column count, %" PRId64 " to %" PRId64 " for these %" PRId64
                 "-byte rows",
                 8 * cols - 7, 8 * cols, cols);
    return oc_fail(ctx, OC_ERR_INPUT,
                   "%s: value %d at row %" PRId64 ", column %" PRId64
                   " is not 0 or 1 (rows and columns count from 0; --binarize, in Python binarize=True, reads "
                   "any nonzero value as 1)%s",
                   name, value, row, col, hint);
}

/* ---------------------------------------------------------------- parallel packing */

typedef struct pack_job {
    oc_matrix *m;
    const oc_pack_source *src;
    const oc_context *ctx; /* read for its cancel flag between tasks */
    int64_t rows_per_task, tasks;
    /* Tasks are taken in index order from `next` by every part of the split. */
    atomic_llong next;
    atomic_int cancelled;
    /* The lowest task that met a bad row: tasks above it skip their rows, and since tasks
     * start in index order every task below it has run to its end, so the lowest bad row
     * any task records is the first in the matrix. */
    atomic_llong first_bad_task;
    pthread_mutex_t lock; /* guards bad_row, bad_col */
    int64_t bad_row, bad_col;
    /* A column-major source: task t is tile t % tiles_per_band (of rows_per_task rows) of
     * band t / tiles_per_band (band_words words of every row). A band's last tile to finish
     * hands its columns to block_packed; tiles below first_bad_row still run, since a bad
     * value further left in an earlier row may lie in a later band. */
    int64_t band_words, tiles_per_band;
    int tile_release; /* each tile's part of its columns goes to block_packed too */
    atomic_llong *tiles_left;
    atomic_llong first_bad_row;
} pack_job;

static void pack_task(pack_job *job, int64_t task)
{
    if (task > atomic_load(&job->first_bad_task)) return;
    const oc_pack_source *src = job->src;
    oc_matrix *m = job->m;
    int64_t row0 = task * job->rows_per_task, rows = m->rows - row0;
    if (rows > job->rows_per_task) rows = job->rows_per_task;
    /* The rows are fresh memory (oc_matrix_alloc_uninit) that this task overwrites whole:
     * taking their page faults one exception at a time was a large part of reading a packed
     * file (docs/design-notes.md). */
    oc_pages_populate_write(m->bits + row0 * m->words_per_row, (size_t)(rows * m->words_per_row * 8));
    for (int64_t i = row0; i < row0 + rows; ++i) {
        const unsigned char *row = src->data + i * src->stride;
        uint64_t *dst = m->bits + i * m->words_per_row;
        int64_t bad;
        if (src->packed) bad = oc_pack_bits_row(row, m->cols, src->order, dst, m->words_per_row);
        else if (src->kind == OC_DENSE_BINARIZE) oc_pack_nonzero_row(row, m->cols, dst, m->words_per_row), bad = -1;
        else bad = oc_pack_dense_row(row, m->cols, dst, m->words_per_row);
        if (bad < 0) continue;
        pthread_mutex_lock(&job->lock);
        if (job->bad_row < 0 || i < job->bad_row) {
            job->bad_row = i;
            job->bad_col = bad;
        }
        pthread_mutex_unlock(&job->lock);
        long long seen = atomic_load(&job->first_bad_task);
        while (task < seen && !atomic_compare_exchange_weak(&job->first_bad_task, &seen, task)) {}
        return;
    }
    if (src->block_packed) src->block_packed(src->user, row0, rows, 0, src->packed ? (m->cols + 7) / 8 : m->cols);
}

/* Records a bad value at (row, col) if it comes before the one recorded (row order, then
 * column order). */
static void record_bad(pack_job *job, int64_t row, int64_t col)
{
    pthread_mutex_lock(&job->lock);
    if (job->bad_row < 0 || row < job->bad_row || (row == job->bad_row && col < job->bad_col)) {
        job->bad_row = row;
        job->bad_col = col;
    }
    pthread_mutex_unlock(&job->lock);
    long long seen = atomic_load(&job->first_bad_row);
    while (row < seen && !atomic_compare_exchange_weak(&job->first_bad_row, &seen, row)) {}
}

static void pack_column_task(pack_job *job, int64_t task)
{
    const oc_pack_source *src = job->src;
    oc_matrix *m = job->m;
    const int64_t band = task / job->tiles_per_band, row0 = task % job->tiles_per_band * job->rows_per_task;
    const int64_t rows = m->rows - row0 < job->rows_per_task ? m->rows - row0 : job->rows_per_task;
    const int64_t per_word = src->packed ? 8 : 64, ncols = src->packed ? (m->cols + 7) / 8 : m->cols;
    const int64_t w0 = band * job->band_words, c0 = w0 * per_word;
    /* The last band also writes the row's padding words. */
    const int64_t w1 = (w0 + job->band_words) * per_word >= ncols ? m->words_per_row : w0 + job->band_words;
    const int64_t c1 = w1 * per_word < ncols ? w1 * per_word : ncols;
    if (row0 <= atomic_load(&job->first_bad_row)) {
        /* The first band's tiles fault their rows in (oc_pack_rows_parallel's tasks do so
         * for theirs); the other bands write into the same rows. */
        if (band == 0)
            oc_pages_populate_write(m->bits + row0 * m->words_per_row, (size_t)(rows * m->words_per_row * 8));
        int64_t col = -1, bad = oc_pack_columns(src->data + c0 * src->stride + row0, src->stride, rows, m->cols,
                                                src->packed, src->kind, w0, w1, m->bits + row0 * m->words_per_row + w0,
                                                m->words_per_row, &col);
        if (bad >= 0) record_bad(job, row0 + bad, col);
        else if (job->tile_release && src->block_packed) src->block_packed(src->user, row0, rows, c0, c1 - c0);
    }
    if (atomic_fetch_sub(&job->tiles_left[band], 1) == 1 && src->block_packed)
        src->block_packed(src->user, 0, m->rows, c0, c1 - c0);
}

static void pack_part(void *arg, int part, int parts)
{
    (void)part;
    (void)parts;
    pack_job *job = arg;
    for (;;) {
        if (oc_cancelled(job->ctx)) {
            atomic_store(&job->cancelled, 1);
            return;
        }
        int64_t t = atomic_fetch_add(&job->next, 1);
        if (t >= job->tasks) return;
        if (job->tiles_left) pack_column_task(job, t);
        else pack_task(job, t);
    }
}

oc_status oc_pack_rows_parallel(oc_context *ctx, oc_matrix *m, const oc_pack_source *src, int threads, int64_t *bad_row,
                                int64_t *bad_col)
{
    int64_t row_bytes = src->packed ? (m->cols + 7) / 8 : m->cols;
    pack_job job = {.m = m, .src = src, .ctx = ctx, .bad_row = -1, .bad_col = -1};
    job.rows_per_task = OC_PACK_TASK_BYTES / row_bytes > 0 ? OC_PACK_TASK_BYTES / row_bytes : 1;
    job.tasks = (m->rows + job.rows_per_task - 1) / job.rows_per_task;
    if (src->column_major) {
        /* Bands of 8 words (a cache line of each row, so no two threads write one line), in
         * tiles of OC_PACK_TASK_BYTES of source; a band of more tiles than 8 (its columns are
         * tall) is cut to one word and gives back each tile's part as it is packed. */
        const int64_t per_byte = src->packed ? 1 : 8, needed = (row_bytes + per_byte * 8 - 1) / (per_byte * 8);
        job.band_words = 8;
        for (;;) {
            job.rows_per_task = (OC_PACK_TASK_BYTES / (job.band_words * 8 * per_byte) + 7) / 8 * 8;
            job.tiles_per_band = (m->rows + job.rows_per_task - 1) / job.rows_per_task;
            if (job.tiles_per_band <= 8 || job.band_words == 1) break;
            job.band_words = 1;
            job.tile_release = 1;
        }
        job.tasks = (needed + job.band_words - 1) / job.band_words * job.tiles_per_band;
        job.tiles_left = malloc(sizeof *job.tiles_left * (size_t)(job.tasks / job.tiles_per_band));
        if (!job.tiles_left)
            return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate the packing's %" PRId64 " bands", m->name,
                           job.tasks / job.tiles_per_band);
        for (int64_t b = 0; b < job.tasks / job.tiles_per_band; ++b)
            atomic_init(&job.tiles_left[b], job.tiles_per_band);
    }
    atomic_init(&job.next, 0);
    atomic_init(&job.cancelled, 0);
    atomic_init(&job.first_bad_task, INT64_MAX);
    atomic_init(&job.first_bad_row, INT64_MAX);
    pthread_mutex_init(&job.lock, NULL);
    int nthreads = oc_threads_resolve(threads);
    if (nthreads > job.tasks) nthreads = (int)job.tasks;
    oc_workers *pool = NULL;
    /* The context's pool: its threads outlive the call, so a caller that builds a matrix per
     * call (the Python binding) does not start threads each time. Without a pool (threads
     * could not start) the caller packs alone. */
    if (nthreads > 1 && oc_context_workers(ctx, nthreads - 1, &pool) != OC_OK) pool = NULL;
    if (pool) oc_workers_split(pool, nthreads, pack_part, &job);
    else pack_part(&job, 0, 1);
    pthread_mutex_destroy(&job.lock);
    free(job.tiles_left);
    *bad_row = job.bad_row;
    *bad_col = job.bad_col;
    if (atomic_load(&job.cancelled)) return oc_read_cancelled(ctx, m->name);
    return OC_OK;
}

oc_status oc_read_cancelled(oc_context *ctx, const char *name)
{
    return oc_fail(ctx, OC_ERR_CANCELLED, "%s: reading was cancelled", name);
}

oc_status oc_read_cancel_point(oc_context *ctx, const char *name, int64_t done, int64_t *next)
{
    if (done < *next) return OC_OK;
    *next = done + OC_CANCEL_CHECK_BYTES;
    return oc_cancelled(ctx) ? oc_read_cancelled(ctx, name) : OC_OK;
}

/* Checks what every constructor shares: out, the dimensions, and that rows * stride bytes
 * are addressable. */
static oc_status check_shape(oc_context *ctx, const char *name, const void *data, int64_t rows, int64_t cols,
                             int64_t row_stride, int64_t row_bytes, oc_matrix **out)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT; /* its workers pack large matrices */
    if (!out) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: out is NULL", name);
    if (!data) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: data is NULL", name);
    if (rows <= 0 || cols <= 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "%s: the matrix has %" PRId64 " rows and %" PRId64 " columns; both must be positive", name, rows,
                       cols);
    if (row_stride < row_bytes)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "%s: row_stride %" PRId64 " is smaller than a row (%" PRId64 " bytes)", name, row_stride,
                       row_bytes);
    if (!oc_mul_i64(rows - 1, row_stride, &(int64_t){0}))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: %" PRId64 " rows of stride %" PRId64 " overflow 64-bit sizes",
                       name, rows, row_stride);
    return OC_OK;
}

oc_status oc_matrix_from_dense(oc_context *ctx, const void *data, int64_t rows, int64_t cols, int64_t row_stride,
                               oc_matrix **out)
{
    OC_CHECK(ctx, check_shape(ctx, OC_DEFAULT_NAME, data, rows, cols, row_stride, cols, out));
    oc_context_begin_job(ctx); /* a conversion is a job: oc_context_cancel stops it (matrix_build.h) */
    oc_matrix *m;
    OC_CHECK(ctx, oc_matrix_alloc_uninit(ctx, rows, cols, OC_DEFAULT_NAME, &m));
    oc_pack_source src = {.data = data, .stride = row_stride, .kind = OC_DENSE_BYTES};
    int64_t bad = -1, col = -1;
    oc_status st = oc_pack_rows_parallel(ctx, m, &src, 0, &bad, &col);
    if (st == OC_OK && bad >= 0)
        st = oc_dense_value_error(ctx, m->name, OC_DENSE_BYTES, cols, bad, col, src.data + bad * row_stride);
    if (st != OC_OK) {
        oc_matrix_free(m);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    *out = m;
    return OC_OK;
}

oc_status oc_matrix_from_bits(oc_context *ctx, const void *data, int64_t rows, int64_t cols, int64_t row_stride,
                              oc_bit_order order, oc_matrix **out)
{
    if (cols > INT64_MAX - 7)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, OC_DEFAULT_NAME ": %" PRId64 " columns overflow", cols);
    int64_t row_bytes = cols / 8 + (cols % 8 != 0);
    OC_CHECK(ctx, check_shape(ctx, OC_DEFAULT_NAME, data, rows, cols, row_stride, row_bytes, out));
    if (order != OC_BITS_MSB_FIRST && order != OC_BITS_LSB_FIRST)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, OC_DEFAULT_NAME ": unknown bit order %d", (int)order);
    oc_context_begin_job(ctx); /* a conversion is a job: oc_context_cancel stops it (matrix_build.h) */
    oc_matrix *m;
    OC_CHECK(ctx, oc_matrix_alloc_uninit(ctx, rows, cols, OC_DEFAULT_NAME, &m));
    oc_pack_source src = {.data = data, .stride = row_stride, .packed = 1, .order = order};
    int64_t bad = -1, extra = -1;
    oc_status st = oc_pack_rows_parallel(ctx, m, &src, 0, &bad, &extra);
    /* The padding must be 0: a set bit there says cols is short of the true count. */
    if (st == OC_OK && bad >= 0)
        st = oc_fail(ctx, OC_ERR_INPUT,
                     "%s: row %" PRId64 " has bit %" PRId64 " set but cols %" PRId64 " (Python: bits=%" PRId64
                     ") says the rows hold %" PRId64
                     " columns; the bits past them must be 0 (rows, columns and bits count from 0)",
                     OC_DEFAULT_NAME, bad, extra, cols, cols, cols);
    if (st != OC_OK) {
        oc_matrix_free(m);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    *out = m;
    return OC_OK;
}

oc_status oc_matrix_from_csr(oc_context *ctx, int64_t rows, int64_t cols, const int64_t *indptr, const int64_t *indices,
                             oc_matrix **out)
{
    static const char fn[] = OC_DEFAULT_NAME;
    if (!indptr) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: indptr is NULL", fn);
    /* indptr is known non-NULL; data stands in for it in the shared checks (stride 1, 1 byte). */
    OC_CHECK(ctx, check_shape(ctx, fn, indptr, rows, cols, 1, 1, out));
    if (indptr[0] < 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: indptr[0] = %" PRId64 " is negative", fn, indptr[0]);
    /* Every structural check runs before the allocation, so a bad argument costs nothing. */
    for (int64_t i = 0; i < rows; ++i)
        if (indptr[i + 1] < indptr[i])
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "%s: indptr is not monotone: indptr[%" PRId64 "] = %" PRId64
                           " is smaller than indptr[%" PRId64 "] = %" PRId64,
                           fn, i + 1, indptr[i + 1], i, indptr[i]);
    if (indptr[rows] > indptr[0] && !indices)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: indices is NULL but indptr holds %" PRId64 " entries", fn,
                       indptr[rows] - indptr[0]);
    oc_context_begin_job(ctx); /* a conversion is a job: oc_context_cancel stops it (matrix_build.h) */
    /* Cancel points by the index bytes walked, twice: in the checks and in the copy below. */
    int64_t next_check = 0;
    for (int64_t i = 0; i < rows; ++i) {
        OC_CHECK(ctx, oc_read_cancel_point(ctx, fn, (indptr[i] - indptr[0]) * 8, &next_check));
        for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k)
            if (indices[k] < 0 || indices[k] >= cols)
                return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                               "%s: indices[%" PRId64 "] = %" PRId64 " (row %" PRId64 ") is outside [0, %" PRId64 ")",
                               fn, k, indices[k], i, cols);
    }
    /* Held as column lists (matrix.h): the sparse algorithm reads them as they are. */
    OC_CHECK(ctx, oc_matrix_check_dims(ctx, rows, cols, fn));
    const int64_t count = indptr[rows] - indptr[0];
    uint32_t *row = malloc((size_t)(count ? count : 1) * sizeof *row),
             *col = malloc((size_t)(count ? count : 1) * sizeof *col);
    oc_status st = OC_OK;
    if (!row || !col) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate %" PRId64 " entries", fn, count);
    } else {
        next_check = 0;
        for (int64_t i = 0; i < rows && st == OC_OK; ++i) {
            st = oc_read_cancel_point(ctx, fn, (indptr[i] - indptr[0]) * 8, &next_check);
            for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k) {
                row[k - indptr[0]] = (uint32_t)i;
                col[k - indptr[0]] = (uint32_t)indices[k];
            }
        }
        if (st == OC_OK) st = oc_matrix_from_coords(ctx, rows, cols, OC_DEFAULT_NAME, row, col, count, out);
    }
    free(row);
    free(col);
    return st;
}
