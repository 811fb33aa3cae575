/*
 * map_typecheck.c - from parse tree to typed IR (map_expr.h): names resolved, operations on
 * Python scalars folded as Python computes them, numpy's NEP 50 promotion, numpy's loop
 * type for each operation, and explicit casts so that every operation's operands share one
 * type.
 *
 * NEP 50 in short: arrays (and numpy scalars) are "strong" and promote by
 * numpy.result_type; Python int/float scalars are "weak": they take the strong operand's
 * type when its kind can hold them (a Python int meeting an integer array must fit its range,
 * else numpy raises OverflowError), a Python float meeting a bool or integer array gives
 * float64, a Python int meeting a bool array gives int64. Functions (numpy ufuncs) called on
 * Python scalars alone see them as int64/float64 arrays; operators between Python scalars
 * are Python's own arithmetic (2 ** -1 is 0.5, -7 // 2 is -4). Python ints are held from
 * -2^63 to 2^64 - 1, the values of int64 and uint64 (`big` ones above int64's in value.u).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "map/map_expr.h"
#include "map/map_types.h"
#include "map/py_scalar.h"

typedef struct checker {
    oc_context *ctx;
    const oc_map_expr *e;
    const oc_map_binding *bind;
    int nbind;
    oc_map_expr *out;
    int *input_node; /* per binding: its MOP_INPUT node once emitted, else -1 */
    int *ir_of;      /* per parse node: its IR node, once typed */
} checker;

static int emit(checker *c, oc_map_node n)
{
    const oc_map_node *nodes = c->out->nodes;
    if (n.op != MOP_INPUT)
        n.array = (n.a >= 0 && nodes[n.a].array) || (n.b >= 0 && nodes[n.b].array) || (n.c >= 0 && nodes[n.c].array);
    int k = oc_map_expr_add(c->out, n);
    if (k < 0) oc_fail(c->ctx, OC_ERR_NO_MEMORY, "out of memory typing the expression");
    return k;
}

static oc_map_node node_of(oc_map_op op, int type, int otype, int pos)
{
    oc_map_node n = {.op = op, .type = type, .otype = otype, .a = -1, .b = -1, .c = -1, .input = -1, .pos = pos};
    return n;
}

static int is_weak(const checker *c, int k) { return c->out->nodes[k].weak != MW_NONE; }

/* The strong type a weak constant stands for when it must become an array alone (numpy's
 * default int and float; numpy.asarray makes a Python int above int64's range uint64). */
static int weak_default(oc_map_weak w, int big)
{
    return w == MW_BOOL ? MT_BOOL : w == MW_INT ? (big ? MT_U64 : MT_I64) : MT_F64;
}

/* A Python int's value (a weak MW_INT constant), exactly: -2^63 to 2^64 - 1. */
typedef oc_py_int py_int;
static py_int py_int_of(const oc_map_node *x) { return x->big ? (py_int)x->value.u : (py_int)x->value.i; }

/* Whether the Python int x is a value of integer type t. */
static int py_int_fits(int t, const oc_map_node *x) { return x->big ? t == MT_U64 : oc_mt_int_fits(t, x->value.i); }

static int op_error(checker *c, int pos, const char *fmt, const char *a, const char *b)
{
    oc_fail(c->ctx, OC_ERR_INPUT, fmt, a, b, pos + 1);
    return -1;
}

/* A constant of type t from a weak constant (or a typed one of another type). */
static int make_const(checker *c, int k, int t)
{
    oc_map_node src = c->out->nodes[k];
    oc_map_node n = node_of(MOP_CONST, t, t, src.pos);
    int from_float = src.weak == MW_FLOAT || (src.weak == MW_NONE && oc_mt_is_float(src.type));
    int from_unsigned = (src.weak == MW_NONE && oc_mt_kind_of(src.type) == MT_KIND_UINT) || src.big;
    double f = from_float ? src.value.f : from_unsigned ? (double)src.value.u : (double)src.value.i;
    if (t == MT_BOOL) {
        n.value.i = from_float ? f != 0 : src.value.i != 0;
    } else if (oc_mt_is_float(t)) {
        n.value.f = t == MT_F32 ? (double)(float)f : f;
    } else if (from_float) {
        /* Only reached for a float constant cast to an integer type, which numpy's
         * same-kind promotion never asks; kept total for safety. */
        n.value.i = (int64_t)f;
    } else if (oc_mt_kind_of(t) == MT_KIND_UINT) {
        n.value.u = from_unsigned ? src.value.u : (uint64_t)src.value.i;
    } else {
        n.value.i = from_unsigned ? (int64_t)src.value.u : src.value.i;
    }
    return emit(c, n);
}

/* Operand k as type t: a typed constant for a constant, a cast node when the type differs. */
static int convert(checker *c, int k, int t)
{
    if (k < 0) return -1;
    oc_map_node src = c->out->nodes[k];
    if (src.op == MOP_CONST) return src.type == t && src.weak == MW_NONE ? k : make_const(c, k, t);
    if (src.type == t) return k;
    oc_map_node n = node_of(MOP_CAST, t, src.type, src.pos);
    n.a = k;
    return emit(c, n);
}

/* numpy's common type of operands ks (NEP 50); -1 after an error. Of three or more strong
 * types, one that every other promotes to is the result, as numpy's promotion of a sequence
 * finds it first (uint16, int8, float32 give float32); only without one are they folded in
 * pairs (which would give int32, then float64). */
static int common_type(checker *c, const int *ks, int n)
{
    int s = -1, strong[8], n_strong = 0, n_seen = 0; /* the strong types: their first 8, and how many */
    int weak_int = 0, weak_float = 0;
    for (int i = 0; i < n; i++) {
        const oc_map_node *x = &c->out->nodes[ks[i]];
        if (x->weak == MW_INT) weak_int = 1;
        else if (x->weak == MW_FLOAT) weak_float = 1;
        else {
            int t = x->weak == MW_BOOL ? MT_BOOL : x->type;
            s = s < 0 ? t : oc_mt_promote(s, t);
            if (n_seen++ < (int)(sizeof strong / sizeof strong[0])) strong[n_strong++] = t;
        }
    }
    for (int i = 0; n_strong > 2 && n_strong == n_seen && i < n_strong; i++) {
        int all = 1;
        for (int j = 0; j < n_strong && all; j++) all = oc_mt_promote(strong[i], strong[j]) == strong[i];
        if (all) {
            s = strong[i];
            break;
        }
    }
    if (s < 0) s = weak_float ? MT_F64 : weak_int ? MT_I64 : MT_BOOL;
    if (weak_int && s == MT_BOOL) s = MT_I64;
    if (weak_float && !oc_mt_is_float(s)) s = MT_F64;
    return s;
}

/* NEP 50: a Python int converted to an integer loop type it does not fit is numpy's
 * OverflowError (uint8 + 300); one converted to a float loop (uint8 / 300) is not. */
static int check_weak_bounds(checker *c, const int *ks, int n, int loop)
{
    if (!oc_mt_is_integer(loop)) return 0;
    for (int i = 0; i < n; i++) {
        const oc_map_node *x = &c->out->nodes[ks[i]];
        if (x->weak == MW_INT && !py_int_fits(loop, x)) {
            char v[24];
            if (x->big) snprintf(v, sizeof v, "%llu", (unsigned long long)x->value.u);
            else snprintf(v, sizeof v, "%lld", (long long)x->value.i);
            oc_fail(c->ctx, OC_ERR_INPUT,
                    "Python integer %s is out of bounds for %s (column %d; numpy raises OverflowError too)", v,
                    oc_mt_name(loop), x->pos + 1);
            return -1;
        }
    }
    return 0;
}

/* numpy's loop for sqrt, exp, ... and arctan2: the smallest float type every operand (of
 * types ts[0..n)) casts to safely, float32 from 16-bit integers, float64 from wider ones and
 * a float its own type; float16 (from bool and 8-bit integers alone) is an error. arctan2 of
 * int16 and uint16 is float32, not the float64 of their common type, int32. */
static int float_loop(checker *c, const int *ts, int n, oc_map_op op, int pos)
{
    int l = -1; /* float16 */
    for (int i = 0; i < n; i++) {
        const int t = ts[i], s = (int)oc_mt_size(t);
        const int f = oc_mt_is_float(t) ? t : s == 2 ? MT_F32 : s > 2 ? MT_F64 : -1;
        l = l < 0 ? f : f < 0 ? l : oc_mt_promote(l, f);
    }
    if (l >= 0) return l;
    const char *name = oc_map_op_name(op);
    oc_fail(c->ctx, OC_ERR_INPUT,
            "%s of %s%s%s gives float16 in numpy, which map does not support (column %d); cast first, e.g. "
            "%s(x * 1.0%s)",
            name, oc_mt_name(ts[0]), n > 1 ? " and " : "", n > 1 ? oc_mt_name(ts[1]) : "", pos + 1, name,
            n > 1 ? ", y" : "");
    return -1;
}

/* ---------------------------------------------------------------- folding Python scalars */

static int weak_const(checker *c, oc_map_weak w, oc_map_value v, int pos)
{
    oc_map_node n = node_of(MOP_CONST, weak_default(w, 0), weak_default(w, 0), pos);
    n.weak = w;
    n.value = v;
    return emit(c, n);
}

/* A Python int from Python's arithmetic on Python ints; an error outside int64 and uint64's
 * values, the Python ints map holds. */
static int weak_int(checker *c, py_int v, int pos)
{
    if (v < INT64_MIN || v > (py_int)UINT64_MAX) {
        oc_fail(c->ctx, OC_ERR_INPUT,
                "arithmetic on Python integers leaves -2^63 to 2^64 - 1, the values of int64 and uint64 (column %d)",
                pos + 1);
        return -1;
    }
    oc_map_value u = {.u = (uint64_t)v};
    int k = weak_const(c, MW_INT, u, pos);
    if (k >= 0) {
        c->out->nodes[k].big = v > INT64_MAX;
        if (c->out->nodes[k].big) c->out->nodes[k].type = c->out->nodes[k].otype = MT_U64;
    }
    return k;
}

static int fold_fail(checker *c, int pos, const char *what)
{
    oc_fail(c->ctx, OC_ERR_INPUT, "%s (column %d)", what, pos + 1);
    return -1;
}

/* A comparison of two Python scalars from how they compare (all three 0: unordered, NaN). */
static int fold_compare(checker *c, oc_map_op op, int lt, int eq, int gt, int pos)
{
    oc_map_value v = {0};
    switch (op) {
    case MOP_EQ:
        v.i = eq;
        break;
    case MOP_NE:
        v.i = !eq;
        break;
    case MOP_LT:
        v.i = lt;
        break;
    case MOP_LE:
        v.i = lt || eq;
        break;
    case MOP_GT:
        v.i = gt;
        break;
    default:
        v.i = gt || eq;
        break;
    }
    return weak_const(c, MW_BOOL, v, pos);
}

/* Python's comparison of an int with a float (py_scalar.h: exact). */
static int fold_compare_int_float(checker *c, oc_map_op op, py_int i, double f, int int_first, int pos)
{
    int lt, eq, gt; /* of i against f */
    oc_py_compare_int_float(i, f, &lt, &eq, &gt);
    return int_first ? fold_compare(c, op, lt, eq, gt, pos) : fold_compare(c, op, gt, eq, lt, pos);
}

/* a op b on two Python scalars, as Python computes it. */
static int fold_binary(checker *c, oc_map_op op, int ka, int kb, int pos)
{
    oc_map_node a = c->out->nodes[ka], b = c->out->nodes[kb];
    oc_map_value v = {0};
    const int compare = op == MOP_EQ || op == MOP_NE || op == MOP_LT || op == MOP_LE || op == MOP_GT || op == MOP_GE;
    if (compare && (a.weak == MW_FLOAT) != (b.weak == MW_FLOAT))
        return a.weak == MW_FLOAT ? fold_compare_int_float(c, op, py_int_of(&b), a.value.f, 0, pos)
                                  : fold_compare_int_float(c, op, py_int_of(&a), b.value.f, 1, pos);
    if (a.weak == MW_FLOAT || b.weak == MW_FLOAT) {
        double x = a.weak == MW_FLOAT ? a.value.f : (double)py_int_of(&a);
        double y = b.weak == MW_FLOAT ? b.value.f : (double)py_int_of(&b);
        double m;
        switch (op) {
        case MOP_ADD:
            v.f = x + y;
            break;
        case MOP_SUB:
            v.f = x - y;
            break;
        case MOP_MUL:
            v.f = x * y;
            break;
        case MOP_DIV:
            if (y == 0) return fold_fail(c, pos, "float division by zero between Python scalars");
            v.f = x / y;
            break;
        case MOP_FLOORDIV:
        case MOP_MOD:
            if (y == 0) return fold_fail(c, pos, "float modulo or floor division by zero between Python scalars");
            v.f = oc_py_floordiv(x, y, &m);
            if (op == MOP_MOD) v.f = m;
            break;
        case MOP_POW:
            if (x < 0 && y != floor(y)) return fold_fail(c, pos, "a negative number to a fractional power is complex");
            if (x == 0 && y < 0) return fold_fail(c, pos, "0.0 cannot be raised to a negative power");
            v.f = pow(x, y);
            /* Python's float ** raises where finite operands give an infinity; * and + do not */
            if (isinf(v.f) && isfinite(x) && isfinite(y))
                return fold_fail(c, pos, "a Python float ** overflows (Python raises OverflowError)");
            break;
        case MOP_EQ:
        case MOP_NE:
        case MOP_LT:
        case MOP_LE:
        case MOP_GT:
        case MOP_GE:
            return fold_compare(c, op, x<y, x == y, x> y, pos);
        default:
            return fold_fail(c, pos, "bitwise operators do not apply to floats");
        }
        return weak_const(c, MW_FLOAT, v, pos);
    }
    /* Python ints, in 128 bits: every operation below is exact there or reports overflow. */
    py_int x = py_int_of(&a), y = py_int_of(&b), r = 0;
    int both_bool = a.weak == MW_BOOL && b.weak == MW_BOOL;
    int overflow = 0;
    switch (op) {
    case MOP_ADD:
        r = x + y;
        break;
    case MOP_SUB:
        r = x - y;
        break;
    case MOP_MUL:
        overflow = __builtin_mul_overflow(x, y, &r);
        break;
    case MOP_DIV:
        if (y == 0) return fold_fail(c, pos, "division by zero between Python scalars");
        v.f = oc_py_true_divide(x, y);
        return weak_const(c, MW_FLOAT, v, pos);
    case MOP_FLOORDIV:
    case MOP_MOD:
        if (y == 0) return fold_fail(c, pos, "integer division or modulo by zero between Python scalars");
        r = op == MOP_FLOORDIV ? x / y - ((x % y != 0) && ((x < 0) != (y < 0))) : x % y;
        if (op == MOP_MOD && r != 0 && ((r < 0) != (y < 0))) r += y;
        break;
    case MOP_POW:
        if (y < 0) {
            if (x == 0) return fold_fail(c, pos, "0 cannot be raised to a negative power");
            v.f = pow((double)x, (double)y);
            return weak_const(c, MW_FLOAT, v, pos);
        }
        r = 1;
        for (py_int base = x, e = y; e > 0 && !overflow; e >>= 1) {
            if (e & 1) overflow |= __builtin_mul_overflow(r, base, &r);
            if (e > 1) overflow |= __builtin_mul_overflow(base, base, &base);
        }
        break;
    case MOP_AND:
    case MOP_OR:
    case MOP_XOR:
        r = op == MOP_AND ? x & y : op == MOP_OR ? x | y : x ^ y;
        if (!both_bool) break;
        v.i = (int64_t)r;
        return weak_const(c, MW_BOOL, v, pos);
    case MOP_EQ:
    case MOP_NE:
    case MOP_LT:
    case MOP_LE:
    case MOP_GT:
    case MOP_GE:
        return fold_compare(c, op, x<y, x == y, x> y, pos);
    default:
        return fold_fail(c, pos, "internal: unexpected operator");
    }
    return weak_int(c, overflow ? (py_int)UINT64_MAX + 1 : r, pos);
}

static int fold_unary(checker *c, oc_map_op op, int ka, int pos)
{
    oc_map_node a = c->out->nodes[ka];
    oc_map_value v = {0};
    if (a.weak == MW_FLOAT) {
        if (op == MOP_INVERT) return fold_fail(c, pos, "~ does not apply to floats");
        v.f = op == MOP_POS ? a.value.f : -a.value.f;
        return weak_const(c, MW_FLOAT, v, pos);
    }
    /* Python's +True is the int 1, as -True is -1 */
    const py_int x = py_int_of(&a);
    return weak_int(c, op == MOP_POS ? x : op == MOP_NEG ? -x : ~x, pos);
}

/* ---------------------------------------------------------------- typing */

/* Parse node k's IR node: typed already, as children precede their parents. */
static int check(checker *c, int k) { return k < 0 ? -1 : c->ir_of[k]; }

static int strong(checker *c, int k)
{
    if (k < 0 || !is_weak(c, k)) return k;
    return make_const(c, k, weak_default(c->out->nodes[k].weak, c->out->nodes[k].big));
}

static int check_unary(checker *c, const oc_map_node *n)
{
    int a = check(c, n->a);
    if (a < 0) return -1;
    if (is_weak(c, a) && (n->op == MOP_POS || n->op == MOP_NEG || n->op == MOP_INVERT))
        return fold_unary(c, n->op, a, n->pos);
    a = strong(c, a);
    if (a < 0) return -1;
    int t = c->out->nodes[a].type, l = t;
    if (n->op == MOP_POS) /* numpy.positive: the array itself, except that bool has no loop */
        return t == MT_BOOL ? op_error(c, n->pos,
                                       "the numpy boolean positive, the %s operator, is not supported%s "
                                       "(column %d)",
                                       "+", "")
                            : a;
    switch (oc_map_op_info_of(n->op)->typing) {
    case MAP_TYPING_SAME:
        if (n->op == MOP_NEG && t == MT_BOOL)
            return op_error(c, n->pos,
                            "the numpy boolean negative, the %s operator, is not supported%s (column %d); use ~", "-",
                            "");
        break;
    case MAP_TYPING_BITWISE:
        if (oc_mt_is_float(t)) return op_error(c, n->pos, "%s does not apply to %s (column %d)", "~", oc_mt_name(t));
        break;
    case MAP_TYPING_FLOAT:
        l = float_loop(c, &t, 1, n->op, n->pos);
        if (l < 0) return -1;
        break;
    case MAP_TYPING_NONE:
    case MAP_TYPING_TRUEDIV:
    case MAP_TYPING_INTEGER_LOOP:
    case MAP_TYPING_COMPARE:
    case MAP_TYPING_WHERE:
        break; /* no unary op has these */
    }
    a = convert(c, a, l);
    if (a < 0) return -1;
    oc_map_node r = node_of(n->op, l, l, n->pos);
    r.a = a;
    return emit(c, r);
}

/* The comparison with its operands swapped: a < b is b > a. */
static oc_map_op mirrored(oc_map_op op)
{
    return op == MOP_LT ? MOP_GT : op == MOP_GT ? MOP_LT : op == MOP_LE ? MOP_GE : op == MOP_GE ? MOP_LE : op;
}

/* numpy compares an integer array with a Python int outside its range exactly (uint8 < -1
 * is False everywhere) where arithmetic would raise: the result is then the same for every
 * element, written here as x == x (True) or x != x (False) over the array operand x so that
 * it keeps x's shape. Returns the node, -1 on error, -2 when the int is in range. */
static int out_of_range_comparison(checker *c, const oc_map_node *n, int a, int b)
{
    int wa = c->out->nodes[a].weak == MW_INT, wb = c->out->nodes[b].weak == MW_INT;
    if (wa == wb) return -2;
    int x = wa ? b : a;
    const oc_map_node *v = &c->out->nodes[wa ? a : b];
    int t = c->out->nodes[x].weak == MW_BOOL ? MT_BOOL : c->out->nodes[x].type;
    if (!oc_mt_is_integer(t) || py_int_fits(t, v)) return -2;
    oc_map_op op = wa ? mirrored(n->op) : n->op; /* v OP x is x OP' v */
    int below = py_int_of(v) < 0;                /* out of range below the minimum, else above the maximum */
    int truth = op == MOP_NE || (below ? (op == MOP_GT || op == MOP_GE) : (op == MOP_LT || op == MOP_LE));
    x = strong(c, x);
    if (x < 0) return -1;
    oc_map_node r = node_of(truth ? MOP_EQ : MOP_NE, MT_BOOL, c->out->nodes[x].type, n->pos);
    r.a = r.b = x;
    return emit(c, r);
}

/* numpy compares uint64 with a signed integer type exactly (its comparison loops for mixed
 * signs), where result_type, float64, would round both above 2^53. u OP s is written here
 * as (s >= 0) & (u OP uint64(s)) when a negative s makes OP false (==, <, <=: u is above
 * every negative value), else (s < 0) | (u OP uint64(s)) (!=, >, >=). Returns the node, -1
 * on error, -2 when the operands are not uint64 and a signed integer. */
static int mixed_sign_comparison(checker *c, const oc_map_node *n, int a, int b)
{
    if (is_weak(c, a) || is_weak(c, b)) return -2; /* Python ints: out_of_range_comparison */
    const int ta = c->out->nodes[a].type, tb = c->out->nodes[b].type;
    const int ua = ta == MT_U64 && oc_mt_kind_of(tb) == MT_KIND_INT;
    if (!ua && !(tb == MT_U64 && oc_mt_kind_of(ta) == MT_KIND_INT)) return -2;
    const int u = ua ? a : b, s = ua ? b : a, ts = ua ? tb : ta;
    const oc_map_op op = ua ? n->op : mirrored(n->op); /* u op s */
    const int negative_true = op == MOP_NE || op == MOP_GT || op == MOP_GE;
    oc_map_node zero = node_of(MOP_CONST, ts, ts, n->pos);
    int z = emit(c, zero);
    if (z < 0) return -1;
    oc_map_node sign = node_of(negative_true ? MOP_LT : MOP_GE, MT_BOOL, ts, n->pos);
    sign.a = s, sign.b = z;
    int ks = emit(c, sign), su = ks < 0 ? -1 : convert(c, s, MT_U64);
    if (su < 0) return -1;
    oc_map_node cmp = node_of(op, MT_BOOL, MT_U64, n->pos);
    cmp.a = u, cmp.b = su;
    int kc = emit(c, cmp);
    if (kc < 0) return -1;
    oc_map_node r = node_of(negative_true ? MOP_OR : MOP_AND, MT_BOOL, MT_BOOL, n->pos);
    r.a = ks, r.b = kc;
    return emit(c, r);
}

/* numpy's ndarray ** Python scalar takes a shortcut (fast_scalar_power in numpy's number.c):
 * x ** 2 is numpy.square(x) for every type (bool squares in int8), and for float arrays
 * x ** -1 is numpy.reciprocal(x) and x ** 0.5 is numpy.sqrt(x) (sqrt(-0.0) is -0.0 where
 * pow gives +0.0). Only ndarrays take it (is_ndarray: a 0-d input or where() too); an
 * operation on 0-d operands gives a numpy scalar, whose ** is plain power. Returns the node,
 * -1 on error, -2 when no shortcut applies. */
static int fast_power(checker *c, const oc_map_node *n, int a, int b)
{
    const oc_map_node y = c->out->nodes[b];
    int t = c->out->nodes[a].type;
    if (y.weak == MW_INT && py_int_of(&y) == 2) {
        int l = t == MT_BOOL ? MT_I8 : t;
        int x = convert(c, a, l);
        if (x < 0) return -1;
        oc_map_node r = node_of(MOP_MUL, l, l, n->pos);
        r.a = r.b = x;
        return emit(c, r);
    }
    if (!oc_mt_is_float(t)) return -2;
    if (y.weak == MW_INT && py_int_of(&y) == -1) {
        oc_map_node one = node_of(MOP_CONST, t, t, n->pos);
        one.value.f = 1.0;
        int k = emit(c, one);
        if (k < 0) return -1;
        oc_map_node r = node_of(MOP_DIV, t, t, n->pos);
        r.a = k, r.b = a;
        return emit(c, r);
    }
    if (y.weak == MW_FLOAT && y.value.f == 0.5) {
        oc_map_node r = node_of(MOP_SQRT, t, t, n->pos);
        r.a = a;
        return emit(c, r);
    }
    return -2;
}

/* Whether node k's value is a numpy ndarray rather than a numpy scalar: what an operator or
 * ufunc gives when an operand has a dimension, and an input (np.load gives an ndarray, 0-d
 * too) or where() always (np.where returns one). numpy's ** takes its sqrt, square and
 * reciprocal shortcuts for ndarrays alone: a 0-d input ** 0.5 is sqrt's (nan for -inf),
 * a numpy scalar's pow's (inf). */
static int is_ndarray(const checker *c, int k)
{
    const oc_map_node *x = &c->out->nodes[k];
    return x->array || x->op == MOP_INPUT || x->op == MOP_WHERE;
}

static int check_binary(checker *c, const oc_map_node *n)
{
    int a = check(c, n->a), b = a < 0 ? -1 : check(c, n->b);
    if (b < 0) return -1;
    const oc_map_op_info *info = oc_map_op_info_of(n->op);
    int is_function = info->kind == MAP_KIND_FUNCTION;
    /* A function of Python scalars alone computes in their common type, numpy's default int
     * or float: minimum(2**64 - 1, 1) is out of bounds for int64, as in numpy. */
    if (is_weak(c, a) && is_weak(c, b) && !is_function) return fold_binary(c, n->op, a, b, n->pos);
    if (n->op == MOP_POW && !is_weak(c, a) && is_ndarray(c, a)) {
        int k = fast_power(c, n, a, b);
        if (k != -2) return k;
    }
    if (info->typing == MAP_TYPING_COMPARE) {
        int k = out_of_range_comparison(c, n, a, b);
        if (k == -2) k = mixed_sign_comparison(c, n, a, b);
        if (k != -2) return k;
    }
    int ks[2] = {a, b};
    int t = common_type(c, ks, 2);
    if (t < 0) return -1;
    int l = t, r = t;
    switch (info->typing) {
    case MAP_TYPING_SAME:
        if (n->op == MOP_SUB && t == MT_BOOL)
            return op_error(c, n->pos, "numpy boolean subtract, the %s operator, is not supported%s (column %d); use ^",
                            "-", "");
        break;
    case MAP_TYPING_TRUEDIV:
        l = r = t == MT_F32 ? MT_F32 : MT_F64;
        break;
    case MAP_TYPING_INTEGER_LOOP:
        /* An integer to a negative power, a constant one too, is refused as the elements are
         * computed, as numpy refuses it: an empty array's is empty. */
        if (t == MT_BOOL) l = r = MT_I8;
        break;
    case MAP_TYPING_BITWISE:
        if (oc_mt_is_float(t))
            return op_error(c, n->pos, "%s does not apply to %s (column %d)", oc_map_op_name(n->op), oc_mt_name(t));
        break;
    case MAP_TYPING_COMPARE:
        r = MT_BOOL;
        break;
    case MAP_TYPING_FLOAT: {
        /* Each operand's own type; a Python scalar's is the common type it takes. */
        int ts[2];
        for (int i = 0; i < 2; i++) {
            const oc_map_node *x = &c->out->nodes[ks[i]];
            ts[i] = x->weak == MW_INT || x->weak == MW_FLOAT ? t : x->weak == MW_BOOL ? MT_BOOL : x->type;
        }
        l = r = float_loop(c, ts, 2, n->op, n->pos);
        if (l < 0) return -1;
        break;
    }
    case MAP_TYPING_NONE:
    case MAP_TYPING_WHERE:
        break; /* no binary op has these */
    }
    if (check_weak_bounds(c, ks, 2, l) < 0) return -1;
    a = convert(c, a, l);
    b = a < 0 ? -1 : convert(c, b, l);
    if (b < 0) return -1;
    oc_map_node x = node_of(n->op, r, l, n->pos);
    x.a = a, x.b = b;
    return emit(c, x);
}

/* numpy.clip of an integer array drops a Python int bound that lies past the array type's own
 * range on its side (a least at or below the type's least, a greatest at or above its
 * greatest) before any promotion (numpy's _methods._clip): clip(uint32, -1, 2) is
 * minimum(x, 2), where the ufuncs would raise, and clip(int16, uint16 lo, 65535) is
 * maximum(x, lo) in int32, where the type's limit would cut lo's values. A bound past the
 * other side (a least above the greatest) still raises, as numpy's. */
static int clip_bound_dropped(const checker *c, int x, int bound, int is_least)
{
    const int t = c->out->nodes[x].type;
    const oc_map_node *b = &c->out->nodes[bound];
    if (!oc_mt_is_integer(t) || b->weak != MW_INT) return 0;
    const int bits = 8 * (int)oc_mt_size(t);
    const int is_unsigned = oc_mt_kind_of(t) == MT_KIND_UINT;
    const py_int least = is_unsigned ? 0 : -((py_int)1 << (bits - 1));
    const py_int greatest = is_unsigned ? ((py_int)1 << bits) - 1 : ((py_int)1 << (bits - 1)) - 1;
    const py_int v = py_int_of(b);
    return is_least ? v <= least : v >= greatest;
}

/* numpy.clip makes its first operand an array (numpy.asarray): clip(5, lo, hi) of int8
 * bounds is int64. The bounds it keeps (clip_bound_dropped) promote with it, and clip(x,
 * lo, hi) is numpy's minimum(maximum(x, lo), hi): NaN in any of them is NaN, and on a tie
 * (-0.0 against 0.0) the bound. Both dropped: x itself, as numpy's positive(x). */
static int check_clip(checker *c, const oc_map_node *n, int k[3])
{
    if ((k[0] = strong(c, k[0])) < 0) return -1;
    int kept[3] = {k[0]}, count = 1, has[3] = {1, 0, 0};
    for (int i = 1; i < 3; i++)
        if (!clip_bound_dropped(c, k[0], k[i], i == 1)) has[i] = 1, kept[count++] = k[i];
    const int t = common_type(c, kept, count);
    if (t < 0 || check_weak_bounds(c, kept, count, t) < 0) return -1;
    int x = convert(c, k[0], t);
    for (int i = 1; i < 3 && x >= 0; i++) {
        if (!has[i]) continue;
        oc_map_node m = node_of(i == 1 ? MOP_MAXIMUM : MOP_MINIMUM, t, t, n->pos);
        m.a = x, m.b = convert(c, k[i], t);
        x = m.b < 0 ? -1 : emit(c, m);
    }
    return x;
}

static int check_ternary(checker *c, const oc_map_node *n)
{
    int k[3];
    for (int i = 0; i < 3; i++) {
        k[i] = check(c, i == 0 ? n->a : i == 1 ? n->b : n->c);
        if (k[i] < 0) return -1;
    }
    if (n->op == MOP_CLIP) return check_clip(c, n, k);
    /* where's condition takes no part in promotion. Python scalars alone take their common
     * type, numpy's default int or float; where casts a Python int the array type cannot
     * hold (where(c, 2**64 - 1, 1) wraps into int64, as numpy's). */
    const int t = common_type(c, k + 1, 2);
    if (t < 0) return -1;
    for (int i = 1; i < 3; i++)
        if ((k[i] = convert(c, k[i], t)) < 0) return -1;
    const int cond = convert(c, strong(c, k[0]), MT_BOOL);
    if (cond < 0) return -1;
    oc_map_node x = node_of(MOP_WHERE, t, t, n->pos);
    x.a = cond, x.b = k[1], x.c = k[2];
    return emit(c, x);
}

static int check_name(checker *c, const oc_map_node *n)
{
    const char *name = c->e->text + n->name_pos;
    for (int i = 0; i < c->nbind; i++) {
        const oc_map_binding *b = &c->bind[i];
        if ((int)strlen(b->name) != n->name_len || strncmp(b->name, name, (size_t)n->name_len) != 0) continue;
        if (b->is_scalar) {
            oc_map_node s = b->scalar;
            s.pos = n->pos;
            return emit(c, s);
        }
        /* One node per input, however often the expression names it: read once per block. */
        if (c->input_node[i] >= 0) return c->input_node[i];
        oc_map_node x = node_of(MOP_INPUT, b->type, b->type, n->pos);
        x.input = i;
        x.array = b->ndim > 0;
        return c->input_node[i] = emit(c, x);
    }
    oc_fail(c->ctx, OC_ERR_INPUT,
            "unknown name '%.*s' in the expression (column %d): give it as NAME=FILE.npy or --set NAME=VALUE",
            n->name_len, name, n->pos + 1);
    return -1;
}

static int check_node(checker *c, int k)
{
    const oc_map_node *n = &c->e->nodes[k];
    switch (n->op) {
    case MOP_NAME:
        return check_name(c, n);
    case MOP_CONST: {
        oc_map_node x = *n;
        x.type = x.otype = weak_default(n->weak, n->big);
        return emit(c, x);
    }
    default:
        break;
    }
    switch (oc_map_op_arity(n->op)) {
    case 1:
        return check_unary(c, n);
    case 2:
        return check_binary(c, n);
    default:
        return check_ternary(c, n);
    }
}

oc_status oc_map_typecheck(oc_context *ctx, const oc_map_expr *e, const oc_map_binding *bindings, int n_bindings,
                           oc_map_expr *out)
{
    memset(out, 0, sizeof *out);
    out->text = e->text;
    checker c = {.ctx = ctx, .e = e, .bind = bindings, .nbind = n_bindings, .out = out};
    c.input_node = malloc(sizeof(int) * (size_t)(n_bindings + 1));
    c.ir_of = malloc(sizeof(int) * (size_t)(e->count + 1));
    if (!c.input_node || !c.ir_of) {
        free(c.input_node);
        free(c.ir_of);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 0; i < n_bindings; i++) c.input_node[i] = -1;
    /* Every parse node is the root's or one of its descendants, children first: one pass in
     * order types them all, in the order a recursion from the root would. */
    int root = -1;
    for (int k = 0; k <= e->root; k++)
        if ((root = c.ir_of[k] = check_node(&c, k)) < 0) break;
    free(c.input_node);
    free(c.ir_of);
    /* A result made of Python scalars alone becomes numpy's default int or float. */
    if (root >= 0) root = strong(&c, root);
    if (root < 0) {
        oc_map_expr_free(out);
        return oc_trace_at(ctx, OC_ERR_INPUT, __FILE__, __LINE__);
    }
    out->root = root;
    return OC_OK;
}
