/*
 * npy_source.c - the rows of a file-backed .npy matrix, read on demand (matrix.h).
 *
 * A .npy whose packed bits would take more than the host budget allows (mem/host_budget.h)
 * is not packed at open: the reader checks its header and size, then hands the matrix this
 * source, which reads the rows a backend asks for with pread when it asks. Packed input
 * (numpy.packbits rows, --bits) is read compactly straight into the caller's buffer and
 * spread to the padded stride in place, so it needs no buffer of its own; 0/1 bytes (bool,
 * uint8, int8) are eight times the packed size and go through a bounce buffer of at most
 * NPY_BOUNCE_BYTES per call. pread rather than mapped windows: it keeps the process's
 * resident size to the buffers it owns (a mapping's pages count as resident until unmapped)
 * and lets any number of threads read disjoint ranges through one descriptor without sharing
 * a window.
 *
 * A Fortran-order file holds a row panel as one run per column: the source reads the runs of
 * a block of columns (one pread each, one for the block when the rows are whole columns) into
 * the bounce buffer, column after column, and packs them from there (oc_pack_columns), block
 * after block, to the same bits and the same messages as the C-order file's rows. Its matrix
 * is marked column_slices, so that a load split over threads gives each a slice of the words
 * of every row asked for (oc_matrix_load_part), not a share of the rows: a run a column is
 * then as long as the whole load's rows, not a thread's share of them.
 *
 * Values are checked as they are read, with the messages the whole-file reader gives
 * (npy.c): the job that reads a bad row fails with the row and column and, since a failed
 * job leaves no output, nothing is written. The message goes to ctx under `lock`, because
 * several threads load rows at once.
 *
 * A file that shrinks under the job shows as a short read. One rewritten larger (or grown by
 * an append) reads on without one, its new bytes and all: the job asks the source's check
 * (oc_matrix_check_source), which compares the file's size with the one its header was
 * checked against, before it commits a result or records a tile for a resumed run.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "matrix/matrix.h"
#include "matrix/matrix_build.h"
#include "io/input_file.h"
#include "io/formats/npy_source.h"
#include "io/sysio.h"

#define NPY_BOUNCE_BYTES (1 << 20)

typedef struct npy_source {
    int fd;
    int64_t data_offset;  /* file offset of row 0 */
    int64_t width;        /* bytes per row in the file */
    int64_t rows;         /* Fortran order: bytes per column in the file; 0 in C order */
    int64_t bits;         /* > 0: numpy.packbits rows of this many columns */
    oc_dense_bytes kind;  /* otherwise: what the bytes hold */
    int64_t file_size;    /* the size its header was checked against */
    pthread_mutex_t lock; /* serialises messages to ctx */
} npy_source;

/* Reads len bytes at off; returns the bytes read (short only at the end of the file), or
 * -1 with errno set. */
static int64_t pread_full(int fd, void *buf, int64_t len, int64_t off)
{
    int64_t done = 0;
    while (done < len) {
        ssize_t r = pread(fd, (char *)buf + done, (size_t)(len - done), (off_t)(off + done));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -1;
        if (r == 0) break;
        done += r;
    }
    return done;
}

/* Reads len bytes of the file's data at off into buf, or records why not (a file that ends
 * early shrank after its header was checked). */
static oc_status read_data(npy_source *s, oc_context *ctx, const oc_matrix *m, int64_t off, int64_t len, void *buf)
{
    int64_t got = pread_full(s->fd, buf, len, off);
    if (got == len) return OC_OK;
    int err = errno;
    struct stat sb;
    int64_t now = fstat(s->fd, &sb) == 0 ? (int64_t)sb.st_size : off + (got > 0 ? got : 0);
    pthread_mutex_lock(&s->lock);
    oc_status st = got < 0 ? oc_io_fail(ctx, "reading", m->name, err, -1, -1, -1)
                           : oc_input_changed(ctx, m->name, now, s->file_size);
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* Reads rows [row0, row0 + rows) of the file's data into buf, or records why not. */
static oc_status read_rows(npy_source *s, oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, void *buf)
{
    return read_data(s, ctx, m, s->data_offset + row0 * s->width, rows * s->width, buf);
}

static oc_status extra_bit_error(npy_source *s, oc_context *ctx, const oc_matrix *m, int64_t row, int64_t col)
{
    pthread_mutex_lock(&s->lock);
    oc_status st = oc_fail(ctx, OC_ERR_INPUT,
                           "%s: row %" PRId64 " has bit %" PRId64 " set but --bits %" PRId64
                           " says the rows hold %" PRId64 " columns (rows and columns count from 0)",
                           m->name, row, col, s->bits, s->bits);
    pthread_mutex_unlock(&s->lock);
    return st;
}

static oc_status load_packed(npy_source *s, oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows,
                             uint64_t *dst)
{
    OC_CHECK(ctx, read_rows(s, ctx, m, row0, rows, dst));
    int64_t extra = -1, bad = oc_expand_packed_rows(dst, rows, m->cols, m->words_per_row, &extra);
    return bad < 0 ? OC_OK : extra_bit_error(s, ctx, m, row0 + bad, extra);
}

static oc_status load_dense(npy_source *s, oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows,
                            uint64_t *dst)
{
    int64_t chunk = NPY_BOUNCE_BYTES / s->width > 0 ? NPY_BOUNCE_BYTES / s->width : 1;
    if (chunk > rows) chunk = rows;
    unsigned char *buf = malloc((size_t)(chunk * s->width));
    if (!buf) {
        pthread_mutex_lock(&s->lock);
        oc_status st = oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate a %" PRId64 "-byte read buffer", m->name,
                               chunk * s->width);
        pthread_mutex_unlock(&s->lock);
        return st;
    }
    oc_status st = OC_OK;
    for (int64_t r = 0; r < rows && st == OC_OK; r += chunk) {
        int64_t nr = rows - r < chunk ? rows - r : chunk, col = -1;
        st = read_rows(s, ctx, m, row0 + r, nr, buf);
        if (st != OC_OK) break;
        int64_t bad =
            oc_pack_dense_rows(buf, nr, s->width, m->cols, m->words_per_row, s->kind, dst + r * m->words_per_row, &col);
        if (bad >= 0) {
            pthread_mutex_lock(&s->lock);
            st = oc_dense_value_error(ctx, m->name, s->kind, m->cols, row0 + r + bad, col, buf + bad * s->width);
            pthread_mutex_unlock(&s->lock);
        }
    }
    free(buf);
    return st;
}

/* The value error of row `row` (a Fortran-order file's): its bytes gathered for the message,
 * which reads the whole row. */
static oc_status column_value_error(npy_source *s, oc_context *ctx, const oc_matrix *m, int64_t row, int64_t col)
{
    unsigned char *bytes = malloc((size_t)s->width);
    oc_status st = bytes ? OC_OK : OC_ERR_NO_MEMORY;
    for (int64_t j = 0; st == OC_OK && j < s->width; ++j)
        st = read_data(s, ctx, m, s->data_offset + j * s->rows + row, 1, bytes + j);
    pthread_mutex_lock(&s->lock);
    if (st == OC_ERR_NO_MEMORY) oc_fail(ctx, st, "%s: cannot allocate a row of %" PRId64 " bytes", m->name, s->width);
    else if (st == OC_OK) st = oc_dense_value_error(ctx, m->name, s->kind, m->cols, row, col, bytes);
    pthread_mutex_unlock(&s->lock);
    free(bytes);
    return st;
}

/* Words [w0, w1) of rows [row0, row0 + rows) of a Fortran-order file into dst (row i's word
 * w0 at dst + i * ld): blocks of columns whose runs fill the bounce buffer, read one run a
 * column (one read a block where the rows are whole columns), each block packed into its
 * words; the first bad value in row order over all blocks is reported, as the C-order rows
 * report it. */
static oc_status load_columns(npy_source *s, oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows,
                              int64_t w0, int64_t w1, uint64_t *dst, int64_t ld)
{
    const int64_t per_word = s->bits > 0 ? 8 : 64, needed = (s->width + per_word - 1) / per_word;
    const int64_t end = w1 < needed ? w1 : needed; /* the slice's words that hold columns */
    if (w0 >= end) {                               /* the rows' padding words only */
        for (int64_t i = 0; i < rows; ++i) memset(dst + i * ld, 0, (size_t)(w1 - w0) * 8);
        return OC_OK;
    }
    int64_t block_words = NPY_BOUNCE_BYTES / (rows * per_word) > 0 ? NPY_BOUNCE_BYTES / (rows * per_word) : 1;
    if (block_words > end - w0) block_words = end - w0;
    const int64_t block_cols =
        block_words * per_word < s->width - w0 * per_word ? block_words * per_word : s->width - w0 * per_word;
    unsigned char *buf = malloc((size_t)(block_cols * rows));
    if (!buf) {
        pthread_mutex_lock(&s->lock);
        oc_status st = oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate a %" PRId64 "-byte read buffer", m->name,
                               block_cols * rows);
        pthread_mutex_unlock(&s->lock);
        return st;
    }
    oc_status st = OC_OK;
    int64_t bad = -1, bad_col = -1;
    for (int64_t b0 = w0; b0 < end && st == OC_OK; b0 += block_words) {
        /* The last block also writes the slice's padding words. */
        const int64_t b1 = b0 + block_words >= end ? w1 : b0 + block_words, c0 = b0 * per_word;
        const int64_t c1 = c0 + block_cols < s->width ? c0 + block_cols : s->width;
        if (rows == s->rows) /* whole columns: the block's runs lie end to end */
            st = read_data(s, ctx, m, s->data_offset + c0 * s->rows, (c1 - c0) * rows, buf);
        else
            for (int64_t c = c0; c < c1 && st == OC_OK; ++c)
                st = read_data(s, ctx, m, s->data_offset + c * s->rows + row0, rows, buf + (c - c0) * rows);
        if (st != OC_OK) break;
        int64_t col = -1, row = oc_pack_columns(buf, rows, rows, m->cols, s->bits > 0, s->kind, b0, b1, dst + (b0 - w0),
                                                ld, &col);
        if (row >= 0 && (bad < 0 || row < bad || (row == bad && col < bad_col))) bad = row, bad_col = col;
    }
    free(buf);
    if (st != OC_OK || bad < 0) return st;
    if (s->bits > 0) return extra_bit_error(s, ctx, m, row0 + bad, bad_col);
    return column_value_error(s, ctx, m, row0 + bad, bad_col);
}

/* Words [w0, w1) of packed rows: one read per row of the slice's bytes, the rest zero; the
 * slice holding the rows' last byte checks its bits past --bits as load_packed does. A
 * Fortran-order file reads the slice's columns (load_columns); rows of bytes to pack are read
 * whole. */
static oc_status npy_source_load_cols(void *source, oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows,
                                      int64_t w0, int64_t w1, uint64_t *dst, int64_t ld)
{
    npy_source *s = source;
    if (s->rows) return load_columns(s, ctx, m, row0, rows, w0, w1, dst, ld);
    if (s->bits <= 0) return oc_matrix_load_cols_by_rows(ctx, m, row0, rows, w0, w1, dst, ld);
    const int64_t b0 = w0 * 8, b1 = w1 * 8 < s->width ? w1 * 8 : s->width, len = b1 > b0 ? b1 - b0 : 0;
    const int64_t bytes = (w1 - w0) * 8;
    int64_t bad = -1, extra = -1;
    for (int64_t i = 0; i < rows; ++i) {
        unsigned char *row = (unsigned char *)(dst + i * ld);
        if (len > 0) OC_CHECK(ctx, read_data(s, ctx, m, s->data_offset + (row0 + i) * s->width + b0, len, row));
        memset(row + len, 0, (size_t)(bytes - len));
        if (len == 0 || b1 != s->width) continue;
        int64_t column = oc_packed_clear_past(row + len - 1, m->cols);
        if (column >= 0 && bad < 0) bad = row0 + i, extra = column;
    }
    return bad < 0 ? OC_OK : extra_bit_error(s, ctx, m, bad, extra);
}

static oc_status npy_source_load(void *source, oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows,
                                 uint64_t *dst)
{
    npy_source *s = source;
    if (s->rows) return load_columns(s, ctx, m, row0, rows, 0, m->words_per_row, dst, m->words_per_row);
    return s->bits > 0 ? load_packed(s, ctx, m, row0, rows, dst) : load_dense(s, ctx, m, row0, rows, dst);
}

/* The file still has the size its header was checked against (matrix.h). A file rewritten
 * larger reads without a short read, so this is what catches it. */
static oc_status npy_source_check(void *source, oc_context *ctx, const oc_matrix *m)
{
    npy_source *s = source;
    pthread_mutex_lock(&s->lock);
    oc_status st = oc_input_check_size(ctx, m->name, s->fd, s->file_size);
    pthread_mutex_unlock(&s->lock);
    return st;
}

static void npy_source_close(void *source)
{
    npy_source *s = source;
    if (!s) return;
    close(s->fd);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static const oc_matrix_source_ops npy_source_ops = {npy_source_load, npy_source_close, npy_source_load_cols,
                                                    npy_source_check};

oc_status oc_npy_source_open(oc_context *ctx, const char *path, const oc_npy_layout *layout, oc_matrix **out)
{
    int fd;
    struct stat sb;
    OC_CHECK(ctx, oc_input_open(ctx, path, &fd, &sb));
    /* The header was checked on a mapping of the file that had this identity: the rows must
     * come from the same file, not one renamed over it since. */
    if ((uint64_t)sb.st_dev != layout->dev || (uint64_t)sb.st_ino != layout->ino) {
        close(fd);
        return oc_fail(ctx, OC_ERR_INPUT, "%s: the file was replaced while it was being opened", path);
    }
    npy_source *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    s->fd = fd;
    s->data_offset = layout->data_offset;
    s->width = layout->width;
    s->rows = layout->fortran ? layout->rows : 0;
    s->bits = layout->bits;
    s->kind = layout->kind;
    s->file_size = layout->file_size;
    pthread_mutex_init(&s->lock, NULL);
    /* Rows are read in the order the job asks for them, often a panel at a time from front
     * to back; sequential read-ahead serves that and does no harm otherwise. */
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    OC_CHECK(ctx, oc_matrix_create_file_backed(ctx, layout->rows, layout->cols, path, &npy_source_ops, s, out));
    (*out)->column_slices = layout->fortran;
    return OC_OK;
}
