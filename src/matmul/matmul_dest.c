/*
 * matmul_dest.c - the result of a product: a .npy written tile by tile through its mapping
 * under a temporary name, or caller memory; write_tile (matmul_job.h), which mirrors the
 * upper tiles of A·Aᵀ.
 */
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "core/context.h"
#include "core/error.h"
#include "engine/sink.h"
#include "io/formats/npy_array.h"
#include "matmul/matmul_dtype.h"
#include "matrix/matrix.h"
#include "matmul/matmul_io.h"
#include "matmul/matmul_resume.h"

/* OC_ERR_INPUT when path is one of the inputs' files, by any name. */
static oc_status check_not_input(oc_context *ctx, const char *path, const oc_mm_source *a, const oc_mm_source *b)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return OC_OK; /* a new file cannot be an input */
    const oc_mm_source *in[2] = {a, b};
    for (int i = 0; i < 2; i++)
        if (in[i] && (in[i]->dev || in[i]->ino) && in[i]->dev == (uint64_t)sb.st_dev &&
            in[i]->ino == (uint64_t)sb.st_ino)
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: the output is the input file %s (the same file by another name or the same name): "
                           "writing it would replace the input; choose another output name",
                           path, in[i]->name);
    return OC_OK;
}

/* Whether rows of two strided arrays meet, each `rows` rows of `width` bytes, the same `stride`
 * bytes apart (stride >= both widths), the second starting `d` bytes after the first (d >= 0):
 * the second's row j starts r bytes into the first's row j + q (d = q stride + r), so it meets
 * that row when r < width_1, and the next one when it runs past the row's stride. */
static int rows_meet(int64_t d, int64_t stride, int64_t rows1, int64_t width1, int64_t rows2, int64_t width2)
{
    const int64_t q = d / stride, r = d % stride;
    /* rows i = j + q + step of the first, for rows j of the second, j in [0, rows2) */
    for (int step = 0; step < 2; ++step) {
        if (step == 0 ? r >= width1 : r + width2 <= stride) continue;
        const int64_t lo = q + step, hi = q + step + rows2; /* first-array rows touched: [lo, hi) */
        if (lo < rows1 && hi > 0) return 1;
    }
    return 0;
}

/* C's memory (m x n elements of elem bytes, ld apart, from c) and an operand's in memory must
 * not meet: the result would overwrite the operand while the product still reads it. Arrays
 * whose spans overlap but whose rows interleave without meeting (column blocks of one buffer)
 * are apart when their rows are the same bytes apart; with other strides a shared span is
 * refused. */
static oc_status check_apart(oc_context *ctx, const oc_mm_dest *d, int64_t span, const oc_mm_source *s,
                             const char *label)
{
    if (!s || !s->data) return OC_OK;
    const unsigned char *c = d->data;
    const int64_t se = (int64_t)oc_matmul_dtype_size(s->dtype);
    const int64_t other = oc_memory_span(s->data, s->rows, s->cols, s->ld, (size_t)se);
    if (span <= 0 || other <= 0 || c + span <= s->data || s->data + other <= c) return OC_OK;
    const int64_t c_width = d->cols * (int64_t)d->elem, s_width = s->cols * se;
    /* A single row has no stride of its own: it takes the other's. */
    int64_t c_stride = d->rows > 1 ? d->ld * (int64_t)d->elem : 0, s_stride = s->rows > 1 ? s->ld * se : 0;
    if (!c_stride) c_stride = s_stride ? s_stride : c_width > s_width ? c_width : s_width;
    if (!s_stride) s_stride = c_stride;
    if (c_stride == s_stride && c_stride >= c_width && c_stride >= s_width) {
        const int meet = c >= s->data ? rows_meet(c - s->data, c_stride, s->rows, s_width, d->rows, c_width)
                                      : rows_meet(s->data - c, c_stride, d->rows, c_width, s->rows, s_width);
        if (!meet) return OC_OK;
    }
    return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                   "C shares memory with %s: writing the result would overwrite the operand while it is read; give "
                   "C memory of its own",
                   label);
}

oc_status oc_mm_dest_open(oc_context *ctx, const oc_matmul_array *c, oc_matmul_dtype dtype, int64_t m, int64_t n,
                          const oc_mm_source *a, const oc_mm_source *b, const char *reopen, oc_mm_dest *d)
{
    memset(d, 0, sizeof *d);
    d->elem = oc_matmul_dtype_size(dtype);
    d->rows = m;
    d->cols = n;
    d->ld = n;
    OC_CHECK(ctx, oc_mm_array_check_size(ctx, c, "C"));
    if (c->path) {
        const char *descr = oc_matmul_dtype_descr(dtype);
        if (!descr)
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: a %s result cannot be written to .npy (numpy has no such dtype): ask "
                           "for float32, or write to memory",
                           c->path, oc_matmul_dtype_name(dtype));
        OC_CHECK(ctx, check_not_input(ctx, c->path, a, b));
        /* numpy's shape: a vector's dimension dropped (A·Aᵀ of a vector is a scalar). */
        int64_t shape[2];
        int ndim = 0;
        if (!a->vector) shape[ndim++] = m;
        if (!(b ? b : a)->vector) shape[ndim++] = n;
        void *data = NULL;
        if (reopen)
            OC_CHECK(ctx, oc_npy_out_reopen_nd(ctx, c->path, reopen, descr, d->elem, ndim, shape, &d->npy, &data));
        else OC_CHECK(ctx, oc_npy_out_create_nd_ahead(ctx, c->path, descr, d->elem, ndim, shape, &d->npy, &data));
        d->data = data;
        return OC_OK;
    }
    if (c->dtype != dtype || c->rows != m || c->cols != n)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "C: memory of %s %" PRId64 " x %" PRId64 " for a %s %" PRId64 " x %" PRId64 " result",
                       oc_matmul_dtype_name(c->dtype) ? oc_matmul_dtype_name(c->dtype) : "?", c->rows, c->cols,
                       oc_matmul_dtype_name(dtype), m, n);
    if ((c->ld && c->ld < n) || c->ld < 0 || (!c->data && m > 0 && n > 0))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "C: ld %" PRId64 " is below the column count %" PRId64 " or data is NULL", c->ld, n);
    d->data = c->data;
    d->ld = c->ld ? c->ld : n;
    const int64_t span = oc_memory_span(d->data, m, n, d->ld, d->elem);
    if (span < 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "C: %" PRId64 " x %" PRId64 " elements with ld %" PRId64
                       " would reach past the end of the address space",
                       m, n, d->ld);
    OC_CHECK(ctx, check_apart(ctx, d, span, a, "A"));
    if (b) OC_CHECK(ctx, check_apart(ctx, d, span, b, "B"));
    return OC_OK;
}

oc_status oc_mm_dest_commit(oc_context *ctx, oc_mm_dest *d)
{
    if (!d->npy) return OC_OK;
    oc_npy_out *w = d->npy;
    d->npy = NULL;
    OC_CHECK(ctx, oc_npy_out_commit(ctx, w));
    return OC_OK;
}

void oc_mm_dest_abort(oc_mm_dest *d)
{
    oc_npy_out_abort(d->npy);
    d->npy = NULL;
}

void oc_mm_dest_keep(oc_mm_dest *d)
{
    oc_npy_out_keep(d->npy);
    d->npy = NULL;
}

/* A resumable job's tile (or piece of one) is in the mapping: the journal counts it. */
static oc_status stored(const oc_matmul_job *job, int64_t row0, int64_t rows, int64_t col0, int64_t cols)
{
    oc_mm_resume *r = ((const oc_mm_io *)job->io)->resume;
    return r ? oc_mm_resume_written(job->ctx, r, job, row0, rows, col0, cols) : OC_OK;
}

/* Waits until rows [0, row_end) of the result file hold their blocks (npy_array.h: the file
 * is reserved as the job runs); memory is always ready. */
static oc_status rows_ready(const oc_matmul_job *job, const oc_mm_dest *d, int64_t row_end)
{
    if (!d->npy) return OC_OK;
    char message[OC_MESSAGE_MAX];
    if (oc_npy_out_ready(d->npy, (size_t)row_end * (size_t)d->ld * d->elem, message, sizeof message) == 0) return OC_OK;
    return oc_mm_io_fail(job, OC_ERR_IO, message);
}

oc_status oc_mm_write_tile(const oc_matmul_job *job, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                           const void *tile, int64_t ld)
{
    const oc_mm_dest *d = &((const oc_mm_io *)job->io)->dest;
    const size_t e = d->elem;
    if (row0 < 0 || col0 < 0 || rows < 0 || cols < 0 || row0 + rows > d->rows || col0 + cols > d->cols)
        return oc_mm_io_fail(job, OC_ERR_INTERNAL, "a tile outside the result");
    /* A·Aᵀ also writes the mirror: rows up to col0 + cols */
    const int64_t row_end = job->symmetric && col0 + cols > row0 + rows ? col0 + cols : row0 + rows;
    const oc_status ready = rows_ready(job, d, row_end);
    if (ready != OC_OK) return ready;
    const unsigned char *t = tile;
    if (!job->symmetric) {
        if (t == d->data + ((size_t)row0 * (size_t)d->ld + (size_t)col0) * e && ld == d->ld)
            return stored(job, row0, rows, col0, cols); /* computed in its place (tile_memory) */
        for (int64_t r = 0; r < rows; r++)
            memcpy(d->data + ((size_t)(row0 + r) * (size_t)d->ld + (size_t)col0) * e, t + (size_t)(r * ld) * e,
                   (size_t)cols * e);
        return stored(job, row0, rows, col0, cols);
    }
    /* A·Aᵀ: each element (i, j) with j >= i goes to (i, j), and with j > i also to (j, i), so
     * the result is exactly symmetric whatever the backend computed below the diagonal of a
     * tile. */
    oc_tile_store(d->data, d->ld, row0, col0, rows, cols, t, ld, e, 1);
    return stored(job, row0, rows, col0, cols);
}

oc_status oc_mm_tile_ready(const oc_matmul_job *job, int64_t row0, int64_t rows)
{
    return rows_ready(job, &((const oc_mm_io *)job->io)->dest, row0 + rows);
}

void *oc_mm_tile_memory(const oc_matmul_job *job, int64_t row0, int64_t col0, int64_t *ld)
{
    const oc_mm_io *io = job->io;
    const oc_mm_dest *d = &io->dest;
    if ((job->symmetric && !io->dest_gpu) || !d->data) return NULL;
    *ld = d->ld;
    return d->data + ((size_t)row0 * (size_t)d->ld + (size_t)col0) * d->elem;
}
