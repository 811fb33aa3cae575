/*
 * test_matrix_contracts.c - the matrix calls of outcore.h do what their comments say, through
 * the public API alone:
 *  - oc_matrix_from_bits refuses a set padding bit, naming its own argument (cols), while
 *    oc_matrix_write_rows ignores the padding its fill leaves in the library's buffer;
 *  - oc_matrix_from_values reads a bool as its byte: 2 is refused without binarize, as
 *    oc_matrix_from_dense refuses it, and is a one with binarize; it tells an int8 or uint8
 *    value as the .npy reader does (signed; the packbits hint);
 *  - oc_matrix_peek leaves *rows and *cols untouched on failure;
 *  - a negative oc_read_options.host_mem_bytes is refused, as the gram and matmul budgets are;
 *  - packed, in oc_matrix_save and oc_write_options, is 0 or 1;
 *  - a shape oc_matrix_write_rows cannot write (its bytes past 64-bit sizes) is the caller's
 *    argument, OC_ERR_INVALID_ARGUMENT, and leaves no file;
 *  - oc_matrix_set_name refuses a name longer than 511 bytes and leaves the name as it was;
 *    the name and shape calls give "" and 0 for a NULL matrix.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "outcore.h"

static int contains(const char *s, const char *part) { return strstr(s, part) != NULL; }

static oc_context *ctx;

/* The counts row of m·mᵀ for a one-row m: its number of ones. */
static int32_t ones_of_row(const oc_matrix *m)
{
    int32_t c = -1;
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    opts.backend = OC_BACKEND_CPU;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_MEMORY;
    out.data = &c;
    CHECK_MSG(oc_gram(ctx, m, NULL, &opts, &out, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    return c;
}

static const char *write_text(const char *name, const char *text)
{
    const char *path = oc_test_tmp_path(name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        oc_test_fail(__FILE__, __LINE__, "cannot write %s", path);
        return path;
    }
    return path;
}

/* ---------------------------------------------------------------- packed padding */

/* Fills every byte of its rows with 0xFF: the padding past cols included. */
static int fill_all_ones(void *user, int64_t row0, int64_t nrows, unsigned char *bits, int64_t stride)
{
    (void)user, (void)row0;
    memset(bits, 0xFF, (size_t)(nrows * stride));
    return 0;
}

static void test_packed_padding(void)
{
    /* from_bits: bit 7 is past the 3 columns the call gives; its message names cols, the
     * argument, and the binding's spelling, not an option the call does not have. */
    unsigned char row[1] = {0xA1};
    oc_matrix *m = NULL;
    CHECK_FAILED(ctx, oc_matrix_from_bits(ctx, row, 1, 3, 1, OC_BITS_MSB_FIRST, &m), OC_ERR_INPUT,
                 "A: row 0 has bit 7 set", "cols 3", "the rows hold 3 columns");
    CHECK_MSG(!contains(oc_context_last_error(ctx), "but bits="), "%s", oc_context_last_error(ctx));
    CHECK(m == NULL);
    unsigned char lsb[1] = {0x08}; /* LSB first: bit 3 is column 3 */
    CHECK_FAILED(ctx, oc_matrix_from_bits(ctx, lsb, 1, 3, 1, OC_BITS_LSB_FIRST, &m), OC_ERR_INPUT,
                 "row 0 has bit 3 set", "cols 3");
    CHECK(m == NULL);
    /* The same byte with its padding clear is the row 1 0 1. */
    row[0] = 0xA0;
    CHECK(oc_matrix_from_bits(ctx, row, 1, 3, 1, OC_BITS_MSB_FIRST, &m) == OC_OK);
    CHECK_EQ_I64(ones_of_row(m), 2);
    oc_matrix_free(m);

    /* write_rows: the padding its fill sets is ignored, and a packed file gets zeros there, so
     * the file reads back as 3 columns (from_bits' check included). */
    for (int packed = 0; packed <= 1; ++packed) {
        oc_write_options o = OC_WRITE_OPTIONS_INIT;
        o.packed = packed;
        o.threads = 1;
        const char *path = oc_test_tmp_path(packed ? "pad_packed.npy" : "pad_bytes.npy");
        CHECK_MSG(oc_matrix_write_rows(ctx, path, 2, 3, fill_all_ones, NULL, &o) == OC_OK, "%s",
                  oc_context_last_error(ctx));
        oc_matrix *back = NULL;
        CHECK_MSG(oc_matrix_open(ctx, path, packed ? 3 : 0, &back) == OC_OK, "%s", oc_context_last_error(ctx));
        if (back) {
            CHECK_EQ_I64(oc_matrix_rows(back), 2);
            CHECK_EQ_I64(oc_matrix_cols(back), 3);
        }
        oc_matrix_free(back);
    }
}

/* ---------------------------------------------------------------- values named */

/* A refused value is named as its type holds it: 64-bit integers exactly past 2^53 (a
 * double names a neighbour), floats in the fewest digits that read back in their type. */
static void test_values_named_exactly(void)
{
    oc_matrix *m = NULL;
    const int64_t i64[3] = {0, ((int64_t)1 << 53) + 1, 1};
    CHECK_FAILED(ctx, oc_matrix_from_values(ctx, i64, 1, 3, sizeof i64, OC_MAP_INT64, 0, &m), OC_ERR_INPUT,
                 "value 9007199254740993 at row 0, column 1", "int64");
    const uint64_t u64[2] = {1, UINT64_MAX};
    CHECK_FAILED(ctx, oc_matrix_from_values(ctx, u64, 1, 2, sizeof u64, OC_MAP_UINT64, 0, &m), OC_ERR_INPUT,
                 "value 18446744073709551615 at row 0, column 1", "uint64");
    const float f32[2] = {0.1f, 1.0f};
    CHECK_FAILED(ctx, oc_matrix_from_values(ctx, f32, 1, 2, sizeof f32, OC_MAP_FLOAT32, 0, &m), OC_ERR_INPUT,
                 "value 0.1 at row 0, column 0", "float32");
    const double f64[2] = {1.0, 0.1 + 0.2};
    CHECK_FAILED(ctx, oc_matrix_from_values(ctx, f64, 1, 2, sizeof f64, OC_MAP_FLOAT64, 0, &m), OC_ERR_INPUT,
                 "value 0.30000000000000004 at row 0, column 1", "float64");
    CHECK(m == NULL);
}

/* An int8 or uint8 value is told as the .npy reader tells the same bytes: int8 signed, and a
 * uint8 row that looks like numpy.packbits output with the --bits it needs; one stray value
 * among 0/1 bytes gets no hint. */
static void test_byte_values_told_as_files(void)
{
    oc_matrix *m = NULL;
    const unsigned char packed[4] = {170, 85, 255, 3};
    CHECK_FAILED(ctx, oc_matrix_from_values(ctx, packed, 1, 4, 4, OC_MAP_UINT8, 0, &m), OC_ERR_INPUT,
                 "A: value 170 at row 0, column 0 is not 0 or 1", "numpy.packbits output: add --bits M",
                 "25 to 32 for these 4-byte rows");
    const unsigned char stray[4] = {1, 0, 7, 1};
    CHECK_FAILED(ctx, oc_matrix_from_values(ctx, stray, 1, 4, 4, OC_MAP_UINT8, 0, &m), OC_ERR_INPUT,
                 "value 7 at row 0, column 2");
    CHECK(strstr(oc_context_last_error(ctx), "packbits") == NULL);
    const signed char i8[3] = {0, 1, -1};
    CHECK_FAILED(ctx, oc_matrix_from_values(ctx, i8, 1, 3, 3, OC_MAP_INT8, 0, &m), OC_ERR_INPUT,
                 "A: value -1 at row 0, column 2 is not 0 or 1");
    CHECK(m == NULL);
}

/* ---------------------------------------------------------------- bool values */

static void test_bool_values(void)
{
    const unsigned char bytes[4] = {1, 2, 0, 0};
    oc_matrix *m = NULL;
    CHECK_FAILED(ctx, oc_matrix_from_values(ctx, bytes, 1, 4, 4, OC_MAP_BOOL, 0, &m), OC_ERR_INPUT,
                 "A: value 2 at row 0, column 1 is not 0 or 1", "bool", "binarize");
    CHECK(m == NULL);
    /* As oc_matrix_from_dense and OC_MAP_UINT8 refuse the same byte. */
    CHECK_FAILED(ctx, oc_matrix_from_dense(ctx, bytes, 1, 4, 4, &m), OC_ERR_INPUT, "value 2 at row 0, column 1");
    CHECK_FAILED(ctx, oc_matrix_from_values(ctx, bytes, 1, 4, 4, OC_MAP_UINT8, 0, &m), OC_ERR_INPUT,
                 "value 2 at row 0, column 1");
    const unsigned char high[4] = {0, 0, 1, 255};
    CHECK_FAILED(ctx, oc_matrix_from_values(ctx, high, 1, 4, 4, OC_MAP_BOOL, 0, &m), OC_ERR_INPUT,
                 "value 255 at row 0, column 3");
    CHECK(m == NULL);
    /* With binarize any nonzero byte is a one. */
    CHECK_MSG(oc_matrix_from_values(ctx, bytes, 1, 4, 4, OC_MAP_BOOL, 1, &m) == OC_OK, "%s",
              oc_context_last_error(ctx));
    CHECK_EQ_I64(ones_of_row(m), 2);
    oc_matrix_free(m);
    m = NULL;
    CHECK(oc_matrix_from_values(ctx, high, 1, 4, 4, OC_MAP_BOOL, 1, &m) == OC_OK);
    CHECK_EQ_I64(ones_of_row(m), 2);
    oc_matrix_free(m);
    m = NULL;
    /* 0 and 1 are read as they are without binarize. */
    const unsigned char clean[4] = {1, 0, 1, 1};
    CHECK(oc_matrix_from_values(ctx, clean, 1, 4, 4, OC_MAP_BOOL, 0, &m) == OC_OK);
    CHECK_EQ_I64(ones_of_row(m), 3);
    oc_matrix_free(m);
}

/* ---------------------------------------------------------------- read options, peek */

static void test_peek_out_parameters(const char *npy, const char *mtx)
{
    int64_t r = 7, c = 7;
    oc_read_options opts = OC_READ_OPTIONS_INIT;
    /* Failures before the file, in the file, and of the options: *rows, *cols as they were. */
    CHECK_FAILED(ctx, oc_matrix_peek(ctx, write_text("x.dat", "1\n"), NULL, &r, &c), OC_ERR_INPUT, "unknown file type");
    CHECK(r == 7 && c == 7);
    CHECK_FAILED(ctx, oc_matrix_peek(ctx, oc_test_tmp_path("missing.npy"), NULL, &r, &c), OC_ERR_INPUT, "missing.npy");
    CHECK(r == 7 && c == 7);
    CHECK_FAILED(ctx, oc_matrix_peek(ctx, write_text("bad.mtx", "%%MatrixMarket vector\n"), NULL, &r, &c), OC_ERR_INPUT,
                 "bad.mtx");
    CHECK(r == 7 && c == 7);
    opts.bits = -1;
    CHECK_FAILED(ctx, oc_matrix_peek(ctx, npy, &opts, &r, &c), OC_ERR_INVALID_ARGUMENT, "--bits -1");
    CHECK(r == 7 && c == 7);
    opts.bits = 0;
    opts.struct_size = 3;
    CHECK_FAILED(ctx, oc_matrix_peek(ctx, npy, &opts, &r, &c), OC_ERR_INVALID_ARGUMENT, "struct_size");
    CHECK(r == 7 && c == 7);
    /* And written on success. */
    CHECK(oc_matrix_peek(ctx, npy, NULL, &r, &c) == OC_OK);
    CHECK(r == 3 && c == 5);
    r = c = 7;
    CHECK(oc_matrix_peek(ctx, mtx, NULL, &r, &c) == OC_OK);
    CHECK(r == 2 && c == 4);
    r = c = 7;
    CHECK(oc_matrix_peek(ctx, write_text("t.txt", "0 1\n"), NULL, &r, &c) == OC_OK);
    CHECK(r == -1 && c == -1); /* text declares nothing */
}

static void test_negative_host_budget(const char *npy, const char *mtx)
{
    const char *txt = write_text("n.txt", "0 1\n1 0\n");
    const int64_t budgets[] = {-1, -100, INT64_MIN};
    const char *paths[] = {npy, mtx, txt};
    for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; ++b) {
        oc_read_options opts = OC_READ_OPTIONS_INIT;
        opts.host_mem_bytes = budgets[b];
        for (size_t p = 0; p < sizeof paths / sizeof paths[0]; ++p) {
            oc_matrix *m = NULL;
            CHECK_FAILED(ctx, oc_matrix_read(ctx, paths[p], &opts, &m), OC_ERR_INVALID_ARGUMENT,
                         "oc_read_options.host_mem_bytes", "positive size");
            CHECK(m == NULL);
            int64_t r = 7, c = 7;
            CHECK_FAILED(ctx, oc_matrix_peek(ctx, paths[p], &opts, &r, &c), OC_ERR_INVALID_ARGUMENT, "host_mem_bytes");
            CHECK(r == 7 && c == 7);
        }
    }
    /* 0 is the default budget; a positive one is taken. */
    oc_read_options opts = OC_READ_OPTIONS_INIT;
    for (int k = 0; k < 2; ++k, opts.host_mem_bytes = (int64_t)1 << 30)
        for (size_t p = 0; p < sizeof paths / sizeof paths[0]; ++p) {
            oc_matrix *m = NULL;
            CHECK_MSG(oc_matrix_read(ctx, paths[p], &opts, &m) == OC_OK, "%s: %s", paths[p],
                      oc_context_last_error(ctx));
            oc_matrix_free(m);
        }
}

/* ---------------------------------------------------------------- writers */

static void test_packed_flag(const oc_matrix *a)
{
    const int bad[] = {2, -1, 5};
    const char *path = oc_test_tmp_path("flag.npy");
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        char want[64];
        snprintf(want, sizeof want, "packed %d: expected 0 or 1", bad[k]);
        CHECK_FAILED(ctx, oc_matrix_save(ctx, a, path, bad[k]), OC_ERR_INVALID_ARGUMENT, want);
        CHECK(access(path, F_OK) != 0);
        oc_write_options o = OC_WRITE_OPTIONS_INIT;
        o.packed = bad[k];
        CHECK_FAILED(ctx, oc_matrix_write_rows(ctx, path, 2, 3, fill_all_ones, NULL, &o), OC_ERR_INVALID_ARGUMENT,
                     "oc_write_options", want);
        CHECK(access(path, F_OK) != 0);
    }
    CHECK(oc_matrix_save(ctx, a, path, 1) == OC_OK);
    CHECK(oc_matrix_save(ctx, a, path, 0) == OC_OK);
}

static void test_write_rows_sizes(void)
{
    const char *path = oc_test_tmp_path("huge.npy");
    const int entries = oc_test_dir_entries(oc_test_tmpdir);
    const int64_t big = (int64_t)1 << 50;
    oc_write_options packed = OC_WRITE_OPTIONS_INIT;
    packed.packed = 1;
    /* 2^100 bytes, 2^97 packed: a size no file can have is the caller's argument, as a row
     * too wide for 64-bit words is. */
    CHECK_FAILED(ctx, oc_matrix_write_rows(ctx, path, big, big, fill_all_ones, NULL, NULL), OC_ERR_INVALID_ARGUMENT,
                 "huge.npy", "overflows 64-bit sizes");
    CHECK_FAILED(ctx, oc_matrix_write_rows(ctx, path, big, big, fill_all_ones, NULL, &packed), OC_ERR_INVALID_ARGUMENT,
                 "overflows 64-bit sizes");
    CHECK_FAILED(ctx, oc_matrix_write_rows(ctx, path, INT64_MAX, INT64_MAX, fill_all_ones, NULL, NULL),
                 OC_ERR_INVALID_ARGUMENT, "huge.npy");
    CHECK(access(path, F_OK) != 0);
    CHECK_EQ_I64(oc_test_dir_entries(oc_test_tmpdir), entries); /* no temporary either */
}

/* ---------------------------------------------------------------- names */

static void test_names(oc_matrix *a)
{
    CHECK(oc_matrix_set_name(ctx, a, "left") == OC_OK);
    char name[1000];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0'; /* 999 bytes */
    CHECK_FAILED(ctx, oc_matrix_set_name(ctx, a, name), OC_ERR_INVALID_ARGUMENT, "the name is 999 bytes; at most 511");
    CHECK(strcmp(oc_matrix_name(a), "left") == 0);
    name[511] = '\0'; /* the longest a name may be */
    CHECK(oc_matrix_set_name(ctx, a, name) == OC_OK);
    CHECK(strcmp(oc_matrix_name(a), name) == 0);
    name[512 - 1] = 'n', name[512] = '\0';
    CHECK_FAILED(ctx, oc_matrix_set_name(ctx, a, name), OC_ERR_INVALID_ARGUMENT, "the name is 512 bytes");
    CHECK(strcmp(oc_matrix_name(NULL), "") == 0);
    CHECK(oc_matrix_rows(NULL) == 0 && oc_matrix_cols(NULL) == 0);
}

int main(void)
{
    if (!oc_test_tmp_create("oc_test_matrix_contracts")) return 1;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    /* Copied: oc_test_tmp_path's results are reused after eight calls. */
    static char npy[512], mtx[512];
    snprintf(npy, sizeof npy, "%s", oc_test_tmp_path("a.npy"));
    snprintf(mtx, sizeof mtx, "%s",
             write_text("a.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 4 2\n1 1\n2 4\n"));
    oc_matrix *a = oc_test_random01(ctx, 3, 5, 11);
    if (!a || oc_matrix_save(ctx, a, npy, 0) != OC_OK) return 1;
    test_packed_padding();
    test_values_named_exactly();
    test_byte_values_told_as_files();
    test_bool_values();
    test_peek_out_parameters(npy, mtx);
    test_negative_host_budget(npy, mtx);
    test_packed_flag(a);
    test_write_rows_sizes();
    test_names(a);
    oc_matrix_free(a);
    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
