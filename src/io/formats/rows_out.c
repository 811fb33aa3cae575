/*
 * rows_out.c - oc_matrix_write_rows: a 0/1 matrix streamed to .npy in blocks of rows, for
 * matrices larger than memory (outcore gen).
 *
 *   PATH.tmp-PID-RANDOM   [ header | block 0 | block 1 | ... | block n-1 ]   renamed to PATH
 *                          ^ oc_npy_header, the same as oc_matrix_save's for the shape
 *
 * Each worker of oc_parallel_run owns one bits buffer (block_rows rows of the caller's
 * stride) and, unpacked, one byte buffer: it takes the next block index, calls the
 * caller's fill for those rows, turns them into the file's bytes and pwrites them at the
 * block's offset. Blocks are disjoint, so no two writes overlap and their order does not
 * matter; memory is those buffers whatever the matrix size, and the page cache writes the
 * file back as it goes. The whole file is reserved first (fallocate) so that a full disk
 * shows before any work, with the space needed and the space free.
 *
 * Workers do not write the context (threads.h): the first failure is kept in the job
 * under its lock and recorded on the context by the calling thread.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "matrix/matrix.h"
#include "core/threads.h"
#include "io/io.h"
#include "io/formats/npy_header.h"
#include "io/sysio.h"

/* A block of a few MB: large enough that a pwrite per block costs nothing next to filling
 * it, small enough that every thread's buffers together stay far below memory. */
#define BLOCK_TARGET_BYTES ((int64_t)4 << 20)

typedef struct rows_job {
    oc_context *ctx; /* for the fault plan of sysio.h only (its counts are atomic) */
    const char *path;
    oc_rows_fill_fn fill;
    void *user;
    int fd;
    int packed;
    int64_t rows, cols, width; /* width: bytes of a row in the file */
    int64_t stride;            /* bytes of a row in a bits buffer */
    int64_t block_rows;
    int64_t data_offset;   /* where row 0 starts in the file */
    int buffers;           /* worker buffers allocated: one per worker */
    unsigned char **bits;  /* per worker */
    unsigned char **bytes; /* per worker, unpacked output only */
    pthread_mutex_t lock;  /* guards the failure below */
    int failed_errno;      /* a write's errno, or 0 */
    int64_t failed_row;    /* a fill that failed: its first row, or -1 */
} rows_job;

/* Byte b of a packed row as eight 0/1 bytes, most significant bit first. */
static uint64_t unpack_table[256];
static pthread_once_t unpack_once = PTHREAD_ONCE_INIT;

static void unpack_table_init(void)
{
    for (int b = 0; b < 256; ++b) {
        unsigned char e[8];
        for (int k = 0; k < 8; ++k) e[k] = (unsigned char)((b >> (7 - k)) & 1);
        memcpy(&unpack_table[b], e, 8);
    }
}

static void unpack_row(const unsigned char *row, int64_t cols, unsigned char *dst)
{
    int64_t full = cols / 8;
    for (int64_t k = 0; k < full; ++k) memcpy(dst + 8 * k, &unpack_table[row[k]], 8);
    for (int64_t j = 8 * full; j < cols; ++j) dst[j] = (unsigned char)((row[j >> 3] >> (7 - (j & 7))) & 1);
}

static oc_status job_failed(rows_job *job, int err, int64_t row)
{
    pthread_mutex_lock(&job->lock);
    if (!job->failed_errno && job->failed_row < 0) {
        job->failed_errno = err;
        job->failed_row = row;
    }
    pthread_mutex_unlock(&job->lock);
    return err ? OC_ERR_IO : OC_ERR_INPUT;
}

static oc_status write_block(void *arg, int64_t block, int worker)
{
    rows_job *job = arg;
    int64_t row0 = block * job->block_rows, n = job->rows - row0 < job->block_rows ? job->rows - row0 : job->block_rows;
    unsigned char *bits = job->bits[worker];
    if (job->fill(job->user, row0, n, bits, job->stride) != 0) return job_failed(job, 0, row0);
    /* The padding bits of a row's last byte are zero in the file, as numpy.packbits writes them. */
    const unsigned char pad_mask = (unsigned char)(0xFF00u >> (job->cols % 8 ? job->cols % 8 : 8));
    unsigned char *out = bits;
    if (job->packed) {
        /* Rows move down from their stride to the file's width, in place and in order. */
        for (int64_t i = 0; i < n; ++i) {
            memmove(bits + i * job->width, bits + i * job->stride, (size_t)job->width);
            bits[i * job->width + job->width - 1] &= pad_mask;
        }
    } else {
        out = job->bytes[worker];
        for (int64_t i = 0; i < n; ++i) unpack_row(bits + i * job->stride, job->cols, out + i * job->width);
    }
    int err = oc_sys_write_all(job->ctx, job->fd, out, (size_t)(n * job->width), job->data_offset + row0 * job->width);
    return err ? job_failed(job, err, row0) : OC_OK;
}

/* Rows per block: about BLOCK_TARGET_BYTES, yet enough blocks to keep every thread busy
 * to the end (four per thread), and at least one row. */
static int64_t choose_block_rows(int64_t rows, int64_t row_bytes, int threads)
{
    int64_t by_size = BLOCK_TARGET_BYTES / (row_bytes > 0 ? row_bytes : 1);
    int64_t by_balance = (rows + 4 * (int64_t)threads - 1) / (4 * (int64_t)threads);
    int64_t b = by_size < by_balance ? by_size : by_balance;
    return b > 0 ? b : 1;
}

static oc_status run_blocks(oc_context *ctx, rows_job *job, int threads, const oc_write_options *opts)
{
    int64_t blocks = (job->rows + job->block_rows - 1) / job->block_rows;
    if (threads > blocks) threads = (int)blocks;
    job->bits = calloc((size_t)threads, sizeof *job->bits);
    job->bytes = calloc((size_t)threads, sizeof *job->bytes);
    if (!job->bits || !job->bytes) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory for %d row buffers", threads);
    job->buffers = threads;
    for (int t = 0; t < threads; ++t) {
        /* aligned_alloc wants a size that is a multiple of the alignment. */
        job->bits[t] = aligned_alloc(64, (size_t)((job->block_rows * job->stride + 63) / 64 * 64));
        job->bytes[t] = job->packed ? NULL : malloc((size_t)(job->block_rows * job->width));
        if (!job->bits[t] || (!job->packed && !job->bytes[t]))
            return oc_fail(ctx, OC_ERR_NO_MEMORY,
                           "out of memory for the row buffers of %d threads (%" PRId64 " rows each)", threads,
                           job->block_rows);
    }
    oc_progress_pace pace = oc_progress_pace_start(opts->progress, opts->progress_user);
    oc_status st = oc_parallel_run(ctx, threads, blocks, write_block, job, NULL, &pace);
    if (st == OC_OK) oc_progress_report(&pace, (double)blocks, (double)blocks, 1);
    if (job->failed_errno)
        return oc_io_fail(ctx, "writing", job->path, job->failed_errno, -1, job->data_offset + job->rows * job->width,
                          -1);
    if (job->failed_row >= 0)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: the rows from %" PRId64 " on could not be produced", job->path,
                       job->failed_row);
    return st == OC_OK ? OC_OK : oc_trace_at(ctx, st, __FILE__, __LINE__);
}

static void free_buffers(rows_job *job)
{
    for (int t = 0; t < job->buffers; ++t) {
        if (job->bits) free(job->bits[t]);
        if (job->bytes) free(job->bytes[t]);
    }
    free(job->bits);
    free(job->bytes);
}

oc_status oc_matrix_write_rows(oc_context *ctx, const char *path, int64_t rows, int64_t cols, oc_rows_fill_fn fill,
                               void *user, const oc_write_options *opts)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    if (!path || !fill) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_matrix_write_rows: NULL argument");
    oc_write_options defaults = OC_WRITE_OPTIONS_INIT;
    if (!opts) opts = &defaults;
    if (opts->struct_size != sizeof(oc_write_options))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "oc_write_options.struct_size is %zu, expected %zu: start from OC_WRITE_OPTIONS_INIT",
                       opts->struct_size, sizeof(oc_write_options));
    /* A job of its own: cancel and the fault plan's counts start here (fault.h). */
    oc_context_begin_job(ctx);
    char ext[16];
    if (strcmp(oc_path_extension(path, ext, sizeof ext), "npy") != 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: a matrix is saved as .npy; the name must end in .npy", path);
    if (rows <= 0 || cols <= 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: %" PRId64 " x %" PRId64 ": rows and columns must be >= 1",
                       path, rows, cols);
    if (opts->packed != 0 && opts->packed != 1)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_write_options: packed %d: expected 0 or 1", opts->packed);
    if (opts->block_rows < 0 || opts->threads < 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "oc_write_options: block_rows %" PRId64 " and threads %d must be >= 0 (0: chosen)",
                       opts->block_rows, opts->threads);
    if (opts->threads > OC_MAX_THREADS)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "threads must be from 0 (all cores) to %d, got %d", OC_MAX_THREADS,
                       opts->threads);
    /* A row is filled as whole 64-bit words: its columns rounded up to a word must be an int64_t. */
    if (cols > INT64_MAX - 63)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "%s: a row of %" PRId64 " columns is too large: a row may have at most %" PRId64 " columns",
                       path, cols, INT64_MAX - 63);
    rows_job job = {.ctx = ctx,
                    .path = path,
                    .fill = fill,
                    .user = user,
                    .fd = -1,
                    .packed = opts->packed,
                    .rows = rows,
                    .cols = cols,
                    .failed_row = -1};
    job.width = job.packed ? (cols + 7) / 8 : cols;
    job.stride = (cols + 63) / 64 * 8;
    int64_t data_bytes;
    /* A shape whose file could not exist: the caller's size, as the row check above. */
    if (!oc_mul_i64(rows, job.width, &data_bytes) || data_bytes > INT64_MAX - OC_NPY_HEADER_MAX)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: output %" PRId64 " x %" PRId64 " overflows 64-bit sizes",
                       path, rows, cols);
    int threads = oc_threads_resolve(opts->threads);
    job.block_rows = opts->block_rows ? opts->block_rows : choose_block_rows(rows, job.stride + job.width, threads);
    if (job.block_rows > rows) job.block_rows = rows;

    unsigned char header[OC_NPY_HEADER_MAX];
    job.data_offset = (int64_t)oc_npy_header(header, OC_NPY_UINT8, rows, job.width, 0);
    const int64_t total = job.data_offset + data_bytes;
    oc_tmpfile file;
    OC_CHECK(ctx, oc_tmpfile_open(ctx, path, &file));
    job.fd = file.fd;
    pthread_once(&unpack_once, unpack_table_init);
    pthread_mutex_init(&job.lock, NULL);
    oc_status st = OC_OK;
    int err;
    /* Reserve the blocks now, so that a full disk shows before the work; file systems
     * without fallocate find it at the write that meets it. */
    if ((st = oc_sys_check_space(ctx, job.fd, path, total)) != OC_OK) goto cleanup;
    if (oc_sys_fallocate(ctx, job.fd, 0, (off_t)total) != 0 && errno != EOPNOTSUPP && errno != ENOSYS) {
        st = oc_io_fail(ctx, "reserving space for", path, errno, -1, total, job.fd);
        goto cleanup;
    }
    if ((err = oc_sys_write_all(ctx, job.fd, header, (size_t)job.data_offset, 0)) != 0) {
        st = oc_io_fail(ctx, "writing", path, err, -1, total, -1);
        goto cleanup;
    }
    st = run_blocks(ctx, &job, threads, opts);
    if (st == OC_OK) {
        st = oc_tmpfile_commit(ctx, &file); /* releases file either way */
        if (st != OC_OK) oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
cleanup:
    if (st != OC_OK) oc_tmpfile_abort(&file);
    free_buffers(&job);
    pthread_mutex_destroy(&job.lock);
    return st;
}
