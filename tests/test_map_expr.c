/*
 * test_map_expr.c - map's parser, type rules and broadcasting: syntax errors at the right
 * column, NEP 50 promotion and numpy's loop types, broadcast shapes and their errors, and a
 * small evaluation against a plain C loop. The differential test against numpy itself is
 * tests/python/test_map_numpy.py.
 */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/isa.h"
#include "map/map_codegen.h"
#include "map/map_expr.h"
#include "map/map_plan.h"
#include "map/map_types.h"
#include "harness.h"

static oc_context *ctx;

static int syntax_column(const char *expr)
{
    oc_map_expr e;
    if (oc_map_parse(ctx, expr, &e) == OC_OK) {
        oc_map_expr_free(&e);
        return 0;
    }
    int col = -1;
    if (sscanf(oc_context_last_error(ctx), "syntax error in the expression at column %d:", &col) != 1) return -1;
    return col;
}

static void test_syntax_errors(void)
{
    static const struct {
        const char *expr;
        int column;
    } cases[] = {
        {"a * * b", 5},
        {"a +", 4},
        {"(a + b", 7},
        {"a + b)", 6},
        {"", 1},
        {"a $ b", 3},
        {"a < b < c", 7},
        {"sqrt(a,", 8},
        {"1.2.3", 1},
        {"a b", 3},
        {"0123", 1},
        {"a * b", 0},
        {"-a ** -b", 0},
        {"where(a > 0, a, -a)", 0},
        {"0x1F + 0b101 + 1_000 + 2.5e-3 + .5", 0},
        /* Python's literals: an underscore only between two digits, or after a base prefix. */
        {"0x_1f + 0o_7 + 0b_1 + 1_0.5_0e1_0 + 1.e5 + 0_0", 0},
        {"1_000_", 6},
        {"1__000", 2},
        {"1_.5", 2},
        {"1._5", 3},
        {"1e_3", 3},
        {"1e3_", 4},
        {"a + 0x1f_", 9},
        {"0x__1f", 4},
        {"0x_", 3},
        {"1e", 1},
        {"0b12", 1},
        {"18446744073709551616", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_MSG(syntax_column(cases[i].expr) == cases[i].column, "'%s': column %d, expected %d (%s)", cases[i].expr,
                  syntax_column(cases[i].expr), cases[i].column, oc_context_last_error(ctx));
    oc_map_expr e;
    /* An integer past uint64 is valid Python: the parse says it is out of range, not malformed. */
    CHECK(oc_map_parse(ctx, "a + 18446744073709551616", &e) == OC_ERR_INPUT && e.out_of_range);
    CHECK(strstr(oc_context_last_error(ctx), "out of range: above 2^64 - 1") != NULL);
    CHECK(oc_map_parse(ctx, "a + 1_", &e) == OC_ERR_INPUT && !e.out_of_range);
    CHECK(oc_map_parse(ctx, "18446744073709551615", &e) == OC_OK && e.nodes[e.root].value.u == UINT64_MAX);
    oc_map_expr_free(&e);
    CHECK(oc_map_parse(ctx, "a + nosuch(a)", &e) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "unknown function 'nosuch' in the expression (column 5; known: ") != NULL);
    /* A literal of any length Python takes: 200 digits past the point, and 200 zeros. */
    char longer[512] = "0.";
    memset(longer + 2, '0', 200);
    strcpy(longer + 202, "1");
    CHECK(oc_map_parse(ctx, longer, &e) == OC_OK && e.nodes[e.root].value.f == 1e-201);
    oc_map_expr_free(&e);
    char zeros[512] = "0x";
    memset(zeros + 2, '0', 300);
    strcpy(zeros + 302, "ff");
    CHECK(oc_map_parse(ctx, zeros, &e) == OC_OK && e.nodes[e.root].value.u == 255);
    oc_map_expr_free(&e);
    CHECK(oc_map_parse(ctx, "where(a, b)", &e) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "where() takes 3 arguments, 2 given") != NULL);
}

static void test_promotion_rules(void)
{
    /* Properties of numpy.result_type over the eleven types. */
    for (int a = 0; a < OC_MT_COUNT; a++) {
        CHECK(oc_mt_promote(a, a) == a);
        CHECK(oc_mt_promote(MT_BOOL, a) == a);
        CHECK(oc_mt_can_cast_same_kind(a, a));
        CHECK(oc_mt_can_cast_same_kind(MT_BOOL, a));
        for (int b = 0; b < OC_MT_COUNT; b++) {
            int r = oc_mt_promote(a, b);
            CHECK(r == oc_mt_promote(b, a));
            /* The result holds both: a safe cast from each, so same_kind too. */
            CHECK(oc_mt_can_cast_same_kind(a, r) && oc_mt_can_cast_same_kind(b, r));
        }
    }
    /* numpy's documented corners. */
    CHECK(oc_mt_promote(MT_I64, MT_U64) == MT_F64);
    CHECK(oc_mt_promote(MT_I8, MT_U8) == MT_I16);
    CHECK(oc_mt_promote(MT_U32, MT_I32) == MT_I64);
    CHECK(oc_mt_promote(MT_I16, MT_F32) == MT_F32);
    CHECK(oc_mt_promote(MT_I32, MT_F32) == MT_F64);
    CHECK(!oc_mt_can_cast_same_kind(MT_I8, MT_U8));
    CHECK(oc_mt_can_cast_same_kind(MT_U8, MT_I8));
    CHECK(!oc_mt_can_cast_same_kind(MT_F32, MT_I64));
    CHECK(oc_mt_can_cast_same_kind(MT_F64, MT_F32));
    CHECK(oc_mt_parse("float32") == MT_F32 && oc_mt_parse("f8") == MT_F64 && oc_mt_parse("?") == MT_BOOL);
    CHECK(oc_mt_from_descr("<f8") == MT_F64 && oc_mt_from_descr("|b1") == MT_BOOL && oc_mt_from_descr(">i4") == -1);
}

/* The result type of expr over arrays a (type ta) and b (type tb), -1 on error. */
static int result_type(const char *expr, int ta, int tb)
{
    double da = 1, db = 1;
    int64_t shape[1] = {1};
    oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
    in[0].name = "a", in[0].data = &da, in[0].dtype = ta, in[0].ndim = 1, in[0].shape = shape;
    in[1].name = "b", in[1].data = &db, in[1].dtype = tb, in[1].ndim = 1, in[1].shape = shape;
    oc_map_scalar s[1] = {{"r", "0.2"}};
    oc_map *m = NULL;
    if (oc_map_create(ctx, expr, in, 2, s, 1, NULL, &m) != OC_OK) return -1;
    int t = oc_map_result_dtype(m);
    oc_map_free(m);
    return t;
}

static void test_nep50(void)
{
    static const struct {
        const char *expr;
        int ta, tb, want;
    } cases[] = {
        {"a * r", MT_F32, MT_F32, MT_F32},   /* weak float keeps float32 */
        {"a * 2", MT_U8, MT_U8, MT_U8},      /* weak int keeps uint8 */
        {"a * 2.5", MT_I16, MT_I16, MT_F64}, /* weak float with ints: float64 */
        {"a + 1", MT_BOOL, MT_BOOL, MT_I64}, /* weak int with bool: int64 */
        {"a / b", MT_I8, MT_I8, MT_F64},     /* true division of ints */
        {"a / b", MT_F32, MT_F32, MT_F32},
        {"a // b", MT_BOOL, MT_BOOL, MT_I8}, /* no bool loop: int8 */
        {"a < b", MT_F64, MT_I8, MT_BOOL},
        {"a & b", MT_U8, MT_I8, MT_I16},
        {"sqrt(a)", MT_I16, MT_I16, MT_F32},
        {"sqrt(a)", MT_I64, MT_I64, MT_F64},
        {"a ** 2", MT_BOOL, MT_BOOL, MT_I8}, /* numpy.square */
        {"where(a > 0, a, 0)", MT_F32, MT_F32, MT_F32},
        {"2 * 3", MT_F32, MT_F32, MT_I64}, /* Python scalars alone: numpy's default int */
        {"a - b", MT_BOOL, MT_BOOL, -1},   /* numpy has no boolean subtract */
        {"a & b", MT_F32, MT_I8, -1},
        {"a + 300", MT_U8, MT_U8, -1},      /* OverflowError in numpy */
        {"a / 300", MT_U8, MT_U8, MT_F64},  /* but not through a float loop */
        {"a < 300", MT_U8, MT_U8, MT_BOOL}, /* comparisons are exact */
        {"sqrt(a)", MT_U8, MT_U8, -1},      /* float16 */
        /* arctan2: the smallest float both operands cast to safely, not their common type's */
        {"arctan2(a, b)", MT_I8, MT_U8, -1}, /* float16 */
        {"arctan2(a, b)", MT_I8, MT_U16, MT_F32},
        {"arctan2(a, b)", MT_I16, MT_U16, MT_F32},
        {"arctan2(a, b)", MT_U16, MT_BOOL, MT_F32},
        {"arctan2(a, b)", MT_I32, MT_U32, MT_F64},
        {"arctan2(a, b)", MT_U64, MT_I8, MT_F64},
        {"arctan2(a, b)", MT_F32, MT_I16, MT_F32},
        {"arctan2(a, b)", MT_F32, MT_I32, MT_F64},
        {"arctan2(a, 2)", MT_U8, MT_U8, -1},           /* the Python int takes uint8: float16 */
        {"arctan2(a, 70000)", MT_I16, MT_I16, MT_F32}, /* a float loop: no bounds check */
        {"arctan2(a, 2.5)", MT_U8, MT_U8, MT_F64},
        {"clip(5, a, b)", MT_I8, MT_I8, MT_I64}, /* numpy.clip makes its first operand an array */
        /* Python ints are int64's and uint64's values, with numpy's bounds */
        {"a + 18446744073709551615", MT_U64, MT_U64, MT_U64},
        {"a + 18446744073709551615", MT_I64, MT_I64, -1},
        {"a < 18446744073709551615", MT_I8, MT_I8, MT_BOOL}, /* exact */
        {"a < 18446744073709551615", MT_BOOL, MT_BOOL, -1},  /* bool meets it as int64 */
        {"a + -9223372036854775808", MT_I64, MT_I64, MT_I64},
        {"a + -9223372036854775808", MT_U64, MT_U64, -1},
        {"a - 9223372036854775808 * 2", MT_U64, MT_U64, -1}, /* 2^64 */
        {"a + 18446744073709551616", MT_U64, MT_U64, -1},
        {"18446744073709551615 + 0", MT_F32, MT_F32, MT_U64},     /* numpy.asarray's type */
        {"minimum(18446744073709551615, 1)", MT_F32, MT_F32, -1}, /* int64, as numpy */
        {"arctan2(18446744073709551615, 1)", MT_F32, MT_F32, MT_F64},
        {"a ** 9223372036854775808", MT_I64, MT_I64, -1},      /* out of bounds, not a negative power */
        {"a ** 18446744073709551615", MT_F64, MT_F64, MT_F64}, /* not numpy.reciprocal */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = result_type(cases[i].expr, cases[i].ta, cases[i].tb);
        CHECK_MSG(got == cases[i].want, "%s over %s, %s: %s, expected %s (%s)", cases[i].expr, oc_mt_name(cases[i].ta),
                  oc_mt_name(cases[i].tb), got < 0 ? "error" : oc_mt_name(got),
                  cases[i].want < 0 ? "error" : oc_mt_name(cases[i].want), oc_context_last_error(ctx));
    }
}

static void test_broadcast_and_eval(void)
{
    /* a: 4 x 1 x 3 int16, b: 5 x 1 float32 -> 4 x 5 x 3 float32 */
    int16_t a[12];
    float b[5];
    for (int i = 0; i < 12; i++) a[i] = (int16_t)(i * 7 - 40);
    for (int i = 0; i < 5; i++) b[i] = (float)i * 0.25f - 0.5f;
    int64_t sa[3] = {4, 1, 3}, sb[2] = {5, 1};
    oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
    in[0].name = "a", in[0].data = a, in[0].dtype = OC_MAP_INT16, in[0].ndim = 3, in[0].shape = sa;
    in[1].name = "b", in[1].data = b, in[1].dtype = OC_MAP_FLOAT32, in[1].ndim = 2, in[1].shape = sb;
    oc_map *m = NULL;
    CHECK(oc_map_create(ctx, "a * b - a // 3", in, 2, NULL, 0, NULL, &m) == OC_OK);
    if (!m) return;
    int64_t shape[OC_MAP_MAX_DIMS];
    CHECK(oc_map_result_shape(m, shape) == 3);
    CHECK(shape[0] == 4 && shape[1] == 5 && shape[2] == 3);
    CHECK(oc_map_result_dtype(m) == OC_MAP_FLOAT32);
    float out[60];
    CHECK(oc_map_run(ctx, m, NULL, out, NULL) == OC_OK);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            for (int k = 0; k < 3; k++) {
                int16_t x = a[i * 3 + k];
                int16_t q = (int16_t)(x / 3 - ((x % 3 != 0) && (x < 0)));
                float want = (float)x * b[j] - (float)q;
                CHECK(out[(i * 5 + j) * 3 + k] == want);
            }
    oc_map_free(m);

    /* The message names both inputs with their shapes. */
    int64_t sc[2] = {999999, 500}, sd[2] = {1000000, 500};
    in[0].shape = sd, in[0].ndim = 2;
    in[1].shape = sc;
    CHECK(oc_map_create(ctx, "a * b", in, 2, NULL, 0, NULL, &m) == OC_ERR_INPUT);
    CHECK_MSG(strcmp(oc_context_last_error(ctx), "shapes do not broadcast: a is 1000000 x 500, b is 999999 x 500") == 0,
              "%s", oc_context_last_error(ctx));
}

/* Runs expr over in[0..n) (and scalars) into out; OC_OK or the error. */
static oc_status run_into(const char *expr, oc_map_array *in, int n, const oc_map_scalar *s, int ns,
                          const oc_map_options *o, void *out)
{
    oc_map *m = NULL;
    oc_status st = oc_map_create(ctx, expr, in, n, s, ns, o, &m);
    if (st == OC_OK) st = oc_map_run(ctx, m, NULL, out, NULL);
    oc_map_free(m);
    return st;
}

/* uint64 against a signed type compares exactly (numpy's mixed-sign comparison loops), not in
 * float64, which makes 2^62 + 1 equal 2^62 and loses every value above 2^53. */
static void test_uint64_signed_comparisons(void)
{
    enum { N = 8 };
    static const uint64_t u[N] = {(1ULL << 62) + 1, 1ULL << 63, UINT64_MAX, 0, 5, UINT64_MAX, 1ULL << 63, 7};
    static const int64_t s[N] = {1LL << 62, -1, -1, -1, 5, INT64_MAX, INT64_MIN, 8};
    static const char *ops[] = {"==", "!=", "<", "<=", ">", ">="};
    int64_t shape[1] = {N};
    for (int t = MT_I8; t <= MT_I64; t++) {
        unsigned char sv[N * 8];
        for (int k = 0; k < N; k++) {
            int64_t v = t == MT_I64 ? s[k] : k == 0 ? 100 : s[k] % 100; /* in every type's range */
            switch (t) {
            case MT_I8:
                ((int8_t *)sv)[k] = (int8_t)v;
                break;
            case MT_I16:
                ((int16_t *)sv)[k] = (int16_t)v;
                break;
            case MT_I32:
                ((int32_t *)sv)[k] = (int32_t)v;
                break;
            default:
                ((int64_t *)sv)[k] = v;
            }
        }
        for (int o = 0; o < 6; o++)
            for (int swap = 0; swap < 2; swap++) {
                oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
                in[0].name = "u", in[0].data = u, in[0].dtype = OC_MAP_UINT64, in[0].ndim = 1, in[0].shape = shape;
                in[1].name = "s", in[1].data = sv, in[1].dtype = t, in[1].ndim = 1, in[1].shape = shape;
                char expr[32];
                snprintf(expr, sizeof expr, swap ? "s %s u" : "u %s s", ops[o]);
                unsigned char got[N];
                CHECK_MSG(run_into(expr, in, 2, NULL, 0, NULL, got) == OC_OK, "%s: %s", expr,
                          oc_context_last_error(ctx));
                for (int k = 0; k < N; k++) {
                    int64_t v = t == MT_I64 ? s[k] : k == 0 ? 100 : s[k] % 100;
                    /* sign: -1, 0, 1 for u < v, u == v, u > v, exactly */
                    int c = v < 0 || u[k] > (uint64_t)v ? 1 : u[k] == (uint64_t)v ? 0 : -1;
                    if (swap) c = -c;
                    int want = o == 0   ? c == 0
                               : o == 1 ? c != 0
                               : o == 2 ? c < 0
                               : o == 3 ? c <= 0
                               : o == 4 ? c > 0
                                        : c >= 0;
                    CHECK_MSG(got[k] == want, "%s over uint64, %s, element %d: %d", expr, oc_mt_name(t), k, got[k]);
                }
            }
    }
}

/* A bool array's bytes are read as numpy reads them, any nonzero byte True, whatever the
 * operation: arithmetic, comparisons, bitwise operators, where, casts and reductions. */
static void test_bool_bytes(void)
{
    static const unsigned char x[4] = {0, 2, 1, 255}, y[4] = {1, 1, 4, 128};
    int64_t shape[1] = {4}, col[2] = {4, 1};
    oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
    in[0].name = "x", in[0].data = x, in[0].dtype = OC_MAP_BOOL, in[0].ndim = 1, in[0].shape = shape;
    in[1].name = "y", in[1].data = y, in[1].dtype = OC_MAP_BOOL, in[1].ndim = 1, in[1].shape = shape;
    int64_t i64[16];
    unsigned char b[16];
    CHECK(run_into("x * 1", in, 2, NULL, 0, NULL, i64) == OC_OK);
    CHECK(i64[0] == 0 && i64[1] == 1 && i64[2] == 1 && i64[3] == 1);
    CHECK(run_into("x == True", in, 2, NULL, 0, NULL, b) == OC_OK);
    CHECK(b[0] == 0 && b[1] == 1 && b[2] == 1 && b[3] == 1);
    CHECK(run_into("x & y", in, 2, NULL, 0, NULL, b) == OC_OK); /* 2 & 1 would be 0 */
    CHECK(b[0] == 0 && b[1] == 1 && b[2] == 1 && b[3] == 1);
    CHECK(run_into("x == y", in, 2, NULL, 0, NULL, b) == OC_OK);
    CHECK(b[0] == 0 && b[1] == 1 && b[2] == 1 && b[3] == 1);
    CHECK(run_into("x", in, 1, NULL, 0, NULL, b) == OC_OK); /* the input itself, copied */
    CHECK(b[0] == 0 && b[1] == 1 && b[2] == 1 && b[3] == 1);
    oc_map_options o = OC_MAP_OPTIONS_INIT;
    o.dtype = OC_MAP_INT8;
    int8_t i8[4];
    CHECK(run_into("x", in, 1, NULL, 0, &o, i8) == OC_OK); /* the output cast */
    CHECK(i8[0] == 0 && i8[1] == 1 && i8[2] == 1 && i8[3] == 1);
    o = (oc_map_options)OC_MAP_OPTIONS_INIT;
    o.reduce = OC_MAP_REDUCE_SUM;
    CHECK(run_into("x", in, 1, NULL, 0, &o, i64) == OC_OK && i64[0] == 3);
    o.reduce = OC_MAP_REDUCE_MAX;
    CHECK(run_into("x", in, 1, NULL, 0, &o, b) == OC_OK && b[0] == 1);
    /* A broadcast input (gathered, not read in place): x as a 4 x 1 column against y. */
    in[0].ndim = 2, in[0].shape = col;
    CHECK(run_into("x & y", in, 2, NULL, 0, NULL, b) == OC_OK);
    for (int k = 0; k < 16; k++) CHECK_MSG(b[k] == (k >= 4), "x & y [%d]: %d", k, b[k]);
}

/* min and max of an array that is all -0.0 are -0.0: the result is an element, never the
 * sum's identity 0.0 + (-0.0). */
static void test_min_max_negative_zero(void)
{
    static const double z[6] = {-0.0, -0.0, -0.0, -0.0, -0.0, -0.0};
    int64_t shape[2] = {2, 3};
    oc_map_array in = OC_MAP_ARRAY_INIT;
    in.name = "z", in.data = z, in.dtype = OC_MAP_FLOAT64, in.ndim = 2, in.shape = shape;
    for (int op = OC_MAP_REDUCE_MIN; op <= OC_MAP_REDUCE_MAX; op++)
        for (int axis = -1; axis < 2; axis++) {
            oc_map_options o = OC_MAP_OPTIONS_INIT;
            o.reduce = op;
            o.has_axis = axis >= 0, o.axis = axis;
            double out[3] = {1, 1, 1};
            CHECK(run_into("z", &in, 1, NULL, 0, &o, out) == OC_OK);
            for (int k = 0; k < (axis < 0 ? 1 : 3 - axis); k++)
                CHECK_MSG(out[k] == 0 && signbit(out[k]), "%s over axis %d: %g",
                          op == OC_MAP_REDUCE_MIN ? "min" : "max", axis, out[k]);
        }
}

/* --set takes Python ints from -2^63 to 2^64 - 1; numpy's bounds decide where they fit. */
static void test_set_wide_ints(void)
{
    static const int64_t i[2] = {1, -1};
    static const uint64_t u[2] = {1, 2};
    int64_t shape[1] = {2};
    oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
    in[0].name = "i", in[0].data = i, in[0].dtype = OC_MAP_INT64, in[0].ndim = 1, in[0].shape = shape;
    in[1].name = "u", in[1].data = u, in[1].dtype = OC_MAP_UINT64, in[1].ndim = 1, in[1].shape = shape;
    oc_map_scalar s[2] = {{"r", "-9223372036854775808"}, {"w", "18446744073709551615"}};
    int64_t gi[2];
    uint64_t gu[2];
    unsigned char b[2];
    CHECK(run_into("i + r", in, 2, s, 2, NULL, gi) == OC_OK && gi[0] == INT64_MIN + 1 && gi[1] == INT64_MAX);
    CHECK(run_into("u + w", in, 2, s, 2, NULL, gu) == OC_OK && gu[0] == 0 && gu[1] == 1);
    CHECK(run_into("u == w - 17 + 17", in, 2, s, 2, NULL, b) == OC_OK && b[0] == 0 && b[1] == 0);
    CHECK(run_into("i > r", in, 2, s, 2, NULL, b) == OC_OK && b[0] == 1 && b[1] == 1);
    CHECK(run_into("i < w", in, 2, s, 2, NULL, b) == OC_OK && b[0] == 1 && b[1] == 1); /* exact */
    CHECK(run_into("u + r", in, 2, s, 2, NULL, gu) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "Python integer -9223372036854775808 is out of bounds for uint64"));
    CHECK(run_into("i + w", in, 2, s, 2, NULL, gi) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "Python integer 18446744073709551615 is out of bounds for int64"));
    oc_map_scalar low = {"r", "-9223372036854775809"};
    CHECK(run_into("i + r", in, 2, &low, 1, NULL, gi) == OC_ERR_INPUT);
    oc_map_scalar high = {"r", "18446744073709551616"};
    CHECK(run_into("i + r", in, 2, &high, 1, NULL, gi) == OC_ERR_INPUT);
}

/* A struct_size that is no version's is refused, naming the struct and its macro. */
static void test_struct_sizes(void)
{
    double x = 1;
    int64_t shape[1] = {1};
    oc_map_array in = OC_MAP_ARRAY_INIT;
    in.name = "a", in.data = &x, in.dtype = OC_MAP_FLOAT64, in.ndim = 1, in.shape = shape;
    oc_map_options o = OC_MAP_OPTIONS_INIT;
    o.struct_size -= 4;
    oc_map *m = NULL;
    CHECK(oc_map_create(ctx, "a", &in, 1, NULL, 0, &o, &m) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "OC_MAP_OPTIONS_INIT") != NULL);
    /* Version 1 (without gpu_mem_fraction) is read, the later fields defaulted. */
    o.struct_size = offsetof(oc_map_options, gpu_mem_fraction);
    o.gpu_mem_fraction = 0.25;
    CHECK(oc_map_create(ctx, "a", &in, 1, NULL, 0, &o, &m) == OC_OK);
    CHECK(m && m->opts.gpu_mem_fraction == 0 && m->opts.struct_size == sizeof o);
    oc_map_free(m);
    m = NULL;
    /* Version 2 (without fortran_out) too. */
    o.struct_size = offsetof(oc_map_options, fortran_out);
    o.gpu_mem_fraction = 0.25;
    o.fortran_out = 1;
    CHECK(oc_map_create(ctx, "a", &in, 1, NULL, 0, &o, &m) == OC_OK);
    CHECK(m && m->opts.gpu_mem_fraction == 0.25 && m->opts.fortran_out == 0 && m->opts.struct_size == sizeof o);
    CHECK(oc_map_result_fortran_order(m) == 0 && oc_map_result_fortran_order(NULL) == -1);
    oc_map_free(m);
    m = NULL;
    in.struct_size = 8;
    CHECK(oc_map_create(ctx, "a", &in, 1, NULL, 0, NULL, &m) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "OC_MAP_ARRAY_INIT") != NULL);
    in.struct_size = sizeof in;
    CHECK(oc_map_create(ctx, "a", &in, 1, NULL, 0, NULL, &m) == OC_OK);
    oc_map_stats st = {.struct_size = 16};
    double out;
    CHECK(oc_map_run(ctx, m, NULL, &out, &st) == OC_ERR_INVALID_ARGUMENT);
    st.struct_size = sizeof st;
    CHECK(oc_map_run(ctx, m, NULL, &out, &st) == OC_OK && out == 1 && st.elements == 1 && st.bytes_written == 8);
    oc_map_free(m);
}

/* Memory off its elements' alignment is refused (the evaluators load elements as their
 * type); the same values aligned run. */
static void test_misaligned_memory(void)
{
    _Alignas(8) unsigned char raw[8 * 5];
    const double values[4] = {1, 2, 3, -4};
    const int64_t shape[1] = {4};
    memcpy(raw + 1, values, sizeof values);
    oc_map_array in = OC_MAP_ARRAY_INIT;
    in.name = "a", in.data = raw + 1, in.dtype = OC_MAP_FLOAT64, in.ndim = 1, in.shape = shape;
    oc_map *m = NULL;
    CHECK(oc_map_create(ctx, "a * 2", &in, 1, NULL, 0, NULL, &m) == OC_ERR_INVALID_ARGUMENT && !m);
    CHECK(strstr(oc_context_last_error(ctx), "input 'a': its memory starts off its 8-byte elements' alignment"));
    memcpy(raw + 8, values, sizeof values);
    in.data = raw + 8;
    double out[4] = {0};
    CHECK(oc_map_create(ctx, "a * 2", &in, 1, NULL, 0, NULL, &m) == OC_OK);
    CHECK(m && oc_map_run(ctx, m, NULL, out, NULL) == OC_OK && out[0] == 2 && out[3] == -8);
    oc_map_free(m);
}

/* Every instruction set's loops give the reference loops' bytes (map_cpu_ops_body.h). */
static void test_isa_paths(void)
{
    static const char *exprs[] = {
        "a + b * 3",          "a // b",        "a % b",         "a / b",  "-a",    "abs(a)",        "a < b",
        "where(a > b, a, b)", "minimum(a, b)", "maximum(a, b)", "a ** 2", "a & b", "sqrt(a * 1.0)", "exp(b * 0.01)",
        "floor(a * 0.7)"};
    enum { N = 1000 };
    static unsigned char a[N * 8], b[N * 8], ref[N * 8], got[N * 8];
    uint64_t seed = 11;
    for (int i = 0; i < N * 8; i++)
        a[i] = (unsigned char)oc_test_rand(&seed), b[i] = (unsigned char)oc_test_rand(&seed);
    int64_t shape[1] = {N};
    static const char *isas[] = {"avx2", "avx512"};
    for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
        for (int t = 0; t < OC_MT_COUNT; t++) {
            oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
            in[0].name = "a", in[0].data = a, in[0].dtype = t, in[0].ndim = 1, in[0].shape = shape;
            in[1].name = "b", in[1].data = b, in[1].dtype = (t + (int)e) % OC_MT_COUNT, in[1].ndim = 1,
            in[1].shape = shape;
            oc_map *m = NULL;
            if (oc_map_create(ctx, exprs[e], in, 2, NULL, 0, NULL, &m) != OC_OK) continue;
            size_t bytes = (size_t)N * oc_mt_size(oc_map_result_dtype(m));
            oc_cpu_isa_select("ref");
            oc_status st = oc_map_run(ctx, m, NULL, ref, NULL);
            for (int k = 0; k < 2 && st == OC_OK; k++) {
                if (!oc_cpu_isa_select(isas[k])) continue;
                CHECK(oc_map_run(ctx, m, NULL, got, NULL) == OC_OK);
                CHECK_MSG(memcmp(ref, got, bytes) == 0, "%s over %s: %s differs from ref", exprs[e], oc_mt_name(t),
                          isas[k]);
            }
            oc_map_free(m);
        }
    oc_cpu_isa_select(getenv("OUTCORE_CPU_ISA"));
}

/* `open` n times, then center, then `close` n times (malloc'ed). */
static char *wrap(const char *open, int n, const char *center, const char *close)
{
    size_t ol = strlen(open), cl = strlen(center), zl = strlen(close);
    char *s = malloc((ol + zl) * (size_t)n + cl + 1), *p = s;
    if (!s) return NULL;
    for (int i = 0; i < n; i++, p += ol) memcpy(p, open, ol);
    memcpy(p, center, cl);
    p += cl;
    for (int i = 0; i < n; i++, p += zl) memcpy(p, close, zl);
    *p = '\0';
    return s;
}

typedef struct limit_case {
    char *expr;
    oc_status want; /* OC_OK: runs and gives a[i] * times + plus */
    double times, plus;
    const char *message; /* OC_ERR_INPUT: a part of the message */
    oc_status got;
    double value;
    char error[512];
} limit_case;

/* Parses, types, generates CUDA C for and evaluates each case (on the thread the test makes). */
static void *run_limit_cases(void *arg)
{
    limit_case *cases = arg;
    double a[3] = {1.5, -2.0, 4.0};
    int64_t shape[1] = {3};
    for (limit_case *c = cases; c->expr; c++) {
        oc_map_array in = OC_MAP_ARRAY_INIT;
        in.name = "a", in.data = a, in.dtype = OC_MAP_FLOAT64, in.ndim = 1, in.shape = shape;
        oc_map_options o = OC_MAP_OPTIONS_INIT;
        o.backend = OC_BACKEND_CPU;
        o.threads = 1;
        oc_map *m = NULL;
        c->got = oc_map_create(ctx, c->expr, &in, 1, NULL, 0, &o, &m);
        if (c->got == OC_OK) {
            char *src = NULL;
            c->got = oc_map_emit_cuda(ctx, m, &src, NULL);
            free(src);
        }
        double out[3] = {0};
        if (c->got == OC_OK) c->got = oc_map_run(ctx, m, NULL, out, NULL);
        c->value = out[2];
        snprintf(c->error, sizeof c->error, "%s", c->got == OC_OK ? "" : oc_context_last_error(ctx));
        oc_map_free(m);
    }
    return NULL;
}

/* Expressions at and past the size and nesting limits (map_expr.h), on a thread of 64 KiB of
 * stack: no walk (parse, type check, code generation, evaluation) recurses on the input. */
static void test_limits_on_a_small_stack(void)
{
    enum { N = OC_MAP_MAX_NESTING, T = OC_MAP_MAX_TOKENS };
    limit_case cases[] = {
        {wrap("(", N, "a", ")"), OC_OK, 1, 0, NULL, 0, 0, ""},
        {wrap("abs(", N - 1, "a", ")"), OC_OK, 1, 0, NULL, 0, 0, ""},
        {wrap("a+", T / 2 - 1, "a", ""), OC_OK, T / 2, 0, NULL, 0, 0, ""},
        {wrap("1**", N - 1, "a", ""), OC_OK, 0, 1, NULL, 0, 0, ""},
        {wrap("-", N - 1, "a+a", ""), OC_OK, 0, 0, NULL, 0, 0, ""},
        {wrap("", T / 2 - 1, "a", "-1"), OC_OK, 1, -(T / 2 - 1), NULL, 0, 0, ""},
        {wrap("(", N + 1, "a", ")"), OC_ERR_INPUT, 0, 0, "nests deeper than 256 levels (map's limit) at column 257", 0,
         0, ""},
        {wrap("-", 60000, "a", ""), OC_ERR_INPUT, 0, 0, "nests deeper than 256 levels (map's limit) at column 257", 0,
         0, ""},
        {wrap("a**", 30000, "a", ""), OC_ERR_INPUT, 0, 0, "nests deeper than 256 levels (map's limit) at column 770", 0,
         0, ""},
        {wrap("a+", 30000, "a", ""), OC_ERR_INPUT, 0, 0, "more than 4096 tokens (map's limit) at column 4097", 0, 0,
         ""},
        {wrap("", 1 << 20, "a", " "), OC_ERR_INPUT, 0, 0, "longer than 1048576 bytes", 0, 0, ""},
        {NULL, OC_OK, 0, 0, NULL, 0, 0, ""},
    };
    pthread_attr_t attr;
    pthread_t th;
    CHECK(pthread_attr_init(&attr) == 0 && pthread_attr_setstacksize(&attr, 64 * 1024) == 0);
    CHECK(pthread_create(&th, &attr, run_limit_cases, cases) == 0 && pthread_join(th, NULL) == 0);
    pthread_attr_destroy(&attr);
    for (limit_case *c = cases; c->expr; c++) {
        CHECK_MSG(c->got == c->want, "%.40s...: status %d, expected %d (%s)", c->expr, c->got, c->want, c->error);
        if (c->want == OC_OK)
            CHECK_MSG(c->value == 4.0 * c->times + c->plus, "%.40s...: %g, expected %g", c->expr, c->value,
                      4.0 * c->times + c->plus);
        else CHECK_MSG(strstr(c->error, c->message) != NULL, "%.40s...: '%s'", c->expr, c->error);
        free(c->expr);
    }
}

int main(void)
{
    if (oc_context_create(&ctx) != OC_OK) return 1;
    test_syntax_errors();
    test_promotion_rules();
    test_nep50();
    test_broadcast_and_eval();
    test_uint64_signed_comparisons();
    test_bool_bytes();
    test_min_max_negative_zero();
    test_set_wide_ints();
    test_struct_sizes();
    test_misaligned_memory();
    test_isa_paths();
    test_limits_on_a_small_stack();
    oc_context_free(ctx);
    return oc_test_finish();
}
