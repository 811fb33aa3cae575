/*
 * mtx.c - MatrixMarket coordinate files as 0/1 matrices.
 *
 *   %%MatrixMarket matrix coordinate pattern|integer|real general|symmetric|skew-symmetric
 *   % comments
 *   rows cols entries
 *   i j [value]            entries lines, indices from 1
 *
 * Values must be 0 or 1 (an explicit zero is stored by some writers and is not a one);
 * any other value is an input error, unless the caller binarizes, when every nonzero
 * value is a one. Symmetric files store one triangle: each entry is mirrored. A
 * skew-symmetric file mirrors v as -v, so its ones imply -1 entries: it is read only when
 * binarizing. Duplicate entries are one 1, whatever their count. Messages give the line
 * number from 1, as editors show it, and the row and column from 0, as every reader does
 * (the file's own 1-based indices beside them).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "core/matrix.h"
#include "io/io.h"
#include "io/mapped_file.h"

#define MTX_MAX_TOKENS 6

typedef struct token {
    const char *s;
    size_t len;
} token;

/* Splits a line at whitespace into at most MTX_MAX_TOKENS tokens; returns how many there
 * are (MTX_MAX_TOKENS + 1 when there are more). */
static int split(const char *line, size_t len, token *tok)
{
    int n = 0;
    size_t k = 0;
    for (;;) {
        while (k < len && isspace((unsigned char)line[k])) ++k;
        if (k == len) return n;
        if (n == MTX_MAX_TOKENS) return n + 1;
        tok[n].s = line + k;
        while (k < len && !isspace((unsigned char)line[k])) ++k;
        tok[n].len = (size_t)(line + k - tok[n].s);
        ++n;
    }
}

static int token_is(const token *t, const char *word)
{
    return t->len == strlen(word) && strncasecmp(t->s, word, t->len) == 0;
}

/* A decimal integer token ("+12", "007"); 0 when it is not one or does not fit int64. */
static int parse_int(const token *t, int64_t *out)
{
    size_t k = 0;
    int neg = 0;
    if (k < t->len && (t->s[k] == '+' || t->s[k] == '-')) neg = t->s[k++] == '-';
    if (k == t->len) return 0;
    uint64_t v = 0;
    for (; k < t->len; ++k) {
        if (t->s[k] < '0' || t->s[k] > '9') return 0;
        /* Tested before the step, which could wrap past 2^64 and read as a small number. */
        if (v > ((uint64_t)INT64_MAX - (uint64_t)(t->s[k] - '0')) / 10) return 0;
        v = v * 10 + (uint64_t)(t->s[k] - '0');
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 1;
}

/* What a value token holds. Integers are judged by their digits, so values past int64 are
 * still told apart correctly. */
typedef enum mtx_value { VALUE_NOT_A_NUMBER, VALUE_ZERO, VALUE_ONE, VALUE_OTHER } mtx_value;

static mtx_value classify_value(const token *t, int real)
{
    if (!real) {
        size_t k = (t->len && (t->s[0] == '+' || t->s[0] == '-')) ? 1 : 0;
        int negative = t->len && t->s[0] == '-';
        if (k == t->len) return VALUE_NOT_A_NUMBER;
        uint64_t v = 0; /* saturates at 2: only 0, 1 and "more" matter */
        for (; k < t->len; ++k) {
            if (t->s[k] < '0' || t->s[k] > '9') return VALUE_NOT_A_NUMBER;
            v = v * 10 + (uint64_t)(t->s[k] - '0');
            if (v > 1) v = 2;
        }
        return v == 0 ? VALUE_ZERO : v == 1 && !negative ? VALUE_ONE : VALUE_OTHER;
    }
    char buf[64];
    if (t->len >= sizeof buf) return VALUE_NOT_A_NUMBER;
    memcpy(buf, t->s, t->len);
    buf[t->len] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (end != buf + t->len || v != v) return VALUE_NOT_A_NUMBER; /* NaN is no answer to "is it a one" */
    return v == 0.0 ? VALUE_ZERO : v == 1.0 ? VALUE_ONE : VALUE_OTHER;
}

static int is_skippable(const char *line, size_t len)
{
    size_t k = 0;
    while (k < len && isspace((unsigned char)line[k])) ++k;
    return k == len || line[k] == '%';
}

/* The ones of the file as coordinates (0-based), mirrored ones included. */
typedef struct coords {
    uint32_t *row, *col;
    int64_t count, cap;
    int64_t rows, cols;
} coords;

static oc_status parse_entries(oc_context *ctx, const char *path, oc_mapped_file *file, const oc_read_options *opts,
                               coords *c)
{
    const unsigned char *end = file->data + file->size, *pos = file->data;
    const char *line = NULL;
    size_t len = 0;
    token tok[MTX_MAX_TOKENS];
    int64_t line_no = 1;

    oc_next_line(&pos, end, &line, &len);
    int ntok = split(line, len, tok);
    if (ntok != 5 || !token_is(&tok[0], "%%MatrixMarket") || !token_is(&tok[1], "matrix"))
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: line 1 is not a MatrixMarket banner (expected '%%%%MatrixMarket matrix "
                       "coordinate pattern general' or similar)",
                       path);
    if (!token_is(&tok[2], "coordinate"))
        return oc_fail(ctx, OC_ERR_INPUT, "%s: MatrixMarket format '%.*s' is not supported; only 'coordinate' is read",
                       path, (int)tok[2].len, tok[2].s);
    int pattern = token_is(&tok[3], "pattern"), real = token_is(&tok[3], "real");
    if (!pattern && !real && !token_is(&tok[3], "integer"))
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: MatrixMarket field '%.*s' is not supported; pattern, integer and real "
                       "are read",
                       path, (int)tok[3].len, tok[3].s);
    int skew = token_is(&tok[4], "skew-symmetric"), mirror = skew || token_is(&tok[4], "symmetric");
    if (!mirror && !token_is(&tok[4], "general"))
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: MatrixMarket symmetry '%.*s' is not supported; general, symmetric and "
                       "skew-symmetric are read",
                       path, (int)tok[4].len, tok[4].s);

    /* The size line: the first line that is neither a comment nor blank. */
    int found = 0;
    while (oc_next_line(&pos, end, &line, &len)) {
        ++line_no;
        if (!is_skippable(line, len)) {
            found = 1;
            break;
        }
    }
    int64_t rows, cols, entries;
    if (!found)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: no size line after the banner (expected 'rows columns entries')", path);
    if (split(line, len, tok) != 3 || !parse_int(&tok[0], &rows) || !parse_int(&tok[1], &cols) ||
        !parse_int(&tok[2], &entries) || entries < 0)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: line %" PRId64 ": bad size line '%.*s' (expected 'rows columns entries')", path, line_no,
                       len > 60 ? 60 : (int)len, line);
    if (mirror && rows != cols)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: line %" PRId64 ": a symmetric matrix must be square, not %" PRId64 " x %" PRId64, path,
                       line_no, rows, cols);
    if (skew && !opts->binarize)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: a skew-symmetric file mirrors each value v as -v, so its entries are not all 0 or 1: "
                       "--binarize (Python: binarize=True) reads every nonzero value as 1",
                       path);
    OC_CHECK(oc_matrix_check_dims(ctx, rows, cols, path));
    /* An entry takes at least 4 bytes ("1 1\n"), so the file's size bounds what is allocated
     * whatever the size line declares. */
    int64_t most = (int64_t)(file->size / 4) + 1;
    c->cap = (entries < most ? entries : most) * (mirror ? 2 : 1) + 1;
    c->rows = rows, c->cols = cols;
    c->row = malloc((size_t)c->cap * sizeof *c->row);
    c->col = malloc((size_t)c->cap * sizeof *c->col);
    if (!c->row || !c->col)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate room for %lld entries", path, (long long)c->cap);

    int want = pattern ? 2 : 3;
    int64_t seen = 0;
    while (oc_next_line(&pos, end, &line, &len)) {
        ++line_no;
        if (is_skippable(line, len)) continue;
        if (seen == entries)
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: line %" PRId64 ": more entries than the %" PRId64 " the size line declares", path,
                           line_no, entries);
        ++seen;
        ntok = split(line, len, tok);
        if (ntok != want)
            return oc_fail(ctx, OC_ERR_INPUT, "%s: line %" PRId64 ": expected %d fields (%s) but found %s%d", path,
                           line_no, want, pattern ? "row column" : "row column value",
                           ntok > MTX_MAX_TOKENS ? "more than " : "", ntok > MTX_MAX_TOKENS ? MTX_MAX_TOKENS : ntok);
        int64_t i, j;
        for (int f = 0; f < 2; ++f)
            if (!parse_int(&tok[f], f ? &j : &i))
                return oc_fail(ctx, OC_ERR_INPUT, "%s: line %" PRId64 ": '%.*s' is not an integer index", path, line_no,
                               tok[f].len > 24 ? 24 : (int)tok[f].len, tok[f].s);
        if (i < 1 || i > rows || j < 1 || j > cols)
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: line %" PRId64 ": index (%" PRId64 ", %" PRId64 ") is outside the %" PRId64
                           " x %" PRId64 " matrix (the file's indices count from 1)",
                           path, line_no, i, j, rows, cols);
        int one = 1;
        if (!pattern) {
            mtx_value v = classify_value(&tok[2], real);
            int shown = tok[2].len > 24 ? 24 : (int)tok[2].len;
            if (v == VALUE_NOT_A_NUMBER)
                return oc_fail(ctx, OC_ERR_INPUT, "%s: line %" PRId64 ": value '%.*s' is not %s", path, line_no, shown,
                               tok[2].s, real ? "a number" : "an integer");
            if (v == VALUE_OTHER && !opts->binarize)
                return oc_fail(ctx, OC_ERR_INPUT,
                               "%s: line %" PRId64 ": value %.*s at row %" PRId64 ", column %" PRId64
                               " (the file's %" PRId64 " %" PRId64 ") is not 0 or 1 (rows and columns count from 0; "
                               "--binarize, in Python binarize=True, reads any nonzero value as 1)",
                               path, line_no, shown, tok[2].s, i - 1, j - 1, i, j);
            one = v != VALUE_ZERO;
        }
        if (one) {
            c->row[c->count] = (uint32_t)(i - 1), c->col[c->count++] = (uint32_t)(j - 1);
            if (mirror && i != j) c->row[c->count] = (uint32_t)(j - 1), c->col[c->count++] = (uint32_t)(i - 1);
        }
    }
    if (seen != entries)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: the size line declares %" PRId64 " entries but the file has only %" PRId64, path, entries,
                       seen);
    return OC_OK;
}

static oc_status parse_mtx(oc_context *ctx, const char *path, oc_mapped_file *file, void *arg, oc_matrix **out)
{
    coords c = {0};
    oc_status st = parse_entries(ctx, path, file, arg, &c);
    if (st == OC_OK) st = oc_matrix_from_coords(ctx, c.rows, c.cols, path, c.row, c.col, c.count, out);
    free(c.row);
    free(c.col);
    return st;
}

oc_status oc_mtx_read(oc_context *ctx, const char *path, const oc_read_options *opts, oc_matrix **out)
{
    OC_CHECK(oc_mapped_read(ctx, path, parse_mtx, (void *)opts, out));
    return OC_OK;
}

oc_status oc_mtx_read_buffer(oc_context *ctx, const char *name, const void *data, size_t size,
                             const oc_read_options *opts, oc_matrix **out)
{
    oc_read_options defaults = OC_READ_OPTIONS_INIT;
    OC_CHECK(oc_buffer_read(ctx, name, data, size, parse_mtx, (void *)(opts ? opts : &defaults), out));
    return OC_OK;
}
