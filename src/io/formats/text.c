/*
 * text.c - 0/1 matrices as text (.txt, .csv): one row per line, values separated by
 * whitespace or by commas (with optional spaces around them). Blank lines and lines whose
 * first visible character is '#' are skipped.
 *
 * The file is mapped and read twice: the first pass counts the rows and every row's values,
 * so that the packed matrix is allocated once at its final size, within the host budget;
 * the second checks and packs every value. Both check the cancel as they go
 * (oc_read_cancel_point).
 * A value is any decimal number equal to 0 or 1 (0, 1, 1.0, 1e0, -0: the rule of a .mtx real
 * field and of float .npy values); when the caller binarizes, any number but NaN is read and
 * a nonzero one is a one. Messages give the line number (from 1, as editors show it) and the
 * row and column of the matrix from 0, as every reader does, and the likely cause: a header
 * line, an index column, quotes or another separator. Under binarize an index column reads
 * without error (its numbers are ones), so a file read that way is warned of (oc_warn).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text_buf.h"
#include "core/error.h"
#include "matrix/matrix.h"
#include "matrix/matrix_build.h"
#include "io/io.h"
#include "io/mapped_file.h"
#include "io/formats/mtx_tokens.h"
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
    const unsigned char *data, *end; /* the whole file: a message may look at other lines */
    int64_t line_no;                 /* from 1 */
    int64_t row;                     /* from 0 */
    int binarize;
} line_parse;

/* The end of the token that starts at line[k]: the next blank or comma. */
static size_t token_end(const char *line, size_t k, size_t len)
{
    while (k < len && !is_blank(line[k]) && line[k] != ',') ++k;
    return k;
}

/* The first value of a data line (*tlen bytes; 0 when the line starts with a comma). */
static const char *first_token(const char *line, size_t len, size_t *tlen)
{
    size_t start = 0;
    while (start < len && is_blank(line[start])) ++start;
    *tlen = token_end(line, start, len) - start;
    return line + start;
}

/* What a value token holds, by the rule of a .mtx real field (mtx_tokens.h). '0' and '1',
 * nearly every token of a 0/1 file, are told without strtod. */
static mtx_value value_of(const char *t, size_t len)
{
    if (len == 1 && (t[0] == '0' || t[0] == '1')) return t[0] == '1' ? VALUE_ONE : VALUE_ZERO;
    const token tok = {t, len};
    return classify_value(&tok, 1);
}

/* Whether the first value of every data line is a whole number, each larger than the one
 * above, over three rows or more: row numbers or the ids of an index column (0, 1, 2, ...),
 * which no 0/1 column holds past its second row. The first three go to shown. */
static int first_column_counts_up(const line_parse *lp, char *shown, size_t size)
{
    const unsigned char *pos;
    const char *line = NULL;
    size_t len = 0;
    int64_t rows = 0;
    double last = -1.0;
    size_t at = 0;
    for (pos = lp->data; oc_next_line(&pos, lp->end, &line, &len);) {
        if (!is_data_line(line, len)) continue;
        size_t tlen;
        const char *t = first_token(line, len, &tlen);
        double v;
        if (!oc_strtod_token(t, tlen, &v) || !(v > last) || v >= 9e18 || v != (double)(int64_t)v) return 0;
        last = v;
        if (rows++ < 3) {
            char value[32];
            oc_text_excerpt(value, sizeof value, t, tlen, 12);
            at += (size_t)snprintf(shown + at, at < size ? size - at : 0, "%s, ", value);
        }
    }
    if (at < size) snprintf(shown + at, size - at, "...");
    return rows >= 3;
}

/* The message of the value token t at column col that the line's row does not take: not a
 * number, NaN, or (without binarize) a number other than 0 and 1, with its likely cause. */
static oc_status bad_value(oc_context *ctx, const line_parse *lp, const char *t, size_t len, int64_t col, mtx_value v)
{
    const char *what = "is not 0 or 1";
    char hint[320] = "", counted[64];
    double number;
    if (v == VALUE_NOT_A_NUMBER && oc_strtod_token(t, len, &number)) {
        what = "is NaN, neither 0 nor 1";
        snprintf(hint, sizeof hint, "; not even --binarize, in Python binarize=True, reads it");
    } else if (v == VALUE_NOT_A_NUMBER) {
        what = "is not a number";
        const char *sep = memchr(t, ';', len) ? ";" : memchr(t, '|', len) ? "|" : NULL;
        if (sep) snprintf(hint, sizeof hint, "; values are separated by commas, spaces or tabs, not '%s'", sep);
        else if (len > 2 && (t[0] == '"' || t[0] == '\'') && t[len - 1] == t[0] &&
                 oc_strtod_token(t + 1, len - 2, &number))
            snprintf(hint, sizeof hint, "; values are bare numbers, without quotes");
        else if (lp->row == 0)
            snprintf(hint, sizeof hint, "; a header line must start with '#', as a comment, or be removed");
    } else if (col == 0 && first_column_counts_up(lp, counted, sizeof counted)) {
        snprintf(hint, sizeof hint,
                 "; the first column counts up the rows (%s): an index column of row numbers or ids, not data "
                 "(pandas' to_csv writes one unless index=False); remove it",
                 counted);
    } else {
        snprintf(hint, sizeof hint, "; %s--binarize, in Python binarize=True, reads any nonzero number as 1",
                 col == 0 ? "a first column of row numbers or ids, an index column, is no data: remove it; else " : "");
    }
    char shown[128];
    oc_text_excerpt(shown, sizeof shown, t, len, 24);
    return oc_fail(ctx, OC_ERR_INPUT,
                   "%s: line %lld: '%s' at row %lld, column %lld %s (rows and columns count from 0%s)", lp->path,
                   (long long)lp->line_no, shown, (long long)lp->row, (long long)col, what, hint);
}

/* Parses one data line. With row_bits == NULL it only counts the values into *count; else
 * it also checks each value and sets the ones among the first `width` columns in row_bits
 * (layout of matrix.h); values past width are counted, never stored, so a long ragged row
 * cannot write past its row. */
static oc_status parse_values(oc_context *ctx, const line_parse *lp, const char *line, size_t len,
                              unsigned char *row_bits, int64_t width, int64_t *count)
{
    size_t k = 0;
    int64_t n = 0;
    for (;;) {
        while (k < len && is_blank(line[k])) ++k;
        if (k == len) break;
        size_t start = k;
        k = token_end(line, k, len);
        size_t tlen = k - start;
        if (tlen == 0 && n == 0) /* a comma before the first value */
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: line %lld starts with ',': column 0 is empty (%s; columns count from 0)", lp->path,
                           (long long)lp->line_no,
                           lp->row == 0 ? "a header line, as pandas' to_csv writes with the index column's empty "
                                          "name first, must start with '#', as a comment, or be removed"
                                        : "a line's first value comes before its first comma");
        if (tlen == 0) /* a comma where a value should be */
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: line %lld: empty value at column %lld (two commas in a row; "
                           "columns count from 0)",
                           lp->path, (long long)lp->line_no, (long long)n);
        if (row_bits) {
            const char *t = line + start;
            const mtx_value v = value_of(t, tlen);
            if (v == VALUE_NOT_A_NUMBER || (v == VALUE_OTHER && !lp->binarize))
                return bad_value(ctx, lp, t, tlen, n, v);
            if (v != VALUE_ZERO && n < width) row_bits[n >> 3] |= (unsigned char)(0x80u >> (n & 7));
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

/* The first data line: its number, its values' count and its text. */
typedef struct first_row {
    int64_t line_no, cols;
    const char *line;
    size_t len;
} first_row;

/* A row of n values where the first has first->cols; when the first row begins with a word,
 * it is a header line of names, which an index column in the rows below outnumbers. */
static oc_status ragged(oc_context *ctx, const line_parse *lp, int64_t n, const first_row *first)
{
    size_t tlen;
    const char *t = first_token(first->line, first->len, &tlen);
    double v;
    char header[256] = "";
    if (tlen && !oc_strtod_token(t, tlen, &v)) {
        char shown[128];
        oc_text_excerpt(shown, sizeof shown, t, tlen, 24);
        snprintf(header, sizeof header,
                 "; its first value '%s' is not a number: a header line must start with '#', as a comment, or be "
                 "removed",
                 shown);
    }
    return oc_fail(ctx, OC_ERR_INPUT,
                   "%s: line %lld (row %lld, counting from 0) has %lld values but the first row (line %lld) has "
                   "%lld%s",
                   lp->path, (long long)lp->line_no, (long long)lp->row, (long long)n, (long long)first->line_no,
                   (long long)first->cols, header);
}

static oc_status parse_text(oc_context *ctx, const char *path, oc_mapped_file *file, void *arg, oc_matrix **out)
{
    const unsigned char *end = file->data + file->size, *pos;
    const char *line = NULL;
    size_t len = 0;

    const oc_read_options *opts = arg;
    /* Pass 1: the number of rows, and the column count of the first row. */
    int64_t rows = 0;
    first_row first = {0};
    line_parse lp = {.path = path, .data = file->data, .end = end, .binarize = opts->binarize};
    int64_t next_check = 0;
    for (pos = file->data; oc_next_line(&pos, end, &line, &len);) {
        ++lp.line_no;
        OC_CHECK(ctx, oc_read_cancel_point(ctx, path, pos - file->data, &next_check));
        if (!is_data_line(line, len)) continue;
        lp.row = rows;
        /* Every row's length, before the matrix is allocated from the first's: a ragged
         * file of a few bytes cannot ask for rows x (a long first row) of memory. */
        int64_t n = 0;
        OC_CHECK(ctx, parse_values(ctx, &lp, line, len, NULL, 0, &n));
        if (rows == 0) first = (first_row){.line_no = lp.line_no, .cols = n, .line = line, .len = len};
        else if (n != first.cols) return ragged(ctx, &lp, n, &first);
        ++rows;
    }
    if (rows == 0) return oc_fail(ctx, OC_ERR_INPUT, "%s: no matrix rows (only blank or '#' comment lines)", path);
    const int64_t cols = first.cols;
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
    lp.line_no = lp.row = 0;
    next_check = 0;
    for (pos = file->data; oc_next_line(&pos, end, &line, &len);) {
        ++lp.line_no;
        OC_CHECK(ctx, oc_read_cancel_point(ctx, path, pos - file->data, &next_check));
        if (!is_data_line(line, len)) continue;
        int64_t n = 0;
        OC_CHECK(ctx,
                 parse_values(ctx, &lp, line, len, (unsigned char *)(m->bits + lp.row * m->words_per_row), cols, &n));
        if (n != cols) return ragged(ctx, &lp, n, &first); /* the file changed */
        ++lp.row;
    }
    /* Read as asked, but most likely an index column taken for data: without binarize its
     * values past 1 are refused (bad_value); with it they are ones, and only a warning tells. */
    char counted[64];
    if (opts->binarize && cols > 1 && first_column_counts_up(&lp, counted, sizeof counted))
        oc_warn(
            ctx,
            "%s: the first column counts up the rows (%s), as an index column of row numbers or ids does "
            "(pandas' to_csv writes one unless index=False); --binarize, in Python binarize=True, reads it as data: "
            "remove it if it is one",
            path, counted);
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
