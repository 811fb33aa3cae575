/*
 * test_matmul_cases.c - the dense product's case table on the GPU, through oc_matmul with the
 * operands and the result in host memory: the CPU's edge shapes (test_matmul.c: 1 x 1, a long
 * k beside it, k = 1, primes, tall and skinny either way, empty results, k = 0) and one whose
 * k is cut into panels, in every compute dtype and in mixed pairs that numpy promotes (each
 * promoted on the device), with both transposes; on device 0, on device 0 split into two
 * logical devices (0:2) and on devices 0 and 1 where there are two; under the default budgets
 * and under a forced tile of 16 with a device budget that cuts k into K panels and a host
 * budget that cuts the pinned slots. Each result is within the documented bound of the
 * float64 reference (int8 exactly); under one plan every device count gives the same bytes;
 * a mixed pair gives the bytes of its operand converted first, and uploads its stored bytes
 * alone. A·Aᵀ (the upper tiles, mirrored): exactly symmetric, within the bound, the same
 * bytes split or not, int8's those of the full product.
 *
 * OUTCORE_TEST_QUICK (bench/gpu_check.sh, under compute-sanitizer): one transpose, one shape
 * of each kind and device 0 alone.
 * Exits 77 when no CUDA device is usable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "matmul_array.h"
#include "matmul_product.h"
#include "engine/cuda/device.h"
#include "matmul/matmul_dtype.h"

static int quick;

static const struct {
    int64_t m, n, k;
} shapes[] = {{1, 1, 1},   {1, 1, 257}, {61, 47, 1}, {97, 89, 101}, {700, 3, 5},   {3, 700, 5},
              {5, 3, 900}, {0, 6, 7},   {6, 0, 7},   {6, 7, 0},     {45, 38, 2000}};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/* Every compute dtype, then mixed pairs numpy promotes: each promoted operand's panels cross
 * as stored (the last: asked as float64, both stored narrower). */
static const struct {
    oc_matmul_dtype a, b, requested;
} types[] = {
    {OC_MATMUL_FLOAT64, OC_MATMUL_FLOAT64, OC_MATMUL_DEFAULT},
    {OC_MATMUL_FLOAT32, OC_MATMUL_FLOAT32, OC_MATMUL_DEFAULT},
    {OC_MATMUL_FLOAT16, OC_MATMUL_FLOAT16, OC_MATMUL_DEFAULT},
    {OC_MATMUL_BFLOAT16, OC_MATMUL_BFLOAT16, OC_MATMUL_DEFAULT},
    {OC_MATMUL_INT8, OC_MATMUL_INT8, OC_MATMUL_DEFAULT},
    {OC_MATMUL_FLOAT16, OC_MATMUL_FLOAT16, OC_MATMUL_FLOAT16},
    {OC_MATMUL_INT8, OC_MATMUL_FLOAT32, OC_MATMUL_DEFAULT},
    {OC_MATMUL_UINT8, OC_MATMUL_FLOAT16, OC_MATMUL_DEFAULT},
    {OC_MATMUL_INT8, OC_MATMUL_BFLOAT16, OC_MATMUL_DEFAULT},
    {OC_MATMUL_FLOAT16, OC_MATMUL_FLOAT32, OC_MATMUL_DEFAULT},
    {OC_MATMUL_INT16, OC_MATMUL_FLOAT64, OC_MATMUL_DEFAULT},
    {OC_MATMUL_FLOAT32, OC_MATMUL_UINT16, OC_MATMUL_FLOAT64},
    /* bool (bytes other than 0 and 1 among its trues): into a float, into int8 beside int8,
     * both bool counted into int32, and bool x bool as numpy's bool */
    {OC_MATMUL_BOOL, OC_MATMUL_FLOAT32, OC_MATMUL_DEFAULT},
    {OC_MATMUL_INT8, OC_MATMUL_BOOL, OC_MATMUL_DEFAULT},
    {OC_MATMUL_BOOL, OC_MATMUL_BOOL, OC_MATMUL_INT32},
    {OC_MATMUL_BOOL, OC_MATMUL_BOOL, OC_MATMUL_DEFAULT}, /* numpy's bool: int32 sums rounded on the device */
};
#define NTYPES ((int)(sizeof types / sizeof types[0]))

/* The budgets: the defaults (tiles and panels planned), and a forced tile of 16 with a
 * device budget of 256 KiB (panels of at most a few hundred deep, below k = 2000) and a host
 * budget that holds two upload slots and the download slots. */
#define SMALL_GPU_MEM (256LL << 10)
#define SMALL_HOST_MEM (1LL << 20)

/* The device counts: device 0, device 0 as two logical devices, devices 0 and 1; and how
 * many times the budgets of device 0 alone each needs for the same plan: a logical device
 * of a split one takes its share of the device budget, and every device its share of the
 * host's. */
static const struct {
    const char *list;
    int gpu_times, host_times;
} device_lists[] = {{"0", 1, 1}, {"0:2", 2, 2}, {"0,1", 1, 2}};

static size_t result_bytes(const mm_product *p, oc_matmul_dtype rt)
{
    return (size_t)(p->m * p->n) * oc_matmul_dtype_size(rt);
}

/* Runs p on device list d under the small budgets (0: the defaults); checks against the
 * reference and returns the result. */
static void *run_on(const mm_product *p, int d, int small, oc_matmul_dtype *rt, oc_matmul_stats *st)
{
    const mm_run r = {.backend = OC_BACKEND_CUDA,
                      .devices = device_lists[d].list,
                      .host_mem = small ? SMALL_HOST_MEM * device_lists[d].host_times : 0,
                      .gpu_mem = small ? SMALL_GPU_MEM * device_lists[d].gpu_times : 0,
                      .tile = small ? 16 : 0};
    return mm_run_product(p, &r, rt, 1, st);
}

static void check_cases(int two_devices)
{
    int products = 0;
    for (int sh = 0; sh < NSHAPES; sh++) {
        if (quick && sh != 3 && sh != 7 && sh != 9 && sh != NSHAPES - 1) continue;
        for (int t = 0; t < NTYPES; t++)
            for (int tr = 0; tr < (quick ? 1 : 4); tr++)
                for (int small = 0; small < 2; small++) {
                    const mm_product p = {types[t].a,   types[t].b,   types[t].requested,
                                          shapes[sh].m, shapes[sh].n, shapes[sh].k,
                                          tr & 1,       tr >> 1};
                    oc_matmul_dtype rt;
                    oc_matmul_stats st;
                    void *first = run_on(&p, 0, small, &rt, &st);
                    ++products;
                    /* Under one plan (a forced tile, budgets that do not depend on the device
                     * count), every device count gives the same bytes. */
                    for (int d = 1; small && !quick && d < (two_devices ? 3 : 2); d++) {
                        oc_matmul_dtype rt2;
                        void *other = run_on(&p, d, small, &rt2, NULL);
                        ++products;
                        CHECK_MSG(rt2 == rt && memcmp(first, other, result_bytes(&p, rt)) == 0,
                                  "%s x %s, %lldx%lldx%lld t%d: devices %s gave other bytes than device 0",
                                  oc_matmul_dtype_name(p.ta), oc_matmul_dtype_name(p.tb), (long long)p.m,
                                  (long long)p.n, (long long)p.k, tr, device_lists[d].list);
                        free(other);
                    }
                    free(first);
                }
    }
    printf("%d products on the GPU\n", products);
}

/* Operand x (rows x cols of stored type t) converted to compute type in, as the host
 * converts it (malloc'ed). */
static void *convert(oc_matmul_dtype t, const void *x, int64_t rows, int64_t cols, oc_mm_type in)
{
    void *y = malloc((size_t)(rows * cols) * oc_mm_type_size(in) + 1);
    oc_matmul_convert(t, x, rows * cols, in, y, 1);
    return y;
}

/* A mixed pair is promoted on the device: the same bytes as its operands converted on the
 * host first (one plan: a forced tile, k in one panel), with only the stored bytes of each
 * operand uploaded (each of its tile rows' A and tile columns' B once: tile_cols·m·k elements
 * of A, tile_rows·n·k of B). */
static void check_promoted(void)
{
    static const int picks[] = {3, 10}; /* 97 x 89 x 101, 45 x 38 x 2000 */
    int pairs = 0;
    for (int t = 0; t < NTYPES; t++) {
        if (types[t].a == types[t].b && types[t].requested == OC_MATMUL_DEFAULT) continue;
        for (int s = 0; s < 2; s++)
            for (int tr = 0; tr < (quick ? 1 : 4); tr++) {
                const int64_t m = shapes[picks[s]].m, n = shapes[picks[s]].n, k = shapes[picks[s]].k;
                const int ta = tr & 1, tb = tr >> 1;
                const int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
                oc_mm_type in, out;
                oc_matmul_dtype rt;
                char why[320];
                CHECK(oc_matmul_promote(types[t].a, types[t].b, types[t].requested, &in, &out, &rt, why, sizeof why) ==
                      0);
                if (oc_matmul_dtype_of(in) == types[t].a && oc_matmul_dtype_of(in) == types[t].b) continue;
                void *a = mm_random_matrix(types[t].a, ar, ac), *b = mm_random_matrix(types[t].b, br, bc);
                void *a2 = convert(types[t].a, a, ar, ac, in), *b2 = convert(types[t].b, b, br, bc, in);
                const size_t bytes = (size_t)(m * n) * oc_matmul_dtype_size(rt);
                unsigned char *c[2] = {calloc(bytes, 1), calloc(bytes, 1)};
                int64_t up[2] = {0, 0};
                for (int v = 0; v < 2; v++) {
                    oc_context *ctx = NULL;
                    oc_context_create(&ctx);
                    const oc_matmul_dtype da = v ? oc_matmul_dtype_of(in) : types[t].a,
                                          db = v ? oc_matmul_dtype_of(in) : types[t].b;
                    oc_matmul_array A = mem(da, v ? a2 : a, ar, ac), B = mem(db, v ? b2 : b, br, bc),
                                    C = mem(rt, c[v], m, n);
                    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
                    o.transpose_a = ta, o.transpose_b = tb, o.dtype = types[t].requested;
                    o.backend = OC_BACKEND_CUDA, o.tile = 16;
                    oc_matmul_stats st = {.struct_size = sizeof st};
                    const oc_status status = oc_matmul(ctx, &A, &B, &C, &o, &st);
                    CHECK_MSG(status == OC_OK, "%s x %s: %s", oc_matmul_dtype_name(da), oc_matmul_dtype_name(db),
                              oc_context_last_error(ctx));
                    const int64_t rows = (m + 15) / 16, cols = (n + 15) / 16;
                    const int64_t want = cols * m * k * (int64_t)oc_matmul_dtype_size(da) +
                                         rows * n * k * (int64_t)oc_matmul_dtype_size(db);
                    CHECK_MSG(st.bytes_h2d == want, "%s x %s, %lldx%lldx%lld t%d: %lld bytes uploaded, %lld expected",
                              oc_matmul_dtype_name(da), oc_matmul_dtype_name(db), (long long)m, (long long)n,
                              (long long)k, tr, (long long)st.bytes_h2d, (long long)want);
                    up[v] = st.bytes_h2d;
                    oc_context_free(ctx);
                }
                CHECK_MSG(memcmp(c[0], c[1], bytes) == 0,
                          "%s x %s -> %s, %lldx%lldx%lld t%d: promoted on the device, other bytes than converted first",
                          oc_matmul_dtype_name(types[t].a), oc_matmul_dtype_name(types[t].b), oc_matmul_dtype_name(rt),
                          (long long)m, (long long)n, (long long)k, tr);
                /* an operand stored narrower uploads fewer bytes; bool into int8 as many */
                const size_t in_size = oc_mm_type_size(in);
                CHECK(oc_matmul_dtype_size(types[t].a) < in_size || oc_matmul_dtype_size(types[t].b) < in_size
                          ? up[0] < up[1]
                          : up[0] == up[1]);
                const mm_product p = {types[t].a, types[t].b, types[t].requested, m, n, k, ta, tb};
                mm_off_reference(&p, a, b, c[0], rt);
                free(a), free(b), free(a2), free(b2), free(c[0]), free(c[1]);
                ++pairs;
            }
    }
    printf("%d mixed pairs promoted on the device\n", pairs);
}

/* A·Aᵀ (gram: the upper tiles, mirrored) under a forced tile of 16: exactly symmetric,
 * within the bound of the reference, the same bytes on device 0 and on it split in two, and
 * for int8 the bytes of the full product A·Bᵀ with B a copy of A; shapes from 1 x 1 to tall
 * and skinny, a promoted A among the types. */
static void check_symmetric(void)
{
    static const struct {
        int64_t n, k;
    } sym_shapes[] = {{67, 41}, {1, 1}, {1, 300}, {37, 1}, {211, 3}};
    static const struct {
        oc_matmul_dtype t, requested;
    } sym_types[] = {{OC_MATMUL_INT8, OC_MATMUL_DEFAULT},    {OC_MATMUL_FLOAT64, OC_MATMUL_DEFAULT},
                     {OC_MATMUL_FLOAT32, OC_MATMUL_DEFAULT}, {OC_MATMUL_FLOAT16, OC_MATMUL_DEFAULT},
                     {OC_MATMUL_INT8, OC_MATMUL_FLOAT32},    {OC_MATMUL_UINT8, OC_MATMUL_FLOAT64},
                     {OC_MATMUL_BOOL, OC_MATMUL_INT32}};
    for (size_t sh = 0; sh < sizeof sym_shapes / sizeof sym_shapes[0]; sh++)
        for (size_t t = 0; t < sizeof sym_types / sizeof sym_types[0]; t++) {
            if (quick && sh > 0) continue;
            const int64_t n = sym_shapes[sh].n, k = sym_shapes[sh].k;
            const oc_matmul_dtype at = sym_types[t].t;
            void *a = mm_random_matrix(at, n, k);
            oc_matmul_dtype rt = OC_MATMUL_DEFAULT;
            oc_context *ctx = NULL;
            oc_context_create(&ctx);
            oc_matmul_array A = mem(at, a, n, k);
            oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
            o.gram = 1, o.dtype = sym_types[t].requested, o.backend = OC_BACKEND_CUDA, o.tile = 16;
            CHECK(oc_matmul_result(ctx, &A, NULL, &o, &rt, NULL, NULL) == OC_OK);
            const size_t e = oc_matmul_dtype_size(rt), bytes = (size_t)(n * n) * e;
            unsigned char *c[3] = {calloc(bytes, 1), calloc(bytes, 1), calloc(bytes, 1)};
            for (int d = 0; d < (quick ? 1 : 2); d++) {
                o.devices = device_lists[d].list;
                oc_matmul_array C = mem(rt, c[d], n, n);
                CHECK_MSG(oc_matmul(ctx, &A, NULL, &C, &o, NULL) == OC_OK, "A·Aᵀ %s %lldx%lld on %s: %s",
                          oc_matmul_dtype_name(at), (long long)n, (long long)k, o.devices, oc_context_last_error(ctx));
            }
            int asym = 0;
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = 0; j < i; j++) asym += memcmp(c[0] + (i * n + j) * e, c[0] + (j * n + i) * e, e) != 0;
            CHECK_MSG(asym == 0, "A·Aᵀ %s %lldx%lld: %d elements off the mirror", oc_matmul_dtype_name(at),
                      (long long)n, (long long)k, asym);
            if (!quick)
                CHECK_MSG(memcmp(c[0], c[1], bytes) == 0, "A·Aᵀ %s: 0:2 gave other bytes", oc_matmul_dtype_name(at));
            const mm_product p = {at, at, sym_types[t].requested, n, n, k, 0, 1};
            mm_off_reference(&p, a, a, c[0], rt);
            if (rt == OC_MATMUL_INT32) { /* exact: the full product's bytes */
                void *copy = malloc((size_t)(n * k) + 1);
                memcpy(copy, a, (size_t)(n * k));
                oc_matmul_array B = mem(at, copy, n, k), C = mem(rt, c[2], n, n);
                oc_matmul_options f = o;
                f.gram = 0, f.transpose_b = 1, f.devices = NULL;
                CHECK(oc_matmul(ctx, &A, &B, &C, &f, NULL) == OC_OK && memcmp(c[0], c[2], bytes) == 0);
                free(copy);
            }
            free(a), free(c[0]), free(c[1]), free(c[2]);
            oc_context_free(ctx);
        }
}

/* bool's int32 sums are exact past int8 x int8's bound on k (131071): bool x bool and bool x
 * int8 with k = 200003, in one tile and under the small budgets (K panels), against counts
 * made here. */
static void check_bool_long_k(void)
{
    enum { M = 3, N = 2, K = 200003 };
    unsigned char *a = malloc((size_t)M * K), *b = malloc((size_t)K * N);
    int8_t *b8 = malloc((size_t)K * N);
    int64_t want[M * N] = {0}, want8[M * N] = {0};
    for (int64_t i = 0; i < (int64_t)M * K; i++) a[i] = (unsigned char)(i % 3 ? 1 + i % 4 : 0);
    for (int64_t i = 0; i < (int64_t)K * N; i++)
        b[i] = (unsigned char)(i % 5 != 0), b8[i] = (int8_t)(i % 7 ? -128 : 127);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            for (int64_t l = 0; l < K; l++)
                if (a[i * K + l]) want[i * N + j] += b[l * N + j] != 0, want8[i * N + j] += b8[l * N + j];
    for (int small = 0; small < 2; small++)
        for (int t = 0; t < 2; t++) {
            int32_t c[M * N];
            memset(c, 0xA5, sizeof c);
            oc_context *ctx = NULL;
            oc_context_create(&ctx);
            oc_matmul_array A = mem(OC_MATMUL_BOOL, a, M, K),
                            B = t ? mem(OC_MATMUL_INT8, b8, K, N) : mem(OC_MATMUL_BOOL, b, K, N),
                            C = mem(OC_MATMUL_INT32, c, M, N);
            oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
            o.dtype = OC_MATMUL_INT32, o.backend = OC_BACKEND_CUDA;
            if (small) o.gpu_mem_bytes = 4LL << 20, o.tile = 16;
            CHECK_MSG(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_OK, "bool x %s, k = %d: %s", t ? "int8" : "bool", K,
                      oc_context_last_error(ctx));
            int bad = 0;
            for (int e = 0; e < M * N; e++) bad += c[e] != (t ? want8 : want)[e];
            CHECK_MSG(bad == 0, "bool x %s, k = %d%s: %d counts wrong", t ? "int8" : "bool", K,
                      small ? ", small budget" : "", bad);
            oc_context_free(ctx);
        }
    free(a), free(b), free(b8);
}

int main(void)
{
    if (!oc_cuda_device_usable(0)) {
        printf("SKIPPED: no usable CUDA device\n");
        oc_test_skip("no usable CUDA device");
        return oc_test_finish();
    }
    const char *q = getenv("OUTCORE_TEST_QUICK");
    quick = q && *q && strcmp(q, "0") != 0;
    const int two = oc_cuda_device_usable(1) != 0;
    if (!two) printf("one CUDA device: devices 0,1 are not run\n");
    check_cases(two);
    check_promoted();
    check_symmetric();
    check_bool_long_k();
    return oc_test_finish();
}
