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
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_MSG(syntax_column(cases[i].expr) == cases[i].column, "'%s': column %d, expected %d (%s)", cases[i].expr,
                  syntax_column(cases[i].expr), cases[i].column, oc_context_last_error(ctx));
    oc_map_expr e;
    CHECK(oc_map_parse(ctx, "nosuch(a)", &e) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "unknown function 'nosuch'") != NULL);
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
    test_struct_sizes();
    test_isa_paths();
    test_limits_on_a_small_stack();
    oc_context_free(ctx);
    return oc_test_finish();
}
