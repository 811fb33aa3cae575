/*
 * matrix_columns.c - the set bits of a packed matrix as column indices: what the sparse Gram
 * path (src/gram/cpu/sparse/gram_sparse.c) and its cost prediction (src/gram/gram_choice.c) read from the
 * packed layout of matrix.h. Both walk set bits only, so they cost O(words + ones): cheap on
 * sparse data, which is the only data they are asked about.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "matrix/matrix.h"

/* Column j is bit 7 - j % 8 of byte j / 8 and a word is eight bytes read little-endian, so a
 * byte swap puts column 64w + b at bit 63 - b: counting leading zeros walks columns upward. */
int64_t oc_matrix_row_columns(const oc_matrix *m, int64_t i, uint32_t *cols)
{
    if (m->csr_ptr) {
        const int64_t n = m->csr_ptr[i + 1] - m->csr_ptr[i];
        memcpy(cols, m->csr_idx + m->csr_ptr[i], (size_t)n * sizeof *cols);
        return n;
    }
    return oc_bits_row_columns(m->bits + i * m->words_per_row, m->words_per_row, cols);
}

int64_t oc_bits_row_columns(const uint64_t *row, int64_t words, uint32_t *cols)
{
    int64_t n = 0;
    for (int64_t w = 0; w < words; ++w) {
        uint64_t x = __builtin_bswap64(row[w]);
        while (x) {
            int b = __builtin_clzll(x);
            cols[n++] = (uint32_t)(w * 64 + b);
            x &= ~(1ull << (63 - b));
        }
    }
    return n;
}

void oc_matrix_col_counts(const oc_matrix *m, int64_t *counts)
{
    memset(counts, 0, (size_t)m->cols * sizeof *counts);
    if (m->csr_ptr) {
        for (int64_t k = 0; k < m->csr_ptr[m->rows]; ++k) counts[m->csr_idx[k]]++;
        return;
    }
    for (int64_t i = 0; i < m->rows; ++i) {
        const uint64_t *row = m->bits + i * m->words_per_row;
        for (int64_t w = 0; w < m->words_per_row; ++w) {
            uint64_t x = __builtin_bswap64(row[w]);
            while (x) {
                int b = __builtin_clzll(x);
                counts[w * 64 + b]++;
                x &= ~(1ull << (63 - b));
            }
        }
    }
}

oc_status oc_matrix_lists_from_rows(oc_context *ctx, const oc_matrix *m, oc_matrix **out)
{
    OC_CHECK(ctx, oc_matrix_check_dims(ctx, m->rows, m->cols, m->name));
    const int64_t row_bytes = m->words_per_row * 8;
    const int64_t panel = (1 << 20) / row_bytes > 0 ? (1 << 20) / row_bytes : 1;
    int64_t cap = 1 << 16, used = 0;
    int64_t *ptr = malloc((size_t)(m->rows + 1) * sizeof *ptr);
    uint32_t *idx = malloc((size_t)cap * sizeof *idx);
    /* One row's columns at most: a row of cols ones. */
    uint32_t *row_cols = malloc((size_t)m->cols * sizeof *row_cols);
    uint64_t *rows = aligned_alloc(64, (size_t)(panel * row_bytes));
    oc_status st = OC_OK;
    if (!ptr || !idx || !row_cols || !rows) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory for the row lists of %lld x %lld", m->name,
                     (long long)m->rows, (long long)m->cols);
        goto cleanup;
    }
    ptr[0] = 0;
    for (int64_t r0 = 0; r0 < m->rows; r0 += panel) {
        const int64_t nr = m->rows - r0 < panel ? m->rows - r0 : panel;
        OC_CHECK_GOTO(ctx, st, oc_matrix_load_rows(ctx, m, r0, nr, rows), cleanup);
        for (int64_t i = 0; i < nr; ++i) {
            const int64_t n = oc_bits_row_columns(rows + i * m->words_per_row, m->words_per_row, row_cols);
            if (used + n > cap) {
                while (used + n > cap) cap *= 2;
                uint32_t *grown = realloc(idx, (size_t)cap * sizeof *idx);
                if (!grown) {
                    st = oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory for %lld column indices", m->name,
                                 (long long)cap);
                    goto cleanup;
                }
                idx = grown;
            }
            memcpy(idx + used, row_cols, (size_t)n * sizeof *idx);
            used += n;
            ptr[r0 + i + 1] = used;
        }
    }
    st = oc_matrix_alloc_csr(ctx, m->rows, m->cols, m->name, ptr, idx, out);
    ptr = NULL, idx = NULL; /* taken by oc_matrix_alloc_csr, even when it fails */
    if (st == OC_OK) {
        (*out)->has_source = m->has_source;
        (*out)->source_dev = m->source_dev;
        (*out)->source_ino = m->source_ino;
    }
cleanup:
    free(ptr);
    free(idx);
    free(row_cols);
    free(rows);
    return st;
}
