/*
 * test_matmul_integers.c - integer products on the CPU (oc_matmul): int8 x int8 exact into
 * int32 up to k = 131071 and refused past it, bool's larger bounds (bool x int8, bool x bool
 * counted into int32), the float32 edge of each on the BLAS (sgemm up to it, dgemm past it)
 * and the reference loops, exact against int64, bool x bool as numpy's bool, and the dtype
 * names parsed back.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "matmul_array.h"
#include "matmul/matmul_dtype.h"

/* int8 x int8 is exact into int32 up to k = 131071 and refused past it; the dtype names
 * parse back; bool x bool is numpy's bool unless int32 or a float is asked for; int32 of a
 * float input, and bool of any but bool inputs, are refused. */
static void test_int8_limit_and_names(void)
{
    oc_context *ctx = NULL;
    oc_context_create(&ctx);
    static int8_t a[131072];
    oc_matmul_array A = mem(OC_MATMUL_INT8, a, 1, 131071);
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.gram = 1;
    oc_matmul_dtype rt;
    CHECK(oc_matmul_result(ctx, &A, NULL, &o, &rt, NULL, NULL) == OC_OK);
    CHECK_EQ_I64(rt, OC_MATMUL_INT32);
    A.cols = 131072;
    CHECK(oc_matmul_result(ctx, &A, NULL, &o, &rt, NULL, NULL) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "overflow the int32") != NULL);
    o.dtype = OC_MATMUL_FLOAT64;
    CHECK(oc_matmul_result(ctx, &A, NULL, &o, &rt, NULL, NULL) == OC_OK);
    CHECK_EQ_I64(rt, OC_MATMUL_FLOAT64);
    for (int t = 0; t <= OC_MATMUL_BOOL; t++) {
        oc_matmul_dtype back = OC_MATMUL_DEFAULT;
        CHECK(oc_matmul_dtype_parse(oc_matmul_dtype_name((oc_matmul_dtype)t), &back) == OC_OK &&
              back == (oc_matmul_dtype)t);
    }
    CHECK(oc_matmul_dtype_name((oc_matmul_dtype)99) == NULL);
    static unsigned char bits[6] = {0, 1, 2, 0, 255, 1};
    static float f[6];
    oc_matmul_array BA = mem(OC_MATMUL_BOOL, bits, 2, 3), BT = mem(OC_MATMUL_BOOL, bits, 3, 2),
                    F = mem(OC_MATMUL_FLOAT32, f, 3, 2);
    o = (oc_matmul_options)OC_MATMUL_OPTIONS_INIT;
    CHECK(oc_matmul_result(ctx, &BA, &BT, &o, &rt, NULL, NULL) == OC_OK && rt == OC_MATMUL_BOOL); /* numpy's */
    o.gram = 1;
    CHECK(oc_matmul_result(ctx, &BA, NULL, &o, &rt, NULL, NULL) == OC_OK && rt == OC_MATMUL_BOOL);
    o.dtype = OC_MATMUL_BOOL;
    CHECK(oc_matmul_result(ctx, &BA, NULL, &o, &rt, NULL, NULL) == OC_OK && rt == OC_MATMUL_BOOL);
    o.dtype = OC_MATMUL_INT32;
    CHECK(oc_matmul_result(ctx, &BA, NULL, &o, &rt, NULL, NULL) == OC_OK && rt == OC_MATMUL_INT32);
    o.gram = 0;
    CHECK(oc_matmul_result(ctx, &BA, &F, &o, &rt, NULL, NULL) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "int8 or bool inputs alone") != NULL);
    o.dtype = OC_MATMUL_BOOL; /* bool of bool inputs alone */
    CHECK(oc_matmul_result(ctx, &BA, &F, &o, &rt, NULL, NULL) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "dtype bool is the product of bool inputs alone") != NULL);
    o.dtype = OC_MATMUL_DEFAULT;
    CHECK(oc_matmul_result(ctx, &BA, &F, &o, &rt, NULL, NULL) == OC_OK && rt == OC_MATMUL_FLOAT32);
    /* bool's sums stay exact far past int8's k: bool x int8 up to k·128 < 2^31, bool x bool
     * up to k < 2^31, counted exactly past 131071 */
    enum { KB = 200003 };
    unsigned char *row = malloc(KB), *col = malloc(KB);
    int8_t *i8 = malloc(KB);
    int64_t want = 0;
    for (int64_t i = 0; i < KB; i++) {
        row[i] = (unsigned char)(i % 3 ? 1 + i % 5 : 0), col[i] = (unsigned char)(i % 7 != 0), i8[i] = -128;
        want += row[i] && col[i];
    }
    oc_matmul_array R = mem(OC_MATMUL_BOOL, row, 1, KB), K = mem(OC_MATMUL_BOOL, col, KB, 1),
                    K8 = mem(OC_MATMUL_INT8, i8, KB, 1);
    int32_t got = -1;
    oc_matmul_array G = mem(OC_MATMUL_INT32, &got, 1, 1);
    o.dtype = OC_MATMUL_INT32;
    CHECK_MSG(oc_matmul(ctx, &R, &K, &G, &o, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK_EQ_I64(got, want);
    o.dtype = OC_MATMUL_DEFAULT;
    CHECK(oc_matmul(ctx, &R, &K8, &G, &o, NULL) == OC_OK && got == -128 * (int64_t)(KB - (KB + 2) / 3));
    A.cols = 131072; /* int8 x int8 past its bound, named */
    oc_matmul_array A8 = mem(OC_MATMUL_INT8, a, 131072, 1);
    CHECK(oc_matmul_result(ctx, &A, &A8, &o, &rt, NULL, NULL) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "int8 x int8 with k = 131072") &&
          strstr(oc_context_last_error(ctx), "exact up to k = 131071"));
    free(row), free(col), free(i8);
    oc_context_free(ctx);
}

/* bool x bool is numpy's bool, any of the ANDs (a byte not 0 is true: 2 and 255 too): against
 * that reference on the BLAS (sgemm, and dgemm past float32's exact k) and the reference loops,
 * A·B with both transposes and A·Aᵀ, in one tile and under a host budget of many tiles and K
 * panels (the sums rounded once, after the last panel), sparse enough that both values come. */
static void test_bool_result(void)
{
    static const unsigned char truths[] = {1, 2, 255};
    enum { M = 23, N = 19 };
    static const int64_t ks[] = {1, 37, 300};
    uint64_t r = 7;
    for (int l = 0; l < 2; l++) {
        if (l) setenv("OUTCORE_BLAS", "none", 1);
        else unsetenv("OUTCORE_BLAS");
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
            for (int how = 0; how < 4; how++) { /* A·B, op(A) = Aᵀ, op(B) = Bᵀ, A·Aᵀ */
                const int64_t k = ks[ki], n = how == 3 ? M : N;
                unsigned char *a = malloc((size_t)(M * k)), *b = malloc((size_t)(k * N)), c[M * M], want[M * M];
                for (int64_t i = 0; i < M * k; i++) a[i] = oc_test_rand(&r) % 8 ? 0 : truths[oc_test_rand(&r) % 3];
                for (int64_t i = 0; i < k * N; i++) b[i] = oc_test_rand(&r) % 8 ? 0 : truths[oc_test_rand(&r) % 3];
                int ones = 0;
                for (int i = 0; i < M; i++) /* the elements of op(A) and op(B) as stored below */
                    for (int j = 0; j < n; j++) {
                        int any = 0;
                        for (int64_t q = 0; q < k && !any; q++) {
                            const unsigned char x = how == 1 ? a[q * M + i] : a[i * k + q];
                            const unsigned char y = how == 3 ? a[j * k + q] : how == 2 ? b[j * k + q] : b[q * N + j];
                            any = x && y;
                        }
                        want[i * n + j] = (unsigned char)any, ones += any;
                    }
                oc_context *ctx = NULL;
                oc_context_create(&ctx);
                oc_matmul_array A = mem(OC_MATMUL_BOOL, a, how == 1 ? k : M, how == 1 ? M : k),
                                B = mem(OC_MATMUL_BOOL, b, how == 2 ? N : k, how == 2 ? k : N),
                                C = mem(OC_MATMUL_BOOL, c, M, n);
                for (int budget = 0; budget < 2; budget++) {
                    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
                    o.backend = OC_BACKEND_CPU;
                    o.transpose_a = how == 1, o.transpose_b = how == 2, o.gram = how == 3;
                    o.host_mem_bytes = budget ? 8000 : 0, o.tile = budget ? 8 : 0;
                    memset(c, 0x5a, sizeof c);
                    CHECK_MSG(oc_matmul(ctx, &A, how == 3 ? NULL : &B, &C, &o, NULL) == OC_OK, "%s",
                              oc_context_last_error(ctx));
                    CHECK_MSG(memcmp(c, want, (size_t)(M * n)) == 0, "bool k %lld how %d budget %d blas %d",
                              (long long)k, how, budget, !l);
                }
                /* both values among the results of the middle k (about 44% of ones) */
                CHECK(k != 37 || (ones > 0 && ones < M * n));
                free(a), free(b);
                oc_context_free(ctx);
            }
    }
    unsetenv("OUTCORE_BLAS");
}

/* Runs A·B into C after checking that the plan names the multiply `want` (or the reference
 * loops, without a BLAS). */
static void run_naming_multiply(oc_context *ctx, oc_matmul_array *A, oc_matmul_array *B, oc_matmul_array *C,
                                const oc_matmul_options *o, const char *want, int64_t k);

/* bool x bool past float32's exact k (2^24) runs on dgemm and is still any of the ANDs: a
 * row whose one true meets the first column's last element and misses the second's. */
static void test_bool_result_long_k(void)
{
    const int64_t k = (1 << 24) + 1;
    unsigned char *a = calloc((size_t)k, 1), *b = calloc((size_t)(2 * k), 1), c[2] = {7, 7};
    a[k - 1] = 2, b[2 * (k - 1)] = 1, b[2 * (k - 2) + 1] = 255;
    oc_context *ctx = NULL;
    oc_context_create(&ctx);
    oc_matmul_array A = mem(OC_MATMUL_BOOL, a, 1, k), B = mem(OC_MATMUL_BOOL, b, k, 2),
                    C = mem(OC_MATMUL_BOOL, c, 1, 2);
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    run_naming_multiply(ctx, &A, &B, &C, &o, "dgemm", k);
    CHECK(c[0] == 1 && c[1] == 0);
    free(a), free(b);
    oc_context_free(ctx);
}

/* Runs A·B into C after checking that the plan names the multiply `want` (or the reference
 * loops, without a BLAS). */
static void run_naming_multiply(oc_context *ctx, oc_matmul_array *A, oc_matmul_array *B, oc_matmul_array *C,
                                const oc_matmul_options *o, const char *want, int64_t k)
{
    char *plan = NULL;
    CHECK(oc_matmul_plan(ctx, A, B, C, o, 1, 0, &plan) == OC_OK && plan);
    CHECK_MSG(plan && (strstr(plan, want) || strstr(plan, "cpu/reference")), "k %lld: %s", (long long)k, plan);
    free(plan);
    CHECK_MSG(oc_matmul(ctx, A, B, C, o, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
}

/* int8 x int8 at the edge of float32's exact sums (OC_MM_INT8_F32_K_MAX: sgemm up to it,
 * dgemm past it): products of -128 with a last one of -127 (one past the edge, an odd sum
 * past 2^24 that float32 would round), and random values beside a column of -128, exact
 * against int64 on the BLAS and the reference loops; the plan names the multiply. */
static void test_int8_sums_edge(void)
{
    for (int l = 0; l < 2; l++) {
        if (l) setenv("OUTCORE_BLAS", "none", 1);
        else unsetenv("OUTCORE_BLAS");
        for (int64_t k = OC_MM_INT8_F32_K_MAX - 1; k <= OC_MM_INT8_F32_K_MAX + 1; k++)
            for (int fill = 0; fill < 2; fill++) {
                enum { M = 7, N = 5 };
                int8_t *a = malloc((size_t)(M * k)), *b = malloc((size_t)(k * N));
                uint64_t r = 99;
                /* fill 0: -128 but a last -127 (k = 1025: 1024·16384 + 16129, odd past 2^24,
                 * which float32 sums would round) */
                for (int64_t i = 0; i < M * k; i++)
                    a[i] = fill ? (int8_t)(oc_test_rand(&r) % 256 - 128) : i % k == k - 1 ? -127 : -128;
                for (int64_t i = 0; i < k * N; i++)
                    b[i] = fill && i % N ? (int8_t)(oc_test_rand(&r) % 256 - 128) : i / N == k - 1 ? -127 : -128;
                int32_t c[M * N];
                oc_context *ctx = NULL;
                oc_context_create(&ctx);
                oc_matmul_array A = mem(OC_MATMUL_INT8, a, M, k), B = mem(OC_MATMUL_INT8, b, k, N),
                                C = mem(OC_MATMUL_INT32, c, M, N);
                oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
                o.backend = OC_BACKEND_CPU;
                run_naming_multiply(ctx, &A, &B, &C, &o,
                                    l                           ? "int8 panels"
                                    : k <= OC_MM_INT8_F32_K_MAX ? "sgemm"
                                                                : "dgemm",
                                    k);
                int wrong = 0;
                for (int i = 0; i < M; i++)
                    for (int j = 0; j < N; j++) {
                        int64_t sum = 0;
                        for (int64_t q = 0; q < k; q++) sum += (int64_t)a[i * k + q] * b[q * N + j];
                        wrong += c[i * N + j] != sum;
                    }
                CHECK_MSG(wrong == 0, "int8 k %lld fill %d blas %d: %d elements wrong", (long long)k, fill, !l, wrong);
                free(a), free(b);
                oc_context_free(ctx);
            }
    }
    unsetenv("OUTCORE_BLAS");
}

/* With a bool input the float32 sums stay exact further (oc_matmul_int8_f32_k_max): bool x
 * int8 on sgemm up to k = 131072 (all -128: a sum of -2^24) and dgemm past it, bool x bool on
 * sgemm at k = 5000; exact against int64, the plan naming the multiply. */
static void test_bool_sums_edge(void)
{
    static const struct {
        oc_matmul_dtype tb;
        int64_t k;
        const char *multiply;
    } cases[] = {{OC_MATMUL_INT8, 131072, "sgemm"}, {OC_MATMUL_INT8, 131073, "dgemm"}, {OC_MATMUL_BOOL, 5000, "sgemm"}};
    CHECK_EQ_I64(oc_matmul_int8_f32_k_max(OC_MATMUL_INT8, OC_MATMUL_INT8), OC_MM_INT8_F32_K_MAX);
    CHECK_EQ_I64(oc_matmul_int8_f32_k_max(OC_MATMUL_BOOL, OC_MATMUL_BOOL), 1 << 24);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        enum { M = 3, N = 2 };
        const int64_t k = cases[c].k;
        unsigned char *a = malloc((size_t)(M * k));
        int8_t *b = malloc((size_t)(k * N));
        for (int64_t i = 0; i < M * k; i++) a[i] = (unsigned char)(i % k == 7 && i / k == 1 ? 0 : 1 + i % 3);
        for (int64_t i = 0; i < k * N; i++) b[i] = cases[c].tb == OC_MATMUL_BOOL ? (int8_t)(i % 5 != 0) : -128;
        int32_t out[M * N];
        oc_context *ctx = NULL;
        oc_context_create(&ctx);
        oc_matmul_array A = mem(OC_MATMUL_BOOL, a, M, k), B = mem(cases[c].tb, b, k, N),
                        C = mem(OC_MATMUL_INT32, out, M, N);
        oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
        o.backend = OC_BACKEND_CPU;
        o.dtype = OC_MATMUL_INT32;
        run_naming_multiply(ctx, &A, &B, &C, &o, cases[c].multiply, k);
        int wrong = 0;
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                int64_t sum = 0;
                for (int64_t q = 0; q < k; q++) sum += (a[i * k + q] != 0) * (int64_t)b[q * N + j];
                wrong += out[i * N + j] != sum;
            }
        CHECK_MSG(wrong == 0, "bool x %s, k %lld: %d elements wrong", oc_matmul_dtype_name(cases[c].tb), (long long)k,
                  wrong);
        free(a), free(b);
        oc_context_free(ctx);
    }
}

int main(void)
{
    test_int8_limit_and_names();
    test_int8_sums_edge();
    test_bool_sums_edge();
    test_bool_result();
    test_bool_result_long_k();
    return oc_test_finish();
}
