/*
 * test_pack.c - the byte packers (matrix/pack_bytes.h) and the parallel row packer
 * (matrix/matrix_build.h).
 *
 * Every variant this CPU runs is compared with the reference byte loop: output words and
 * return value, on widths around every vector step (tails of every length), with and
 * without binarize, with a bad byte at every position class (first byte, inside a vector,
 * last byte of a vector, the tail, the last column) and values 2, 0x80 and 0xFF. The
 * parallel packer is compared with a row-by-row reference at row counts that no thread
 * count divides, with bad values in several rows (the first must be reported).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "matrix/matrix.h"
#include "matrix/matrix_build.h"
#include "matrix/pack_bytes.h"
#include "core/threads.h"
#include "engine/sink.h"
#include "harness.h"
#include "io/io.h"
#include "io/formats/npy_header.h"

static void fill01(unsigned char *p, int64_t n, uint64_t *seed)
{
    for (int64_t i = 0; i < n; ++i) p[i] = (unsigned char)(oc_test_rand(seed) & 1);
}

/* Runs variant fn and the reference on one row; 0xA5 fills dst first to show that every word
 * is written. */
static void compare_row(oc_pack_bytes_fn fn, const char *name, const unsigned char *src, int64_t cols, int binarize)
{
    int64_t words = oc_bits_words_per_row(cols);
    uint64_t *want = malloc((size_t)words * 8), *got = malloc((size_t)words * 8);
    memset(want, 0xA5, (size_t)words * 8);
    memset(got, 0xA5, (size_t)words * 8);
    int64_t r_want = oc_pack_bytes_get(OC_PACK_BYTES_REF)(src, cols, want, words, binarize);
    int64_t r_got = fn(src, cols, got, words, binarize);
    CHECK_MSG(r_want == r_got, "%s cols %lld binarize %d: returned %lld, reference %lld", name, (long long)cols,
              binarize, (long long)r_got, (long long)r_want);
    if (r_want < 0)
        CHECK_MSG(memcmp(want, got, (size_t)words * 8) == 0, "%s cols %lld binarize %d: words differ", name,
                  (long long)cols, binarize);
    free(want);
    free(got);
}

/* The reference against the definition: bit j of the row is src[j] (a spec check of ref). */
static void test_reference_layout(void)
{
    uint64_t seed = 7;
    unsigned char src[200];
    fill01(src, 200, &seed);
    uint64_t words[8];
    CHECK_EQ_I64(oc_pack_bytes_get(OC_PACK_BYTES_REF)(src, 200, words, 8, 0), -1);
    const unsigned char *bytes = (const unsigned char *)words;
    for (int j = 0; j < 512; ++j) {
        int bit = (bytes[j / 8] >> (7 - j % 8)) & 1;
        CHECK_EQ_I64(bit, j < 200 ? src[j] : 0);
    }
}

static void test_variants(void)
{
    enum { MAX = 700 };
    unsigned char src[MAX];
    uint64_t seed = 12345;
    for (int v = 0; v < OC_PACK_BYTES_VARIANTS; ++v) {
        oc_pack_bytes_fn fn = oc_pack_bytes_get((oc_pack_bytes_variant)v);
        const char *name = oc_pack_bytes_name((oc_pack_bytes_variant)v);
        if (!fn) {
            printf("pack variant %s: not run on this CPU\n", name);
            continue;
        }
        for (int64_t cols = 1; cols <= MAX; cols += cols < 80 ? 1 : 37) {
            fill01(src, cols, &seed);
            compare_row(fn, name, src, cols, 0);
            compare_row(fn, name, src, cols, 1);
            /* Dense bytes for binarize: any value. */
            for (int64_t j = 0; j < cols; ++j)
                src[j] = (unsigned char)(oc_test_rand(&seed) % 5 == 0 ? oc_test_rand(&seed) : 0);
            compare_row(fn, name, src, cols, 1);
            /* A bad byte at each position class, alone and before a second one. */
            int64_t where[] = {0, 1, 7, 8, 15, 16, 31, 32, 63, cols / 2, cols - 2, cols - 1};
            unsigned char values[] = {2, 0x80, 0xFF, 0xFE};
            for (size_t w = 0; w < sizeof where / sizeof *where; ++w) {
                if (where[w] < 0 || where[w] >= cols) continue;
                for (size_t k = 0; k < sizeof values; ++k) {
                    fill01(src, cols, &seed);
                    src[where[w]] = values[k];
                    if (where[w] + 3 < cols) src[cols - 1] = 3;
                    compare_row(fn, name, src, cols, 0);
                    int64_t words = oc_bits_words_per_row(cols);
                    uint64_t *dst = malloc((size_t)words * 8);
                    CHECK_EQ_I64(fn(src, cols, dst, words, 0), where[w]);
                    CHECK_EQ_I64(fn(src, cols, dst, words, 1), -1);
                    free(dst);
                }
            }
        }
    }
}

/* Row by row with the reference: what the parallel packer must produce. */
static int64_t reference_rows(const unsigned char *src, int64_t rows, int64_t cols, int64_t stride, int packed,
                              uint64_t *dst, int64_t words, int64_t *col)
{
    for (int64_t i = 0; i < rows; ++i) {
        int64_t bad = packed ? oc_pack_bits_row(src + i * stride, cols, OC_BITS_MSB_FIRST, dst + i * words, words)
                             : oc_pack_bytes_get(OC_PACK_BYTES_REF)(src + i * stride, cols, dst + i * words, words, 0);
        if (bad >= 0) {
            *col = bad;
            return i;
        }
    }
    return -1;
}

static void test_parallel(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    uint64_t seed = 99;
    /* Rows wide enough that one task holds few of them: OC_PACK_TASK_BYTES of 4 MB and
     * rows of 40 KB make tasks of 104 rows, so 1001 rows is 10 tasks, the last one short. */
    /* In column-major order (a Fortran-order .npy) the same bytes are packed in bands of
     * columns: 70001 rows of 130 and 600001 rows of 20 packbits bytes are columns taller than
     * 8 tiles, cut into bands of one word. */
    const int64_t cases[][3] = {{1001, 40009, 0},    {1001, 40009 * 8 - 5, 1}, {7, 13, 0},
                                {333, 65536 * 8, 1}, {70001, 130, 0},          {600001, 157, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c) {
        int64_t rows = cases[c][0], cols = cases[c][1], packed = cases[c][2];
        int64_t width = packed ? (cols + 7) / 8 : cols, stride = width + 3;
        unsigned char *src = malloc((size_t)(rows * stride));
        for (int64_t i = 0; i < rows * stride; ++i)
            src[i] = packed ? (unsigned char)oc_test_rand(&seed) : (unsigned char)(oc_test_rand(&seed) & 1);
        if (packed && cols % 8)
            for (int64_t i = 0; i < rows; ++i) src[i * stride + width - 1] &= (unsigned char)(0xFF00u >> (cols % 8));
        for (int pass = 0; pass < 2; ++pass) {
            if (pass == 1) {
                /* Bad values in a late row, then an earlier one in another task. */
                if (packed && cols % 8 == 0) break;
                int64_t late = rows - 2, early = rows / 3;
                if (packed) {
                    src[late * stride + width - 1] |= 1;
                    src[early * stride + width - 1] |= 1;
                } else {
                    src[late * stride + 5] = 9;
                    src[early * stride + cols - 1] = 2;
                }
            }
            int64_t words = oc_bits_words_per_row(cols), want_col = -1;
            uint64_t *want = calloc((size_t)(rows * words), 8);
            int64_t want_row = reference_rows(src, rows, cols, stride, (int)packed, want, words, &want_col);
            for (int threads = 1; threads <= 3; ++threads) {
                oc_matrix *m = NULL;
                CHECK(oc_matrix_alloc_uninit(ctx, rows, cols, "t", &m) == OC_OK);
                memset(m->bits, 0x5A, (size_t)(rows * words * 8));
                oc_pack_source s = {.data = src,
                                    .stride = stride,
                                    .packed = (int)packed,
                                    .order = OC_BITS_MSB_FIRST,
                                    .kind = OC_DENSE_BYTES};
                int64_t bad = -2, col = -2;
                CHECK(oc_pack_rows_parallel(ctx, m, &s, threads, &bad, &col) == OC_OK);
                CHECK_EQ_I64(bad, want_row);
                if (want_row >= 0) CHECK_EQ_I64(col, want_col);
                else CHECK(memcmp(m->bits, want, (size_t)(rows * words * 8)) == 0);
                /* The same bytes column after column: the same bits, the same first bad value. */
                const int64_t col_stride = rows + 5;
                unsigned char *t = malloc((size_t)(width * col_stride));
                for (int64_t i = 0; i < rows; ++i)
                    for (int64_t j = 0; j < width; ++j) t[j * col_stride + i] = src[i * stride + j];
                memset(m->bits, 0x5A, (size_t)(rows * words * 8));
                s.data = t;
                s.stride = col_stride;
                s.column_major = 1;
                bad = col = -2;
                CHECK(oc_pack_rows_parallel(ctx, m, &s, threads, &bad, &col) == OC_OK);
                CHECK_EQ_I64(bad, want_row);
                if (want_row >= 0) CHECK_EQ_I64(col, want_col);
                else CHECK(memcmp(m->bits, want, (size_t)(rows * words * 8)) == 0);
                free(t);
                oc_matrix_free(m);
            }
            free(want);
        }
        free(src);
    }
    oc_context_free(ctx);
}

static void write_npy(const char *path, int64_t rows, int64_t width, const unsigned char *data)
{
    unsigned char header[OC_NPY_HEADER_MAX];
    size_t h = oc_npy_header(header, OC_NPY_UINT8, rows, width, 0);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(header, 1, h, f) == h);
    CHECK(fwrite(data, 1, (size_t)(rows * width), f) == (size_t)(rows * width));
    CHECK(fclose(f) == 0);
}

/* The .npy reader packs row blocks on all threads: the same bits as the row-by-row
 * reference, and the first bad row in the file named whatever block met it first. 1001 rows
 * of 40 KB are 10 blocks, the last one short, on any thread count. */
static void test_npy_reader(oc_context *ctx)
{
    const int64_t rows = 1001, width = 40009, cols = width * 8 - 3;
    unsigned char *data = malloc((size_t)(rows * width));
    uint64_t seed = 5;
    for (int64_t i = 0; i < rows * width; ++i) data[i] = (unsigned char)oc_test_rand(&seed);
    for (int64_t i = 0; i < rows; ++i) data[i * width + width - 1] &= 0xF8;
    const char *path = oc_test_tmp_path("packed.npy");
    write_npy(path, rows, width, data);
    int64_t words = oc_bits_words_per_row(cols), col = -1;
    uint64_t *want = malloc((size_t)(rows * words * 8));
    CHECK_EQ_I64(reference_rows(data, rows, cols, width, 1, want, words, &col), -1);
    oc_matrix *m = NULL;
    CHECK(oc_matrix_open(ctx, path, cols, &m) == OC_OK);
    if (m) CHECK(memcmp(m->bits, want, (size_t)(rows * words * 8)) == 0);
    oc_matrix_free(m);
    /* Bits past --bits in rows 950 and 420: row 420 is named. */
    data[950 * width + width - 1] |= 1;
    data[420 * width + width - 1] |= 2;
    write_npy(path, rows, width, data);
    m = NULL;
    CHECK(oc_matrix_open(ctx, path, cols, &m) == OC_ERR_INPUT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "row 420 has bit 320070 set") != NULL, "message: %s",
              oc_context_last_error(ctx));
    /* The same bytes as a uint8 0/1 matrix: the first byte above 1 in file order. */
    for (int64_t i = 0; i < rows * width; ++i) data[i] &= 1;
    data[977 * width + 3] = 7;
    data[333 * width + width - 1] = 2;
    write_npy(path, rows, width, data);
    CHECK(oc_matrix_open(ctx, path, 0, &m) == OC_ERR_INPUT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "value 2 at row 333, column 40008") != NULL, "message: %s",
              oc_context_last_error(ctx));
    unlink(path);
    free(data);
    free(want);
}

/* The dense writer: header and every byte as written through a sink, in the test's scratch
 * directory and, where /dev/shm is a memory file system, there too with an output large
 * enough to be pre-faulted (npy_out.c), so both ways of sizing the file are checked. */
static int on_tmpfs(const char *dir)
{
    struct statfs fs;
    return statfs(dir, &fs) == 0 && fs.f_type == 0x01021994;
}

static void check_writer_in(oc_context *ctx, const char *dir)
{
    const int64_t n = 4099, p = 4111; /* 67.4 MB of int32: above the pre-fault threshold */
    char path[512];
    snprintf(path, sizeof path, "%s/oc_test_pack_out_%d.npy", dir, (int)getpid());
    oc_npy_out *w = NULL;
    void *data = NULL;
    CHECK(oc_npy_out_create(ctx, path, OC_DTYPE_INT32, n, p, &w, &data) == OC_OK);
    if (!w) return;
    /* Pre-faulted exactly where the file system is memory (the output is above 64 MB). */
    CHECK_EQ_I64(oc_npy_out_prefaulted(w), on_tmpfs(dir));
    int32_t *block = malloc((size_t)(p * 64 * 4));
    oc_dense_sink sink = {.base = data, .ld = p, .elem_size = 4, .populate = !oc_npy_out_prefaulted(w)};
    for (int64_t i0 = 0; i0 < n; i0 += 64) {
        int64_t nr = n - i0 < 64 ? n - i0 : 64;
        for (int64_t k = 0; k < nr * p; ++k) block[k] = (int32_t)((i0 * p + k) * 2654435761u);
        oc_dense_sink_put(&sink, i0, 0, nr, p, block, p);
    }
    CHECK(oc_npy_out_commit(ctx, w) == OC_OK);
    size_t len = 0;
    unsigned char *got = oc_test_read_file(path, &len);
    unsigned char header[OC_NPY_HEADER_MAX];
    size_t h = oc_npy_header(header, OC_DTYPE_INT32, n, p, 0);
    CHECK_EQ_I64(len, h + (size_t)(n * p * 4));
    if (got && len == h + (size_t)(n * p * 4)) {
        CHECK(memcmp(got, header, h) == 0);
        int64_t wrong = 0;
        for (int64_t k = 0; k < n * p; ++k) {
            int32_t v;
            memcpy(&v, got + h + 4 * k, 4);
            wrong += v != (int32_t)(k * 2654435761u);
        }
        CHECK_EQ_I64(wrong, 0);
    }
    free(got);
    free(block);
    unlink(path);
}

static void test_writer(oc_context *ctx)
{
    check_writer_in(ctx, oc_test_tmpdir);
    if (on_tmpfs("/dev/shm") && access("/dev/shm", W_OK) == 0) {
        check_writer_in(ctx, "/dev/shm");
    } else printf("no writable tmpfs at /dev/shm: the pre-faulted writer is not run\n");
}

int main(void)
{
    test_reference_layout();
    test_variants();
    test_parallel();
    if (!oc_test_tmp_create("oc_test_pack")) return 1;
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    test_npy_reader(ctx);
    test_writer(ctx);
    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
