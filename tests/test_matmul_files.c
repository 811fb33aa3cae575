/*
 * test_matmul_files.c - the dense product's operands and results in .npy files (oc_matmul on
 * the CPU): a file read in segments and a mapped one giving the bytes of the same memory, the
 * .npy result and refusals that leave no file, 1-D files as numpy's matmul reads them (the
 * result file without their dimension), the job layer's panel_memory and tile_memory over
 * memory and mapped files, and panels delivered as stored for a backend that promotes them
 * itself (test_matmul.c: the products themselves).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "matmul_array.h"
#include "matmul_product.h"
#include "io/formats/npy_array.h"
#include "io/formats/npy_header.h"
#include "matmul/matmul_dtype.h"
#include "matmul/matmul_io.h"
#include "matmul/matmul_source.h"

/* Writes a C-order .npy of ndim dimensions and elements of descr. */
static void write_npy_nd(const char *path, const char *descr, const void *data, size_t bytes, int ndim,
                         const int64_t *shape)
{
    unsigned char h[OC_NPY_HEADER_ND_MAX];
    size_t len = oc_npy_header_nd(h, sizeof h, descr, ndim, shape, 0);
    FILE *f = fopen(path, "wb");
    fwrite(h, 1, len, f);
    fwrite(data, 1, bytes, f);
    fclose(f);
}

/* Writes a C-order .npy of rows x cols elements of descr. */
static void write_npy(const char *path, const char *descr, const void *data, size_t bytes, int64_t rows, int64_t cols)
{
    const int64_t shape[2] = {rows, cols};
    write_npy_nd(path, descr, data, bytes, 2, shape);
}

/* The header of the .npy at path, parsed. */
static int npy_info(oc_context *ctx, const char *path, oc_npy_array_info *info)
{
    size_t len = 0;
    unsigned char *bytes = oc_test_read_file(path, &len);
    const int ok = bytes && oc_npy_array_parse(ctx, path, bytes, len, info) == OC_OK;
    free(bytes);
    return ok;
}

/* 1-D files as numpy's matmul reads them: oc_matmul_result gives the 2-D shape (a row as A,
 * a column as B, the transpose flags leaving a vector as it is), memory results hold the
 * product, and a result file drops the vector's dimension (A·Aᵀ of a vector: 0-D). */
static void test_vector_files(void)
{
    if (!oc_test_tmp_create("test_matmul_vectors")) return;
    oc_context *ctx = NULL;
    oc_context_create(&ctx);
    enum { M = 7, K = 5 };
    double a[M * K], v[K], w[M];
    for (int i = 0; i < M * K; i++) a[i] = (double)(i % 11) - 4;
    for (int i = 0; i < K; i++) v[i] = 0.5 * i - 1;
    for (int i = 0; i < M; i++) w[i] = 3 - i;
    const int64_t ka = K, kw = M;
    write_npy(oc_test_tmp_path("a.npy"), "<f8", a, sizeof a, M, K);
    write_npy_nd(oc_test_tmp_path("v.npy"), "<f8", v, sizeof v, 1, &ka);
    write_npy_nd(oc_test_tmp_path("w.npy"), "<f8", w, sizeof w, 1, &kw);
    const struct {
        const char *a, *b;
        int transpose_a, transpose_b;
        int64_t rows, cols;
        int ndim;
    } cases[] = {
        {"a.npy", "v.npy", 0, 0, M, 1, 1}, {"a.npy", "v.npy", 0, 1, M, 1, 1}, {"w.npy", "a.npy", 1, 0, 1, K, 1},
        {"v.npy", "v.npy", 0, 0, 1, 1, 0}, {"v.npy", NULL, 1, 0, 1, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        oc_matmul_array A = OC_MATMUL_ARRAY_INIT, B = OC_MATMUL_ARRAY_INIT, C = OC_MATMUL_ARRAY_INIT;
        A.path = oc_test_tmp_path(cases[i].a);
        char b_path[4096];
        snprintf(b_path, sizeof b_path, "%s", cases[i].b ? oc_test_tmp_path(cases[i].b) : "");
        B.path = b_path;
        const oc_matmul_array *bp = cases[i].b ? &B : NULL;
        oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
        o.backend = OC_BACKEND_CPU;
        o.gram = bp == NULL;
        o.transpose_a = cases[i].transpose_a, o.transpose_b = cases[i].transpose_b;
        int64_t rows = -1, cols = -1;
        CHECK_MSG(oc_matmul_result(ctx, &A, bp, &o, NULL, &rows, &cols) == OC_OK, "%s", oc_context_last_error(ctx));
        CHECK_MSG(rows == cases[i].rows && cols == cases[i].cols, "case %zu: %lld x %lld", i, (long long)rows,
                  (long long)cols);
        double got[M * K], want[M * K] = {0};
        const double *x = cases[i].a[0] == 'a' ? a : cases[i].a[0] == 'v' ? v : w;
        for (int64_t r = 0; r < rows; r++) /* a vector A is a row; else a (M x K) times v */
            for (int64_t c = 0; c < cols; c++) {
                const int64_t depth = x == w ? M : K;
                for (int64_t q = 0; q < depth; q++)
                    want[r * cols + c] += x == a ? a[r * K + q] * v[q] : x == w ? w[q] * a[q * K + c] : v[q] * v[q];
            }
        C = mem(OC_MATMUL_FLOAT64, got, rows, cols);
        CHECK_MSG(oc_matmul(ctx, &A, bp, &C, &o, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
        for (int64_t e = 0; e < rows * cols; e++) CHECK_MSG(fabs(got[e] - want[e]) <= 1e-12, "case %zu", i);
        oc_matmul_array F = OC_MATMUL_ARRAY_INIT;
        F.path = oc_test_tmp_path("c.npy");
        CHECK_MSG(oc_matmul(ctx, &A, bp, &F, &o, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
        oc_npy_array_info info;
        CHECK(npy_info(ctx, F.path, &info) && info.ndim == cases[i].ndim);
        CHECK(info.ndim == 0 || info.shape[0] == (rows == 1 ? cols : rows));
        size_t len = 0;
        unsigned char *bytes = oc_test_read_file(F.path, &len);
        CHECK(bytes && len == info.data_offset + (size_t)(rows * cols) * 8 &&
              memcmp(bytes + info.data_offset, got, (size_t)(rows * cols) * 8) == 0);
        free(bytes);
        unlink(F.path);
    }
    oc_context_free(ctx);
    oc_test_tmp_remove();
}

/* A file input read in segments (its data above half the budget) and a mapped one give
 * the bytes of the product of the same memory (on the reference loops, whose bytes no
 * tiling changes); the .npy result holds it; refusals leave no file. */
static void test_files(void)
{
    if (!oc_test_tmp_create("test_matmul")) return;
    oc_context *ctx = NULL;
    oc_context_create(&ctx);
    const int64_t m = 50, k = 70, n = 30;
    float *a = mm_random_matrix(OC_MATMUL_FLOAT32, m, k), *b = mm_random_matrix(OC_MATMUL_FLOAT32, n, k);
    write_npy(oc_test_tmp_path("A.npy"), "<f4", a, (size_t)(m * k) * 4, m, k);
    write_npy(oc_test_tmp_path("B.npy"), "<f4", b, (size_t)(n * k) * 4, n, k);
    oc_matmul_array A = mem(OC_MATMUL_FLOAT32, a, m, k), B = mem(OC_MATMUL_FLOAT32, b, n, k);
    float *want = calloc((size_t)(m * n), 4);
    oc_matmul_array W = mem(OC_MATMUL_FLOAT32, want, m, n);
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    o.transpose_b = 1;
    setenv("OUTCORE_BLAS", "none", 1); /* the bytes of any tiling: the reference loops */
    CHECK(oc_matmul(ctx, &A, &B, &W, &o, NULL) == OC_OK);
    oc_matmul_array FA = OC_MATMUL_ARRAY_INIT, FB = OC_MATMUL_ARRAY_INIT, FC = OC_MATMUL_ARRAY_INIT;
    FA.path = oc_test_tmp_path("A.npy");
    FB.path = oc_test_tmp_path("B.npy");
    FC.path = oc_test_tmp_path("C.npy");
    for (int small = 0; small < 2; small++) {
        o.host_mem_bytes = small ? 20000 : 0; /* 20000: both inputs read in segments */
        oc_status s = oc_matmul(ctx, &FA, &FB, &FC, &o, NULL);
        CHECK_MSG(s == OC_OK, "%s", oc_context_last_error(ctx));
        size_t len = 0;
        unsigned char *got = oc_test_read_file(FC.path, &len);
        CHECK(got && len == 128 + (size_t)(m * n) * 4);
        if (got && len >= 128 + (size_t)(m * n) * 4) {
            CHECK(memcmp(got, "\x93NUMPY", 6) == 0 && strstr((char *)got + 10, "'<f4'") != NULL);
            CHECK(memcmp(got + 128, want, (size_t)(m * n) * 4) == 0);
        }
        free(got);
        unlink(FC.path);
    }
    unsetenv("OUTCORE_BLAS");
    /* float64 files: mapped, their panels go to the BLAS where they lie in the mapping; read
     * in segments, through the panel buffers. Under one plan (tiles of 16, one K panel: B's
     * rows n apart in the mapping, 16 in a buffer) the same bytes either way; mapped under a
     * budget that splits k in two (A's rows 200 apart, a panel's 100); each the reference's
     * within tolerance. */
    const int64_t kk = 200;
    double *a64 = mm_random_matrix(OC_MATMUL_FLOAT64, m, kk), *b64 = mm_random_matrix(OC_MATMUL_FLOAT64, kk, n);
    write_npy(oc_test_tmp_path("A64.npy"), "<f8", a64, (size_t)(m * kk) * 8, m, kk);
    write_npy(oc_test_tmp_path("B64.npy"), "<f8", b64, (size_t)(kk * n) * 8, kk, n);
    oc_matmul_array GA = OC_MATMUL_ARRAY_INIT, GB = OC_MATMUL_ARRAY_INIT;
    GA.path = oc_test_tmp_path("A64.npy");
    GB.path = oc_test_tmp_path("B64.npy");
    const int64_t data = (m * kk + kk * n) * 8;
    const struct {
        int64_t tile, budget;
    } runs[3] = {{16, 0}, {16, 60000}, {64, 2 * data + 6000}}; /* 60000: not mapped, K whole */
    unsigned char *out[3] = {NULL, NULL, NULL};
    size_t out_len[3] = {0, 0, 0};
    o.transpose_b = 0;
    for (int r = 0; r < 3; r++) {
        o.tile = runs[r].tile, o.host_mem_bytes = runs[r].budget;
        CHECK_MSG(oc_matmul(ctx, &GA, &GB, &FC, &o, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
        out[r] = oc_test_read_file(FC.path, &out_len[r]);
        unlink(FC.path);
        CHECK(out[r] && out_len[r] == 128 + (size_t)(m * n) * 8);
        if (!out[r] || out_len[r] != 128 + (size_t)(m * n) * 8) continue;
        const mm_product pp = {OC_MATMUL_FLOAT64, OC_MATMUL_FLOAT64, OC_MATMUL_DEFAULT, m, n, kk, 0, 0};
        CHECK_MSG(mm_off_reference(&pp, a64, b64, out[r] + 128, OC_MATMUL_FLOAT64) == 0, "run %d off the reference", r);
    }
    if (out[0] && out[1] && out_len[0] == out_len[1])
        CHECK_MSG(memcmp(out[0], out[1], out_len[0]) == 0, "mapped and segment-read operands gave other bytes");
    free(out[2]);
    free(out[0]), free(out[1]), free(a64), free(b64);
    unlink(GA.path), unlink(GB.path);
    o.tile = 0;
    /* inner dimensions that differ (B not transposed); the output is an input; a dtype
     * that is not computed; each refused, and no file left */
    o.host_mem_bytes = 0;
    o.transpose_b = 0;
    CHECK(oc_matmul(ctx, &FA, &FB, &FC, &o, NULL) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "inner dimensions differ") != NULL);
    o.transpose_b = 1;
    CHECK(oc_matmul(ctx, &FA, &FB, &FB, &o, NULL) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "the output is the input file") != NULL);
    int64_t ints[6] = {1, 2, 3, 4, 5, 6};
    write_npy(oc_test_tmp_path("I.npy"), "<i8", ints, sizeof ints, 2, 3);
    FB.path = oc_test_tmp_path("I.npy");
    o.transpose_b = 0;
    FA.path = oc_test_tmp_path("I.npy");
    o.transpose_b = 1;
    CHECK(oc_matmul(ctx, &FA, &FB, &FC, &o, NULL) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "int64 x int64") != NULL);
    o.dtype = OC_MATMUL_FLOAT64; /* computed in float64 when asked */
    CHECK(oc_matmul(ctx, &FA, &FB, &FC, &o, NULL) == OC_OK);
    unlink(FC.path);
    o.dtype = OC_MATMUL_DEFAULT;
    FA.path = oc_test_tmp_path("missing.npy");
    CHECK(oc_matmul(ctx, &FA, &FB, &FC, &o, NULL) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "missing.npy") != NULL);
    CHECK_EQ_I64(oc_test_dir_entries(oc_test_tmpdir), 3); /* A.npy, B.npy, I.npy */
    free(a);
    free(b);
    free(want);
    oc_context_free(ctx);
    oc_test_tmp_remove();
}

/* The job layer's panel_memory and tile_memory: caller memory or a mapped input in the
 * compute type, not transposed, gives its address (a GPU may copy from and to page-locked
 * memory straight, the CPU's BLAS reads it there); a conversion, a transpose, a file read in
 * segments, A·Aᵀ's mirrored result or a result in a file give NULL. transposed_memory gives
 * an operand read transposed where it lies (the stored element), and NULL otherwise. */
static void test_memory_callbacks(void)
{
    oc_context *ctx = NULL;
    oc_context_create(&ctx);
    enum { M = 30, K = 20, N = 10 };
    static float a[M * K], b[K * N], c[M * N];
    static double a64[M * K];
    const oc_matmul_array A = mem(OC_MATMUL_FLOAT32, a, M, K), B = mem(OC_MATMUL_FLOAT32, b, K, N);
    oc_mm_source sa, sb, s64;
    CHECK(oc_mm_source_open(ctx, &A, "A", 0, &sa) == OC_OK && oc_mm_source_open(ctx, &B, "B", 0, &sb) == OC_OK);
    const oc_matmul_array A64 = mem(OC_MATMUL_FLOAT64, a64, M, K);
    CHECK(oc_mm_source_open(ctx, &A64, "A", 0, &s64) == OC_OK);
    oc_mm_io io;
    memset(&io, 0, sizeof io);
    io.src[0] = &sa, io.src[1] = &sb;
    io.dest = (oc_mm_dest){.data = (unsigned char *)c, .ld = N, .elem = sizeof(float), .rows = M, .cols = N};
    oc_matmul_job job;
    memset(&job, 0, sizeof job);
    job.ctx = ctx, job.m = M, job.n = N, job.k = K, job.in_type = OC_MM_FLOAT32, job.out_type = OC_MM_FLOAT32;
    oc_mm_io_bind(&job, &io);
    int64_t ld = 0;
    CHECK(job.panel_memory(&job, OC_MM_A, 3, 5, &ld) == (const void *)&a[3 * K + 5] && ld == K);
    CHECK(job.panel_memory(&job, OC_MM_B, 7, 2, &ld) == (const void *)&b[7 * N + 2] && ld == N);
    CHECK(job.tile_memory(&job, 4, 6, &ld) == (void *)&c[4 * N + 6] && ld == N);
    CHECK(job.transposed_memory(&job, OC_MM_B, 7, 2, &ld) == NULL); /* not read transposed */
    io.transpose[1] = 1; /* op(B) = Bᵀ: not as panel_memory gives panels ... */
    CHECK(job.panel_memory(&job, OC_MM_B, 0, 0, &ld) == NULL);
    /* ... but where it lies transposed: op(B)(7, 2) is the stored B(2, 7) */
    CHECK(job.transposed_memory(&job, OC_MM_B, 7, 2, &ld) == (const void *)&b[2 * N + 7] && ld == N);
    /* ... but the operand as stored is where it is, with the transpose said */
    int transposed = -1;
    CHECK(job.stored_memory(&job, OC_MM_B, &ld, &transposed) == (const void *)b && ld == N && transposed == 1);
    CHECK(job.stored_memory(&job, OC_MM_A, &ld, &transposed) == (const void *)a && ld == K && transposed == 0);
    io.transpose[1] = 0;
    io.src[0] = &s64; /* float64 memory into a float32 product: converted */
    CHECK(job.panel_memory(&job, OC_MM_A, 0, 0, &ld) == NULL);
    io.transpose[0] = 1;
    CHECK(job.transposed_memory(&job, OC_MM_A, 0, 0, &ld) == NULL);
    io.transpose[0] = 0;
    CHECK(job.stored_memory(&job, OC_MM_A, &ld, &transposed) == NULL);
    job.in_type = OC_MM_FLOAT64; /* computed in float64: in place again */
    CHECK(job.panel_memory(&job, OC_MM_A, 1, 0, &ld) == (const void *)&a64[K]);
    job.symmetric = 1; /* A·Aᵀ: write_tile mirrors */
    CHECK(job.tile_memory(&job, 0, 0, &ld) == NULL);
    io.dest_gpu = 1; /* unless C is GPU memory, which only a plan that mirrors it writes */
    CHECK(job.tile_memory(&job, 0, 0, &ld) == (void *)c && ld == N);
    io.dest_gpu = 0;
    job.symmetric = 0;
    if (oc_test_tmp_create("test_matmul_memory")) { /* a file operand */
        const char *path = oc_test_tmp_path("A.npy");
        write_npy(path, "<f4", a, sizeof a, M, K);
        oc_matmul_array F = OC_MATMUL_ARRAY_INIT;
        F.path = path;
        oc_mm_source sf;
        CHECK(oc_mm_source_open(ctx, &F, "A", 1 << 30, &sf) == OC_OK); /* mapped */
        io.src[0] = &sf;
        job.in_type = OC_MM_FLOAT32;
        /* A mapped file's panels lie in the mapping (the CPU's BLAS reads them there), but
         * the stored operand is no caller memory a GPU's resident plan could take. */
        CHECK(job.panel_memory(&job, OC_MM_A, 2, 3, &ld) == (const void *)(sf.data + (2 * K + 3) * sizeof(float)) &&
              ld == K);
        CHECK(job.stored_memory(&job, OC_MM_A, &ld, &transposed) == NULL);
        oc_mm_source_close(&sf);
        CHECK(oc_mm_source_open(ctx, &F, "A", 16, &sf) == OC_OK); /* read in segments: no memory */
        io.src[0] = &sf;
        CHECK(sf.data == NULL && job.panel_memory(&job, OC_MM_A, 0, 0, &ld) == NULL);
        io.transpose[0] = 1;
        CHECK(job.transposed_memory(&job, OC_MM_A, 0, 0, &ld) == NULL);
        io.transpose[0] = 0;
        oc_mm_source_close(&sf);
        oc_test_tmp_remove();
    }
    oc_mm_source_close(&sa), oc_mm_source_close(&sb), oc_mm_source_close(&s64);
    oc_context_free(ctx);
}

/* A backend that promotes an operand itself (a GPU, after the upload) asks for its panels as
 * stored (matmul_job.h's panel_stored): read_panel gives the stored elements, transposed when
 * the job asks, from memory, a mapped file and a file read in segments, and panel_memory the
 * stored memory; without it the same panels come converted to the compute type. */
static void test_panels_as_stored(void)
{
    oc_context *ctx = NULL;
    oc_context_create(&ctx);
    enum { N = 9 }; /* square: op(A) and A have one shape */
    static int8_t a8[N * N];
    static int16_t a16[N * N];
    for (int i = 0; i < N * N; i++) a8[i] = (int8_t)(i * 37 % 251 - 125), a16[i] = (int16_t)(i * 997 % 65521 - 32760);
    const int have_tmp = oc_test_tmp_create("test_matmul_stored") != NULL;
    for (int w = 0; w < 2; w++) {
        const oc_matmul_dtype t = w ? OC_MATMUL_INT16 : OC_MATMUL_INT8;
        const void *data = w ? (const void *)a16 : (const void *)a8;
        const size_t e = oc_matmul_dtype_size(t);
        for (int where = 0; where < (have_tmp ? 3 : 1); where++) { /* memory, a mapped file, segments */
            oc_matmul_array X = mem(t, (void *)data, N, N);
            if (where) {
                const char *path = oc_test_tmp_path(w ? "a16.npy" : "a8.npy");
                write_npy(path, w ? "<i2" : "|i1", data, N * N * e, N, N);
                X = (oc_matmul_array)OC_MATMUL_ARRAY_INIT;
                X.path = path;
            }
            oc_mm_source sx;
            CHECK(oc_mm_source_open(ctx, &X, "A", where == 2 ? 16 : 1 << 30, &sx) == OC_OK);
            oc_mm_io io;
            memset(&io, 0, sizeof io);
            io.src[0] = io.src[1] = &sx;
            oc_matmul_job job;
            memset(&job, 0, sizeof job);
            job.ctx = ctx, job.m = job.n = job.k = N, job.in_type = OC_MM_FLOAT32, job.out_type = OC_MM_FLOAT32;
            job.stored_type[0] = job.stored_type[1] = t;
            oc_mm_io_bind(&job, &io);
            for (int tr = 0; tr < 2; tr++) {
                io.transpose[0] = tr;
                unsigned char raw[N * N * 2];
                float conv[N * N];
                job.panel_stored[0] = 1;
                CHECK(job.read_panel(&job, OC_MM_A, 2, 5, 1, 6, raw) == OC_OK);
                job.panel_stored[0] = 0;
                CHECK(job.read_panel(&job, OC_MM_A, 2, 5, 1, 6, conv) == OC_OK);
                int wrong = 0;
                for (int r = 0; r < 5; r++)
                    for (int c = 0; c < 6; c++) {
                        const int at = tr ? (1 + c) * N + 2 + r : (2 + r) * N + 1 + c; /* op(A)[2 + r][1 + c] */
                        wrong += memcmp(raw + (size_t)(r * 6 + c) * e, (const char *)data + (size_t)at * e, e) != 0;
                        wrong += conv[r * 6 + c] != (float)mm_value(t, data, at);
                    }
                CHECK_MSG(wrong == 0, "%s from %d, transpose %d: %d elements wrong", oc_matmul_dtype_name(t), where, tr,
                          wrong);
            }
            io.transpose[0] = 0;
            int64_t ld = 0;
            job.panel_stored[0] = 1; /* memory or a mapping: the stored elements where they are */
            const void *p = job.panel_memory(&job, OC_MM_A, 3, 4, &ld);
            CHECK(where == 2 ? p == NULL
                             : p != NULL && ld == N && memcmp(p, (const char *)data + (3 * N + 4) * e, e) == 0);
            job.panel_stored[0] = 0; /* converted: nowhere */
            CHECK(job.panel_memory(&job, OC_MM_A, 3, 4, &ld) == NULL);
            oc_mm_source_close(&sx);
        }
    }
    if (have_tmp) oc_test_tmp_remove();
    /* Which stored types a backend may promote itself: no narrower than the compute type as
     * stored, never the compute type itself or int8's exact product (but bool into it). */
    CHECK(oc_matmul_widens(OC_MATMUL_INT8, OC_MM_FLOAT32) && oc_matmul_widens(OC_MATMUL_FLOAT16, OC_MM_FLOAT32) &&
          oc_matmul_widens(OC_MATMUL_FLOAT32, OC_MM_FLOAT64) && oc_matmul_widens(OC_MATMUL_INT64, OC_MM_FLOAT64) &&
          oc_matmul_widens(OC_MATMUL_UINT8, OC_MM_FLOAT16) && oc_matmul_widens(OC_MATMUL_INT8, OC_MM_BFLOAT16) &&
          oc_matmul_widens(OC_MATMUL_BOOL, OC_MM_INT8) && oc_matmul_widens(OC_MATMUL_BOOL, OC_MM_FLOAT16));
    CHECK(!oc_matmul_widens(OC_MATMUL_FLOAT32, OC_MM_FLOAT32) && !oc_matmul_widens(OC_MATMUL_FLOAT64, OC_MM_FLOAT32) &&
          !oc_matmul_widens(OC_MATMUL_INT64, OC_MM_FLOAT32) && !oc_matmul_widens(OC_MATMUL_INT8, OC_MM_INT8) &&
          !oc_matmul_widens(OC_MATMUL_FLOAT32, OC_MM_FLOAT16) && !oc_matmul_widens(OC_MATMUL_DEFAULT, OC_MM_FLOAT64) &&
          !oc_matmul_widens(OC_MATMUL_UINT8, OC_MM_INT8) && !oc_matmul_widens(OC_MATMUL_BOOL, OC_MM_INT32));
    oc_context_free(ctx);
}
int main(void)
{
    test_files();
    test_vector_files();
    test_memory_callbacks();
    test_panels_as_stored();
    return oc_test_finish();
}
