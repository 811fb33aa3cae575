/*
 * test_matmul.c - the dense product on the CPU (oc_matmul): every compute dtype and
 * transpose against a naive float64 reference within the documented error bound (int8
 * exact), on a case table of edge shapes (1 x 1, k = 1, primes, tall and skinny, empty, k =
 * 0) on the BLAS and the reference loops, host budgets so small that they
 * force many tiles and K panels giving the bytes of a large one, A·Aᵀ against the full
 * product, products accumulated where C lies, A·Aᵀ's mirror writes (test_matmul_files.c:
 * operands and results in .npy files; test_matmul_calls.c: what a C caller can get wrong;
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
#include "matmul/matmul_dtype.h"
#include "matmul/matmul_io.h"

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
    return oc_test_finish();
}
