/*
 * map_ops.c - the operations of the expression language in one table (map_expr.h): each op's
 * spelling, operand count, kind and numpy typing rule, and the CUDA function the code
 * generator writes. The parser, the type check, the code generator, the cost model and the
 * lists the CLI and the binding show (oc_map_function_name, oc_map_operator_name) read it.
 * Rows are in the order the lists show them (docs/map.md, `outcore map --help`).
 */
#include <string.h>

#include "map/map_expr.h"

#define LEAF(o, n)                                           \
    {                                                        \
        o, n, 0, MAP_KIND_INTERNAL, MAP_TYPING_NONE, NULL, 0 \
    }
#define OPERATOR(o, n, arity, typing)                   \
    {                                                   \
        o, n, arity, MAP_KIND_OPERATOR, typing, NULL, 0 \
    }
#define FUNCTION(o, n, arity, typing, cuda, math)          \
    {                                                      \
        o, n, arity, MAP_KIND_FUNCTION, typing, cuda, math \
    }

static const oc_map_op_info ops[] = {
    OPERATOR(MOP_ADD, "+", 2, MAP_TYPING_SAME),
    OPERATOR(MOP_SUB, "-", 2, MAP_TYPING_SAME),
    OPERATOR(MOP_MUL, "*", 2, MAP_TYPING_SAME),
    OPERATOR(MOP_DIV, "/", 2, MAP_TYPING_TRUEDIV),
    OPERATOR(MOP_FLOORDIV, "//", 2, MAP_TYPING_INTEGER_LOOP),
    OPERATOR(MOP_MOD, "%", 2, MAP_TYPING_INTEGER_LOOP),
    {MOP_POW, "**", 2, MAP_KIND_OPERATOR, MAP_TYPING_INTEGER_LOOP, NULL, 1},
    OPERATOR(MOP_EQ, "==", 2, MAP_TYPING_COMPARE),
    OPERATOR(MOP_NE, "!=", 2, MAP_TYPING_COMPARE),
    OPERATOR(MOP_LT, "<", 2, MAP_TYPING_COMPARE),
    OPERATOR(MOP_LE, "<=", 2, MAP_TYPING_COMPARE),
    OPERATOR(MOP_GT, ">", 2, MAP_TYPING_COMPARE),
    OPERATOR(MOP_GE, ">=", 2, MAP_TYPING_COMPARE),
    OPERATOR(MOP_AND, "&", 2, MAP_TYPING_BITWISE),
    OPERATOR(MOP_OR, "|", 2, MAP_TYPING_BITWISE),
    OPERATOR(MOP_XOR, "^", 2, MAP_TYPING_BITWISE),
    OPERATOR(MOP_INVERT, "~", 1, MAP_TYPING_BITWISE),
    {MOP_POS, "unary +", 1, MAP_KIND_PREFIX, MAP_TYPING_SAME, NULL, 0},
    {MOP_NEG, "unary -", 1, MAP_KIND_PREFIX, MAP_TYPING_SAME, NULL, 0},
    FUNCTION(MOP_ABS, "abs", 1, MAP_TYPING_SAME, NULL, 0),
    FUNCTION(MOP_SQRT, "sqrt", 1, MAP_TYPING_FLOAT, "sqrt", 1),
    FUNCTION(MOP_EXP, "exp", 1, MAP_TYPING_FLOAT, "exp", 1),
    FUNCTION(MOP_LOG, "log", 1, MAP_TYPING_FLOAT, "log", 1),
    FUNCTION(MOP_LOG1P, "log1p", 1, MAP_TYPING_FLOAT, "log1p", 1),
    FUNCTION(MOP_EXPM1, "expm1", 1, MAP_TYPING_FLOAT, "expm1", 1),
    FUNCTION(MOP_SIN, "sin", 1, MAP_TYPING_FLOAT, "sin", 1),
    FUNCTION(MOP_COS, "cos", 1, MAP_TYPING_FLOAT, "cos", 1),
    FUNCTION(MOP_TAN, "tan", 1, MAP_TYPING_FLOAT, "tan", 1),
    FUNCTION(MOP_TANH, "tanh", 1, MAP_TYPING_FLOAT, "tanh", 1),
    FUNCTION(MOP_ARCTAN2, "arctan2", 2, MAP_TYPING_FLOAT, "atan2", 1),
    FUNCTION(MOP_FLOOR, "floor", 1, MAP_TYPING_SAME, "floor", 0),
    FUNCTION(MOP_CEIL, "ceil", 1, MAP_TYPING_SAME, "ceil", 0),
    FUNCTION(MOP_MINIMUM, "minimum", 2, MAP_TYPING_SAME, NULL, 0),
    FUNCTION(MOP_MAXIMUM, "maximum", 2, MAP_TYPING_SAME, NULL, 0),
    FUNCTION(MOP_CLIP, "clip", 3, MAP_TYPING_SAME, NULL, 0),
    FUNCTION(MOP_WHERE, "where", 3, MAP_TYPING_WHERE, NULL, 0),
#if defined(OC_TEST_PRETEND_MAP_FUNCTION) && !defined(OC_TEST_PRETEND_WITHOUT_ROW)
    FUNCTION(MOP_PRETEND, "pretend", 1, MAP_TYPING_FLOAT, "pretend", 0),
#endif
    LEAF(MOP_NAME, "name"),
    LEAF(MOP_INPUT, "input"),
    LEAF(MOP_CONST, "constant"),
    {MOP_CAST, "cast", 1, MAP_KIND_INTERNAL, MAP_TYPING_NONE, NULL, 0},
};

/* One row per op (tests/test_name_tables.c checks that each op has its own). */
_Static_assert(sizeof ops / sizeof ops[0] == MOP_COUNT, "ops[] needs one row per oc_map_op");

const oc_map_op_info *oc_map_op_info_of(oc_map_op op)
{
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i].op == op) return &ops[i];
    return NULL;
}

const char *oc_map_op_name(oc_map_op op)
{
    const oc_map_op_info *info = oc_map_op_info_of(op);
    return info ? info->name : "?";
}

int oc_map_op_arity(oc_map_op op)
{
    const oc_map_op_info *info = oc_map_op_info_of(op);
    return info ? info->arity : 0;
}

const oc_map_op_info *oc_map_function(const char *name, int len)
{
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i].kind == MAP_KIND_FUNCTION && (int)strlen(ops[i].name) == len &&
            strncmp(ops[i].name, name, (size_t)len) == 0)
            return &ops[i];
    return NULL;
}

/* The i-th row of a kind, NULL past the last. */
static const char *nth_name(oc_map_op_kind kind, int i)
{
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (ops[k].kind == kind && i-- == 0) return ops[k].name;
    return NULL;
}

const char *oc_map_function_name(int i) { return i < 0 ? NULL : nth_name(MAP_KIND_FUNCTION, i); }
const char *oc_map_operator_name(int i) { return i < 0 ? NULL : nth_name(MAP_KIND_OPERATOR, i); }
