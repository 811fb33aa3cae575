/*
 * matmul_panels.c - read_panel (matmul_job.h): a block of op(A) or op(B), transposed when
 * the job asks, converted to the compute type (or left as stored where the backend converts
 * it), row-major and densely packed.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "matmul/matmul_dtype.h"
#include "matmul/matmul_io.h"

oc_status oc_mm_io_fail(const oc_matmul_job *job, oc_status status, const char *message)
{
    oc_mm_io *io = job->io;
    pthread_mutex_lock(&io->lock);
    if (!io->failed) oc_fail(job->ctx, status, "%s", message);
    io->failed = 1;
    pthread_mutex_unlock(&io->lock);
    return status;
}

/* Stored rows a transposed panel gathers at once: each becomes a panel column, so the block
 * is written TBLOCK elements (a cache line of float32) at a time rather than one element a
 * row apart. */
#define TBLOCK 16

/* dst[j * ld + b] = blk[b * width + j] for b < nb, j < width: a block of nb rows, elem bytes
 * each element, written into nb adjacent columns of dst. */
static void transpose_block(const void *blk, int64_t nb, int64_t width, size_t elem, void *dst, int64_t ld)
{
#define OC_MM_TRANSPOSE(T, blk, nb, width, dst, ld) \
    for (int64_t j = 0; j < (width); j++)           \
        for (int64_t b = 0; b < (nb); b++) ((T *)(dst))[j * (ld) + b] = ((const T *)(blk))[b * (width) + j]
    switch (elem) {
    case 1:
        OC_MM_TRANSPOSE(uint8_t, blk, nb, width, dst, ld);
        break;
    case 2:
        OC_MM_TRANSPOSE(uint16_t, blk, nb, width, dst, ld);
        break;
    case 4:
        OC_MM_TRANSPOSE(uint32_t, blk, nb, width, dst, ld);
        break;
    default:
        OC_MM_TRANSPOSE(uint64_t, blk, nb, width, dst, ld);
        break;
    }
#undef OC_MM_TRANSPOSE
}

oc_status oc_mm_read_panel(const oc_matmul_job *job, oc_mm_operand which, int64_t row0, int64_t rows, int64_t col0,
                           int64_t cols, void *dst)
{
    oc_mm_io *io = job->io;
    const oc_mm_source *s = io->src[which];
    const int as_stored = job->panel_stored[which];
    const size_t elem = oc_matmul_dtype_size(s->dtype), out = as_stored ? elem : oc_mm_type_size(job->in_type);
    /* Without a transpose each panel row is a segment of a stored row; with one, each stored
     * row j gives column j of the panel, TBLOCK rows converted into blk and then written as
     * TBLOCK columns. */
    const int t = io->transpose[which];
    const int64_t lines = t ? cols : rows, width = t ? rows : cols, first = t ? col0 : row0, offset = t ? row0 : col0;
    /* A row as stored, neither converted nor transposed, is read (pread) straight into its
     * place in the panel. */
    const int same = as_stored || oc_matmul_dtype_of(job->in_type) == s->dtype, straight = !t && same;
    void *buf = NULL, *blk = NULL;
    if (width > 0 && ((!s->data && !straight && !(buf = malloc((size_t)width * elem))) ||
                      (t && !(blk = malloc((size_t)(TBLOCK * width) * out))))) {
        free(buf);
        return oc_mm_io_fail(job, OC_ERR_NO_MEMORY, "out of memory reading a panel");
    }
    char why[512];
    oc_status st = OC_OK;
    for (int64_t l = 0; l < lines && st == OC_OK; l++) {
        char *row = t ? (char *)blk + (size_t)((l % TBLOCK) * width) * out : (char *)dst + (size_t)(l * cols) * out;
        const void *p = oc_mm_source_row(s, first + l, offset, width, straight ? row : buf, why, sizeof why);
        if (!p) {
            st = oc_mm_io_fail(job, OC_ERR_INPUT, why);
            break;
        }
        if (p != row && same) memcpy(row, p, (size_t)width * elem);
        else if (p != row) oc_matmul_convert(s->dtype, p, width, job->in_type, row, 1);
        if (t && (l % TBLOCK == TBLOCK - 1 || l == lines - 1)) {
            const int64_t l0 = l - l % TBLOCK;
            transpose_block(blk, l - l0 + 1, width, out, (char *)dst + (size_t)l0 * out, cols);
        }
        if (oc_cancelled(job->ctx)) st = oc_mm_io_fail(job, OC_ERR_CANCELLED, "cancelled");
    }
    free(buf);
    free(blk);
    if (st != OC_OK) return st;
    __atomic_add_fetch(&io->bytes_read, rows * cols * (int64_t)elem, __ATOMIC_RELAXED);
    return OC_OK;
}

const void *oc_mm_panel_memory(const oc_matmul_job *job, oc_mm_operand which, int64_t row0, int64_t col0, int64_t *ld)
{
    const oc_mm_io *io = job->io;
    const oc_mm_source *s = io->src[which];
    /* Caller memory or a mapped input (not one read with pread), in the type read_panel
     * gives, not transposed. A mapped input that shrinks reads as zeros and fails the job's check of
     * its inputs after the product (mapped_file.h), as read_panel's copies of it would. */
    if (!s->data || s->fd >= 0 || s->transposed || io->transpose[which] ||
        (!job->panel_stored[which] && oc_matmul_dtype_of(job->in_type) != s->dtype))
        return NULL;
    *ld = s->ld;
    return s->data + ((size_t)row0 * (size_t)s->ld + (size_t)col0) * oc_matmul_dtype_size(s->dtype);
}

const void *oc_mm_transposed_memory(const oc_matmul_job *job, oc_mm_operand which, int64_t row0, int64_t col0,
                                    int64_t *ld)
{
    const oc_mm_io *io = job->io;
    const oc_mm_source *s = io->src[which];
    /* As panel_memory, for an operand read transposed: op(X)(row0, col0) is the stored
     * X(col0, row0) (a Fortran-order file's stored rows are its columns: transposed once
     * more by io->transpose, so the same holds). */
    if (!s->data || s->fd >= 0 || !io->transpose[which] || oc_matmul_dtype_of(job->in_type) != s->dtype) return NULL;
    *ld = s->ld;
    return s->data + ((size_t)col0 * (size_t)s->ld + (size_t)row0) * oc_matmul_dtype_size(s->dtype);
}

const void *oc_mm_stored_memory(const oc_matmul_job *job, oc_mm_operand which, int64_t *ld, int *transposed)
{
    const oc_mm_io *io = job->io;
    const oc_mm_source *s = io->src[which];
    if (!s->data || s->fd >= 0 || oc_mm_source_mapped_bytes(s) > 0 || s->transposed ||
        oc_matmul_dtype_of(job->in_type) != s->dtype)
        return NULL;
    *ld = s->ld;
    *transposed = io->transpose[which];
    return s->data;
}

void oc_mm_io_bind(oc_matmul_job *job, oc_mm_io *io)
{
    job->read_panel = oc_mm_read_panel;
    job->write_tile = oc_mm_write_tile;
    job->panel_memory = oc_mm_panel_memory;
    job->transposed_memory = oc_mm_transposed_memory;
    job->tile_memory = oc_mm_tile_memory;
    job->tile_ready = oc_mm_tile_ready;
    job->stored_memory = oc_mm_stored_memory;
    job->io = io;
}
