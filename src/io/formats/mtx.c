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
#include "matrix/matrix.h"
#include "matrix/matrix_build.h"
#include "io/io.h"
#include "io/mapped_file.h"
#include "io/formats/mtx_tokens.h"
#include "core/threads.h"
#include "mem/host_budget.h"

#define PARALLEL_MIN_BYTES (1 << 20) /* below, starting threads costs more than it saves */

/* The row index of a sparse matrix (matrix.h's lists) takes 8 bytes a row whatever the file
 * holds: a size line may declare billions of rows in a few bytes. Checked against the host
 * budget, by the rule a resident input follows (host_budget.h), before anything is allocated. */
static oc_status check_row_index(oc_context *ctx, const char *path, int64_t rows, const oc_read_options *opts)
{
    int64_t index = (rows + 1) * 8, budget = oc_host_budget_resolve(opts->host_mem_bytes);
    if (oc_host_budget_keeps_input(index, budget)) return OC_OK;
    return oc_fail(ctx, OC_ERR_INPUT,
                   "%s: the size line declares %lld rows, whose row index alone takes %lld bytes, more than half "
                   "the host memory budget of %lld bytes (--host-mem; Python host_mem=)",
                   path, (long long)rows, (long long)index, (long long)budget);
}

/* What the banner and the size line say, and where the entries start. */
typedef struct mtx_head {
    int pattern, real, mirror;
    int64_t rows, cols, entries;
    const unsigned char *body; /* the line after the size line */
    int64_t line_no;           /* the size line's number, from 1 */
} mtx_head;

/* Reads and checks the banner and the size line, and the row index the declared rows take
 * against the host budget: everything known before an entry is read (oc_mtx_head stops here). */
static oc_status parse_head(oc_context *ctx, const char *path, const oc_mapped_file *file, const oc_read_options *opts,
                            mtx_head *h)
{
    const unsigned char *end = file->data + file->size, *pos = file->data;
    const char *line = NULL;
    size_t len = 0;
    token tok[MTX_MAX_TOKENS];
    int64_t line_no = 1;
    char shown[128];

    oc_next_line(&pos, end, &line, &len);
    int ntok = split(line, len, tok);
    if (ntok != 5 || !token_is(&tok[0], "%%MatrixMarket") || !token_is(&tok[1], "matrix"))
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: line 1 is not a MatrixMarket banner (expected '%%%%MatrixMarket matrix "
                       "coordinate pattern general' or similar)",
                       path);
    if (!token_is(&tok[2], "coordinate"))
        return oc_fail(ctx, OC_ERR_INPUT, "%s: MatrixMarket format '%s' is not supported; only 'coordinate' is read",
                       path, token_shown(&tok[2], shown, sizeof shown));
    int pattern = token_is(&tok[3], "pattern"), real = token_is(&tok[3], "real");
    if (!pattern && !real && !token_is(&tok[3], "integer"))
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: MatrixMarket field '%s' is not supported; pattern, integer and real "
                       "are read",
                       path, token_shown(&tok[3], shown, sizeof shown));
    int skew = token_is(&tok[4], "skew-symmetric"), mirror = skew || token_is(&tok[4], "symmetric");
    if (!mirror && !token_is(&tok[4], "general"))
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: MatrixMarket symmetry '%s' is not supported; general, symmetric and "
                       "skew-symmetric are read",
                       path, token_shown(&tok[4], shown, sizeof shown));

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
        !parse_int(&tok[2], &entries) || entries < 0) {
        oc_text_excerpt(shown, sizeof shown, line, len, 60);
        return oc_fail(ctx, OC_ERR_INPUT, "%s: line %" PRId64 ": bad size line '%s' (expected 'rows columns entries')",
                       path, line_no, shown);
    }
    if (mirror && rows != cols)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: line %" PRId64 ": a symmetric matrix must be square, not %" PRId64 " x %" PRId64, path,
                       line_no, rows, cols);
    if (skew && !opts->binarize)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: a skew-symmetric file mirrors each value v as -v, so its entries are not all 0 or 1: "
                       "--binarize (Python: binarize=True) reads every nonzero value as 1",
                       path);
    OC_CHECK(ctx, oc_matrix_check_dims(ctx, rows, cols, path));
    OC_CHECK(ctx, check_row_index(ctx, path, rows, opts));
    *h = (mtx_head){.pattern = pattern,
                    .real = real,
                    .mirror = mirror,
                    .rows = rows,
                    .cols = cols,
                    .entries = entries,
                    .body = pos,
                    .line_no = line_no};
    return OC_OK;
}

static oc_status parse_entries(oc_context *ctx, const char *path, oc_mapped_file *file, const oc_read_options *opts,
                               coords *c)
{
    const unsigned char *end = file->data + file->size, *pos;
    const char *line = NULL;
    size_t len = 0;
    token tok[MTX_MAX_TOKENS];
    char shown[128];
    mtx_head h;
    OC_CHECK(ctx, parse_head(ctx, path, file, opts, &h));
    int pattern = h.pattern, real = h.real, mirror = h.mirror, ntok;
    int64_t rows = h.rows, cols = h.cols, entries = h.entries, line_no = h.line_no;
    pos = h.body;
    /* An entry takes at least 4 bytes ("1 1\n"), so the file's size bounds what is allocated
     * whatever the size line declares; the arrays grow with the entries read. */
    int64_t most = (int64_t)(file->size / 4) + 1;
    c->most = (entries < most ? entries : most) * (mirror ? 2 : 1) + 1;
    c->rows = rows, c->cols = cols;

    /* Large files are parsed on every core first; a file that is not valid is parsed again
     * below, on one thread, for its exact message (mtx_parallel.c), and a cancel that stopped
     * the threads is said there, at its first line. Oversubscription would only slow this
     * down. */
    if ((size_t)(end - pos) >= PARALLEL_MIN_BYTES &&
        oc_mtx_parse_parallel(ctx, pos, (size_t)(end - pos), pattern, real, mirror, opts->binarize, entries,
                              oc_threads_resolve(0), c))
        return OC_OK;
    c->count = 0;

    int want = pattern ? 2 : 3;
    int64_t seen = 0, next_check = 0; /* checks at once: a cancel may have stopped the threads */
    while (oc_next_line(&pos, end, &line, &len)) {
        ++line_no;
        OC_CHECK(ctx, oc_read_cancel_point(ctx, path, pos - file->data, &next_check));
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
                return oc_fail(ctx, OC_ERR_INPUT, "%s: line %" PRId64 ": '%s' is not an integer index", path, line_no,
                               token_shown(&tok[f], shown, sizeof shown));
        if (i < 1 || i > rows || j < 1 || j > cols)
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: line %" PRId64 ": index (%" PRId64 ", %" PRId64 ") is outside the %" PRId64
                           " x %" PRId64 " matrix (the file's indices count from 1)",
                           path, line_no, i, j, rows, cols);
        int one = 1;
        if (!pattern) {
            mtx_value v = classify_value(&tok[2], real);
            if (v == VALUE_NOT_A_NUMBER)
                return oc_fail(ctx, OC_ERR_INPUT, "%s: line %" PRId64 ": value '%s' is not %s", path, line_no,
                               token_shown(&tok[2], shown, sizeof shown), real ? "a number" : "an integer");
            if (v == VALUE_OTHER && !opts->binarize)
                return oc_fail(ctx, OC_ERR_INPUT,
                               "%s: line %" PRId64 ": value %s at row %" PRId64 ", column %" PRId64
                               " (the file's %" PRId64 " %" PRId64 ") is not 0 or 1 (rows and columns count from 0; "
                               "--binarize, in Python binarize=True, reads any nonzero value as 1)",
                               path, line_no, token_shown(&tok[2], shown, sizeof shown), i - 1, j - 1, i, j);
            one = v != VALUE_ZERO;
        }
        if (one && (!coords_push(c, (uint32_t)(i - 1), (uint32_t)(j - 1)) ||
                    (mirror && i != j && !coords_push(c, (uint32_t)(j - 1), (uint32_t)(i - 1)))))
            return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate room for %lld entries", path,
                           (long long)c->count + 1);
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
    OC_CHECK(ctx, oc_mapped_read(ctx, path, parse_mtx, (void *)opts, out));
    return OC_OK;
}

oc_status oc_mtx_head(oc_context *ctx, const char *path, const oc_mapped_file *file, const oc_read_options *opts,
                      int64_t *rows, int64_t *cols)
{
    mtx_head h;
    OC_CHECK(ctx, parse_head(ctx, path, file, opts, &h));
    *rows = h.rows, *cols = h.cols;
    return OC_OK;
}

oc_status oc_mtx_read_buffer(oc_context *ctx, const char *name, const void *data, size_t size,
                             const oc_read_options *opts, oc_matrix **out)
{
    oc_read_options defaults = OC_READ_OPTIONS_INIT;
    OC_CHECK(ctx, oc_buffer_read(ctx, name, data, size, parse_mtx, (void *)(opts ? opts : &defaults), out));
    return OC_OK;
}
