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
 */
#ifndef OC_CORE_MATRIX_H
#define OC_CORE_MATRIX_H

#include <pthread.h>
#include <stdint.h>
#include "outcore.h"

#define OC_ROW_WORD_ALIGN 8
#define OC_NAME_MAX 512

struct oc_matrix {
    int64_t rows;
    int64_t cols;
    int64_t words_per_row;
    uint64_t *bits;          /* 64-byte aligned, rows * words_per_row words, owned; NULL in a
                              * sparse matrix until oc_matrix_pack */
    char name[OC_NAME_MAX];  /* used in messages */
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
};

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

/* Packs a sparse matrix's bits if they are not there yet (thread-safe; the bits are a cache
 * of the same matrix, hence const). Fails when memory is short. */
oc_status oc_matrix_pack(oc_context *ctx, const oc_matrix *m);

/* words_per_row for a column count. */
int64_t oc_bits_words_per_row(int64_t cols);

/* Allocates a zeroed rows x cols bit matrix. Fails with OC_ERR_INPUT when rows or cols is
 * not positive or the sizes overflow, OC_ERR_NO_MEMORY when memory is short. */
oc_status oc_matrix_alloc(oc_context *ctx, int64_t rows, int64_t cols, const char *name, oc_matrix **out);

/* Popcount of every row into counts[rows], on `threads` threads (0 = all cores). Fails only
 * when threads cannot start or the job is cancelled. */
oc_status oc_matrix_row_popcounts(oc_context *ctx, const oc_matrix *m, int threads, int64_t *counts);

/* The columns of row i's set bits, ascending, into cols (room for the row's popcount);
 * returns how many (matrix_columns.c). O(words + ones). */
int64_t oc_matrix_row_columns(const oc_matrix *m, int64_t i, uint32_t *cols);

/* The number of set bits in each column into counts[m->cols]. O(words + ones). */
void oc_matrix_col_counts(const oc_matrix *m, int64_t *counts);

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

/* Overflow-checked products for sizes (return 0 and leave *out alone on overflow). */
static inline int oc_mul_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return 0;
    *out = r;
    return 1;
}

#endif
