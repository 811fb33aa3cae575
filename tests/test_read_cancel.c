/*
 * test_read_cancel.c - oc_context_cancel stops the reading of an input: oc_matrix_read of a
 * float64 .npy, a .csv and a .mtx, and the constructors from memory (float64 numbers, 0/1
 * bytes, packed bits, sparse rows), each a job that a cancel from another thread fails with
 * OC_ERR_CANCELLED, "NAME: reading was cancelled", its out-parameter untouched. A cancel
 * left over from before the call does not stop it (the call starts a job, which clears it),
 * and the context reads again after a cancelled read.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "outcore.h"
#include "core/threads.h"

/* The canceller: oc_context_cancel on ctx over and over (the call's start clears the flag,
 * so one cancel before it would not reach it) until told to stop. */
typedef struct canceller {
    oc_context *ctx;
    atomic_int stop, running;
    pthread_t thread;
} canceller;

static void *cancel_loop(void *arg)
{
    canceller *c = arg;
    atomic_store(&c->running, 1);
    while (!atomic_load(&c->stop)) oc_context_cancel(c->ctx);
    return NULL;
}

static void canceller_start(canceller *c, oc_context *ctx)
{
    c->ctx = ctx;
    atomic_init(&c->stop, 0);
    atomic_init(&c->running, 0);
    if (pthread_create(&c->thread, NULL, cancel_loop, c) != 0) {
        fprintf(stderr, "cannot start a thread\n");
        exit(1);
    }
    while (!atomic_load(&c->running)) {}
}

static void canceller_stop(canceller *c)
{
    atomic_store(&c->stop, 1);
    pthread_join(c->thread, NULL);
}

/* What a call reads: one of the inputs below, through oc_matrix_read or a constructor. */
typedef struct input {
    const char *what; /* in failure messages */
    const char *path; /* a file for oc_matrix_read, else NULL */
    int kind;         /* without a path: 0 float64 numbers, 1 0/1 bytes, 2 packed bits, 3 CSR */
    const void *data; /* for CSR, indptr */
    const int64_t *indices;
    int64_t rows, cols;
} input;

static oc_status read_input(oc_context *ctx, const input *in, oc_matrix **out)
{
    if (in->path) return oc_matrix_read(ctx, in->path, NULL, out);
    if (in->kind == 0)
        return oc_matrix_from_values(ctx, in->data, in->rows, in->cols, in->cols * 8, OC_MAP_FLOAT64, 0, out);
    if (in->kind == 1) return oc_matrix_from_dense(ctx, in->data, in->rows, in->cols, in->cols, out);
    if (in->kind == 3) return oc_matrix_from_csr(ctx, in->rows, in->cols, in->data, in->indices, out);
    return oc_matrix_from_bits(ctx, in->data, in->rows, in->cols, in->cols / 8, OC_BITS_MSB_FIRST, out);
}

/* Cancelled from another thread while it reads, the call fails with OC_ERR_CANCELLED and the
 * message naming the input, and leaves *out alone. A read takes milliseconds; on a loaded
 * machine the canceller may get no time slice between the call's start (which clears the
 * cancel) and its last check, read after read: attempts, each a whole read, until one is
 * cancelled or 30 seconds have passed. */
static void check_cancelled_mid_read(oc_context *ctx, const input *in, const char *name)
{
    oc_status st = OC_OK;
    const double give_up = oc_now() + 30.0;
    int attempts = 0;
    for (; st == OC_OK && (attempts < 5 || oc_now() < give_up); ++attempts) {
        oc_matrix *m = NULL;
        canceller c;
        canceller_start(&c, ctx);
        st = read_input(ctx, in, &m);
        canceller_stop(&c);
        if (st == OC_OK) oc_matrix_free(m);
        else CHECK_MSG(m == NULL, "%s: a cancelled read set its out-parameter", in->what);
    }
    CHECK_MSG(st != OC_OK, "%s: %d reads in 30 s, none cancelled", in->what, attempts);
    char want[512];
    snprintf(want, sizeof want, "%s: reading was cancelled", name);
    CHECK_FAILED(ctx, st, OC_ERR_CANCELLED, want);

    /* The next read on the context runs, and so does one after a cancel that came before it. */
    oc_matrix *m = NULL;
    oc_context_cancel(ctx);
    st = read_input(ctx, in, &m);
    CHECK_MSG(st == OC_OK, "%s after a cancel before the call: %s", in->what, oc_context_last_error(ctx));
    if (st == OC_OK) {
        CHECK_EQ_I64(oc_matrix_rows(m), in->rows);
        CHECK_EQ_I64(oc_matrix_cols(m), in->cols);
    }
    oc_matrix_free(m);
}

/* rows x cols of 0.0 and 1.0 in native order; each row's first value is 1. */
static double *ones_and_zeros(int64_t rows, int64_t cols)
{
    double *v = calloc((size_t)(rows * cols), sizeof *v);
    if (!v) return NULL;
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; j += 7) v[i * cols + j] = 1.0;
    return v;
}

/* A float64 .npy of v (version 1.0, its data on a multiple of 64 bytes as numpy writes it). */
static const char *write_f64_npy(const char *name, const double *v, int64_t rows, int64_t cols)
{
    char head[128];
    int dict =
        snprintf(head + 10, sizeof head - 10, "{'descr': '<f8', 'fortran_order': False, 'shape': (%lld, %lld), }",
                 (long long)rows, (long long)cols);
    const int total = (10 + dict + 1 + 63) / 64 * 64;
    memcpy(head, "\x93NUMPY\x01\x00", 8);
    head[8] = (char)((total - 10) & 0xff), head[9] = (char)((total - 10) >> 8);
    memset(head + 10 + dict, ' ', (size_t)(total - 10 - dict - 1));
    head[total - 1] = '\n';
    const char *path = oc_test_tmp_path(name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(head, 1, (size_t)total, f) != (size_t)total ||
        fwrite(v, sizeof *v, (size_t)(rows * cols), f) != (size_t)(rows * cols) || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    return path;
}

/* The same values as text: "1,0,0,..." lines (.csv) or MatrixMarket pattern entries (.mtx). */
static const char *write_text_of(const char *name, const double *v, int64_t rows, int64_t cols, int mtx)
{
    const char *path = oc_test_tmp_path(name);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    int64_t ones = 0;
    for (int64_t k = 0; k < rows * cols; ++k) ones += v[k] != 0.0;
    if (mtx)
        fprintf(f, "%%%%MatrixMarket matrix coordinate pattern general\n%lld %lld %lld\n", (long long)rows,
                (long long)cols, (long long)ones);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
            const int one = v[i * cols + j] != 0.0;
            if (mtx && one) fprintf(f, "%lld %lld\n", (long long)i + 1, (long long)j + 1);
            if (!mtx) fputs(one ? (j + 1 < cols ? "1," : "1\n") : (j + 1 < cols ? "0," : "0\n"), f);
        }
    if (fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    return path;
}

int main(void)
{
    if (!oc_test_tmp_create("oc_read_cancel")) return 1;
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;

    /* 64 MB of float64: tens of milliseconds to convert, many cancel checks apart. */
    const int64_t rows = 2048, cols = 4096;
    double *v = ones_and_zeros(rows, cols);
    unsigned char *bytes = malloc((size_t)(rows * cols) * 4);
    if (!v || !bytes) return 1;
    for (int64_t k = 0; k < rows * cols * 4; ++k) bytes[k] = (unsigned char)(k % 3 == 0);

    input values = {"float64 numbers", NULL, 0, v, NULL, rows, cols};
    check_cancelled_mid_read(ctx, &values, "A");
    input dense = {"0/1 bytes", NULL, 1, bytes, NULL, rows * 4, cols};
    check_cancelled_mid_read(ctx, &dense, "A");
    input bits = {"packed bits", NULL, 2, bytes, NULL, rows * 4, cols * 8};
    check_cancelled_mid_read(ctx, &bits, "A");

    /* Sparse rows: every fourth column of rows * 4 rows, 64 MB of indices. */
    const int64_t csr_rows = rows * 4, per_row = cols / 4;
    int64_t *indptr = malloc((size_t)(csr_rows + 1) * sizeof *indptr),
            *indices = malloc((size_t)(csr_rows * per_row) * sizeof *indices);
    if (!indptr || !indices) return 1;
    for (int64_t i = 0; i <= csr_rows; ++i) indptr[i] = i * per_row;
    for (int64_t k = 0; k < csr_rows * per_row; ++k) indices[k] = (k % per_row) * 4;
    input csr = {"sparse rows", NULL, 3, indptr, indices, csr_rows, cols};
    check_cancelled_mid_read(ctx, &csr, "A");
    free(indptr);
    free(indices);

    input npy = {"a float64 .npy", write_f64_npy("values.npy", v, rows, cols), 0, NULL, NULL, rows, cols};
    check_cancelled_mid_read(ctx, &npy, npy.path);
    /* Text: a quarter of the rows, still 16 MB of "0," */
    input csv = {"a .csv", write_text_of("values.csv", v, rows / 4, cols, 0), 0, NULL, NULL, rows / 4, cols};
    check_cancelled_mid_read(ctx, &csv, csv.path);
    input mtx = {"a .mtx", write_text_of("values.mtx", v, rows, cols, 1), 0, NULL, NULL, rows, cols};
    check_cancelled_mid_read(ctx, &mtx, mtx.path);

    free(v);
    free(bytes);
    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
