/*
 * test_matmul_calls.c - oc_matmul as a C caller meets it: memory marked gpu that is not
 * refused, each call starting its job clean (a cancelled product does not cancel the next),
 * what a caller can get wrong (flags, strides past the address space, C over an operand,
 * struct sizes of no version) refused before any memory is touched, operands off their
 * alignment read right, and a float64 element rounded once into float16.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "matmul_array.h"
#include "matmul/matmul_source.h"
#include "half_reference.h"
#include "matmul/mm_half.h"

/* Memory marked gpu that is host memory is refused before anything is read or written,
 * naming the operand: a build without CUDA has no GPU memory, a build with it asks the
 * driver (and on a machine without a GPU finds none); GPU memory off its element's boundary
 * is refused as such. */
static void test_gpu_memory_refused(void)
{
    oc_context *ctx = NULL;
    oc_context_create(&ctx);
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1}, c[4] = {-1, -1, -1, -1};
    oc_matmul_array A = mem(OC_MATMUL_FLOAT32, a, 2, 3), B = mem(OC_MATMUL_FLOAT32, b, 3, 2);
    oc_matmul_array C = mem(OC_MATMUL_FLOAT32, c, 2, 2);
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    const char *labels[3] = {"A:", "B:", "C:"};
    for (int which = 0; which < 3; which++) {
        A.gpu = which == 0, B.gpu = which == 1, C.gpu = which == 2;
        const oc_status st = oc_matmul(ctx, &A, &B, &C, &o, NULL);
        CHECK(st == OC_ERR_INVALID_ARGUMENT || st == OC_ERR_UNSUPPORTED);
        CHECK(strncmp(oc_context_last_error(ctx), labels[which], 2) == 0);
        CHECK(strstr(oc_context_last_error(ctx), "GPU") != NULL || strstr(oc_context_last_error(ctx), "gpu") != NULL);
        CHECK(c[0] == -1 && c[3] == -1);
    }
    /* GPU memory that does not start on its element's boundary: refused before the driver is
     * asked (a build without CUDA refuses all GPU memory). */
    static float storage[8];
    oc_matmul_array odd = mem(OC_MATMUL_FLOAT32, (char *)storage + 2, 2, 3);
    odd.gpu = 1;
    A.gpu = B.gpu = C.gpu = 0;
    const oc_status odd_st = oc_matmul(ctx, &odd, &B, &C, &o, NULL);
    CHECK(odd_st == OC_ERR_INVALID_ARGUMENT || odd_st == OC_ERR_UNSUPPORTED);
    CHECK_MSG(strncmp(oc_context_last_error(ctx), "A:", 2) == 0 &&
                  (strstr(oc_context_last_error(ctx), "not aligned to its 4-byte elements") ||
                   strstr(oc_context_last_error(ctx), "no CUDA backend")),
              "%s", oc_context_last_error(ctx));
    CHECK(c[0] == -1 && c[3] == -1);
    CHECK(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_OK);
    CHECK(c[0] == 4 && c[1] == 5 && c[2] == 10 && c[3] == 11);
    /* The first version of the struct ends before gpu, which then reads as 0 whatever lies
     * there; a size of neither version is refused. */
    A.struct_size = B.struct_size = C.struct_size = OC_MM_ARRAY_V1_SIZE;
    A.gpu = B.gpu = C.gpu = 1;
    c[0] = c[3] = -1;
    CHECK(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_OK);
    CHECK(c[0] == 4 && c[3] == 11);
    A.struct_size = OC_MM_ARRAY_V1_SIZE + 1;
    CHECK(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "struct_size"));
    A.struct_size = B.struct_size = C.struct_size = sizeof A;
    A.gpu = B.gpu = C.gpu = 0;
    /* A backend out of range is refused with a message that lists every name. */
    o.backend = (oc_backend)OC_BACKEND_COUNT;
    CHECK(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < OC_BACKEND_COUNT; ++i)
        CHECK_MSG(strstr(oc_context_last_error(ctx), oc_backend_name((oc_backend)i)), "%s", oc_context_last_error(ctx));
    o.backend = OC_BACKEND_AUTO;
    /* A struct of no version, as large as its own size: refused without a read past its end
     * (AddressSanitizer's build checks the "without"). */
    size_t *stub = malloc(sizeof *stub);
    CHECK(stub != NULL);
    *stub = sizeof *stub;
    const oc_matmul_array *bare = (const oc_matmul_array *)stub;
    oc_matmul_dtype dt;
    int64_t rows, cols;
    char *text = NULL;
    CHECK(oc_matmul(ctx, bare, &B, &C, &o, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strncmp(oc_context_last_error(ctx), "A: oc_matmul_array.struct_size is 8", 35) == 0);
    CHECK(oc_matmul(ctx, &A, bare, &C, &o, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_matmul(ctx, &A, &B, bare, &o, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strncmp(oc_context_last_error(ctx), "C: oc_matmul_array.struct_size is 8", 35) == 0);
    CHECK(oc_matmul_result(ctx, bare, &B, &o, &dt, &rows, &cols) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_matmul_plan(ctx, &A, &B, bare, &o, 0, 0, &text) == OC_ERR_INVALID_ARGUMENT && text == NULL);
    free(stub);
    /* Options of version 1 (before resume, 96 bytes on LP64 as its compiler made them): a
     * resume flag past them is never read (it would refuse this memory output). */
    A.struct_size = B.struct_size = C.struct_size = sizeof A;
    A.gpu = B.gpu = C.gpu = 0;
    oc_matmul_options v1 = o;
    v1.struct_size = OC_STRUCT_VERSION_SIZE(oc_matmul_options, resume);
    v1.resume = 1;
    c[0] = c[3] = -1;
    CHECK_MSG(oc_matmul(ctx, &A, &B, &C, &v1, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK(c[0] == 4 && c[3] == 11);
    v1.struct_size = offsetof(oc_matmul_options, resume) - 8;
    CHECK(oc_matmul(ctx, &A, &B, &C, &v1, NULL) == OC_ERR_INVALID_ARGUMENT);
    oc_context_free(ctx);
}

static void cancel_at_first_report(void *user, double done, double total)
{
    (void)done, (void)total;
    oc_context_cancel((oc_context *)user);
}

/* A job starts clean: a product cancelled from its progress callback returns
 * OC_ERR_CANCELLED, and the next product on the same context runs (its cancel flag and
 * error cleared); a cancel made between jobs is not the next job's. */
static void test_cancel_then_again(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    double a[4] = {1, 2, 3, 4}, c[4] = {0};
    oc_matmul_array A = mem(OC_MATMUL_FLOAT64, a, 2, 2), C = mem(OC_MATMUL_FLOAT64, c, 2, 2);
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    o.progress = cancel_at_first_report;
    o.progress_user = ctx;
    CHECK(oc_matmul(ctx, &A, &A, &C, &o, NULL) == OC_ERR_CANCELLED);
    o.progress = NULL;
    CHECK_MSG(oc_matmul(ctx, &A, &A, &C, &o, NULL) == OC_OK, "after a cancelled job: %s", oc_context_last_error(ctx));
    CHECK(c[0] == 7 && c[1] == 10 && c[2] == 15 && c[3] == 22);
    oc_context_cancel(ctx);
    int64_t rows = 0;
    CHECK(oc_matmul_result(ctx, &A, &A, &o, NULL, &rows, NULL) == OC_OK && rows == 2);
    oc_context_cancel(ctx);
    c[0] = 0;
    CHECK(oc_matmul(ctx, &A, &A, &C, &o, NULL) == OC_OK && c[0] == 7);
    oc_context_free(ctx);
}

/* A float64 element converted to float16 is rounded once (numpy's astype), not through
 * float32 first: near every half's midpoint, above and below it by less than float32 sees. */
static void test_double_to_half(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 0x7bff && bad < 5; ++h) {
        const double mid = ((double)oc_mm_half_to_float((uint16_t)h) + oc_mm_half_to_float((uint16_t)(h + 1))) / 2;
        const double probes[] = {mid, mid * (1 + 0x1p-40), mid * (1 - 0x1p-40), mid * (1 + 0x1p-30),
                                 mid * (1 - 0x1p-52)};
        for (size_t i = 0; i < sizeof probes / sizeof probes[0]; ++i) {
            const uint16_t got = oc_mm_double_to_half(probes[i]), want = half_reference(probes[i]);
            const uint16_t neg = oc_mm_double_to_half(-probes[i]);
            if (got != want || neg != (uint16_t)(want | 0x8000u)) {
                CHECK_MSG(0, "float16 of %.17g: 0x%04x (negated 0x%04x), expected 0x%04x", probes[i], got, neg, want);
                bad++;
            }
        }
    }
    CHECK(oc_mm_double_to_half(1e300) == 0x7c00 && oc_mm_double_to_half(-1e300) == 0xfc00);
    CHECK((oc_mm_double_to_half(NAN) & 0x7e00u) == 0x7e00u);
    /* The product: 1 + 2^-11 + 2^-40 is above the midpoint of 1 and its next half, 1 + 2^-10. */
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    double a = 1 + 0x1p-11 + 0x1p-40, b = 1;
    uint16_t c = 0;
    oc_matmul_array A = mem(OC_MATMUL_FLOAT64, &a, 1, 1), B = mem(OC_MATMUL_FLOAT64, &b, 1, 1);
    oc_matmul_array C = mem(OC_MATMUL_FLOAT16, &c, 1, 1);
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    o.dtype = OC_MATMUL_FLOAT16;
    CHECK_MSG(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK_MSG(c == 0x3c01, "float16 product 0x%04x, expected 0x3c01", c);
    oc_context_free(ctx);
}

/* What a C caller can get wrong is refused before any memory is touched: flags other than 0
 * and 1, a row stride that would reach past the address space, C in the operands' memory, a
 * struct of no version's size; and host memory off its elements' alignment is read right. */
static void test_caller_mistakes(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    double a[64], b[64], c[64];
    for (int i = 0; i < 64; ++i) a[i] = i % 7 - 3, b[i] = i % 5 - 2;
    oc_matmul_array A = mem(OC_MATMUL_FLOAT64, a, 8, 8), B = mem(OC_MATMUL_FLOAT64, b, 8, 8);
    oc_matmul_array C = mem(OC_MATMUL_FLOAT64, c, 8, 8);
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    o.transpose_a = 2;
    CHECK(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "transpose_a 2: expected 0 or 1"));
    o.transpose_a = 0;
    o.tf32 = -1;
    CHECK(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_ERR_INVALID_ARGUMENT);
    o.tf32 = 0;
    oc_matmul_array huge = A;
    huge.ld = INT64_MAX / 2;
    CHECK(oc_matmul(ctx, &huge, &B, &C, &o, NULL) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "past the end of the address space"));
    huge = C;
    huge.ld = INT64_MAX / 4;
    CHECK(oc_matmul(ctx, &A, &B, &huge, &o, NULL) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "C: 8 x 8 elements with ld"));
    /* C on A (A·Aᵀ into A), and C overlapping B by one row. */
    o.gram = 1;
    oc_matmul_array onto = mem(OC_MATMUL_FLOAT64, a, 8, 8);
    CHECK(oc_matmul(ctx, &A, NULL, &onto, &o, NULL) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "C shares memory with A"));
    o.gram = 0;
    double both[128];
    memcpy(both, b, sizeof b);
    oc_matmul_array B2 = mem(OC_MATMUL_FLOAT64, both, 8, 8), C2 = mem(OC_MATMUL_FLOAT64, both + 56, 8, 8);
    CHECK(oc_matmul(ctx, &A, &B2, &C2, &o, NULL) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "C shares memory with B"));
    C2.data = both + 64; /* just past B: fine */
    CHECK(oc_matmul(ctx, &A, &B2, &C2, &o, NULL) == OC_OK);
    /* Column blocks of one buffer, rows 16 apart: B in columns 0..7, C in 8..15 (apart), then
     * C in 4..11 and 12..19 (its rows meet B's first rows and the next ones), and C with rows
     * 17 apart (a shared span is refused when the strides differ). */
    double wide[8 * 16 + 8];
    for (int i = 0; i < 8; ++i) memcpy(wide + 16 * i, b + 8 * i, 8 * sizeof(double));
    oc_matmul_array Bw = mem(OC_MATMUL_FLOAT64, wide, 8, 8), Cw = mem(OC_MATMUL_FLOAT64, wide + 8, 8, 8);
    Bw.ld = Cw.ld = 16;
    CHECK(oc_matmul(ctx, &A, &Bw, &Cw, &o, NULL) == OC_OK);
    double want[64];
    oc_matmul_array W = mem(OC_MATMUL_FLOAT64, want, 8, 8);
    CHECK(oc_matmul(ctx, &A, &B, &W, &o, NULL) == OC_OK);
    int same = 1;
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j) same &= wide[16 * i + 8 + j] == want[8 * i + j] && wide[16 * i + j] == b[8 * i + j];
    CHECK(same);
    Cw.data = wide + 4;
    CHECK(oc_matmul(ctx, &A, &Bw, &Cw, &o, NULL) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "C shares memory with B"));
    Cw.data = wide + 12;
    CHECK(oc_matmul(ctx, &A, &Bw, &Cw, &o, NULL) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "C shares memory with B"));
    Cw.data = wide + 8;
    Cw.rows = 1; /* one row of C beside B's first: apart whatever its stride */
    oc_matmul_array A1 = mem(OC_MATMUL_FLOAT64, a, 1, 8);
    CHECK(oc_matmul(ctx, &A1, &Bw, &Cw, &o, NULL) == OC_OK);
    Cw.rows = 8;
    double wider[8 * 17];
    Cw.data = wider + 8, Cw.ld = 17;
    Bw.data = wider;
    CHECK(oc_matmul(ctx, &A, &Bw, &Cw, &o, NULL) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "C shares memory with B"));
    /* Struct sizes that are no version's. */
    oc_matmul_stats st = {.struct_size = 0};
    CHECK(oc_matmul(ctx, &A, &B, &C, &o, &st) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "oc_matmul_stats.struct_size is 0"));
    o.struct_size = sizeof o + 8;
    CHECK(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_ERR_INVALID_ARGUMENT);
    o.struct_size = sizeof o;
    A.struct_size = sizeof A + 8;
    CHECK(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_ERR_INVALID_ARGUMENT);
    A.struct_size = sizeof A;
    oc_matmul_dtype t;
    CHECK(oc_matmul_dtype_parse("float32", NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_matmul_dtype_parse("float32", &t) == OC_OK && t == OC_MATMUL_FLOAT32);
    /* float32 operands one byte off their alignment: the same product as aligned. */
    float fa[16], fb[16], fc[16], gc[16];
    unsigned char raw[2 * 16 * sizeof(float) + 2];
    for (int i = 0; i < 16; ++i) fa[i] = (float)(i % 3) - 1.5f, fb[i] = (float)(i % 4) * 0.25f;
    memcpy(raw + 1, fa, sizeof fa);
    memcpy(raw + 1 + sizeof fa, fb, sizeof fb);
    oc_matmul_array FA = mem(OC_MATMUL_FLOAT32, fa, 4, 4), FB = mem(OC_MATMUL_FLOAT32, fb, 4, 4);
    oc_matmul_array FC = mem(OC_MATMUL_FLOAT32, fc, 4, 4), GC = mem(OC_MATMUL_FLOAT32, gc, 4, 4);
    CHECK(oc_matmul(ctx, &FA, &FB, &FC, &o, NULL) == OC_OK);
    FA.data = raw + 1, FB.data = raw + 1 + sizeof fa;
    CHECK(oc_matmul(ctx, &FA, &FB, &GC, &o, NULL) == OC_OK && memcmp(fc, gc, sizeof fc) == 0);
    oc_context_free(ctx);
}

int main(void)
{
    test_gpu_memory_refused();
    test_cancel_then_again();
    test_caller_mistakes();
    test_double_to_half();
    return oc_test_finish();
}
