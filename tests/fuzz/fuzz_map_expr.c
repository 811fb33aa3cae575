/*
 * fuzz_map_expr.c - the expression language of `outcore map`: the parser
 * (src/map/map_parse.c), the type check (map_typecheck.c, through oc_map_create with arrays
 * in memory), the CUDA C code generator (map_codegen.c: its source is compiled by nothing,
 * only checked to be produced, closed and bounded) and the CPU evaluation of the plan on a
 * few elements (src/map/cpu/map_cpu*.c, one thread).
 *
 * Input: a selector byte for the types of the arrays a and b (a: byte % 11, b: byte / 11 % 11,
 * in oc_map_dtype order) and the order of f (byte / 121 odd: Fortran order, given with
 * oc_map_array.fortran_order), a selector byte for the reduction (byte % 5: none, sum, mean,
 * min, max; bit 0 of byte / 5: over an axis, byte / 10 % 3 - 1 its number; bit 7: evaluate the
 * plan on the CPU too, which costs more than the rest), then the expression.
 * Names bound: a (3), b (2 x 1), c (float32 scalar), v (float64, 3), i (int64, 3), x (float32,
 * 1 x 3), u (uint8, 3), w (int8, 3), f (float64, 2 x 3); Python scalars r = 0.2, n = 3,
 * t = True.
 *
 * Contracts: statuses are OC_OK or bad input (or out of memory), failures carry one line;
 * a parse tree and a typed IR list children before their parents, within the limits of
 * map_expr.h; every operation's operands have the type it computes in.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "map/map_codegen.h"
#include "map/map_expr.h"
#include "map/map_plan.h"
#include "map/map_types.h"

static void check_tree(const oc_map_expr *e, const char *what)
{
    if (e->count <= 0 || e->root < 0 || e->root >= e->count)
        fuzz_fail("%s: root %d of %d nodes", what, e->root, e->count);
    for (int k = 0; k < e->count; k++) {
        const oc_map_node *n = &e->nodes[k];
        const int kids[3] = {n->a, n->b, n->c};
        const int arity = n->op >= 0 && n->op < MOP_COUNT ? oc_map_op_arity(n->op) : -1;
        for (int j = 0; j < 3; j++)
            if (kids[j] >= k || kids[j] < -1 || (kids[j] >= 0) != (j < arity))
                fuzz_fail("%s: node %d (%s) has child %d in place %d", what, k, oc_map_op_name(n->op), kids[j], j);
    }
}

/* Operands of each typed operation share its type (map_expr.h). */
static void check_ir(const oc_map_expr *ir)
{
    check_tree(ir, "IR");
    for (int k = 0; k < ir->count; k++) {
        const oc_map_node *n = &ir->nodes[k];
        if (n->op == MOP_NAME) fuzz_fail("IR node %d is an unresolved name", k);
        if (n->weak != MW_NONE) continue; /* a Python scalar, typed where an operation uses it */
        if (n->type < 0 || n->type >= OC_MT_COUNT || n->otype < 0 || n->otype >= OC_MT_COUNT)
            fuzz_fail("IR node %d (%s): type %d, operation type %d", k, oc_map_op_name(n->op), n->type, n->otype);
        if (n->op <= MOP_CAST) continue;
        const int first = n->op == MOP_WHERE;
        if (first && ir->nodes[n->a].type != MT_BOOL) fuzz_fail("IR node %d: where's condition is not bool", k);
        const int kids[3] = {n->a, n->b, n->c};
        for (int j = first; j < oc_map_op_arity(n->op); j++)
            if (ir->nodes[kids[j]].type != n->otype)
                fuzz_fail("IR node %d (%s) computes in %s, operand %d is %s", k, oc_map_op_name(n->op),
                          oc_mt_name(n->otype), j, oc_mt_name(ir->nodes[kids[j]].type));
    }
}

/* The generated source: the element-wise kernel, and with a reduction its two kernels (along
 * a contiguous run, across rows into accumulators: map_codegen.c), each closed; after the last
 * brace only preprocessor lines. */
static void check_source(const char *src, int reduce)
{
    if (!src) fuzz_fail("the code generator returned OC_OK without a source");
    size_t len = strnlen(src, (size_t)64 << 20);
    if (len == (size_t)64 << 20) fuzz_fail("the generated source has no end within 64 MiB");
    if (!strstr(src, "oc_map_elementwise") ||
        (reduce && (!strstr(src, "oc_map_reduce_rows") || !strstr(src, "oc_map_reduce_axis"))))
        fuzz_fail("the generated source lacks a kernel");
    const char *end = src + len, *last = NULL;
    for (const char *p = strstr(src, "}\n"); p; p = strstr(p + 1, "}\n")) last = p;
    if (!last) fuzz_fail("the generated source is not a complete kernel");
    for (const char *p = last + 2; p < end; p = strchr(p, '\n') + 1)
        if (*p != '#' || !strchr(p, '\n')) fuzz_fail("the generated source is not a complete kernel");
}

/* Three elements' worth of interesting values of every type (8 bytes each). */
static const uint64_t values[3] = {0x8000000000000000ULL, 0xffffffffffffffffULL, 0x7ff8000000000001ULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const oc_status allowed[] = {OC_ERR_INPUT, OC_ERR_NO_MEMORY, OC_OK};
    if (size < 2) return 0;
    oc_context *ctx = fuzz_context();
    char *text = malloc(size - 1);
    if (!text) return 0;
    memcpy(text, data + 2, size - 2);
    text[size - 2] = '\0';

    oc_map_expr tree;
    oc_status st = oc_map_parse(ctx, text, &tree);
    fuzz_check_status(st, "", allowed);
    if (st == OC_OK) {
        check_tree(&tree, "parse tree");
        if (tree.count > OC_MAP_MAX_TOKENS) fuzz_fail("%d nodes from at most %d tokens", tree.count, OC_MAP_MAX_TOKENS);
        oc_map_expr_free(&tree);
    }

    static const int64_t shape3[] = {3}, shape21[] = {2, 1}, shape13[] = {1, 3}, shape23[] = {2, 3};
    uint64_t buf[9][6];
    for (int k = 0; k < 9; k++) memcpy(buf[k], values, sizeof values), memcpy(buf[k] + 3, values, sizeof values);
    const struct {
        const char *name;
        int type, ndim;
        const int64_t *shape;
    } arrays[] = {
        {"a", data[0] % OC_MT_COUNT, 1, shape3},
        {"b", data[0] / OC_MT_COUNT % OC_MT_COUNT, 2, shape21},
        {"c", MT_F32, 0, NULL},
        {"v", MT_F64, 1, shape3},
        {"i", MT_I64, 1, shape3},
        {"x", MT_F32, 2, shape13},
        {"u", MT_U8, 1, shape3},
        {"w", MT_I8, 1, shape3},
        {"f", MT_F64, 2, shape23},
    };
    oc_map_array in[9];
    for (int k = 0; k < 9; k++) {
        oc_map_array a = OC_MAP_ARRAY_INIT;
        a.name = arrays[k].name;
        a.data = buf[k];
        a.dtype = (oc_map_dtype)arrays[k].type;
        a.ndim = arrays[k].ndim;
        a.shape = arrays[k].shape;
        in[k] = a;
    }
    in[8].fortran_order = data[0] / (OC_MT_COUNT * OC_MT_COUNT) % 2;
    const oc_map_scalar scalars[] = {{"r", "0.2"}, {"n", "3"}, {"t", "True"}};
    oc_map_options opts = OC_MAP_OPTIONS_INIT;
    opts.backend = OC_BACKEND_CPU;
    opts.threads = 1;
    opts.fortran_out = 1; /* f in Fortran order gives a result in that order */
    const int r = data[1] & 0x7f;
    opts.reduce = (oc_map_reduce)(r % 5);
    opts.has_axis = opts.reduce != OC_MAP_REDUCE_NONE && (r / 5) % 2;
    opts.axis = r / 10 % 3 - 1;
    oc_map *m = NULL;
    st = oc_map_create(ctx, text, in, 9, scalars, 3, &opts, &m);
    fuzz_check_status(st, "", allowed);
    if (st == OC_OK) {
        check_ir(&m->ir);
        char *src = NULL;
        st = oc_map_emit_cuda(ctx, m, &src, NULL);
        fuzz_check_status(st, "", allowed);
        if (st == OC_OK) check_source(src, opts.reduce != OC_MAP_REDUCE_NONE);
        free(src);
        uint64_t out[8];
        if (m->out_count > 8) fuzz_fail("%lld elements from inputs of at most 2 x 3", (long long)m->out_count);
        if (data[1] & 0x80) {
            st = oc_map_run(ctx, m, NULL, out, NULL);
            fuzz_check_status(st, "", allowed);
        }
        oc_map_free(m);
    } else if (m) {
        fuzz_fail("a failed oc_map_create returned a plan");
    }
    free(text);
    return 0;
}
