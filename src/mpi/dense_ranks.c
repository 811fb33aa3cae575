/*
 * dense_ranks.c - a dense .npy written by every rank into one file with MPI-IO.
 *
 *   set-up   rank 0: checks the path, creates PATH.tmp-PID-RANDOM at its full size (io.h's
 *            temporary file, which only rank 0 holds) -> agree -> every rank opens that name
 *            with MPI_File_open on MPI_COMM_SELF (views and writes are then its own), rank 0
 *            writes the header
 *   compute  chunks of the rank's rows (as many as a quarter of the host budget holds; A·Aᵀ
 *            at most oc_rank_triangle_chunk): one oc_gram on row views per chunk into
 *            memory, written with MPI_File_write_at
 *   commit   every rank closes its handle (its writes are then in the file) -> agree ->
 *            rank 0 renames the temporary file into place, or removes it -> agree
 *
 * A·Bᵀ: rank r computes the rows of oc_rank_rows_even. A·Aᵀ: rank r computes rows
 * [b_r, b_r+1) of oc_rank_rows_triangle, chunk [c0, c1) against columns [c0, n) only, and
 * writes that block and its mirror below it (rows [c1, n), columns [c0, c1)): columns left of
 * c0 in the chunk's rows are the mirrors of earlier chunks and ranks, so every element is
 * written exactly once, and only the diagonal blocks are computed twice over (both halves).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/threads.h"
#include "io/io.h"
#include "io/sysio.h"
#include "io/formats/npy_header.h"
#include "io/formats/output_format.h"
#include "mem/host_budget.h"
#include "mpi/comm.h"
#include "mpi/rank_job.h"
#include "mpi/rank_split.h"

/* Pieces of the mirror are transposed through a buffer of at most this many bytes. */
#define MIRROR_PIECE_BYTES (64LL << 20)

/* Writes through MPI-IO (whose locking keeps ranks on NFS off each other's bytes), asking
 * the fault plan first as every writer does (io/sysio.h), and counting what MPI says it
 * wrote: an MPI-IO layer that meets a full disk may report success with fewer bytes. */
static oc_status write_at(oc_rank_job *j, MPI_File fh, int64_t offset, const void *buf, int64_t bytes)
{
    OC_CHECK(j->ctx, oc_rank_cancelled(j, OC_OK)); /* a cancel ends the writes too, not only the sub-jobs */
    const char *p = buf;
    for (int64_t done = 0; done < bytes;) {
        size_t len = (size_t)(bytes - done < (1 << 30) ? bytes - done : (1 << 30));
        if (oc_sys_write_planned(j->ctx, &len) != 0)
            return oc_io_fail(j->ctx, "writing", j->path, errno, j->bytes_written + done, -1, -1);
        MPI_Status status;
        int written = 0;
        int err = MPI_File_write_at(fh, (MPI_Offset)(offset + done), p + done, (int)len, MPI_BYTE, &status);
        if (err != MPI_SUCCESS) return oc_mpi_fail(j->ctx, err, j->path);
        if (MPI_Get_count(&status, MPI_BYTE, &written) != MPI_SUCCESS || written <= 0)
            return oc_io_fail(j->ctx, "writing", j->path, EIO, j->bytes_written + done, -1, -1);
        done += written;
    }
    j->bytes_written += bytes;
    return OC_OK;
}

/* dst[c][r] = src[r][c] for r < rows, c < cols (src rows ld apart, dst rows `rows` apart),
 * in 32 x 32 blocks so that reads and writes each stay within a few cache lines. */
#define TRANSPOSE_BLOCK 32
#define DEFINE_TRANSPOSE(NAME, T)                                                          \
    static void NAME(T *dst, const T *src, int64_t rows, int64_t cols, int64_t ld)         \
    {                                                                                      \
        for (int64_t cb = 0; cb < cols; cb += TRANSPOSE_BLOCK)                             \
            for (int64_t rb = 0; rb < rows; rb += TRANSPOSE_BLOCK) {                       \
                int64_t ce = cb + TRANSPOSE_BLOCK < cols ? cb + TRANSPOSE_BLOCK : cols;    \
                int64_t re = rb + TRANSPOSE_BLOCK < rows ? rb + TRANSPOSE_BLOCK : rows;    \
                for (int64_t c = cb; c < ce; ++c)                                          \
                    for (int64_t r = rb; r < re; ++r) dst[c * rows + r] = src[r * ld + c]; \
            }                                                                              \
    }
DEFINE_TRANSPOSE(transpose_u16, uint16_t)
DEFINE_TRANSPOSE(transpose_u32, uint32_t)

/* Rows [c1, n) x columns [c0, c1) of C: the transpose of columns [c1 - c0, width) of the
 * chunk block (rows x width elements, block rows are rows [c0, c1) and columns [c0, n)). */
static oc_status write_mirror(oc_rank_job *j, MPI_File fh, int64_t data, const char *block, int64_t c0, int64_t c1,
                              int64_t width, size_t es, char *piece, int64_t piece_rows)
{
    oc_context *ctx = j->ctx;
    const int64_t rows = c1 - c0;
    for (int64_t j0 = c1; j0 < j->n; j0 += piece_rows) {
        int64_t j1 = j0 + piece_rows < j->n ? j0 + piece_rows : j->n;
        if (es == 2) transpose_u16((uint16_t *)piece, (const uint16_t *)block + (j0 - c0), rows, j1 - j0, width);
        else transpose_u32((uint32_t *)piece, (const uint32_t *)block + (j0 - c0), rows, j1 - j0, width);
        for (int64_t jj = j0; jj < j1; ++jj)
            OC_CHECK(ctx, write_at(j, fh, data + (jj * j->n + c0) * (int64_t)es, piece + (jj - j0) * rows * es,
                                   rows * (int64_t)es));
    }
    return OC_OK;
}

static oc_status compute_and_write(oc_rank_job *j, MPI_File fh, int64_t data)
{
    oc_context *ctx = j->ctx;
    const size_t es = oc_dtype_size(j->dtype);
    const int64_t bytes = oc_host_budget_resolve(j->opts.host_mem_bytes) / 4;
    char *block = NULL, *piece = NULL;
    oc_status st = OC_OK;
    for (int64_t c0 = j->row0, c1; c0 < j->row1; c0 = c1) {
        const int64_t col0 = j->symmetric ? c0 : 0, width = j->symmetric ? j->n - c0 : j->p;
        int64_t rows = oc_rank_chunk_rows(bytes, width, (int64_t)es, j->row1 - c0);
        if (j->symmetric && rows > oc_rank_triangle_chunk(j->n)) rows = oc_rank_triangle_chunk(j->n);
        c1 = c0 + rows;
        free(block);
        block = malloc((size_t)((c1 - c0) * width) * es);
        if (!block) {
            st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate a chunk of %lld x %lld results", (long long)(c1 - c0),
                         (long long)width);
            goto cleanup;
        }
        oc_output mem = OC_OUTPUT_INIT;
        mem.kind = OC_OUTPUT_MEMORY;
        mem.data = block;
        mem.ld = width;
        OC_CHECK_GOTO(ctx, st, oc_rank_subjob(j, c0, c1, col0, col0 + width, &j->opts, &mem), cleanup);
        for (int64_t r = c0; r < c1; ++r)
            OC_CHECK_GOTO(ctx, st,
                          write_at(j, fh, data + (r * j->p + col0) * (int64_t)es, block + (r - c0) * width * es,
                                   width * (int64_t)es),
                          cleanup);
        if (j->symmetric && c1 < j->n) {
            int64_t piece_rows = MIRROR_PIECE_BYTES / ((c1 - c0) * (int64_t)es);
            if (piece_rows < 1) piece_rows = 1;
            if (piece_rows > j->n - c1) piece_rows = j->n - c1;
            free(piece);
            if (!(piece = malloc((size_t)(piece_rows * (c1 - c0)) * es))) {
                st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the mirror buffer");
                goto cleanup;
            }
            OC_CHECK_GOTO(ctx, st, write_mirror(j, fh, data, block, c0, c1, width, es, piece, piece_rows), cleanup);
        }
    }
cleanup:
    free(block);
    free(piece);
    return st;
}

/* Rank 0: the checks and the temporary file at its full size; its name into tmp_name. */
static oc_status create_output(oc_rank_job *j, oc_tmpfile *tf, int *have_tf, unsigned char *header, size_t *hlen)
{
    oc_context *ctx = j->ctx;
    OC_CHECK(ctx, oc_output_format_check(ctx, j->path, OC_RESULT_DENSE, "dense"));
    OC_CHECK(ctx, oc_output_check_not_input(ctx, j->path, j->a, j->b));
    *hlen = oc_npy_header(header, (int)j->dtype, j->n, j->p, 0);
    OC_CHECK(ctx, oc_tmpfile_open(ctx, j->path, tf));
    *have_tf = 1;
    int64_t total = (int64_t)*hlen + j->n * j->p * (int64_t)oc_dtype_size(j->dtype);
    OC_CHECK(ctx, oc_sys_check_space(ctx, tf->fd, j->path, total));
    if (oc_sys_ftruncate(ctx, tf->fd, (off_t)total) != 0)
        return oc_io_fail(ctx, "writing", j->path, errno, -1, total, tf->fd);
    /* Every block reserved now, as the single process's writer does (npy_out.c): the ranks'
     * writes then cannot meet a full disk half way, which some MPI-IO layers report as
     * success. File systems without fallocate keep the sparse file (and that risk). */
    if (oc_sys_fallocate(ctx, tf->fd, 0, (off_t)total) != 0 && errno != EOPNOTSUPP && errno != ENOSYS)
        return oc_io_fail(ctx, "reserving space for", j->path, errno, -1, total, tf->fd);
    return OC_OK;
}

oc_status oc_ranks_dense(oc_rank_job *j)
{
    oc_context *ctx = j->ctx;
    oc_rank_rows_fn split = j->symmetric ? oc_rank_rows_triangle : oc_rank_rows_even;
    split(j->n, j->rank, j->size, &j->row0, &j->row1);
    oc_tmpfile tf = {0};
    int have_tf = 0;
    unsigned char header[OC_NPY_HEADER_MAX];
    size_t hlen = 0;
    char tmp_name[4096] = "";
    oc_status st = OC_OK;
    if (j->rank == 0) {
        st = create_output(j, &tf, &have_tf, header, &hlen);
        if (have_tf) snprintf(tmp_name, sizeof tmp_name, "%s", tf.tmp_path);
    }
    st = oc_mpi_agree(ctx, st);
    if (st != OC_OK) goto cleanup;
    oc_mpi_bcast_string(tmp_name, (int)sizeof tmp_name, 0);
    int64_t data = 0;
    {
        unsigned long long h = hlen;
        MPI_Bcast(&h, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
        data = (int64_t)h;
    }

    MPI_File fh = MPI_FILE_NULL;
    int err = MPI_File_open(MPI_COMM_SELF, tmp_name, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    if (err != MPI_SUCCESS) st = oc_mpi_fail(ctx, err, tmp_name);
    double t0 = oc_now();
    if (st == OC_OK && j->rank == 0) st = write_at(j, fh, 0, header, (int64_t)hlen);
    if (st == OC_OK) st = compute_and_write(j, fh, data);
    if (fh != MPI_FILE_NULL) {
        err = MPI_File_close(&fh);
        if (err != MPI_SUCCESS && st == OC_OK) st = oc_mpi_fail(ctx, err, j->path);
    }
    j->seconds = oc_now() - t0;
    /* The temporary file stays until the agreement even when rank 0 failed: another rank may
     * not have opened it yet (its open would fail, and the job's message would be its). */
    st = oc_mpi_agree(ctx, oc_rank_fault(j, st));
    if (st != OC_OK) goto cleanup;
    if (j->rank == 0) {
        have_tf = 0;
        st = oc_tmpfile_commit(ctx, &tf);
    }
    st = oc_mpi_agree(ctx, st);

cleanup:
    if (have_tf) oc_tmpfile_abort(&tf);
    return st;
}
