/*
 * matrix.h - the library's one representation of a 0/1 matrix: packed bits.
 *
 * Layout (shared by every backend and kernel):
 *   row i occupies words_per_row 64-bit words at bits + i * words_per_row;
 *   column j is bit (7 - j % 8) of byte j / 8 of the row (numpy.packbits order), the bytes
 *   in memory order; a word is eight such bytes read little-endian;
 *   words_per_row is ceil(cols / 64) rounded up to OC_ROW_WORD_ALIGN, and every bit past
 *   column cols - 1 is zero.
 * AND and popcount do not care about the order of columns, only that A and B share it, so
 * numpy.packbits rows are copied unchanged and the zero padding never changes a count.
 * The alignment (512 bits) covers one AVX-512 vector and two 256-bit steps of the
 * tensor-core kernel's K loop, so no kernel has a column tail.
 *
 * Three kinds, told apart by which fields are set (never by `bits` alone):
 *   resident    bits != NULL: every row in memory (csr_ptr may also be set: a lists
 *               matrix that was packed keeps its lists).
 *   lists       csr_ptr != NULL, bits == NULL until oc_matrix_pack: rows held as column
 *               lists (.mtx, oc_matrix_from_csr, scipy.sparse).
 *   file-backed source_ops != NULL, bits == NULL always: rows read on demand from the file
 *               it came from through a source that the I/O layer supplies
 *               (oc_matrix_source_ops, the way pool.c takes oc_mem_ops, so core never
 *               includes io/). Never has lists.
 * The rule for the two kinds without bits:
 *   - oc_gram packs a lists matrix (oc_matrix_pack) before any dense backend sees it; the
 *     sparse path reads its lists as they are.
 *   - a file-backed matrix is never packed; dense backends read it in panels, and the sparse
 *     path gets it only as a lists copy built from oc_matrix_load_rows
 *     (oc_matrix_lists_from_rows).
 *   - oc_matrix_load_rows and oc_matrix_row_popcounts work on all three kinds (lists: from
 *     the lists, without packing); oc_matrix_row_columns, oc_matrix_col_counts and
 *     oc_matrix_get read memory only and must not be given a file-backed matrix.
 * Only code that checked oc_matrix_resident may read `bits` directly.
 */
#ifndef OC_MATRIX_MATRIX_H
#define OC_MATRIX_MATRIX_H

#include <pthread.h>
#include <stdint.h>
#include "outcore.h"

#define OC_ROW_WORD_ALIGN 8
#define OC_NAME_MAX 512

/* Where a file-backed matrix gets its rows. load_rows has oc_matrix_load_rows's contract
 * (below) with the range already checked; close releases the source (oc_matrix_free). */
typedef struct oc_matrix_source_ops {
    oc_status (*load_rows)(void *source, oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows,
                           uint64_t *dst);
    void (*close)(void *source);
    /* Optional (NULL: whole rows through a bounce buffer): oc_matrix_load_cols's contract,
     * range checked. */
    oc_status (*load_cols)(void *source, oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, int64_t w0,
                           int64_t w1, uint64_t *dst, int64_t ld);
    /* Optional (NULL: the source cannot change): oc_matrix_check_source's contract. */
    oc_status (*check)(void *source, oc_context *ctx, const oc_matrix *m);
} oc_matrix_source_ops;

struct oc_matrix {
    int64_t rows;
    int64_t cols;
    int64_t words_per_row;
    uint64_t *bits;         /* 64-byte aligned, rows * words_per_row words, owned; NULL when
                              * the matrix is file-backed, or held as lists and not packed yet */
    char name[OC_NAME_MAX]; /* used in messages */
    /* The file the matrix was read from (device and inode), so that no job writes its
     * result over its own input by another name; has_source is 0 for matrices built from
     * memory. */
    int has_source;
    uint64_t source_dev, source_ino;
    /* A sparse matrix (read from .mtx, or built by oc_matrix_from_csr) holds its rows as
     * column lists: row i's ones at csr_idx[csr_ptr[i] .. csr_ptr[i + 1]), ascending and
     * distinct. The sparse Gram path reads them as they are; the dense path packs the bits
     * once, on first use (oc_matrix_pack, under pack_lock), so a job that never needs them
     * never holds rows x cols bits. NULL for matrices read as bits. */
    int64_t *csr_ptr;
    uint32_t *csr_idx;
    pthread_mutex_t pack_lock;
    /* File-backed matrices only (bits == NULL): the rows' source, owned. */
    const oc_matrix_source_ops *source_ops;
    void *source;
    /* bits point into another matrix's (a row view of a resident matrix, matrix_view.c):
     * oc_matrix_free leaves them alone. */
    int bits_borrowed;
    /* File-backed matrices only: the source reads a slice of words of many rows faster than
     * whole rows of a few (a Fortran-order file, one read per column of the rows asked for),
     * so that loads split across threads are split by words (oc_matrix_load_part). */
    int column_slices;
};

/* Nonzero when every row is in memory at `bits`. */
static inline int oc_matrix_resident(const oc_matrix *m) { return m->bits != NULL; }

/* Fills rows [row0, row0 + rows) of m at dst: rows * m->words_per_row words in the layout
 * above (padding bits zero). dst is the caller's, at least 8-byte aligned. For a resident
 * matrix a copy from bits; for a file-backed one a read from the file that validates the
 * values as it goes (a value other than 0/1 without binarize, a bit past --bits in packed
 * input: OC_ERR_INPUT with the reader's one-line message naming the file, row and column; a
 * failed or short read: OC_ERR_IO). Thread safe: several threads may load disjoint (or
 * overlapping) ranges at once with the same ctx; a failure records its message on ctx under
 * the matrix's lock, so callers on several threads must not write ctx meanwhile themselves. */
oc_status oc_matrix_load_rows(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, uint64_t *dst);

/* Words [w0, w1) of rows [row0, row0 + rows) into dst, row i's at dst + i * ld (ld >= w1 -
 * w0): a slice of K of each row (the CUDA engine's tiles split on K), or a part of a load
 * split by words (oc_matrix_load_part). Reads, validates and fails as oc_matrix_load_rows,
 * reading from a file only the slice's bytes where the source can. */
oc_status oc_matrix_load_cols(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, int64_t w0, int64_t w1,
                              uint64_t *dst, int64_t ld);

/* The same through whole rows, a few at a time into a buffer, then their slice: for sources
 * that cannot read part of a row (range already checked). */
oc_status oc_matrix_load_cols_by_rows(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, int64_t w0,
                                      int64_t w1, uint64_t *dst, int64_t ld);

/* Part `part` of `parts` of loading words [w0, w1) of rows [row0, row0 + rows) into dst (row
 * i's word w0 at dst + i * ld), for callers that split one load over threads: a share of the
 * rows, or of the words for a matrix whose source reads slices of columns (column_slices),
 * each part then reading every row of the range. Parts run concurrently with the same ctx.
 * A failure of any part is recorded by the part that met it, which, with several bad values
 * in the range, need not be the first a single load meets: a caller that wants the message
 * of one load (the first bad value in row order) loads the whole range again with
 * oc_matrix_load_redo. */
oc_status oc_matrix_load_part(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, int64_t w0, int64_t w1,
                              uint64_t *dst, int64_t ld, int part, int parts);

/* After parts of a load failed with st: OC_ERR_INPUT (a bad value, a file that changed) loads
 * the range again in one call so that the message recorded is that of one load, the same on
 * every run whatever the split; any other failure is returned as it is. Returns the status
 * to report. */
oc_status oc_matrix_load_redo(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, int64_t w0, int64_t w1,
                              uint64_t *dst, int64_t ld, oc_status st);

/* oc_matrix_load_rows split over `threads` threads (0 = all cores) in tasks of about 1 MB;
 * blocks until the rows are in dst. Fails as oc_matrix_load_rows does, or on cancel. */
oc_status oc_matrix_load_rows_parallel(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, uint64_t *dst,
                                       int threads);

/* OC_OK when the rows m reads on demand still come from what its source was when opened (a
 * file whose size is the one its header was checked against); else fails with OC_ERR_INPUT,
 * "A.npy: the file changed while being read (now N bytes, expected M)" (ctx NULL: the status
 * alone, nothing recorded). A job that read rows from a file-backed matrix asks this after
 * its last read and before it commits or records anything it computed from them: a file
 * rewritten to another size would otherwise give a result that mixes its two versions. A
 * resident or lists matrix (every row read at open, and checked then) always passes. Any
 * thread. */
oc_status oc_matrix_check_source(oc_context *ctx, const oc_matrix *m);

/* Creates a file-backed rows x cols matrix (bits == NULL) that reads its rows through ops
 * and source; it takes source (closed by oc_matrix_free, or here on failure). */
oc_status oc_matrix_create_file_backed(oc_context *ctx, int64_t rows, int64_t cols, const char *name,
                                       const oc_matrix_source_ops *ops, void *source, oc_matrix **out);

/* Rows [row0, row0 + rows) of m as a matrix of their own (matrix_view.c), with m's name and
 * source identity, so oc_gram on views computes any block of rows x columns of A·Bᵀ exactly
 * as the whole job computes it (the rank decomposition of src/mpi uses this). A view of a
 * resident matrix is resident and shares m's bits (no copy); a view of any other kind is
 * file-backed and reads its rows from m through oc_matrix_load_rows. m must outlive the view
 * and not change meanwhile; rows > 0 and the range inside m. */
oc_status oc_matrix_row_view(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, oc_matrix **out);

/* A matrix header of rows x cols with no rows yet (no bits, lists or source): for the
 * constructors in core/. NULL when memory is short. */
oc_matrix *oc_matrix_new_header(int64_t rows, int64_t cols, const char *name);

/* Bytes a resident copy of a rows x cols matrix takes (rows * words_per_row * 8), or
 * INT64_MAX when that overflows. */
int64_t oc_matrix_packed_bytes(int64_t rows, int64_t cols);

/* Fails with oc_matrix_alloc's message when a rows x cols matrix could not be made: a
 * dimension not positive, sizes that overflow, or more than 2^32 - 1 columns or rows for a
 * sparse one (checked by the sparse constructors). */
oc_status oc_matrix_check_dims(oc_context *ctx, int64_t rows, int64_t cols, const char *name);

/* A sparse matrix owning ptr[rows + 1] and idx (each row ascending and distinct, columns
 * below cols; the caller checked): no bits until oc_matrix_pack. Checks the dimensions as
 * oc_matrix_alloc does; frees ptr and idx when it fails. */
oc_status oc_matrix_alloc_csr(oc_context *ctx, int64_t rows, int64_t cols, const char *name, int64_t *ptr,
                              uint32_t *idx, oc_matrix **out);

/* A sparse matrix from coordinates (row[k], col[k]), k < count, each inside the matrix;
 * duplicates are one 1. Used by the readers of sparse formats and oc_matrix_from_csr. */
oc_status oc_matrix_from_coords(oc_context *ctx, int64_t rows, int64_t cols, const char *name, const uint32_t *row,
                                const uint32_t *col, int64_t count, oc_matrix **out);

/* Packs a lists matrix's bits if they are not there yet (thread-safe; the bits are a cache
 * of the same matrix, hence const). A no-op for resident and file-backed matrices (the
 * latter stay in their file). Fails when memory is short. */
oc_status oc_matrix_pack(oc_context *ctx, const oc_matrix *m);

/* words_per_row for a column count. */
int64_t oc_bits_words_per_row(int64_t cols);

/* Allocates a zeroed rows x cols bit matrix. Fails with OC_ERR_INPUT when rows or cols is
 * not positive or the sizes overflow, OC_ERR_NO_MEMORY when memory is short. */
oc_status oc_matrix_alloc(oc_context *ctx, int64_t rows, int64_t cols, const char *name, oc_matrix **out);

/* oc_matrix_alloc without the zeroing, for a caller that writes every word of every row
 * itself (the packers do, padding included): the threads that fill the rows then take the
 * first-touch page faults in parallel instead of one memset before them. */
oc_status oc_matrix_alloc_uninit(oc_context *ctx, int64_t rows, int64_t cols, const char *name, oc_matrix **out);

/* Popcount of every row into counts[rows], on `threads` threads (0 = all cores). Fails only
 * when threads cannot start or the job is cancelled, or, for a file-backed matrix (read in
 * panels of OC_POPCOUNT_PANEL_BYTES per thread), when a row cannot be read. */
#define OC_POPCOUNT_PANEL_BYTES (1 << 20)
oc_status oc_matrix_row_popcounts(oc_context *ctx, const oc_matrix *m, int threads, int64_t *counts);

/* Nonzero for a file-backed matrix (rows in its file, read through oc_matrix_load_rows). */
static inline int oc_matrix_file_backed(const oc_matrix *m) { return m->source_ops != NULL; }

/* The columns of row i's set bits, ascending, into cols (room for the row's popcount);
 * returns how many (matrix_columns.c). O(words + ones). Resident or lists matrices only. */
int64_t oc_matrix_row_columns(const oc_matrix *m, int64_t i, uint32_t *cols);

/* The columns of the set bits of one packed row of `words` words into cols; returns how many. */
int64_t oc_bits_row_columns(const uint64_t *row, int64_t words, uint32_t *cols);

/* The number of set bits in each column into counts[m->cols]. O(words + ones). Resident or
 * lists matrices only. */
void oc_matrix_col_counts(const oc_matrix *m, int64_t *counts);

/* A lists copy of m (any kind) in *out, its rows read through oc_matrix_load_rows in panels
 * of about 1 MB: how the sparse path takes a file-backed matrix. The copy has m's name and
 * source identity. Fails as oc_matrix_load_rows does, or when memory is short. */
oc_status oc_matrix_lists_from_rows(oc_context *ctx, const oc_matrix *m, oc_matrix **out);

/* Sets bit (i, j): for readers of sparse formats. */
static inline void oc_matrix_set(oc_matrix *m, int64_t i, int64_t j)
{
    unsigned char *row = (unsigned char *)(m->bits + i * m->words_per_row);
    row[j >> 3] |= (unsigned char)(0x80u >> (j & 7));
}

static inline int oc_matrix_get(const oc_matrix *m, int64_t i, int64_t j)
{
    if (!m->bits) {
        for (int64_t k = m->csr_ptr[i]; k < m->csr_ptr[i + 1]; ++k)
            if (m->csr_idx[k] == (uint32_t)j) return 1;
        return 0;
    }
    const unsigned char *row = (const unsigned char *)(m->bits + i * m->words_per_row);
    return (row[j >> 3] >> (7 - (j & 7))) & 1;
}

/* Packs one row of 0/1 bytes into dst (words_per_row words, zero padded). Returns the
 * index of the first value other than 0 or 1, or -1 when all are valid. */
int64_t oc_pack_dense_row(const unsigned char *src, int64_t cols, uint64_t *dst, int64_t words_per_row);

/* Packs one row of bytes into dst, any nonzero byte a one (reading with binarize). */
void oc_pack_nonzero_row(const unsigned char *src, int64_t cols, uint64_t *dst, int64_t words_per_row);

/* Copies one row of packed bytes (ceil(cols/8) of them) in the given bit order into dst,
 * clearing bits past cols. Returns the first column >= cols whose bit is set in src (a
 * column the count leaves out: an input error for the caller to report), or -1. */
int64_t oc_pack_bits_row(const unsigned char *src, int64_t cols, oc_bit_order order, uint64_t *dst,
                         int64_t words_per_row);

/* The last byte of a packbits row of `cols` columns: clears its bits past cols and returns
 * the first such column whose bit was set (an input error for the caller), or -1. */
int64_t oc_packed_clear_past(unsigned char *last, int64_t cols);

/* Spreads `rows` packbits rows of ceil(cols/8) bytes each, stored back to back at the start
 * of dst, to the padded stride in place (from the last row backwards, so no row is
 * overwritten before it moved), zeroing the padding and the bits past cols. Returns the
 * first row (0-based within dst) whose last byte had a bit set past cols, with that column
 * in *extra_col, or -1 when none had. */
int64_t oc_expand_packed_rows(uint64_t *dst, int64_t rows, int64_t cols, int64_t words_per_row, int64_t *extra_col);

/* The names of A and B in a message: their own, or "A" and "B" when B has A's name or the one
 * a matrix has until the caller names it (two unnamed matrices are both "A"). */
void oc_matrix_pair_names(const oc_matrix *a, const oc_matrix *b, const char **a_name, const char **b_name);

/* Overflow-checked products for sizes (return 0 and leave *out alone on overflow). */
static inline int oc_mul_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return 0;
    *out = r;
    return 1;
}

/* The bytes from the first of rows x cols elements of elem bytes, rows ld elements apart
 * (ld >= cols), at p to past the last: 0 when empty, -1 when they would reach past the end of
 * the address space (a shape or row stride no caller's buffer can have). */
static inline int64_t oc_memory_span(const void *p, int64_t rows, int64_t cols, int64_t ld, size_t elem)
{
    if (rows <= 0 || cols <= 0) return 0;
    int64_t count = 0, bytes = 0;
    if (__builtin_mul_overflow(rows - 1, ld, &count) || __builtin_add_overflow(count, cols, &count) ||
        __builtin_mul_overflow(count, (int64_t)elem, &bytes) || (uintptr_t)bytes > UINTPTR_MAX - (uintptr_t)p)
        return -1;
    return bytes;
}

#endif
