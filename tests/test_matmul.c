/*
 * test_matmul.c - the dense product on the CPU (oc_matmul): every compute dtype and
 * transpose against a naive float64 reference within the documented error bound (int8
 * exact), on a case table of edge shapes (1 x 1, k = 1, primes, tall and skinny, empty, k =
 * 0) on the BLAS and the reference loops, host budgets so small that they
 * force many tiles and K panels giving the bytes of a large one, A·Aᵀ against the full
 * product, a .npy read in panels against memory, products accumulated where C lies, and
 * refusals that leave no file (test_matmul_calls.c: what a C caller can get wrong;
 * test_matmul_cpu_plan.c: the CPU plan and the backend choice; test_matmul_integers.c: int8's
 * and bool's exact sums and their bounds).
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
#include "matmul/cpu/mm_cpu.h"
#include "matmul/matmul_dtype.h"
#include "matmul/matmul_io.h"
#include "matmul/matmul_source.h"
#include "matmul/mm_half.h"

/* A CPU product under a host budget and a forced tile (0: the defaults). */
static void *run_product(const mm_product *p, int64_t budget, int64_t tile, oc_matmul_dtype *rt, int check)
{
    const mm_run r = {.backend = OC_BACKEND_CPU, .host_mem = budget, .tile = tile};
    return mm_run_product(p, &r, rt, check, NULL);
}

static void test_dtypes_and_transposes(void)
{
    static const oc_matmul_dtype same[] = {OC_MATMUL_FLOAT64, OC_MATMUL_FLOAT32, OC_MATMUL_FLOAT16, OC_MATMUL_BFLOAT16,
                                           OC_MATMUL_INT8};
    for (size_t t = 0; t < sizeof same / sizeof same[0]; t++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                mm_product p = {same[t], same[t], OC_MATMUL_DEFAULT, 37, 29, 53, ta, tb};
                oc_matmul_dtype rt;
                free(run_product(&p, 0, 0, &rt, 1));
                /* int8 sums are int32; half-precision ones float32 */
                CHECK_EQ_I64(rt, same[t] == OC_MATMUL_INT8                                       ? OC_MATMUL_INT32
                                 : same[t] == OC_MATMUL_FLOAT16 || same[t] == OC_MATMUL_BFLOAT16 ? OC_MATMUL_FLOAT32
                                                                                                 : same[t]);
            }
    /* numpy's promotion of mixed pairs, and a requested dtype */
    static const struct {
        oc_matmul_dtype a, b, req, want;
    } mixed[] = {
        {OC_MATMUL_INT8, OC_MATMUL_FLOAT32, OC_MATMUL_DEFAULT, OC_MATMUL_FLOAT32},
        {OC_MATMUL_FLOAT16, OC_MATMUL_FLOAT32, OC_MATMUL_DEFAULT, OC_MATMUL_FLOAT32},
        {OC_MATMUL_INT16, OC_MATMUL_FLOAT32, OC_MATMUL_DEFAULT, OC_MATMUL_FLOAT32},
        {OC_MATMUL_UINT8, OC_MATMUL_FLOAT16, OC_MATMUL_DEFAULT, OC_MATMUL_FLOAT32}, /* numpy: float16 */
        {OC_MATMUL_UINT8, OC_MATMUL_FLOAT16, OC_MATMUL_FLOAT16, OC_MATMUL_FLOAT16},
        {OC_MATMUL_FLOAT16, OC_MATMUL_FLOAT16, OC_MATMUL_FLOAT16, OC_MATMUL_FLOAT16},
        {OC_MATMUL_BFLOAT16, OC_MATMUL_BFLOAT16, OC_MATMUL_BFLOAT16, OC_MATMUL_BFLOAT16},
        {OC_MATMUL_FLOAT32, OC_MATMUL_FLOAT64, OC_MATMUL_DEFAULT, OC_MATMUL_FLOAT64},
        {OC_MATMUL_INT16, OC_MATMUL_INT16, OC_MATMUL_FLOAT64, OC_MATMUL_FLOAT64},
        {OC_MATMUL_FLOAT64, OC_MATMUL_FLOAT64, OC_MATMUL_FLOAT32, OC_MATMUL_FLOAT32},
        /* halves into float32: multiplied as halves, float32 sums */
        {OC_MATMUL_FLOAT16, OC_MATMUL_FLOAT16, OC_MATMUL_FLOAT32, OC_MATMUL_FLOAT32},
        {OC_MATMUL_BFLOAT16, OC_MATMUL_BFLOAT16, OC_MATMUL_FLOAT32, OC_MATMUL_FLOAT32},
        /* bool: as the other type (numpy), with int8 as int8 x int8; bool x bool numpy's bool,
         * or counted */
        {OC_MATMUL_BOOL, OC_MATMUL_FLOAT32, OC_MATMUL_DEFAULT, OC_MATMUL_FLOAT32},
        {OC_MATMUL_FLOAT64, OC_MATMUL_BOOL, OC_MATMUL_DEFAULT, OC_MATMUL_FLOAT64},
        {OC_MATMUL_BOOL, OC_MATMUL_FLOAT16, OC_MATMUL_DEFAULT, OC_MATMUL_FLOAT32}, /* numpy: float16 */
        {OC_MATMUL_BOOL, OC_MATMUL_BFLOAT16, OC_MATMUL_BFLOAT16, OC_MATMUL_BFLOAT16},
        {OC_MATMUL_INT8, OC_MATMUL_BOOL, OC_MATMUL_DEFAULT, OC_MATMUL_INT32},
        {OC_MATMUL_BOOL, OC_MATMUL_BOOL, OC_MATMUL_INT32, OC_MATMUL_INT32},
        {OC_MATMUL_BOOL, OC_MATMUL_BOOL, OC_MATMUL_FLOAT32, OC_MATMUL_FLOAT32},
        {OC_MATMUL_BOOL, OC_MATMUL_BOOL, OC_MATMUL_DEFAULT, OC_MATMUL_BOOL}, /* numpy's bool */
        {OC_MATMUL_BOOL, OC_MATMUL_BOOL, OC_MATMUL_BOOL, OC_MATMUL_BOOL},
    };
    for (size_t i = 0; i < sizeof mixed / sizeof mixed[0]; i++) {
        mm_product p = {mixed[i].a, mixed[i].b, mixed[i].req, 21, 17, 40, (int)i & 1, 0};
        oc_matmul_dtype rt;
        free(run_product(&p, 0, 0, &rt, 1));
        CHECK_EQ_I64(rt, mixed[i].want);
    }
}

/* The case table: shapes at the edges (1 x 1, a long k beside it, k = 1, primes, tall and
 * skinny either way, an empty result, k = 0) in every type with both transposes, in one tile
 * and under a budget of many tiles and K panels, on the BLAS and on the reference loops:
 * each against the reference (run_product: the documented bound, int8 exactly). A·Aᵀ's
 * shapes are test_symmetric's. */
static void test_case_table(void)
{
    static const struct {
        int64_t m, n, k;
    } shapes[] = {{1, 1, 1},   {1, 1, 257}, {61, 47, 1}, {97, 89, 101}, {700, 3, 5},
                  {3, 700, 5}, {5, 3, 900}, {0, 6, 7},   {6, 0, 7},     {6, 7, 0}};
    static const oc_matmul_dtype types[] = {OC_MATMUL_FLOAT64, OC_MATMUL_FLOAT32, OC_MATMUL_FLOAT16, OC_MATMUL_BFLOAT16,
                                            OC_MATMUL_INT8};
    static const char *const blas[] = {NULL, "none"};
    for (size_t l = 0; l < 2; l++) {
        if (blas[l]) setenv("OUTCORE_BLAS", blas[l], 1);
        else unsetenv("OUTCORE_BLAS");
        for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
            for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
                for (int tr = 0; tr < 4; tr++)
                    for (int small = 0; small < 2; small++) {
                        mm_product p = {types[t], types[t], OC_MATMUL_DEFAULT, shapes[sh].m, shapes[sh].n, shapes[sh].k,
                                        tr & 1,   tr >> 1};
                        oc_matmul_dtype rt;
                        free(run_product(&p, small ? 40000 : 0, 0, &rt, 1));
                    }
    }
    unsetenv("OUTCORE_BLAS");
}

/* Tiny budgets force many tiles and K panels: the same bytes as one tile, for int8 on the
 * BLAS (exact) and for every float type on the reference loops (each element summed in k
 * order whatever the panels). */
static void test_budgets(void)
{
    static const struct {
        oc_matmul_dtype t;
        const char *blas;
    } cases[] = {
        {OC_MATMUL_INT8, NULL},      {OC_MATMUL_INT8, "none"},    {OC_MATMUL_FLOAT64, "none"},
        {OC_MATMUL_FLOAT32, "none"}, {OC_MATMUL_FLOAT16, "none"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].blas) setenv("OUTCORE_BLAS", cases[i].blas, 1);
        else unsetenv("OUTCORE_BLAS");
        mm_product p = {cases[i].t, cases[i].t, OC_MATMUL_DEFAULT, 70, 45, 300, 0, 1};
        oc_matmul_dtype rt;
        void *big = run_product(&p, 1 << 26, 0, &rt, 1);
        void *small = run_product(&p, 40000, 0, &rt, 0); /* tiles of 16 rows, panels of 64..300 */
        void *tiled = run_product(&p, 1 << 26, 16, &rt, 0);
        CHECK_MSG(memcmp(big, small, (size_t)(p.m * p.n) * oc_matmul_dtype_size(rt)) == 0,
                  "%s: a small budget changed the bytes", oc_matmul_dtype_name(cases[i].t));
        CHECK(memcmp(big, tiled, (size_t)(p.m * p.n) * oc_matmul_dtype_size(rt)) == 0);
        free(big);
        free(small);
        free(tiled);
    }
    unsetenv("OUTCORE_BLAS");
    /* A budget below the smallest tile is refused, naming the need: the caller's budget is
     * theirs to raise (an invalid argument, exit 2 in the CLI). */
    oc_context *ctx = NULL;
    oc_context_create(&ctx);
    double a[4] = {1, 2, 3, 4}, c[4];
    oc_matmul_array A = mem(OC_MATMUL_FLOAT64, a, 2, 2), C = mem(OC_MATMUL_FLOAT64, c, 2, 2);
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.gram = 1;
    o.backend = OC_BACKEND_CPU;
    o.host_mem_bytes = 16;
    CHECK(oc_matmul(ctx, &A, NULL, &C, &o, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "host budget") != NULL);
    /* A result in memory cannot be resumed; resume is 0 or 1. */
    o.host_mem_bytes = 0;
    o.resume = 1;
    CHECK(oc_matmul(ctx, &A, NULL, &C, &o, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "only a product written to a .npy file can be resumed") != NULL);
    o.resume = 2;
    CHECK(oc_matmul(ctx, &A, NULL, &C, &o, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "resume 2") != NULL);
    oc_context_free(ctx);
}

/* A·Aᵀ (gram, or B the same memory transposed) computes the upper tiles and mirrors them:
 * exactly symmetric, and equal to the full product (bit for bit for int8 and bool's counts),
 * from 1 x 1 and k = 1 to tall and skinny. */
static void test_symmetric(void)
{
    static const oc_matmul_dtype types[] = {OC_MATMUL_INT8, OC_MATMUL_FLOAT64, OC_MATMUL_FLOAT32, OC_MATMUL_BOOL};
    static const struct {
        int64_t n, k;
    } shapes[] = {{67, 41}, {1, 1}, {1, 300}, {37, 1}, {211, 3}};
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
            oc_context *ctx = NULL;
            oc_context_create(&ctx);
            const int64_t n = shapes[sh].n, k = shapes[sh].k, rows = (n + 15) / 16; /* tiles of 16 */
            void *a = mm_random_matrix(types[t], n, k);
            const int counts = types[t] == OC_MATMUL_INT8 || types[t] == OC_MATMUL_BOOL;
            oc_matmul_dtype rt = counts ? OC_MATMUL_INT32 : types[t];
            const size_t e = oc_matmul_dtype_size(rt);
            void *full = calloc((size_t)(n * n), e), *sym = calloc((size_t)(n * n), e),
                 *sym2 = calloc((size_t)(n * n), e);
            oc_matmul_array A = mem(types[t], a, n, k), B = A;
            B.data = malloc((size_t)(n * k) * oc_matmul_dtype_size(types[t])); /* a copy: not the same memory */
            memcpy(B.data, a, (size_t)(n * k) * oc_matmul_dtype_size(types[t]));
            oc_matmul_array Cf = mem(rt, full, n, n), Cs = mem(rt, sym, n, n), Cs2 = mem(rt, sym2, n, n);
            oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
            o.backend = OC_BACKEND_CPU;
            o.tile = 16;
            o.transpose_b = 1;
            o.dtype = types[t] == OC_MATMUL_BOOL ? OC_MATMUL_INT32 : OC_MATMUL_DEFAULT; /* bool's own: refused */
            CHECK(oc_matmul(ctx, &A, &B, &Cf, &o, NULL) == OC_OK);
            const mm_product p = {types[t], types[t], o.dtype, n, n, k, 0, 1};
            mm_off_reference(&p, a, B.data, full, rt);
            oc_matmul_stats st = {.struct_size = sizeof st};
            CHECK(oc_matmul(ctx, &A, &A, &Cs2, &o, &st) == OC_OK); /* B is A's memory: symmetric */
            CHECK_EQ_I64(st.tiles, rows * (rows + 1) / 2);
            o.transpose_b = 0;
            o.gram = 1;
            CHECK(oc_matmul(ctx, &A, NULL, &Cs, &o, &st) == OC_OK);
            CHECK_EQ_I64(st.tiles, rows * (rows + 1) / 2);
            CHECK(memcmp(sym, sym2, (size_t)(n * n) * e) == 0);
            int asym = 0, far = 0;
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < n; j++) {
                    if (memcmp((char *)sym + (size_t)(i * n + j) * e, (char *)sym + (size_t)(j * n + i) * e, e)) asym++;
                    const double x = mm_value(rt, sym, i * n + j), y = mm_value(rt, full, i * n + j);
                    if (fabs(x - y) > (rt == OC_MATMUL_INT32 ? 0 : 1e-4 * (fabs(y) + 1))) far++;
                }
            CHECK_EQ_I64(asym, 0);
            CHECK_EQ_I64(far, 0);
            free(a);
            free(B.data);
            free(full);
            free(sym);
            free(sym2);
            oc_context_free(ctx);
        }
}

/* A·Aᵀ tiles larger than the blocks the CPU writes them in (4 KiB a row: 1024 int32, 512
 * float64): exactly symmetric and the bytes of the full product, int8 exactly, float64 on the
 * reference loops (each element summed in k order either way). */
static void test_symmetric_blocks(void)
{
    static const oc_matmul_dtype types[] = {OC_MATMUL_INT8, OC_MATMUL_FLOAT64};
    for (size_t t = 0; t < 2; t++) {
        if (types[t] == OC_MATMUL_FLOAT64) setenv("OUTCORE_BLAS", "none", 1);
        const int64_t n = 2600, k = 5;
        oc_context *ctx = NULL;
        oc_context_create(&ctx);
        void *a = mm_random_matrix(types[t], n, k);
        const oc_matmul_dtype rt = types[t] == OC_MATMUL_INT8 ? OC_MATMUL_INT32 : OC_MATMUL_FLOAT64;
        const size_t e = oc_matmul_dtype_size(rt), es = oc_matmul_dtype_size(types[t]);
        void *full = calloc((size_t)(n * n), e), *sym = calloc((size_t)(n * n), e),
             *copy = malloc((size_t)(n * k) * es);
        memcpy(copy, a, (size_t)(n * k) * es);
        oc_matmul_array A = mem(types[t], a, n, k), B = mem(types[t], copy, n, k), Cf = mem(rt, full, n, n),
                        Cs = mem(rt, sym, n, n);
        oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
        o.backend = OC_BACKEND_CPU;
        o.tile = 1700; /* tiles of 1700 and 900: blocks of the diagonal and edge tiles */
        o.transpose_b = 1;
        CHECK(oc_matmul(ctx, &A, &B, &Cf, &o, NULL) == OC_OK);
        o.transpose_b = 0, o.gram = 1;
        oc_matmul_stats st = {.struct_size = sizeof st};
        CHECK_MSG(oc_matmul(ctx, &A, NULL, &Cs, &o, &st) == OC_OK, "%s", oc_context_last_error(ctx));
        CHECK_EQ_I64(st.tiles, 3);
        CHECK_MSG(memcmp(full, sym, (size_t)(n * n) * e) == 0, "A·Aᵀ of %s in blocks: other bytes than A·Bᵀ",
                  oc_matmul_dtype_name(types[t]));
        free(a), free(copy), free(full), free(sym);
        oc_context_free(ctx);
        unsetenv("OUTCORE_BLAS");
    }
}

/* Writes a C-order .npy of ndim dimensions and elements of descr. */
static void write_npy_nd(const char *path, const char *descr, const void *data, size_t bytes, int ndim,
                         const int64_t *shape)
{
    unsigned char h[OC_NPY_HEADER_ND_MAX];
    size_t len = oc_npy_header_nd(h, sizeof h, descr, ndim, shape);
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

/* Products accumulated in C's place, against the reference: caller memory with rows further
 * apart than its width (the gap between them untouched), A in place and op(B) = Bᵀ read
 * where it lies by the BLAS's transpose, in tiles of 16; then the plan as oc_matmul_plan
 * gives it for that C and for a .npy result. */
static void test_in_place_products(void)
{
    oc_context *ctx = NULL;
    oc_context_create(&ctx);
    const int64_t m = 70, n = 45, k = 300, ld = n + 3;
    const mm_product pr = {OC_MATMUL_FLOAT64, OC_MATMUL_FLOAT64, OC_MATMUL_DEFAULT, m, n, k, 0, 1};
    double *a = mm_random_matrix(OC_MATMUL_FLOAT64, m, k), *b = mm_random_matrix(OC_MATMUL_FLOAT64, n, k);
    double *c = malloc((size_t)(m * ld) * sizeof *c), *dense = malloc((size_t)(m * n) * sizeof *dense);
    for (int64_t i = 0; i < m * ld; i++) c[i] = -7.5;
    oc_matmul_array A = mem(OC_MATMUL_FLOAT64, a, m, k), B = mem(OC_MATMUL_FLOAT64, b, n, k);
    oc_matmul_array C = mem(OC_MATMUL_FLOAT64, c, m, n);
    C.ld = ld;
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    o.transpose_b = 1;
    o.tile = 16;
    char *plan = NULL;
    CHECK(oc_matmul_plan(ctx, &A, &B, &C, &o, 1, 0, &plan) == OC_OK && plan); /* which loops run it */
    const int blas = plan && !strstr(plan, "cpu/reference");
    free(plan);
    /* With a BLAS, a budget that no copied panel fits: only the product in place runs in it;
     * the reference loops (OUTCORE_BLAS=none, or none found) copy, within a larger one. */
    o.host_mem_bytes = blas ? 12000 : 1 << 20;
    plan = NULL;
    CHECK(oc_matmul_plan(ctx, &A, &B, &C, &o, 1, 0, &plan) == OC_OK && plan);
    CHECK_MSG(plan && strstr(plan, blas ? "\"in_place\": [\"A\", \"B\", \"C\"]" : "\"in_place\": []"), "%s", plan);
    free(plan);
    CHECK(oc_matmul_plan(ctx, &A, &B, &C, &o, 0, 0, &plan) == OC_OK && plan);
    CHECK_MSG(!blas || strstr(plan, "A and B read where they lie (transposed by the BLAS)"), "%s", plan);
    free(plan);
    oc_matmul_stats st = {.struct_size = sizeof st};
    CHECK_MSG(oc_matmul(ctx, &A, &B, &C, &o, &st) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK_MSG(st.tiles > 1, "%lld tiles", (long long)st.tiles);
    int gap = 1;
    for (int64_t i = 0; i < m; i++) {
        memcpy(dense + i * n, c + i * ld, (size_t)n * sizeof *c);
        for (int64_t j = n; j < ld; j++) gap &= c[i * ld + j] == -7.5;
    }
    CHECK_MSG(gap, "a product in place wrote between C's rows");
    CHECK(mm_off_reference(&pr, a, b, dense, OC_MATMUL_FLOAT64) == 0);
    oc_matmul_array F = OC_MATMUL_ARRAY_INIT;
    F.path = "never-written.npy"; /* a .npy result: its mapping, planned without opening it */
    CHECK(oc_matmul_plan(ctx, &A, &B, &F, &o, 1, 0, &plan) == OC_OK && plan);
    CHECK_MSG(plan && strstr(plan, blas ? "\"in_place\": [\"A\", \"B\", \"C\"]" : "\"in_place\": []"), "%s", plan);
    free(plan);
    CHECK(access("never-written.npy", F_OK) != 0);
    free(a), free(b), free(c), free(dense);
    oc_context_free(ctx);
}

/* write_tile of A·Aᵀ on tiles of any corner and shape (the writers hand it row or column
 * ranges of a tile, and rectangular tiles straddle the diagonal anywhere, so a column range
 * of a diagonal tile may lie wholly below it), every element size: equal to the rule element
 * by element ((i, j) with j >= i to (i, j) and (j, i)), nothing else of C touched. */
static void test_mirror_writes(void)
{
    static const size_t sizes[] = {1, 2, 4, 8};
    const int64_t n = 150;
    unsigned seed = 12345;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t e = sizes[s];
        unsigned char *c = malloc((size_t)(n * n) * e), *want = malloc((size_t)(n * n) * e);
        unsigned char *tile = malloc((size_t)(n * (n + 3)) * e);
        oc_mm_io io;
        memset(&io, 0, sizeof io);
        io.dest = (oc_mm_dest){.data = c, .ld = n, .elem = e, .rows = n, .cols = n};
        oc_matmul_job job;
        memset(&job, 0, sizeof job);
        job.m = job.n = n, job.symmetric = 1;
        oc_mm_io_bind(&job, &io);
        for (int round = 0; round < 60; round++) {
            seed = seed * 1103515245u + 12345u;
            const int64_t row0 = (int64_t)(seed >> 8) % n;
            seed = seed * 1103515245u + 12345u;
            /* corners from well below the diagonal's row to the right of it */
            int64_t col0 = row0 - 40 + (int64_t)(seed >> 8) % 120;
            col0 = col0 < 0 ? 0 : col0 >= n ? n - 1 : col0;
            seed = seed * 1103515245u + 12345u;
            const int64_t rows = 1 + (int64_t)(seed >> 8) % (n - row0);
            seed = seed * 1103515245u + 12345u;
            const int64_t cols = 1 + (int64_t)(seed >> 8) % (n - col0), ld = cols + round % 4;
            for (size_t b = 0; b < (size_t)(n * n) * e; b++) c[b] = want[b] = (unsigned char)(b * 7 + round);
            for (size_t b = 0; b < (size_t)(rows * ld) * e; b++) tile[b] = (unsigned char)(b * 13 + 5 + round);
            for (int64_t r = 0; r < rows; r++)
                for (int64_t q = 0; q < cols; q++) {
                    const int64_t i = row0 + r, j = col0 + q;
                    if (j < i) continue;
                    memcpy(want + (size_t)(i * n + j) * e, tile + (size_t)(r * ld + q) * e, e);
                    memcpy(want + (size_t)(j * n + i) * e, tile + (size_t)(r * ld + q) * e, e);
                }
            CHECK(oc_mm_write_tile(&job, row0, rows, col0, cols, tile, ld) == OC_OK);
            CHECK_MSG(memcmp(c, want, (size_t)(n * n) * e) == 0,
                      "element of %zu bytes, tile at (%lld, %lld), %lld x %lld", e, (long long)row0, (long long)col0,
                      (long long)rows, (long long)cols);
        }
        free(c), free(want), free(tile);
    }
}

int main(void)
{
    test_in_place_products();
    test_dtypes_and_transposes();
    test_case_table();
    test_budgets();
    test_symmetric();
    test_symmetric_blocks();
    test_mirror_writes();
    test_files();
    test_vector_files();
    test_memory_callbacks();
    test_panels_as_stored();
    return oc_test_finish();
}
