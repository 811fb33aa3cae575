/*
 * test_io_text.c - the .mtx and text readers: every value, line-ending and symmetry form they
 * take, every bad-input case (the status, and a message naming the file and the problem),
 * and the real data sets of tests/data read to their independently counted shape and ones.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "io_checks.h"
#include "io/io.h"
#include "matrix/matrix.h"
#include "outcore.h"

/* ---------------------------------------------------------------- .mtx */

static void test_mtx(void)
{
    oc_matrix *m = NULL;
    const char *p = write_text("pattern.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                                              "% a comment\n"
                                              "\n"
                                              "3 4 4\n"
                                              "1 1\n"
                                              "2 4\n"
                                              "3 2\n"
                                              "3 2\n"); /* duplicates are harmless */
    const unsigned char want[12] = {1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0};
    check_reads_as(p, 0, want, 3, 4);

    /* Values: 0 and 1 only (an explicit zero is no one), unless binarizing. */
    p = write_text("ones.mtx", "%%MatrixMarket matrix coordinate integer general\r\n"
                               "3 4 5\r\n1 1 1\r\n2 4 +01\r\n3 2 1\r\n3 3 0\r\n1 2 -000\r\n");
    check_reads_as(p, 0, want, 3, 4);
    p = write_text("ones_cr.mtx", "%%MatrixMarket matrix coordinate integer general\r"
                                  "3 4 5\r1 1 1\r2 4 +01\r3 2 1\r3 3 0\r1 2 -000\r");
    check_reads_as(p, 0, want, 3, 4);
    p = write_text("real01.mtx",
                   "%%MatrixMarket matrix coordinate real general\n3 4 4\n1 1 1.0\n2 4 1e0\n3 2 1\n3 3 0.0\n");
    check_reads_as(p, 0, want, 3, 4);
    oc_read_options binarize = OC_READ_OPTIONS_INIT;
    binarize.binarize = 1;
    p = write_text("integer.mtx", "%%MatrixMarket matrix coordinate integer general\r\n"
                                  "3 4 5\r\n1 1 5\r\n2 4 -1\r\n3 2 1\r\n3 3 0\r\n1 2 000\r\n");
    CHECK_FAILED(ctx, oc_matrix_open(ctx, p, 0, &m), OC_ERR_INPUT, p, "line 3: value 5 at row 0, column 0",
                 "--binarize");
    check_read_with(p, &binarize, want, 3, 4);
    p = write_text("real.mtx", "%%MatrixMarket matrix coordinate real general\n"
                               "3 4 4\n1 1 0.5\n2 4 1e-3\n3 2 -2\n3 3 0.0\n");
    CHECK_FAILED(ctx, oc_matrix_open(ctx, p, 0, &m), OC_ERR_INPUT, p, "line 3: value 0.5 at row 0, column 0",
                 "not 0 or 1");
    check_read_with(p, &binarize, want, 3, 4);
    p = write_text("skew.mtx", "%%MatrixMarket matrix coordinate integer skew-symmetric\n3 3 1\n3 1 1\n");
    CHECK_FAILED(ctx, oc_matrix_open(ctx, p, 0, &m), OC_ERR_INPUT, p, "skew-symmetric", "--binarize");
    const unsigned char skew[9] = {0, 0, 1, 0, 0, 0, 1, 0, 0};
    check_read_with(p, &binarize, skew, 3, 3);

    p = write_text("sym.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n1 1\n3 1\n3 2\n");
    const unsigned char sym[9] = {1, 0, 1, 0, 0, 1, 1, 1, 0};
    check_reads_as(p, 0, sym, 3, 3);

    static const struct {
        const char *text, *part1, *part2;
    } bad[] = {
        {"%%MatrixMarket tensor coordinate pattern general\n1 1 0\n", "not a MatrixMarket banner", "line 1"},
        {"MatrixMarket matrix coordinate pattern general\n1 1 0\n", "not a MatrixMarket banner", "line 1"},
        {"1 2\n3 4\n", "not a MatrixMarket banner", "line 1"},
        {"%%MatrixMarket matrix array integer general\n2 2\n1\n0\n1\n1\n", "format 'array'", "coordinate"},
        {"%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", "field 'complex'", "pattern"},
        {"%%MatrixMarket matrix coordinate pattern hermitian\n1 1 0\n", "symmetry 'hermitian'", "general"},
        {"%%MatrixMarket matrix coordinate pattern general\n3 4\n1 1\n", "line 2", "bad size line"},
        {"%%MatrixMarket matrix coordinate pattern general\n3 x 1\n1 1\n", "line 2", "bad size line"},
        {"%%MatrixMarket matrix coordinate pattern general\n% only comments\n", "no size line", ""},
        {"%%MatrixMarket matrix coordinate pattern general\n0 4 0\n", "0 rows", ""},
        {"%%MatrixMarket matrix coordinate pattern symmetric\n3 4 0\n", "must be square", ""},
        /* Found by fuzz_mtx: the column count's rounding to whole words overflowed first. */
        {"%%MatrixMarket matrix coordinate pattern general\n921 9223372036854775807 0\n", "921 x 9223372036854775807",
         "overflow 64-bit sizes"},
        {"%%MatrixMarket matrix coordinate pattern general\n%c\n3 4 3\n1 1\n2 2\n4 1\n", "line 6",
         "index (4, 1) is outside the 3 x 4 matrix"},
        {"%%MatrixMarket matrix coordinate pattern general\n3 4 2\n1 0\n", "line 3", "index (1, 0)"},
        {"%%MatrixMarket matrix coordinate pattern general\n3 4 3\n1 1\n2 2\n", "declares 3 entries", "only 2"},
        {"%%MatrixMarket matrix coordinate pattern general\n3 4 1\n1 1\n2 2\n", "line 4", "more entries than the 1"},
        {"%%MatrixMarket matrix coordinate pattern general\n3 4 1\n1 b\n", "line 3", "'b' is not an integer"},
        {"%%MatrixMarket matrix coordinate integer general\n3 4 1\n1 1 x\n", "line 3", "'x' is not an integer"},
        {"%%MatrixMarket matrix coordinate integer general\n3 4 1\n1 1 1.5\n", "line 3", "'1.5' is not an integer"},
        {"%%MatrixMarket matrix coordinate real general\n3 4 1\n1 1 nan\n", "line 3", "'nan' is not a number"},
        {"%%MatrixMarket matrix coordinate integer general\n3 4 1\n1 1\n", "line 3", "expected 3 fields"},
        {"%%MatrixMarket matrix coordinate pattern general\n3 4 1\n1 1 1\n", "line 3", "expected 2 fields"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; ++k) {
        char name[32];
        snprintf(name, sizeof name, "bad%zu.mtx", k);
        p = write_text(name, bad[k].text);
        CHECK_FAILED(ctx, oc_matrix_open(ctx, p, 0, &m), OC_ERR_INPUT, p, bad[k].part1, bad[k].part2);
    }
    p = write_text("empty.mtx", "");
    CHECK_FAILED(ctx, oc_matrix_open(ctx, p, 0, &m), OC_ERR_INPUT, p, "empty");
    CHECK(m == NULL);
}

/* ---------------------------------------------------------------- text */

static void test_text(void)
{
    const unsigned char want[12] = {1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0};
    static const char *const good[] = {
        "1 0 0 0\n0 0 0 1\n0 1 0 0\n",
        "# header comment\n\n1\t0 0 0 \n   \n0 0 0 1\r\n  # indented comment\n0 1 0 0",
        "1,0,0,0\n0, 0 ,0,1\n0,1,0,0\n\n",
        /* lines ended by a lone '\r' (as numpy.loadtxt reads them), mixed with "\r\n" */
        "1,0,0,0\r0,0,0,1\r\n\r0,1,0,0\r",
        "1 0 0 0\r# c\r0 0 0 1\r0 1 0 0",
        /* any decimal number equal to 0 or 1, as in a float .npy: np.savetxt writes 1.000000000000000000e+00 */
        "1.0 0.0 -0 0e5\n0 0.000 +0 1e0\n-0.0 1.000000000000000000e+00 .0 0.\n",
    };
    for (size_t k = 0; k < sizeof good / sizeof *good; ++k) {
        char name[32];
        snprintf(name, sizeof name, "good%zu.%s", k, k == 2 || k == 3 ? "csv" : "txt");
        check_reads_as(write_text(name, good[k]), 0, want, 3, 4);
    }

    static const struct {
        const char *name, *text, *part1, *part2;
    } bad[] = {
        {"ragged.txt", "1 0 0 0\n# c\n0 0 0 1\n0 1 0\n", "line 4 (row 2, counting from 0) has 3 values",
         "first row (line 1) has 4"},
        {"long.txt", "1 0\n0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1\n", "line 2 (row 1, counting from 0) has 19 values",
         "has 2"},
        {"two.txt", "1 0 0 0\n0 0 2 1\n", "line 2: '2' at row 1, column 2", "is not 0 or 1"},
        {"two_cr.txt", "1 0 0 0\r0 0 2 1\r", "line 2: '2' at row 1, column 2", "is not 0 or 1"},
        {"half.txt", "1 0.5\n", "'0.5' at row 0, column 1 is not 0 or 1", "--binarize"},
        {"commas.csv", "1,,0\n", "line 1", "empty value at column 1 (two commas in a row"},
        /* What a CSV writer adds, each named for what it is: a header line (pandas' to_csv
         * starts it with ',' for its unnamed index column), quotes, another separator. */
        {"word.csv", "a,b\n0,1\n", "line 1: 'a' at row 0, column 0 is not a number",
         "a header line must start with '#'"},
        {"names.csv", "c0,c1\n0,1,0\n", "line 2 (row 1, counting from 0) has 3 values but the first row (line 1) has 2",
         "its first value 'c0' is not a number: a header line must start with '#'"},
        {"pandas.csv", ",c0,c1\n0,1,0\n", "line 1 starts with ',': column 0 is empty",
         "a header line, as pandas' to_csv writes"},
        {"lead.csv", "1,0\n,1\n", "line 2 starts with ','", "first value comes before its first comma"},
        {"semicolon.csv", "1;0\n0;1\n", "'1;0' at row 0, column 0 is not a number",
         "separated by commas, spaces or tabs, not ';'"},
        {"pipe.txt", "0|1\n1|0\n", "'0|1' at row 0, column 0 is not a number", "not '|'"},
        {"quoted.csv", "1,0\n\"1\",0\n", "'\"1\"' at row 1, column 0 is not a number", "without quotes"},
        {"nan.txt", "1 nan\n", "'nan' at row 0, column 1 is NaN, neither 0 nor 1", "not even --binarize"},
        /* An index column: row numbers are no 0/1 data, and --binarize would read them as such. */
        {"index.csv", "0,1,0\n1,0,0\n2,1,1\n3,0,1\n", "'2' at row 2, column 0 is not 0 or 1",
         "the first column counts up the rows (0, 1, 2, ...): an index column"},
        {"ids.txt", "# c\n4 1\n 9 0\n12 1\n", "'4' at row 0, column 0 is not 0 or 1",
         "the first column counts up the rows (4, 9, 12, ...)"},
        {"unsorted.txt", "5 1\n3 0\n7 1\n", "'5' at row 0, column 0 is not 0 or 1",
         "an index column, is no data: remove it; else --binarize"},
        {"two_rows.txt", "0 1\n2 0\n", "'2' at row 1, column 0 is not 0 or 1", "else --binarize"},
        {"trailing.csv", "1,0,\n", "line 1 ends with ','", ""},
        {"comments.txt", "# nothing\n\n", "no matrix rows", ""},
        {"empty.csv", "", "empty", ""},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; ++k) {
        const char *p = write_text(bad[k].name, bad[k].text);
        oc_matrix *m = NULL;
        CHECK_FAILED(ctx, oc_matrix_open(ctx, p, 0, &m), OC_ERR_INPUT, p, bad[k].part1, bad[k].part2);
        CHECK(m == NULL);
        /* --binarize is named only for a number other than 0 and 1 that is no row number */
        const int numbers = (strstr(bad[k].part1, "is not 0 or 1") || strstr(bad[k].part2, "is not 0 or 1")) &&
                            !strstr(bad[k].part2, "counts up");
        CHECK_MSG(!strstr(oc_context_last_error(ctx), "reads any nonzero") == !numbers, "%s: %s", bad[k].name,
                  oc_context_last_error(ctx));
    }
    /* Binarizing reads any number, nonzero as 1; a word is still an error. */
    oc_read_options binarize = OC_READ_OPTIONS_INIT;
    binarize.binarize = 1;
    check_read_with(write_text("numbers.csv", "2.5,0,0,0\n0,0,0,-1\n0,1e3,0.0,0\n"), &binarize, want, 3, 4);
    oc_matrix *m = NULL;
    const char *p = write_text("word2.csv", "1,0\n0,x\n");
    CHECK_FAILED(ctx, oc_matrix_read(ctx, p, &binarize, &m), OC_ERR_INPUT, p,
                 "'x' at row 1, column 1 is not a number (rows and columns count from 0)");
    p = write_text("header2.csv", "c0,c1\n0,1\n");
    CHECK_FAILED(ctx, oc_matrix_read(ctx, p, &binarize, &m), OC_ERR_INPUT, p, "'c0' at row 0, column 0 is not a number",
                 "a header line must start with '#'");
    p = write_text("nan.csv", "1,0\n0,NaN\n");
    CHECK_FAILED(ctx, oc_matrix_read(ctx, p, &binarize, &m), OC_ERR_INPUT, p, "'NaN' at row 1, column 1 is NaN",
                 "not even --binarize");
}

/* The warnings a read sends (oc_context_set_warning_fn): how many, and the last. */
typedef struct warnings_seen {
    int count;
    char last[1024];
} warnings_seen;

static void on_warning(void *user, const char *message)
{
    warnings_seen *w = user;
    ++w->count;
    snprintf(w->last, sizeof w->last, "%s", message);
}

/* An index column read under binarize is read as asked, with one warning naming the file and
 * the column; 0/1 data, or a first column that does not count up every row, gives none. */
static void test_index_column_warning(void)
{
    warnings_seen seen = {0};
    oc_context_set_warning_fn(ctx, on_warning, &seen);
    oc_read_options binarize = OC_READ_OPTIONS_INIT;
    binarize.binarize = 1;
    const unsigned char index_read[12] = {0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0};
    const char *p = write_text("index.csv", "0,1,0,1\n1,0,1,1\n2,1,1,0\n");
    check_read_with(p, &binarize, index_read, 3, 4);
    CHECK_MSG(seen.count == 1 && strstr(seen.last, p) &&
                  strstr(seen.last, "the first column counts up the rows (0, 1, 2, ...)") &&
                  strstr(seen.last, "reads it as data") && !strchr(seen.last, '\n'),
              "%d warnings, the last '%s'", seen.count, seen.last);
    /* Ids, not row numbers, count up too. */
    check_read_with(write_text("ids.txt", "10 1\n20 0\n35 1\n"), &binarize, NULL, 3, 2);
    CHECK_MSG(seen.count == 2 && strstr(seen.last, "(10, 20, 35, ...)"), "%d: %s", seen.count, seen.last);
    /* No warning: 0/1 data, a first column that stops counting up, a single column, two rows,
     * the same file without binarize (refused instead). */
    const char *quiet[] = {"0,1\n1,0\n1,1\n", "0,1\n1,0\n2,1\n2,1\n", "0\n1\n2\n", "0,1\n1,0\n"};
    for (int k = 0; k < 4; ++k) {
        char name[32];
        snprintf(name, sizeof name, "quiet%d.csv", k);
        check_read_with(write_text(name, quiet[k]), &binarize, NULL, k == 1 ? 4 : k == 3 ? 2 : 3, k == 2 ? 1 : 2);
    }
    oc_matrix *m = NULL;
    CHECK(oc_matrix_read(ctx, p, NULL, &m) == OC_ERR_INPUT && !m);
    CHECK_MSG(seen.count == 2, "%d warnings, the last '%s'", seen.count, seen.last);
    oc_context_set_warning_fn(ctx, NULL, NULL);
}

/* ---------------------------------------------------------------- real data */

/* Opens path and checks its shape and its number of ones. */
static void check_shape_and_ones(const char *path, int64_t rows, int64_t cols, int64_t ones)
{
    oc_matrix *m = NULL;
    CHECK_MSG(oc_matrix_open(ctx, path, 0, &m) == OC_OK, "%s", oc_context_last_error(ctx));
    if (!m) return;
    CHECK_EQ_I64(oc_matrix_rows(m), rows);
    CHECK_EQ_I64(oc_matrix_cols(m), cols);
    int64_t *pops = malloc((size_t)oc_matrix_rows(m) * sizeof *pops), total = 0;
    CHECK(oc_matrix_row_popcounts(NULL, m, 1, pops) == OC_OK);
    for (int64_t i = 0; i < oc_matrix_rows(m); ++i) total += pops[i];
    CHECK_EQ_I64(total, ones);
    free(pops);
    oc_matrix_free(m);
}

static void test_real_data(void)
{
    char path[1024];
    if (!oc_test_data_path("aflp_markers.txt", path, sizeof path)) {
        CHECK_MSG(0, "tests/data/aflp_markers.txt cannot be read");
    } else {
        /* Count rows, columns and ones from the text independently of the reader. */
        size_t len;
        unsigned char *text = oc_test_read_file(path, &len);
        int64_t rows = 0, ones = 0, first_cols = 0, cols = 0, in_token = 0;
        for (size_t k = 0; text && k <= len; ++k) {
            int c = k < len ? text[k] : '\n';
            if (c == '1') ++ones;
            if (c == '0' || c == '1') {
                if (!in_token) ++cols;
                in_token = 1;
            } else {
                in_token = 0;
            }
            if (c == '\n' && cols) {
                if (!rows) first_cols = cols;
                ++rows;
                cols = 0;
            }
        }
        free(text);
        CHECK_EQ_I64(rows, 207);
        CHECK_EQ_I64(first_cols, 583);
        check_shape_and_ones(path, 207, 583, ones);
    }
    if (!oc_test_data_path("reuters_docterm.mtx", path, sizeof path)) {
        CHECK_MSG(0, "tests/data/reuters_docterm.mtx cannot be read");
    } else {
        check_shape_and_ones(path, 2145, 16626, 151676);
    }
}

/* From hostile files: a ragged file whose first row is long is refused for its short row
 * before the matrix is allocated from the first (a few MB asked for 125 GB); a text input
 * whose packed bits pass half the budget is refused, naming it; a NUL in a token is shown as
 * \x00, never cutting the message; a number of any length is read. */
static void test_hostile_text(void)
{
    oc_read_options opts = OC_READ_OPTIONS_INIT;
    const size_t wide = 1000000;
    char *text = malloc(2 * wide + 2 * wide + 1);
    if (!text) return;
    size_t at = 0;
    for (size_t k = 0; k < wide; ++k) text[at++] = '1', text[at++] = k + 1 < wide ? ' ' : '\n';
    for (size_t k = 0; k < wide; ++k) text[at++] = '0', text[at++] = '\n';
    oc_matrix *m = NULL;
    CHECK_FAILED(ctx, oc_text_read_buffer(ctx, "bomb.txt", text, at, &opts, &m), OC_ERR_INPUT,
                 "bomb.txt: line 2 (row 1, counting from 0) has 1 values but the first row (line 1) has 1000000");
    free(text);
    static const char rows[] = "1 0 1 1\n0 1 0 1\n1 1 1 1\n";
    opts.host_mem_bytes = 64; /* 3 rows of 4 columns: 3 x 64 bytes packed */
    CHECK_FAILED(ctx, oc_text_read_buffer(ctx, "r.txt", rows, sizeof rows - 1, &opts, &m), OC_ERR_INPUT,
                 "r.txt: its 3 rows of 4 columns take", "more than half the host memory budget of 64 bytes");
    opts.host_mem_bytes = 0;
    static const char nul[] = "1 0\n0 1\0\n";
    CHECK_FAILED(ctx, oc_text_read_buffer(ctx, "nul.txt", nul, sizeof nul - 1, &opts, &m), OC_ERR_INPUT,
                 "line 2: '1\\x00' at row 1, column 1 is not a number");
    static const char nul_mtx[] = "%%MatrixMarket matrix coordinate pattern general\0\n2 2 1\n1 1\n";
    CHECK_FAILED(ctx, oc_mtx_read_buffer(ctx, "nul.mtx", nul_mtx, sizeof nul_mtx - 1, &opts, &m), OC_ERR_INPUT,
                 "symmetry 'general\\x00' is not supported");
    char longer[256];
    snprintf(longer, sizeof longer, "%%%%MatrixMarket matrix coordinate real general\n2 2 1\n2 2 1.%070d\n", 0);
    CHECK(oc_mtx_read_buffer(ctx, "long.mtx", longer, strlen(longer), &opts, &m) == OC_OK && m &&
          oc_matrix_get(m, 1, 1));
    oc_matrix_free(m);
    m = NULL;
    opts.binarize = 1;
    snprintf(longer, sizeof longer, "0 2.%070d\n0 0\n", 0);
    CHECK(oc_text_read_buffer(ctx, "long.txt", longer, strlen(longer), &opts, &m) == OC_OK && m &&
          oc_matrix_get(m, 0, 1) && !oc_matrix_get(m, 0, 0));
    oc_matrix_free(m);
    m = NULL;
    static const char hex[] = "0x1 0\n0 1\n"; /* numpy's loadtxt refuses it */
    CHECK_FAILED(ctx, oc_text_read_buffer(ctx, "hex.txt", hex, sizeof hex - 1, &opts, &m), OC_ERR_INPUT,
                 "'0x1' at row 0, column 0 is not a number");
}

int main(void)
{
    if (!oc_test_tmp_create("oc_test_io_text")) return 1;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    test_mtx();
    test_text();
    test_hostile_text();
    test_index_column_warning();
    test_real_data();
    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
