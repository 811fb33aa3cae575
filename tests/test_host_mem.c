/*
 * test_host_mem.c - file-backed matrices (matrix.h, io/formats/npy_source.c) and the CPU backend's
 * panels: oc_matrix_load_rows must give, for every row range, exactly the rows a resident read
 * of the same file holds, from any number of threads at once; bad rows must fail with the
 * reader's message, a Fortran-order file's as a C-order one's; a Gram job on file-backed inputs must equal the in-memory job.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "matrix/matrix.h"
#include "harness.h"
#include "outcore.h"

static oc_context *ctx;

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A rows x cols matrix of density about 1/3. */
static oc_matrix *random_matrix(int64_t rows, int64_t cols, uint64_t seed)
{
    oc_matrix *m = NULL;
    CHECK(oc_matrix_alloc(ctx, rows, cols, "R", &m) == OC_OK);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
            if (splitmix64(&seed) % 3 == 0) oc_matrix_set(m, i, j);
    return m;
}

static oc_matrix *read_with_budget(const char *path, int64_t bits, int64_t budget)
{
    oc_read_options opts = OC_READ_OPTIONS_INIT;
    opts.bits = bits;
    opts.host_mem_bytes = budget;
    oc_matrix *m = NULL;
    oc_status st = oc_matrix_read(ctx, path, &opts, &m);
    CHECK_MSG(st == OC_OK, "%s: %s", path, oc_context_last_error(ctx));
    return m;
}

/* Rows [row0, row0 + rows) loaded from f equal r's, padding included (dst starts as 0xFF). */
static int rows_equal(const oc_matrix *f, const oc_matrix *r, int64_t row0, int64_t rows)
{
    size_t bytes = (size_t)(rows * f->words_per_row) * 8;
    uint64_t *dst = aligned_alloc(64, bytes + 64);
    memset(dst, 0xFF, bytes + 64);
    oc_status st = oc_matrix_load_rows(ctx, f, row0, rows, dst);
    int same = st == OC_OK && memcmp(dst, r->bits + row0 * r->words_per_row, bytes) == 0;
    /* Nothing past the rows asked for is written. */
    for (int k = 0; k < 64; ++k) same &= ((unsigned char *)dst)[bytes + k] == 0xFF;
    free(dst);
    return same;
}

/* Words [w0, w1) of rows [row0, row0 + rows) loaded from f, `gap` words apart beyond the
 * slice's, equal r's, and nothing between or past them is written (oc_matrix_load_cols). */
static int cols_equal(const oc_matrix *f, const oc_matrix *r, int64_t row0, int64_t rows, int64_t w0, int64_t w1,
                      int64_t gap)
{
    const int64_t width = w1 - w0, ld = width + gap;
    size_t bytes = (size_t)(rows * ld) * 8;
    uint64_t *dst = malloc(bytes + 64);
    memset(dst, 0xFF, bytes + 64);
    int same = oc_matrix_load_cols(ctx, f, row0, rows, w0, w1, dst, ld) == OC_OK;
    for (int64_t i = 0; same && i < rows; ++i) {
        same = memcmp(dst + i * ld, r->bits + (row0 + i) * r->words_per_row + w0, (size_t)width * 8) == 0;
        for (int64_t k = width; k < ld; ++k) same &= dst[i * ld + k] == UINT64_MAX;
    }
    for (int k = 0; k < 64; ++k) same &= ((unsigned char *)dst)[bytes + k] == 0xFF;
    free(dst);
    return same;
}

typedef struct thread_load {
    const oc_matrix *m;
    int64_t row0, rows;
    uint64_t *dst;
    oc_status st;
} thread_load;

static void *load_main(void *arg)
{
    thread_load *t = arg;
    t->st = oc_matrix_load_rows(ctx, t->m, t->row0, t->rows, t->dst + t->row0 * t->m->words_per_row);
    return NULL;
}

/* Both kinds of .npy (packbits rows, 0/1 bytes), cols not a multiple of 8 and rows wider than
 * the dense reader's bounce buffer holds ten of, so that ranges cross its chunks. */
static void test_load_rows(void)
{
    const int64_t rows = 37, cols = 100003;
    oc_matrix *ref = random_matrix(rows, cols, 11);
    const char *packed = oc_test_tmp_path("packed.npy"), *bytes = oc_test_tmp_path("bytes.npy");
    CHECK(oc_matrix_save(ctx, ref, packed, 1) == OC_OK);
    CHECK(oc_matrix_save(ctx, ref, bytes, 0) == OC_OK);
    for (int kind = 0; kind < 2; ++kind) {
        const char *path = kind ? bytes : packed;
        int64_t bits = kind ? 0 : cols;
        oc_matrix *resident = read_with_budget(path, bits, 0), *lazy = read_with_budget(path, bits, 4096);
        if (!resident || !lazy) return;
        CHECK(oc_matrix_resident(resident) && !oc_matrix_resident(lazy));
        CHECK(lazy->words_per_row == ref->words_per_row && lazy->rows == rows && lazy->cols == cols);
        CHECK(memcmp(resident->bits, ref->bits, (size_t)(rows * ref->words_per_row) * 8) == 0);
        /* Panel edges: first and last rows, single rows, ranges across 10-row chunks, all. */
        static const int64_t ranges[][2] = {{0, 1}, {36, 1}, {0, 37}, {9, 2}, {10, 10}, {5, 26}, {35, 2}, {17, 0}};
        for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; ++k) {
            CHECK_MSG(rows_equal(lazy, ref, ranges[k][0], ranges[k][1]), "%s rows %lld+%lld", path,
                      (long long)ranges[k][0], (long long)ranges[k][1]);
            CHECK(rows_equal(resident, ref, ranges[k][0], ranges[k][1]));
        }
        /* Slices of K (the CUDA engine's tiles split on K): first, middle, the one holding the
         * rows' last byte and its padding, whole rows. */
        const int64_t wpr = ref->words_per_row;
        const int64_t slices[][2] = {{0, 16}, {16, 800}, {wpr - 16, wpr}, {1, 2}, {0, wpr}};
        for (size_t k = 0; k < sizeof slices / sizeof slices[0]; ++k)
            for (size_t j = 0; j < sizeof ranges / sizeof ranges[0]; ++j) {
                CHECK_MSG(cols_equal(lazy, ref, ranges[j][0], ranges[j][1], slices[k][0], slices[k][1], (int64_t)j % 3),
                          "%s rows %lld+%lld words %lld-%lld", path, (long long)ranges[j][0], (long long)ranges[j][1],
                          (long long)slices[k][0], (long long)slices[k][1]);
                CHECK(cols_equal(resident, ref, ranges[j][0], ranges[j][1], slices[k][0], slices[k][1], 0));
            }
        uint64_t word[8];
        CHECK(oc_matrix_load_cols(ctx, lazy, 0, 1, 8, wpr + 8, word, wpr) == OC_ERR_INVALID_ARGUMENT);
        CHECK(oc_matrix_load_cols(ctx, lazy, 36, 2, 0, 1, word, 1) == OC_ERR_INVALID_ARGUMENT);
        CHECK(oc_matrix_load_cols(ctx, lazy, 0, 1, 0, 2, word, 1) == OC_ERR_INVALID_ARGUMENT);
        CHECK(oc_matrix_load_rows(ctx, lazy, 36, 2, word) == OC_ERR_INVALID_ARGUMENT);
        CHECK(oc_matrix_load_rows(ctx, lazy, -1, 1, word) == OC_ERR_INVALID_ARGUMENT);

        /* Several threads on disjoint ranges at once, and the parallel loader. */
        size_t all = (size_t)(rows * ref->words_per_row) * 8;
        uint64_t *dst = aligned_alloc(64, all);
        memset(dst, 0xFF, all);
        static const int64_t split[6] = {0, 7, 8, 20, 36, 37};
        thread_load t[5];
        pthread_t tid[5];
        for (int i = 0; i < 5; ++i) {
            t[i] = (thread_load){.m = lazy, .row0 = split[i], .rows = split[i + 1] - split[i], .dst = dst};
            pthread_create(&tid[i], NULL, load_main, &t[i]);
        }
        for (int i = 0; i < 5; ++i) {
            pthread_join(tid[i], NULL);
            CHECK(t[i].st == OC_OK);
        }
        CHECK(memcmp(dst, ref->bits, all) == 0);
        memset(dst, 0xFF, all);
        CHECK(oc_matrix_load_rows_parallel(ctx, lazy, 3, 30, dst, 4) == OC_OK);
        CHECK(memcmp(dst, ref->bits + 3 * ref->words_per_row, (size_t)(30 * ref->words_per_row) * 8) == 0);
        free(dst);

        /* Saving a file-backed matrix reads it through the same rows. */
        const char *again = oc_test_tmp_path("again.npy");
        CHECK(oc_matrix_save(ctx, lazy, again, kind == 0) == OC_OK);
        oc_matrix *back = read_with_budget(again, kind == 0 ? cols : 0, 0);
        CHECK(back && memcmp(back->bits, ref->bits, all) == 0);
        oc_matrix_free(back);

        /* Popcounts by panels. */
        int64_t want[37], got[37];
        CHECK(oc_matrix_row_popcounts(ctx, resident, 2, want) == OC_OK);
        CHECK(oc_matrix_row_popcounts(ctx, lazy, 3, got) == OC_OK);
        CHECK(memcmp(want, got, sizeof want) == 0);
        oc_matrix_free(resident);
        oc_matrix_free(lazy);
    }
    oc_matrix_free(ref);
}

/* The in-place spread of compact packbits rows, and the first row with a bit past cols. */
static void test_expand_packed_rows(void)
{
    const int64_t cols = 13, wpr = oc_bits_words_per_row(cols);
    uint64_t buf[4 * 8];
    unsigned char *b = (unsigned char *)buf;
    memset(buf, 0xEE, sizeof buf);
    const unsigned char rows[4][2] = {{0xA5, 0xF8}, {0x01, 0x0C}, {0xFF, 0x00}, {0x10, 0x0F}};
    memcpy(b, rows, sizeof rows);
    int64_t col = -1;
    CHECK_EQ_I64(oc_expand_packed_rows(buf, 4, cols, wpr, &col), 1); /* rows 1 and 3 have bits past 13 */
    CHECK_EQ_I64(col, 13);
    for (int i = 0; i < 4; ++i) {
        CHECK(b[i * wpr * 8] == rows[i][0]);
        CHECK(b[i * wpr * 8 + 1] == (rows[i][1] & 0xF8));
        for (int64_t k = 2; k < wpr * 8; ++k) CHECK(b[i * wpr * 8 + k] == 0);
    }
}

/* Writes rows x cols bytes as a uint8 .npy with numpy's 128-byte header, in C or Fortran
 * order as the bytes lie. */
static void save_u8(const char *path, const unsigned char *a, int64_t rows, int64_t cols, int fortran)
{
    FILE *f = fopen(path, "wb");
    char header[128];
    int len = snprintf(header, sizeof header, "{'descr': '|u1', 'fortran_order': %s, 'shape': (%lld, %lld), }",
                       fortran ? "True" : "False", (long long)rows, (long long)cols);
    memset(header + len, ' ', (size_t)(117 - len));
    header[117] = '\n';
    fwrite("\x93NUMPY\x01\x00\x76\x00", 1, 10, f);
    fwrite(header, 1, 118, f);
    fwrite(a, 1, (size_t)(rows * cols), f);
    fclose(f);
}

/* Values checked as they are read: the message of the whole-file reader, row and column. */
static void test_bad_rows(void)
{
    const int64_t rows = 40, cols = 1000;
    unsigned char *a = calloc((size_t)(rows * cols), 1);
    for (int64_t k = 0; k < rows * cols; k += 7) a[k] = 1;
    a[33 * cols + 456] = 3;
    /* The library writes no invalid values: the file is written here. */
    const char *path = oc_test_tmp_path("bad.npy");
    save_u8(path, a, rows, cols, 0);
    oc_matrix *lazy = read_with_budget(path, 0, 1024);
    if (!lazy) return;
    CHECK(!oc_matrix_resident(lazy));
    uint64_t *dst = aligned_alloc(64, (size_t)(rows * lazy->words_per_row) * 8);
    CHECK(oc_matrix_load_rows(ctx, lazy, 0, 33, dst) == OC_OK);
    CHECK(oc_matrix_load_rows(ctx, lazy, 30, 10, dst) == OC_ERR_INPUT);
    const char *msg = oc_context_last_error(ctx);
    CHECK_MSG(strstr(msg, "bad.npy: value 3 at row 33, column 456 is not 0 or 1") && !strchr(msg, '\n'), "%s", msg);
    /* A file cut short after it was opened: the read says so. */
    CHECK(truncate(path, 128 + 35 * cols) == 0);
    CHECK(oc_matrix_load_rows(ctx, lazy, 34, 3, dst) == OC_ERR_INPUT);
    msg = oc_context_last_error(ctx);
    CHECK_MSG(strstr(msg, "bad.npy: the file changed while being read (now 35128 bytes, expected 40128)"), "%s", msg);
    free(dst);
    free(a);
    oc_matrix_free(lazy);
}

/* A packed row with a bit past --bits: the slice of K holding the rows' last byte fails with
 * the reader's message, as a whole-row load does; the slices before it load. */
static void test_bad_packed_slice(void)
{
    const int64_t rows = 40, cols = 1001;
    oc_matrix *ref = random_matrix(rows, cols, 5);
    const char *path = oc_test_tmp_path("badbits.npy");
    CHECK(oc_matrix_save(ctx, ref, path, 1) == OC_OK);
    FILE *f = fopen(path, "r+b");
    unsigned char head[10];
    CHECK(f && fread(head, 1, 10, f) == 10);
    const long data = 10 + head[8] + 256L * head[9], width = (cols + 7) / 8;
    CHECK(fseek(f, data + 2 * width + width - 1, SEEK_SET) == 0);
    int last = fgetc(f);
    CHECK(fseek(f, data + 2 * width + width - 1, SEEK_SET) == 0);
    fputc(last | 1, f); /* column 1007 of row 2 */
    fclose(f);
    oc_matrix *lazy = read_with_budget(path, cols, 1024);
    if (!lazy) return;
    const int64_t wpr = lazy->words_per_row;
    uint64_t *dst = aligned_alloc(64, (size_t)(rows * wpr) * 8);
    CHECK(oc_matrix_load_cols(ctx, lazy, 0, rows, 0, 8, dst, 8) == OC_OK);
    CHECK(oc_matrix_load_cols(ctx, lazy, 0, rows, 8, wpr, dst, wpr) == OC_ERR_INPUT);
    const char *msg = oc_context_last_error(ctx);
    CHECK_MSG(strstr(msg, "badbits.npy: row 2 has bit 1007 set but --bits 1001") && !strchr(msg, '\n'), "%s", msg);
    CHECK(oc_matrix_load_rows(ctx, lazy, 0, rows, dst) == OC_ERR_INPUT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "row 2 has bit 1007 set"), "%s", oc_context_last_error(ctx));
    free(dst);
    oc_matrix_free(lazy);
    oc_matrix_free(ref);
}

/* Writes r as a Fortran-order uint8 0/1 .npy, with value `bad` at
 * (bad_at[k][0], bad_at[k][1]) for each of nbad places. */
static void save_fortran(const oc_matrix *r, const char *path, int bad, const int64_t (*bad_at)[2], int nbad)
{
    const int64_t rows = r->rows, cols = r->cols;
    unsigned char *a = malloc((size_t)(rows * cols));
    for (int64_t j = 0; j < cols; ++j)
        for (int64_t i = 0; i < rows; ++i) a[j * rows + i] = (unsigned char)oc_matrix_get(r, i, j);
    for (int k = 0; k < nbad; ++k) a[bad_at[k][1] * rows + bad_at[k][0]] = (unsigned char)bad;
    save_u8(path, a, rows, cols, 1);
    free(a);
}

/* A Fortran-order file read in panels: marked for loads split by words, every range and
 * slice of words equal to the resident read (gaps between rows untouched), the parallel
 * loader the same for every thread count; two bad values in different slices give, on
 * every split, the first in row order, the message of one load. */
static void test_fortran_file(void)
{
    const int64_t rows = 45, cols = 20011;
    oc_matrix *ref = random_matrix(rows, cols, 17);
    const char *path = oc_test_tmp_path("fortran.npy");
    save_fortran(ref, path, 0, NULL, 0);
    oc_matrix *resident = read_with_budget(path, 0, 0), *lazy = read_with_budget(path, 0, 4096);
    if (!resident || !lazy) return;
    CHECK(oc_matrix_resident(resident) && !oc_matrix_resident(lazy) && lazy->column_slices);
    const int64_t wpr = ref->words_per_row;
    const size_t all = (size_t)(rows * wpr) * 8;
    CHECK(memcmp(resident->bits, ref->bits, all) == 0);
    static const int64_t ranges[][2] = {{0, 1}, {44, 1}, {0, 45}, {3, 17}, {20, 25}};
    for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; ++k)
        CHECK_MSG(rows_equal(lazy, ref, ranges[k][0], ranges[k][1]), "rows %lld+%lld", (long long)ranges[k][0],
                  (long long)ranges[k][1]);
    const int64_t slices[][2] = {{0, 1}, {0, 16}, {5, 100}, {wpr - 3, wpr}, {wpr - 1, wpr}, {0, wpr}};
    for (size_t k = 0; k < sizeof slices / sizeof slices[0]; ++k)
        for (size_t j = 0; j < sizeof ranges / sizeof ranges[0]; ++j)
            CHECK_MSG(cols_equal(lazy, ref, ranges[j][0], ranges[j][1], slices[k][0], slices[k][1], (int64_t)k % 3),
                      "rows %lld+%lld words %lld-%lld", (long long)ranges[j][0], (long long)ranges[j][1],
                      (long long)slices[k][0], (long long)slices[k][1]);
    uint64_t *dst = aligned_alloc(64, all);
    for (int threads = 1; threads <= 5; threads += 2) {
        memset(dst, 0xFF, all);
        CHECK(oc_matrix_load_rows_parallel(ctx, lazy, 0, rows, dst, threads) == OC_OK);
        CHECK_MSG(memcmp(dst, ref->bits, all) == 0, "%d threads", threads);
        memset(dst, 0xFF, all);
        CHECK(oc_matrix_load_rows_parallel(ctx, lazy, 7, 30, dst, threads) == OC_OK);
        CHECK(memcmp(dst, ref->bits + 7 * wpr, (size_t)(30 * wpr) * 8) == 0);
    }
    /* Parts of one load, by words, put together: four, and more parts than words (those
     * past the last word load nothing). */
    const int parts[2] = {4, (int)wpr + 5};
    for (int k = 0; k < 2; ++k) {
        memset(dst, 0xFF, all);
        for (int part = 0; part < parts[k]; ++part)
            CHECK(oc_matrix_load_part(ctx, lazy, 0, rows, 0, wpr, dst, wpr, part, parts[k]) == OC_OK);
        CHECK_MSG(memcmp(dst, ref->bits, all) == 0, "%d parts", parts[k]);
    }
    oc_matrix_free(lazy);
    oc_matrix_free(resident);

    /* Row 30's bad value lies in the first slice of words, row 12's in the last: a load split
     * by words meets row 30's first, and reports row 12's. */
    const int64_t bad_at[2][2] = {{30, 3}, {12, cols - 2}};
    const char *bad_path = oc_test_tmp_path("fortran_bad.npy");
    save_fortran(ref, bad_path, 7, bad_at, 2);
    oc_matrix *bad = read_with_budget(bad_path, 0, 4096);
    if (!bad) return;
    for (int threads = 1; threads <= 4; ++threads)
        for (int run = 0; run < 3; ++run) {
            CHECK(oc_matrix_load_rows_parallel(ctx, bad, 0, rows, dst, threads) == OC_ERR_INPUT);
            const char *msg = oc_context_last_error(ctx);
            CHECK_MSG(strstr(msg, "fortran_bad.npy: value 7 at row 12, column 20009 is not 0 or 1") &&
                          !strchr(msg, '\n'),
                      "%d threads: %s", threads, msg);
        }
    CHECK(oc_matrix_load_rows(ctx, bad, 13, 32, dst) == OC_ERR_INPUT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "value 7 at row 30, column 3 is not 0 or 1"), "%s",
              oc_context_last_error(ctx));
    CHECK(oc_matrix_load_rows(ctx, bad, 0, 12, dst) == OC_OK);
    free(dst);
    oc_matrix_free(bad);
    oc_matrix_free(ref);
}

/* A Gram job on file-backed inputs in panels equals the in-memory job, A·Aᵀ and A·Bᵀ. */
static void test_gram_panels(void)
{
    oc_matrix *a = random_matrix(301, 700, 5), *b = random_matrix(157, 700, 6);
    const char *pa = oc_test_tmp_path("ga.npy"), *pb = oc_test_tmp_path("gb.npy");
    CHECK(oc_matrix_save(ctx, a, pa, 1) == OC_OK);
    CHECK(oc_matrix_save(ctx, b, pb, 0) == OC_OK);
    oc_matrix *la = read_with_budget(pa, 700, 16 << 10), *lb = read_with_budget(pb, 0, 16 << 10);
    if (!la || !lb) return;
    CHECK(!oc_matrix_resident(la) && !oc_matrix_resident(lb));
    /* pair 0: A·Aᵀ; 1: A·Bᵀ both file-backed; 2 and 3: one of them resident (a is 301 rows
     * of 128 bytes, b 157). */
    const oc_matrix *lazy_a[4] = {la, la, a, la}, *lazy_b[4] = {NULL, lb, lb, b};
    oc_gram_options small = OC_GRAM_OPTIONS_INIT;
    small.backend = OC_BACKEND_CPU;
    small.tile = 24;
    small.host_mem_bytes = 16 << 10;
    oc_output none = OC_OUTPUT_INIT;
    none.kind = OC_OUTPUT_DISCARD;
    CHECK(oc_gram(ctx, a, lb, &small, &none, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "host memory budget 16384 bytes is too small") &&
                  strstr(oc_context_last_error(ctx), "raise --host-mem"),
              "%s", oc_context_last_error(ctx));
    for (int pair = 0; pair < 4; ++pair)
        for (int metric = OC_METRIC_COUNTS; metric <= OC_METRIC_HAMMING; ++metric) {
            int64_t p = pair == 0 ? 301 : 157;
            size_t n = (size_t)(301 * p) * 4;
            void *want = malloc(n), *got = malloc(n);
            oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
            opts.backend = OC_BACKEND_CPU;
            opts.metric = (oc_metric)metric;
            opts.tile = 24;
            opts.threads = 3;
            oc_output out = OC_OUTPUT_INIT;
            out.data = want;
            CHECK(oc_gram(ctx, a, pair == 0 ? NULL : b, &opts, &out, NULL) == OC_OK);
            /* With a resident input the panels get what it leaves of the budget: a takes 38.5
             * KiB, b 19.6 KiB (under the half of 40 KiB that keeps it resident). */
            opts.host_mem_bytes = pair == 2 ? 48 << 10 : pair == 3 ? 40 << 10 : 16 << 10;
            out.data = got;
            oc_status st = oc_gram(ctx, lazy_a[pair], lazy_b[pair], &opts, &out, NULL);
            CHECK_MSG(st == OC_OK, "%s", oc_context_last_error(ctx));
            CHECK_MSG(memcmp(want, got, n) == 0, "metric %d pair %d", metric, pair);
            free(want);
            free(got);
        }
    oc_matrix_free(a);
    oc_matrix_free(b);
    oc_matrix_free(la);
    oc_matrix_free(lb);
}

int main(void)
{
    if (!oc_test_tmp_create("oc_host_mem")) return 1;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    test_expand_packed_rows();
    test_load_rows();
    test_bad_rows();
    test_bad_packed_slice();
    test_fortran_file();
    test_gram_panels();
    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
