/*
 * text.c - 0/1 matrices as text (.txt, .csv): one row per line, values separated by
 * whitespace or by commas (with optional spaces around them). Blank lines and lines whose
 * first visible character is '#' are skipped.
 *
 * The file is mapped and read twice: the first pass counts the rows and every row's values,
 * so that the packed matrix is allocated once at its final size, within the host budget;
 * the second checks and packs every value.
 * Values are 0 and 1; when the caller binarizes, any number is read and a nonzero one is a
 * one. Messages give the line number (from 1, as editors show it) and the row and column of
 * the matrix from 0, as every reader does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text_buf.h"
#include "core/error.h"
#include "matrix/matrix.h"
#include "io/io.h"
#include "io/mapped_file.h"
#include "mem/host_budget.h"

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

/* Whether a line holds matrix data (not blank, not a '#' comment). */
static int is_data_line(const char *line, size_t len)
{
    size_t k = 0;
    while (k < len && is_blank(line[k])) ++k;
    return k < len && line[k] != '#';
}

typedef struct line_parse {
    const char *path;
    int64_t line_no; /* from 1 */
    int64_t row;     /* from 0 */
    int binarize;
} line_parse;

/* A value token: 0 or 1, or with binarize any number (nonzero is a one). Returns 1 with *one
 * set, 0 when the token is not a value the caller accepts. */
static int parse_value(const char *t, size_t len, int binarize, int *one)
{
    if (len == 1 && (t[0] == '0' || t[0] == '1')) {
        *one = t[0] == '1';
        return 1;
    }
    double v;
    if (!binarize || !oc_strtod_token(t, len, &v) || v != v) return 0;
    *one = v != 0.0;
    return 1;
}

/* Parses one data line. With row_bits == NULL it only counts the values into *count; else
 * it also checks that each is 0 or 1 and sets the ones among the first `width` columns in
 * row_bits (layout of matrix.h); values past width are counted, never stored, so a long
 * ragged row cannot write past its row. */
static oc_status parse_values(oc_context *ctx, const line_parse *lp, const char *line, size_t len,
                              unsigned char *row_bits, int64_t width, int64_t *count)
{
    size_t k = 0;
    int64_t n = 0;
    for (;;) {
        while (k < len && is_blank(line[k])) ++k;
        if (k == len) break;
        size_t start = k;
        while (k < len && !is_blank(line[k]) && line[k] != ',') ++k;
        size_t tlen = k - start;
        if (tlen == 0) /* a comma where a value should be */
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: line %lld: empty value at column %lld (two commas in a row; "
                           "columns count from 0)",
                           lp->path, (long long)lp->line_no, (long long)n);
        if (row_bits) {
            const char *t = line + start;
            int one;
            if (!parse_value(t, tlen, lp->binarize, &one)) {
                char shown[128];
                oc_text_excerpt(shown, sizeof shown, t, tlen, 24);
                return oc_fail(ctx, OC_ERR_INPUT,
                               "%s: line %lld: '%s' at row %lld, column %lld is not %s (rows and columns count from "
                               "0%s)",
                               lp->path, (long long)lp->line_no, shown, (long long)lp->row, (long long)n,
                               lp->binarize ? "a number" : "0 or 1",
                               lp->binarize ? ""
                                            : "; --binarize, in Python binarize=True, reads any nonzero number as 1");
            }
            if (one && n < width) row_bits[n >> 3] |= (unsigned char)(0x80u >> (n & 7));
        }
        ++n;
        while (k < len && is_blank(line[k])) ++k;
        if (k < len && line[k] == ',') {
            ++k;
            size_t after = k;
            while (after < len && is_blank(line[after])) ++after;
            if (after == len)
                return oc_fail(ctx, OC_ERR_INPUT,
                               "%s: line %lld ends with ',' after column %lld (columns count from 0)", lp->path,
                               (long long)lp->line_no, (long long)n - 1);
        }
    }
    *count = n;
    return OC_OK;
}

static oc_status ragged(oc_context *ctx, const char *path, int64_t line_no, int64_t row, int64_t n, int64_t first_line,
                        int64_t cols)
{
    return oc_fail(ctx, OC_ERR_INPUT,
                   "%s: line %lld (row %lld, counting from 0) has %lld values but the first row (line %lld) has %lld",
                   path, (long long)line_no, (long long)row, (long long)n, (long long)first_line, (long long)cols);
}

static oc_status parse_text(oc_context *ctx, const char *path, oc_mapped_file *file, void *arg, oc_matrix **out)
{
    const unsigned char *end = file->data + file->size, *pos;
    const char *line = NULL;
    size_t len = 0;

    const oc_read_options *opts = arg;
    /* Pass 1: the number of rows, and the column count of the first row. */
    int64_t rows = 0, cols = 0, first_line = 0;
    line_parse lp = {.path = path, .binarize = opts->binarize};
    for (pos = file->data; oc_next_line(&pos, end, &line, &len);) {
        ++lp.line_no;
        if (!is_data_line(line, len)) continue;
        /* Every row's length, before the matrix is allocated from the first's: a ragged
         * file of a few bytes cannot ask for rows x (a long first row) of memory. */
        int64_t n = 0;
        OC_CHECK(ctx, parse_values(ctx, &lp, line, len, NULL, 0, &n));
        if (rows == 0) first_line = lp.line_no, cols = n;
        else if (n != cols) return ragged(ctx, path, lp.line_no, rows, n, first_line, cols);
        ++rows;
    }
    if (rows == 0) return oc_fail(ctx, OC_ERR_INPUT, "%s: no matrix rows (only blank or '#' comment lines)", path);
    /* Read whole into memory (a text file has no row index to seek to): within the budget, by
     * the rule a resident input follows (host_budget.h). */
    const int64_t budget = oc_host_budget_resolve(opts->host_mem_bytes), packed = oc_matrix_packed_bytes(rows, cols);
    if (packed < 0 || !oc_host_budget_keeps_input(packed, budget))
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: its %lld rows of %lld columns take %lld bytes packed, more than half the host memory "
                       "budget of %lld bytes (--host-mem; Python host_mem=): a text input is read whole; save it as "
                       "a packed .npy to read it in panels",
                       path, (long long)rows, (long long)cols, (long long)packed, (long long)budget);

    /* Pass 2: check and pack. */
    OC_CHECK(ctx, oc_matrix_alloc(ctx, rows, cols, path, out));
    oc_matrix *m = *out;
    lp.line_no = 0;
    for (pos = file->data; oc_next_line(&pos, end, &line, &len);) {
        ++lp.line_no;
        if (!is_data_line(line, len)) continue;
        int64_t n = 0;
        OC_CHECK(ctx,
                 parse_values(ctx, &lp, line, len, (unsigned char *)(m->bits + lp.row * m->words_per_row), cols, &n));
        if (n != cols) return ragged(ctx, path, lp.line_no, lp.row, n, first_line, cols); /* the file changed */
        ++lp.row;
    }
    return OC_OK;
}

oc_status oc_text_read(oc_context *ctx, const char *path, const oc_read_options *opts, oc_matrix **out)
{
    OC_CHECK(ctx, oc_mapped_read(ctx, path, parse_text, (void *)opts, out));
    return OC_OK;
}

oc_status oc_text_read_buffer(oc_context *ctx, const char *name, const void *data, size_t size,
                              const oc_read_options *opts, oc_matrix **out)
{
    oc_read_options defaults = OC_READ_OPTIONS_INIT;
    OC_CHECK(ctx, oc_buffer_read(ctx, name, data, size, parse_text, (void *)(opts ? opts : &defaults), out));
    return OC_OK;
}
