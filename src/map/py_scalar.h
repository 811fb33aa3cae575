/*
 * py_scalar.h - Python's arithmetic on its own scalars, as map folds an expression's Python
 * ints and floats before any array is read (map_typecheck.c): exact where converting an int
 * to a double would round it.
 */
#ifndef OC_MAP_PY_SCALAR_H
#define OC_MAP_PY_SCALAR_H

/* A Python int as map holds one: -2^63 to 2^64 - 1, in 128 bits so that every operation on
 * two of them is exact or reports overflow. */
typedef __int128 oc_py_int;

/* Python's a // b and a % b (in *mod) of floats: floored, the remainder with b's sign. */
double oc_py_floordiv(double a, double b, double *mod);

/* x / y of Python ints (y != 0), rounded once to the nearest double as Python's true
 * division is: the quotient taken to 55-56 bits in 128-bit integers with a sticky bit for
 * its remainder, then rounded to 53, ties to even. (double)x / (double)y rounds twice past
 * 2^53: (2**53 + 1) / 3 came out 3002399751580330.5 where Python gives 3002399751580331.0. */
double oc_py_true_divide(oc_py_int x, oc_py_int y);

/* How the int i compares with the float f, exactly (9007199254740993 > 2.0**53, where the
 * int converted to a double would be equal): one of *lt, *eq, *gt set, none for NaN. */
void oc_py_compare_int_float(oc_py_int i, double f, int *lt, int *eq, int *gt);

#endif
