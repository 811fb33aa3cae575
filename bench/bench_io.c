/*
 * bench_io.c - the host side of a job at its physical limits: reading packed and bool .npy
 * into a matrix, and writing a dense .npy, each beside the memcpy rate of the same bytes
 * measured in the same run.
 *
 * Usage: bench_io DIR [--rows N] [--cols M] [--out-rows R] [--runs K] [--keep 1] [--packed-only 1]
 * It writes DIR/bench_io_packed.npy (numpy.packbits rows of M bits), DIR/bench_io_bool.npy
 * (N x M uint8 0/1) and the dense output DIR/bench_io_out.npy (int32, R x R), times each
 * step K times (the best is printed; the page cache is warm after the first, which is the
 * case the targets name: files in /dev/shm), checks the two reads against each other, and
 * removes its files (the inputs stay with --keep 1, for bench/bench_io.sh's cat references).
 * The memcpy column is one thread's memcpy of the same bytes into memory already faulted in.
 * --packed-only 1 times the packed read alone, for sizes whose 0/1 bytes would not fit.
 *
 * Rows: | case | bytes | best s | GB/s | memcpy GB/s | ratio |
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "matrix/matrix.h"
#include "core/threads.h"
#include "engine/sink.h"
#include "io/io.h"
#include "io/formats/npy_header.h"

static void die(oc_context *ctx, const char *what)
{
    fprintf(stderr, "bench_io: %s: %s\n", what, ctx ? oc_context_last_error(ctx) : "");
    exit(1);
}

static void write_file(const char *path, int dtype, int64_t rows, int64_t cols, const unsigned char *data)
{
    unsigned char header[OC_NPY_HEADER_MAX];
    size_t h = oc_npy_header(header, dtype, rows, cols, 0);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(header, 1, h, f) != h || fwrite(data, 1, (size_t)(rows * cols), f) != (size_t)(rows * cols) ||
        fclose(f) != 0) {
        fprintf(stderr, "bench_io: cannot write %s\n", path);
        exit(1);
    }
}

/* The rate of one thread's memcpy of bytes (what "the same bytes" cost in memory alone),
 * into a destination already faulted in, best of runs. */
static double memcpy_seconds(const unsigned char *src, int64_t bytes, int runs)
{
    unsigned char *dst = malloc((size_t)bytes);
    memset(dst, 1, (size_t)bytes);
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        double t = oc_now();
        memcpy(dst, src, (size_t)bytes);
        t = oc_now() - t;
        if (t < best) best = t;
    }
    if (dst[bytes / 2] != src[bytes / 2]) abort();
    free(dst);
    return best;
}

static void row(const char *name, int64_t bytes, double s, double ref_s)
{
    printf("| %-28s | %12" PRId64 " | %8.4f | %7.2f | %7.2f | %5.2f |\n", name, bytes, s, bytes / s / 1e9,
           bytes / ref_s / 1e9, ref_s / s);
}

static double read_seconds(oc_context *ctx, const char *path, int64_t bits, int runs, oc_matrix **keep)
{
    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
        oc_matrix *m = NULL;
        double t = oc_now();
        if (oc_matrix_open(ctx, path, bits, &m) != OC_OK) die(ctx, path);
        t = oc_now() - t;
        if (t < best) best = t;
        if (r + 1 < runs) oc_matrix_free(m);
        else *keep = m;
    }
    return best;
}

/* The sinks' part of a dense job: row blocks copied from staging into the output. */
typedef struct fill_job {
    oc_dense_sink sink;
    const int32_t *block;
    int64_t block_rows, n;
} fill_job;

static oc_status fill_task(void *arg, int64_t task, int worker)
{
    (void)worker;
    const fill_job *job = arg;
    int64_t i0 = task * job->block_rows, nr = job->n - i0 < job->block_rows ? job->n - i0 : job->block_rows;
    oc_dense_sink_put(&job->sink, i0, 0, nr, job->n, job->block, job->n);
    return OC_OK;
}

/* --packed-only: the seed input (100000 x 200000 bits, 2.5 GB) without its 20 GB of
 * bytes: random packbits rows written directly, read back, and compared with what was
 * written. Returns the exit status. */
static int packed_only(oc_context *ctx, const char *path, int64_t rows, int64_t cols, int runs, int keep)
{
    int64_t width = (cols + 7) / 8;
    unsigned char *packed = malloc((size_t)(rows * width));
    uint64_t x = 88172645463325252ull;
    for (int64_t i = 0; i < rows * width; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        packed[i] = (unsigned char)(x >> 56);
    }
    if (cols % 8)
        for (int64_t i = 0; i < rows; ++i) packed[i * width + width - 1] &= (unsigned char)(0xFF00u >> (cols % 8));
    write_file(path, OC_NPY_UINT8, rows, width, packed);
    printf("bench_io: %s, %" PRId64 " x %" PRId64 " packed, %d cores, best of %d\n", path, rows, cols,
           oc_threads_resolve(0), runs);
    printf("| case                         |        bytes |   best s |    GB/s | memcpy GB/s | ratio |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    oc_matrix *m = NULL;
    double t = read_seconds(ctx, path, cols, runs, &m);
    row("read packed .npy (--bits)", rows * width, t, memcpy_seconds(packed, rows * width, runs));
    int wrong = 0;
    for (int64_t i = 0; i < rows && !wrong; ++i)
        wrong = memcmp(m->bits + i * m->words_per_row, packed + i * width, (size_t)width) != 0;
    oc_matrix_free(m);
    free(packed);
    if (!keep) unlink(path);
    if (wrong) fprintf(stderr, "bench_io: %s read back differently\n", path);
    return wrong;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: bench_io DIR [--rows N] [--cols M] [--out-rows R] [--runs K] [--keep 1] [--packed-only 1]\n");
        return 2;
    }
    const char *dir = argv[1];
    int64_t rows = 10000, cols = 100000, out_rows = 20000;
    int runs = 3, keep = 0, only_packed = 0;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rows")) rows = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--cols")) cols = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--out-rows")) out_rows = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--keep")) keep = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--packed-only")) only_packed = atoi(argv[i + 1]);
    }
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) die(NULL, "context");
    char packed_path[4096], bool_path[4096], out_path[4096];
    snprintf(packed_path, sizeof packed_path, "%s/bench_io_packed.npy", dir);
    snprintf(bool_path, sizeof bool_path, "%s/bench_io_bool.npy", dir);
    snprintf(out_path, sizeof out_path, "%s/bench_io_out.npy", dir);

    if (only_packed) {
        int rc = packed_only(ctx, packed_path, rows, cols, runs, keep);
        oc_context_free(ctx);
        return rc;
    }

    /* Inputs: random 0/1 at density 1/2, and their packbits rows. */
    int64_t width = (cols + 7) / 8;
    unsigned char *dense = malloc((size_t)(rows * cols)), *packed = calloc((size_t)(rows * width), 1);
    uint64_t x = 88172645463325252ull;
    for (int64_t i = 0; i < rows * cols; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        dense[i] = (unsigned char)(x >> 63);
    }
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
            packed[i * width + j / 8] |= (unsigned char)(dense[i * cols + j] << (7 - j % 8));
    write_file(packed_path, OC_NPY_UINT8, rows, width, packed);
    write_file(bool_path, OC_NPY_UINT8, rows, cols, dense);

    printf("bench_io: %s, %" PRId64 " x %" PRId64 ", %d cores, best of %d\n", dir, rows, cols, oc_threads_resolve(0),
           runs);
    printf("| case                         |        bytes |   best s |    GB/s | memcpy GB/s | ratio |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    oc_matrix *mp = NULL, *mb = NULL;
    double tp = read_seconds(ctx, packed_path, cols, runs, &mp);
    row("read packed .npy (--bits)", rows * width, tp, memcpy_seconds(packed, rows * width, runs));
    double tb = read_seconds(ctx, bool_path, 0, runs, &mb);
    row("read uint8 0/1 .npy (pack)", rows * cols, tb, memcpy_seconds(dense, rows * cols, runs));
    /* Both reads must give the same bits. */
    if (memcmp(mp->bits, mb->bits, (size_t)(rows * mp->words_per_row * 8)) != 0) {
        fprintf(stderr, "bench_io: the packed and the bool file read differently\n");
        return 1;
    }
    double tm = 1e30;
    for (int r = 0; r < runs; ++r) {
        oc_matrix *m = NULL;
        double t = oc_now();
        if (oc_matrix_from_dense(ctx, dense, rows, cols, cols, &m) != OC_OK) die(ctx, "from_dense");
        t = oc_now() - t;
        if (t < tm) tm = t;
        oc_matrix_free(m);
    }
    row("oc_matrix_from_dense", rows * cols, tm, memcpy_seconds(dense, rows * cols, runs));

    /* Dense output: out_rows x out_rows int32 through the writer, filled by row blocks as
     * the sinks fill it (oc_dense_sink_put from a staging block), then committed. */
    int64_t out_bytes = out_rows * out_rows * 4, block_rows = 256;
    int32_t *block = malloc((size_t)(block_rows * out_rows * 4));
    for (int64_t i = 0; i < block_rows * out_rows; ++i) block[i] = (int32_t)i;
    double tw = 1e30;
    for (int r = 0; r < runs; ++r) {
        unlink(out_path);
        double t = oc_now();
        oc_npy_out *w = NULL;
        void *data = NULL;
        if (oc_npy_out_create(ctx, out_path, OC_DTYPE_INT32, out_rows, out_rows, &w, &data) != OC_OK)
            die(ctx, out_path);
        fill_job job = {{.base = data, .ld = out_rows, .elem_size = 4, .populate = !oc_npy_out_prefaulted(w)},
                        block,
                        block_rows,
                        out_rows};
        if (oc_parallel_run(ctx, oc_threads_resolve(0), (out_rows + block_rows - 1) / block_rows, fill_task, &job, NULL,
                            NULL) != OC_OK)
            die(ctx, "fill");
        if (oc_npy_out_commit(ctx, w) != OC_OK) die(ctx, out_path);
        t = oc_now() - t;
        if (t < tw) tw = t;
    }
    /* The reference: memcpy of up to 256 MB of the same output rate's bytes (a copy of the
     * whole output would double the memory the run needs). */
    int64_t sample = out_bytes < ((int64_t)256 << 20) ? out_bytes : ((int64_t)256 << 20);
    unsigned char *from = malloc((size_t)sample);
    memset(from, 3, (size_t)sample);
    row("write int32 .npy", out_bytes, tw, memcpy_seconds(from, sample, runs) * ((double)out_bytes / (double)sample));
    free(from);
    unlink(out_path);
    if (!keep) {
        unlink(packed_path);
        unlink(bool_path);
    }
    oc_matrix_free(mp);
    oc_matrix_free(mb);
    free(dense);
    free(packed);
    free(block);
    oc_context_free(ctx);
    return 0;
}
