/*
 * test_map_codegen.c - the CUDA source map emits compiles with NVRTC, for a broad set of
 * expressions over every type, broadcast inputs, output casts and the reductions. NVRTC is
 * loaded with dlopen (it compiles without a GPU); without it the test reports itself skipped.
 * Running the kernels and comparing with the CPU is the GPU path's test, on a device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text_buf.h"
#include "map/map_codegen.h"
#include "map/map_types.h"
#include "harness.h"
#include "map_nvrtc.h"

/* Compiles src; returns 1 on success, else prints the log. */
static int compiles(const char *src, const char *what)
{
    char *ptx = map_nvrtc_compile(src, "compute_80", what);
    free(ptx);
    return ptx != NULL;
}

/* Sources waiting to compile. NVRTC's time goes mostly to each program's start, so they are
 * compiled BATCH at a time as one program: the prelude that every source starts with once,
 * then each source's own part in a namespace of its own, without extern "C" (the kernels'
 * names would clash). A batch that does not compile is compiled source by source, which
 * names each one that fails on its own. */
#define BATCH 48
static struct {
    char *src[BATCH];
    char what[BATCH][160];
    int count;
    int generated, compiled, batches;
} pending;

/* Under AddressSanitizer or ThreadSanitizer NVRTC (not instrumented, but slowed by the
 * sanitizer's allocator) takes most of the run, and what it checks, the generated text's
 * syntax, the main run checks for every batch: such a build generates every source (the
 * code under test) and compiles one batch in SANITIZED_SAMPLE. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED_SAMPLE 4
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED_SAMPLE 4
#endif
#endif
#ifndef SANITIZED_SAMPLE
#define SANITIZED_SAMPLE 1
#endif

/* Where a source's own part starts: the comment that quotes the expression. */
static const char *own_part(const char *src)
{
    const char *p = strstr(src, "/* expression: ");
    return p ? p : src;
}

static void compile_pending(void)
{
    if (pending.count == 0) return;
    const char *first = pending.src[0];
    const size_t prelude = (size_t)(own_part(first) - first);
    oc_text all = {0};
    int same_prelude = prelude > 0;
    oc_text_printf(&all, "%.*s", (int)prelude, first);
    for (int i = 0; i < pending.count; i++) {
        const char *s = pending.src[i], *own = own_part(s);
        same_prelude &= (size_t)(own - s) == prelude && memcmp(s, first, prelude) == 0;
        oc_text_printf(&all, "namespace oc_case_%d {\n", i);
        for (const char *e; (e = strstr(own, "extern \"C\" ")) != NULL; own = e + strlen("extern \"C\" "))
            oc_text_printf(&all, "%.*s", (int)(e - own), own);
        oc_text_printf(&all, "%s}\n", own);
    }
    const int compile = pending.batches++ % SANITIZED_SAMPLE == 0;
    char *batch = all.data,
         *ptx = compile && same_prelude && !all.failed ? map_nvrtc_compile(batch, "compute_80", NULL) : NULL;
    for (int i = 0; i < pending.count; i++) {
        if (compile) {
            CHECK_MSG(ptx || compiles(pending.src[i], pending.what[i]), "%s does not compile", pending.what[i]);
            pending.compiled++;
        }
        pending.generated++;
        free(pending.src[i]);
    }
    free(ptx);
    free(batch);
    pending.count = 0;
}

/* Takes src (malloc'ed) to compile with the next batch. */
static void compile_later(char *src, const char *what)
{
    pending.src[pending.count] = src;
    snprintf(pending.what[pending.count], sizeof pending.what[0], "%s", what);
    if (++pending.count == BATCH) compile_pending();
}

typedef struct {
    const char *expr;
    int ta, tb;
    int dtype;
    oc_map_reduce reduce;
    int axis; /* -99: all elements */
} codegen_case;

int main(void)
{
    if (!map_nvrtc_load()) {
        oc_test_skip("libnvrtc is not installed: the CUDA source of map cannot be compiled here");
        return oc_test_finish();
    }
    oc_context *ctx;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    static const char *exprs[] = {
        "a + b",
        "a - b * 3",
        "a * b + 1",
        "a / b",
        "a // b",
        "a % b",
        "a ** 2",
        "a ** b",
        "-a",
        "~a",
        "abs(a)",
        "a == b",
        "a != b",
        "a < b",
        "(a <= b) & (a >= b)",
        "(a > b) | (b > 1)",
        "a & b",
        "a | b",
        "a ^ b",
        "where(a > b, a, b)",
        "minimum(a, b)",
        "maximum(a, 2)",
        "clip(a, 1, 5)",
        "floor(a)",
        "ceil(b)",
        "sqrt(a * 1.0)",
        "exp(a * 1.0)",
        "log(b * 1.0)",
        "log1p(a * 1.0)",
        "expm1(a * 0.5)",
        "sin(a * 1.0)",
        "cos(b * 1.0)",
        "tan(a * 1.0)",
        "tanh(a * 1.0)",
        "arctan2(a * 1.0, b * 1.0)",
        "a ** 0.5",
        "a ** -1",
    };
    int ntypes = OC_MT_COUNT;
    int64_t sa[2] = {7, 5}, sb[1] = {5};
    static double da[35], db[5];
    for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
        for (int ta = 0; ta < ntypes; ta++) {
            int tb = (ta * 7 + (int)e) % ntypes;
            oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
            in[0].name = "a", in[0].data = da, in[0].dtype = ta, in[0].ndim = 2, in[0].shape = sa;
            in[1].name = "b", in[1].data = db, in[1].dtype = tb, in[1].ndim = 1, in[1].shape = sb;
            oc_map *m = NULL;
            if (oc_map_create(ctx, exprs[e], in, 2, NULL, 0, NULL, &m) != OC_OK) continue; /* numpy refuses it too */
            char *src = NULL;
            CHECK(oc_map_emit_cuda(ctx, m, &src, NULL) == OC_OK);
            char what[160];
            snprintf(what, sizeof what, "%s over %s, %s", exprs[e], oc_mt_name(ta), oc_mt_name(tb));
            CHECK_MSG(src != NULL, "%s: no source", what);
            if (src) compile_later(src, what);
            oc_map_free(m);
        }
    compile_pending();
    CHECK(pending.generated > 250 && pending.compiled * SANITIZED_SAMPLE >= pending.generated - BATCH);

    static const codegen_case cases[] = {
        {"a * b", MT_F64, MT_F64, -1, OC_MAP_REDUCE_SUM, -99},
        {"a * b", MT_F32, MT_I16, -1, OC_MAP_REDUCE_MEAN, -99},
        {"a - b", MT_I8, MT_U8, -1, OC_MAP_REDUCE_SUM, -99},
        {"a", MT_U64, MT_U64, -1, OC_MAP_REDUCE_MAX, -99},
        {"a < b", MT_F32, MT_F32, -1, OC_MAP_REDUCE_MIN, -99},
        {"a + b", MT_F64, MT_F64, MT_F32, OC_MAP_REDUCE_NONE, 0},
        {"a + b", MT_I64, MT_I8, MT_I8, OC_MAP_REDUCE_NONE, 0},
        {"a * 2.5", MT_F64, MT_F64, MT_I32, OC_MAP_REDUCE_NONE, 0},
        {"a * b", MT_F64, MT_F64, -1, OC_MAP_REDUCE_SUM, 0},
        {"a * b", MT_F64, MT_F64, -1, OC_MAP_REDUCE_SUM, 1},
        {"a - b", MT_F32, MT_F32, -1, OC_MAP_REDUCE_MEAN, -1},
        {"a", MT_I32, MT_I32, -1, OC_MAP_REDUCE_MEAN, 0},
        {"a > b", MT_F64, MT_F64, -1, OC_MAP_REDUCE_SUM, 1},
        {"a + b", MT_BOOL, MT_BOOL, -1, OC_MAP_REDUCE_MAX, 0},
        {"a * b", MT_F32, MT_F64, -1, OC_MAP_REDUCE_MIN, 1},
        {"a // b", MT_I8, MT_U16, -1, OC_MAP_REDUCE_MAX, -99},
        {"exp(a) + b", MT_F64, MT_F32, MT_F32, OC_MAP_REDUCE_SUM, 0},
        {"a ** b", MT_I64, MT_I64, -1, OC_MAP_REDUCE_SUM, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const codegen_case *c = &cases[i];
        oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
        in[0].name = "a", in[0].data = da, in[0].dtype = c->ta, in[0].ndim = 2, in[0].shape = sa;
        in[1].name = "b", in[1].data = db, in[1].dtype = c->tb, in[1].ndim = 1, in[1].shape = sb;
        oc_map_options o = OC_MAP_OPTIONS_INIT;
        o.dtype = c->dtype;
        o.reduce = c->reduce;
        o.has_axis = c->axis != -99 && c->reduce != OC_MAP_REDUCE_NONE;
        o.axis = c->axis;
        /* --dtype float32 -> int32 is refused by numpy's same_kind rule: only the rest run. */
        oc_map *m = NULL;
        oc_status st = oc_map_create(ctx, c->expr, in, 2, NULL, 0, &o, &m);
        if (c->dtype == MT_I32) {
            CHECK(st == OC_ERR_INPUT);
            continue;
        }
        CHECK_MSG(st == OC_OK, "%s: %s", c->expr, oc_context_last_error(ctx));
        if (!m) continue;
        char *src = NULL;
        int has_reduce = -1;
        CHECK(oc_map_emit_cuda(ctx, m, &src, &has_reduce) == OC_OK);
        CHECK(has_reduce == (c->reduce != OC_MAP_REDUCE_NONE));
        CHECK(src && strstr(src, "oc_map_elementwise") != NULL);
        CHECK(!has_reduce || (strstr(src, "oc_map_reduce_rows") && strstr(src, "oc_map_reduce_axis")));
        char what[160];
        snprintf(what, sizeof what, "%s (reduce %d)", c->expr, (int)c->reduce);
        if (src) compile_later(src, what);
        oc_map_free(m);
    }
    compile_pending();

    /* Semantics the source must carry as the CPU does: a bool input is read as 0/1 (its
     * bytes may be any), and uint64 meets a signed type in comparisons exactly, never
     * through float64. */
    static const struct {
        const char *expr;
        int ta, tb;
        const char *has, *lacks;
    } texts[] = {
        {"a * 1", MT_BOOL, MT_BOOL, "(unsigned char)(in0[i] != 0)", NULL},
        {"a & b", MT_BOOL, MT_BOOL, "(unsigned char)(in1[0 + id1 * 1LL] != 0)", NULL}, /* broadcast */
        {"a == b", MT_U64, MT_I64, "(oc_u64)", "double"},
        {"b < a", MT_U64, MT_I8, "(oc_u64)", "double"},
        {"a >= b", MT_I32, MT_U64, "(oc_u64)", "double"},
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
        in[0].name = "a", in[0].data = da, in[0].dtype = texts[i].ta, in[0].ndim = 2, in[0].shape = sa;
        in[1].name = "b", in[1].data = db, in[1].dtype = texts[i].tb, in[1].ndim = 1, in[1].shape = sb;
        oc_map *m = NULL;
        CHECK_MSG(oc_map_create(ctx, texts[i].expr, in, 2, NULL, 0, NULL, &m) == OC_OK, "%s: %s", texts[i].expr,
                  oc_context_last_error(ctx));
        char *src = NULL;
        if (m) CHECK(oc_map_emit_cuda(ctx, m, &src, NULL) == OC_OK);
        if (src) {
            const char *body = strstr(src, "oc_map_elementwise");
            CHECK_MSG(body && strstr(body, texts[i].has), "%s over %s, %s: no '%s' in\n%s", texts[i].expr,
                      oc_mt_name(texts[i].ta), oc_mt_name(texts[i].tb), texts[i].has, body ? body : src);
            CHECK_MSG(!texts[i].lacks || !body || !strstr(body, texts[i].lacks), "%s over %s, %s: '%s' in\n%s",
                      texts[i].expr, oc_mt_name(texts[i].ta), oc_mt_name(texts[i].tb), texts[i].lacks, body);
            compile_later(src, texts[i].expr);
        }
        oc_map_free(m);
    }
    compile_pending();
    oc_context_free(ctx);
    return oc_test_finish();
}
