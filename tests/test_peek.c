/*
 * test_peek.c - what a file declares, known before it is read: oc_matrix_peek over .npy
 * headers (packed too), .mtx size lines and text files, with the reader's own refusals; and
 * oc_gram_check_files, which refuses a dense result past 64-bit sizes or past the free space
 * of the output's folder before anything is read or created.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "harness.h"
#include "io/io.h"
#include "io/formats/npy_header.h"
#include "outcore.h"

static oc_context *ctx;

static const char *write_text(const char *name, const char *text)
{
    const char *path = oc_test_tmp_path(name);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) exit(1);
    return path;
}

/* A uint8 .npy of rows x width zeros. */
static const char *write_npy(const char *name, int64_t rows, int64_t width)
{
    const char *path = oc_test_tmp_path(name);
    unsigned char header[OC_NPY_HEADER_MAX];
    size_t h = oc_npy_header(header, OC_NPY_UINT8, rows, width, 0);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, header, h) != (ssize_t)h || ftruncate(fd, (off_t)h + rows * width) != 0) exit(1);
    close(fd);
    return path;
}

static void expect_peek(const char *path, const oc_read_options *opts, int64_t rows, int64_t cols)
{
    int64_t r = 0, c = 0;
    oc_status st = oc_matrix_peek(ctx, path, opts, &r, &c);
    CHECK_MSG(st == OC_OK, "%s: %s", path, oc_context_last_error(ctx));
    CHECK_EQ_I64(r, rows);
    CHECK_EQ_I64(c, cols);
}

/* The peek fails with OC_ERR_INPUT and the message holds want; *rows, *cols are left as
 * they were (outcore.h: out-parameters). */
static void expect_refused(const char *path, const oc_read_options *opts, const char *want)
{
    int64_t r = 7, c = 7;
    oc_status st = oc_matrix_peek(ctx, path, opts, &r, &c);
    const char *msg = oc_context_last_error(ctx);
    CHECK_EQ_I64(st, OC_ERR_INPUT);
    CHECK_MSG(strstr(msg, want) && strstr(msg, path), "%s: '%s' lacks '%s'", path, msg, want);
    CHECK(r == 7 && c == 7);
}

static void test_peek_shapes(void)
{
    expect_peek(write_npy("a.npy", 5, 3), NULL, 5, 3);
    oc_read_options packed = OC_READ_OPTIONS_INIT;
    packed.bits = 20;
    expect_peek(write_npy("p.npy", 4, 3), &packed, 4, 20);
    /* 67 bytes declaring 130 million rows: the size line's shape, nothing allocated for it. */
    const char *big = write_text("big.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
                                            "% a comment\n\n130000000 8 2\n1 1\n2 2\n");
    expect_peek(big, NULL, 130000000, 8);
    expect_peek(write_text("a.txt", "0 1\n1 0\n"), NULL, -1, -1); /* text declares nothing */
}

static void test_peek_refusals(void)
{
    /* The reader's checks before it allocates, with its messages. */
    oc_read_options small = OC_READ_OPTIONS_INIT;
    small.host_mem_bytes = 256 << 20;
    const char *big = write_text("big2.mtx", "%%MatrixMarket matrix coordinate pattern general\n130000000 8 2\n1 1\n");
    expect_refused(big, &small, "declares 130000000 rows");
    expect_refused(write_text("banner.mtx", "%%MatrixMarket vector\n"), NULL, "not a MatrixMarket banner");
    expect_refused(write_text("size.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 x 1\n"), NULL,
                   "bad size line");
    oc_read_options packed = OC_READ_OPTIONS_INIT;
    packed.bits = 40;
    expect_refused(write_npy("q.npy", 4, 3), &packed, "--bits 40 needs 5 bytes per row");
    const char *cut = write_npy("cut.npy", 1000, 10);
    if (truncate(cut, 200) != 0) exit(1);
    expect_refused(cut, NULL, "truncated .npy data");
    expect_refused(write_text("a.dat", "1\n"), NULL, "unknown file type");
    int64_t r, c;
    CHECK_EQ_I64(oc_matrix_peek(ctx, NULL, NULL, &r, &c), OC_ERR_INVALID_ARGUMENT);
}

static oc_status check_files(const char *a, const char *b, const oc_gram_options *opts, const char *out_path)
{
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_FILE;
    out.path = out_path;
    return oc_gram_check_files(ctx, a, b, NULL, opts, &out);
}

static void test_gram_check_files(void)
{
    struct statvfs vfs;
    if (statvfs(oc_test_tmpdir, &vfs) != 0 || vfs.f_blocks == 0) {
        oc_test_skip("the scratch folder's file system reports no size");
        return;
    }
    const char *big = write_text("huge.mtx", "%%MatrixMarket matrix coordinate pattern general\n130000000 8 2\n1 1\n");
    const char *out = oc_test_tmp_path("C.npy");
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    /* 67.6 PB of int32 counts: past any folder's free space. */
    CHECK_EQ_I64(check_files(big, NULL, &opts, out), OC_ERR_INPUT);
    const char *msg = oc_context_last_error(ctx);
    CHECK_MSG(strstr(msg, out) && strstr(msg, "the dense 130000000 x 130000000 int32 result needs 67.6 PB "
                                              "(67600000000000128 bytes), but its file system has"),
              "%s", msg);
    CHECK(!strstr(msg, " 0 bytes free"));
    CHECK(access(out, F_OK) != 0);
    /* A·Bᵀ of a small A and the huge B: the result's columns are B's rows. */
    const char *a = write_npy("a8.npy", 1000, 8);
    CHECK_EQ_I64(check_files(a, big, &opts, out), OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "1000 x 130000000 int32"));
    CHECK_EQ_I64(check_files(a, NULL, &opts, out), OC_OK);
    /* Past 64-bit sizes: refused whatever the free space (with a budget that keeps the index). */
    const char *huge =
        write_text("huge2.mtx", "%%MatrixMarket matrix coordinate pattern general\n1600000000 8 1\n1 1\n");
    oc_read_options roomy = OC_READ_OPTIONS_INIT;
    roomy.host_mem_bytes = (int64_t)64 << 30;
    oc_output file = OC_OUTPUT_INIT;
    file.kind = OC_OUTPUT_FILE;
    file.path = out;
    CHECK_EQ_I64(oc_gram_check_files(ctx, huge, NULL, &roomy, &opts, &file), OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "overflows 64-bit sizes"));
    /* Results not sized from the shape: top-k and threshold files, a result in memory, a
     * resumed file (its temporary holds its blocks already: the writer counts them). */
    opts.topk = 5;
    CHECK_EQ_I64(check_files(big, NULL, &opts, oc_test_tmp_path("T.npz")), OC_OK);
    opts.topk = 0;
    opts.use_threshold = 1;
    opts.threshold = 1;
    CHECK_EQ_I64(check_files(big, NULL, &opts, oc_test_tmp_path("P.npz")), OC_OK);
    opts.use_threshold = 0;
    oc_output memory = OC_OUTPUT_INIT;
    CHECK_EQ_I64(oc_gram_check_files(ctx, big, NULL, NULL, &opts, &memory), OC_OK);
    /* A resumable job with no journal yet starts afresh: checked as any other. */
    opts.resume = 1;
    CHECK_EQ_I64(check_files(big, NULL, &opts, out), OC_ERR_INPUT);
    char journal[4200];
    snprintf(journal, sizeof journal, "%s.outcore-journal", out);
    FILE *jf = fopen(journal, "w");
    CHECK(jf && fclose(jf) == 0);
    CHECK_EQ_I64(check_files(big, NULL, &opts, out), OC_OK);
    unlink(journal);
    opts.resume = 0;
    /* A text input declares nothing: only the job, once it is read, knows the shape. */
    CHECK_EQ_I64(check_files(write_text("t.txt", "0 1\n"), NULL, &opts, out), OC_OK);
    /* An input the peek refuses fails the check the same way. */
    CHECK_EQ_I64(check_files(oc_test_tmp_path("missing.npy"), NULL, &opts, out), OC_ERR_INPUT);
    CHECK(access(out, F_OK) != 0);
}

int main(void)
{
    if (!oc_test_tmp_create("oc_test_peek")) return 1;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    test_peek_shapes();
    test_peek_refusals();
    test_gram_check_files();
    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
