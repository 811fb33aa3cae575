/*
 * map_expr.h - the expression language of `outcore map`: a parse tree (map_parse.c) that
 * map_typecheck.c turns, once the inputs' types are known, into a typed IR in which every
 * operation runs on operands of one type (numpy's "loop" type) with explicit casts.
 *
 * Grammar (Python's precedence, lowest first; comparisons do not chain):
 *   expr    := bitor [('=='|'!='|'<'|'<='|'>'|'>=') bitor]
 *   bitor   := bitxor ('|' bitxor)*      bitxor := bitand ('^' bitand)*
 *   bitand  := arith ('&' arith)*        arith  := term (('+'|'-') term)*
 *   term    := factor (('*'|'/'|'//'|'%') factor)*
 *   factor  := ('+'|'-'|'~') factor | power
 *   power   := atom ['**' factor]        (so -2**2 is -(2**2), as in Python)
 *   atom    := number | True | False | name | name '(' expr (',' expr)* ')' | '(' expr ')'
 * Both trees live in one node array: children are indices of earlier nodes, so every walk
 * over a tree is a loop over the array, never a recursion.
 *
 * Limits (docs/map.md): at most OC_MAP_MAX_LENGTH bytes and OC_MAP_MAX_TOKENS tokens, and
 * at most OC_MAP_MAX_NESTING levels of nesting (each open parenthesis or call, unary
 * operator and `**` whose right operand is still being read counts one).
 */
#ifndef OC_MAP_MAP_EXPR_H
#define OC_MAP_MAP_EXPR_H

#include <stdint.h>
#include "outcore.h"

#define OC_MAP_MAX_LENGTH (1 << 20)
#define OC_MAP_MAX_TOKENS 4096
#define OC_MAP_MAX_NESTING 256

typedef enum oc_map_op {
    MOP_NAME,  /* parse tree only: a name, resolved by the type check */
    MOP_INPUT, /* input number `input` */
    MOP_CONST,
    MOP_CAST, /* a -> type */
    /* unary */
    MOP_POS, /* parse tree only: the type check keeps its operand (Python's and numpy's +x) */
    MOP_NEG,
    MOP_INVERT,
    MOP_ABS,
    MOP_SQRT,
    MOP_EXP,
    MOP_LOG,
    MOP_LOG1P,
    MOP_EXPM1,
    MOP_SIN,
    MOP_COS,
    MOP_TAN,
    MOP_TANH,
    MOP_FLOOR,
    MOP_CEIL,
    /* binary */
    MOP_ADD,
    MOP_SUB,
    MOP_MUL,
    MOP_DIV,
    MOP_FLOORDIV,
    MOP_MOD,
    MOP_POW,
    MOP_AND,
    MOP_OR,
    MOP_XOR,
    MOP_EQ,
    MOP_NE,
    MOP_LT,
    MOP_LE,
    MOP_GT,
    MOP_GE,
    MOP_ARCTAN2,
    MOP_MINIMUM,
    MOP_MAXIMUM,
    /* ternary */
    MOP_WHERE,
    MOP_CLIP, /* clip becomes minimum(maximum(x, lo), hi) in the IR */
#ifdef OC_TEST_PRETEND_MAP_FUNCTION
    MOP_PRETEND, /* tests only: a function no code handles (tests/cli/test_table_sites.py) */
#endif
    MOP_COUNT
} oc_map_op;

/* How a constant takes part in promotion (NEP 50): Python scalars are weak. */
typedef enum oc_map_weak { MW_NONE = 0, MW_BOOL, MW_INT, MW_FLOAT } oc_map_weak;

typedef union oc_map_value {
    int64_t i;  /* signed integers and bool; Python ints (weak), except big ones */
    uint64_t u; /* unsigned integers */
    double f;   /* floats (a float32 constant holds a value already rounded to float) */
} oc_map_value;

typedef struct oc_map_node {
    oc_map_op op;
    int type;               /* IR: the result type (oc_map_dtype) */
    int otype;              /* IR: the type the operation computes in (its operands' type) */
    oc_map_weak weak;       /* constants: weak kind; MW_NONE for a typed constant */
    int big;                /* MW_INT: a Python int above INT64_MAX, held in value.u (Python ints
                             * are -2^63 to 2^64 - 1 here, int64's and uint64's values) */
    int a, b, c;            /* children, -1 when absent */
    int input;              /* MOP_INPUT */
    int name_pos, name_len; /* MOP_NAME and calls: where the name is in the expression */
    int pos;                /* offset in the expression, for messages */
    int array;              /* IR: depends on an input of at least one dimension (numpy gives an
                        * array, not a numpy scalar: operators differ, see fast_power) */
    oc_map_value value;
} oc_map_node;

typedef struct oc_map_expr {
    oc_map_node *nodes;
    int count, cap;
    int root;
    const char *text; /* the expression (not owned) */
    int out_of_range; /* after a failed parse: the error is an integer literal above 2^64 - 1 */
} oc_map_expr;

/* Parses text into e (a parse tree). On a syntax error: OC_ERR_INPUT with the one-line
 * message "syntax error in the expression at column N: WHAT" (N counts bytes from 1); past
 * a limit, OC_ERR_INPUT naming the limit and the column. Iterative: the stack it uses does
 * not depend on the text. */
oc_status oc_map_parse(oc_context *ctx, const char *text, oc_map_expr *e);
void oc_map_expr_free(oc_map_expr *e);

/* Sets live[j] for node k and every node it depends on (live: e->count zeroed bytes). */
void oc_map_expr_live(const oc_map_expr *e, int k, char *live);

/* Appends a node; returns its index or -1 when out of memory. */
int oc_map_expr_add(oc_map_expr *e, oc_map_node n);

/* What a name stands for during the type check. */
typedef struct oc_map_binding {
    const char *name;
    int is_scalar;      /* a Python scalar (weak) rather than an array */
    int type;           /* arrays: the dtype */
    int ndim;           /* arrays: dimensions */
    oc_map_node scalar; /* scalars: a MOP_CONST node (weak) */
} oc_map_binding;

/* Types the parse tree in e into a new IR in out (e is unchanged): resolves names against
 * bindings (input `k` is binding k), folds operations on Python scalars as Python would,
 * promotes by NEP 50 and inserts casts. Errors (OC_ERR_INPUT, one line): unknown names or
 * functions, a wrong argument count, an operation numpy has no loop for (bool `-`, bitwise
 * ops on floats), a Python integer out of bounds for the array type it meets, float16
 * results. */
oc_status oc_map_typecheck(oc_context *ctx, const oc_map_expr *e, const oc_map_binding *bindings, int n_bindings,
                           oc_map_expr *out);

/* What an op is in the language (map_ops.c holds one row per op). */
typedef enum oc_map_op_kind {
    MAP_KIND_INTERNAL, /* name, input, constant, cast: not written in an expression */
    MAP_KIND_OPERATOR, /* written between or before its operands: "+", "~" */
    MAP_KIND_PREFIX,   /* unary minus: written as the "-" operator, so listed once, with it */
    MAP_KIND_FUNCTION  /* called by name: "sqrt(x)" */
} oc_map_op_kind;

/* numpy's rule for the type an op computes in (its loop), from its operands' common type t. */
typedef enum oc_map_typing {
    MAP_TYPING_NONE,         /* leaves and casts */
    MAP_TYPING_SAME,         /* t (where numpy has no bool loop, as for - and unary -, an error) */
    MAP_TYPING_FLOAT,        /* a float loop: t if float, float32 from 16-bit integers, float64
                               * from wider ones; float16 (from 8-bit and bool) is an error */
    MAP_TYPING_TRUEDIV,      /* float32 stays, everything else float64 (/) */
    MAP_TYPING_INTEGER_LOOP, /* t, bool computing in int8 (//, %, **) */
    MAP_TYPING_BITWISE,      /* t, integers and bool only (&, |, ^, ~) */
    MAP_TYPING_COMPARE,      /* t, a bool result */
    MAP_TYPING_WHERE         /* the values' common type; the condition becomes bool */
} oc_map_typing;

typedef struct oc_map_op_info {
    oc_map_op op;
    const char *name; /* as written ("+", "sqrt", "where"), else a word for messages */
    int arity;        /* operands (0 for leaves) */
    oc_map_op_kind kind;
    oc_map_typing typing;
    const char *cuda;   /* the CUDA math function the generated source calls (map_codegen.c) */
    int transcendental; /* priced apart by the cost model (map_choice.c) */
} oc_map_op_info;

/* The op's row (NULL for MOP_COUNT or another value that is no op). */
const oc_map_op_info *oc_map_op_info_of(oc_map_op op);
/* The function named by the len bytes at name, or NULL. */
const oc_map_op_info *oc_map_function(const char *name, int len);
/* The name of an op as written ("+", "sqrt", "where"). */
const char *oc_map_op_name(oc_map_op op);
/* Number of operands of an op (0 for leaves). */
int oc_map_op_arity(oc_map_op op);

#endif
