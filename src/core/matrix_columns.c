/*
 * matrix_columns.c - the set bits of a packed matrix as column indices: what the sparse Gram
 * path (src/cpu/gram_sparse.c) and its cost prediction (src/exec/gram_choice.c) read from the
 * packed layout of matrix.h. Both walk set bits only, so they cost O(words + ones): cheap on
 * sparse data, which is the only data they are asked about.
 */
#include <string.h>

#include "core/matrix.h"

/* Column j is bit 7 - j % 8 of byte j / 8 and a word is eight bytes read little-endian, so a
 * byte swap puts column 64w + b at bit 63 - b: counting leading zeros walks columns upward. */
int64_t oc_matrix_row_columns(const oc_matrix *m, int64_t i, uint32_t *cols)
{
    if (m->csr_ptr) {
        const int64_t n = m->csr_ptr[i + 1] - m->csr_ptr[i];
        memcpy(cols, m->csr_idx + m->csr_ptr[i], (size_t)n * sizeof *cols);
        return n;
    }
    const uint64_t *row = m->bits + i * m->words_per_row;
    int64_t n = 0;
    for (int64_t w = 0; w < m->words_per_row; ++w) {
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
