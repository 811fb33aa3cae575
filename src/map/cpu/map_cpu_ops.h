/*
 * map_cpu_ops.h - the typed vector loops of the map interpreter: one function per
 * (operation, operand type), per (source type, target type) cast and per (min or max, type)
 * fold of a reduction.
 *
 * Contract: every loop reads n elements from each operand and writes n elements to dst;
 * operands are arrays of the node's operand type (IR `otype`), dst of its result type (bool
 * is one byte holding 0 or 1). dst may be the same buffer as an operand (the loops read
 * element i before writing element i), never a partial overlap. Loops do no I/O and take no
 * locks; a runtime condition numpy raises on (an integer to a negative integer power) sets
 * *error to 1 and leaves dst's content unspecified.
 * Values follow numpy's loops: integer arithmetic wraps; // and % floor toward -inf with
 * the divisor's sign, and give 0 on division by zero (numpy warns and gives 0); the minimum
 * of an integer type // -1 is that minimum; float // and % are npy_divmod's; maximum and
 * minimum propagate NaN and return the second operand on a tie (maximum(0.0, -0.0) is
 * -0.0, as numpy's).
 */
#ifndef OC_MAP_CPU_MAP_CPU_OPS_H
#define OC_MAP_CPU_MAP_CPU_OPS_H

#include <stddef.h>
#include "map/map_expr.h"
#include "map/map_types.h"

typedef void (*oc_map_loop)(void *dst, const void *a, const void *b, const void *c, size_t n, int *error);
typedef void (*oc_map_cast_loop)(void *dst, const void *src, size_t n);
/* The min or max of n > 0 elements of x into *out (one element of the same type). */
typedef void (*oc_map_fold_loop)(void *out, const void *x, size_t n);
/* where(p OP q, x, y) in one pass: every operand and dst of one type. */
typedef void (*oc_map_select_loop)(void *dst, const void *p, const void *q, const void *x, const void *y, size_t n);

/* The loop of op over operands of type t, NULL when numpy has none (the type check has
 * refused those). */
oc_map_loop oc_map_cpu_loop(oc_map_op op, int t);
/* The same binary op with one operand a single value (`value_operand` 0: a, 1: b) that the
 * loop reads once, at element 0, and keeps in a register; NULL when op has no such form
 * (unary ops, power, where). The same results as oc_map_cpu_loop over a block of copies. */
oc_map_loop oc_map_cpu_loop_scalar(oc_map_op op, int t, int value_operand);
/* where(p cmp q, x, y) over operands of type t with cmp one of MOP_EQ to MOP_GE, q an array
 * or (q_value) one value read once at element 0; NULL for other ops. The same results as the
 * comparison's loop then where's, without the block of booleans between them. */
oc_map_select_loop oc_map_cpu_select(oc_map_op cmp, int t, int q_value);
/* The cast from type `from` to `to` (numpy's astype with casting='unsafe' semantics for
 * in-range values). */
oc_map_cast_loop oc_map_cpu_cast(int from, int to);
/* The fold of a min (is_max 0) or max reduction over elements of type t: numpy's value, NaN
 * propagating; the element it returns is the first in index order of those equal to it (the
 * first NaN; of +0.0 and -0.0, which tie, the first), so that folding a run's pieces in order,
 * keeping the earlier on a tie, gives the same bits however the run was cut. */
oc_map_fold_loop oc_map_cpu_minmax(int t, int is_max);
/* Fills n elements of type t with one constant. */
void oc_map_cpu_fill(void *dst, int t, oc_map_value v, size_t n);

#endif
