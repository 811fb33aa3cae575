/*
 * matmul_product.h - one product of random operands through oc_matmul, checked against a
 * float64 reference within the bound docs/matmul.md states ("Accuracy"; int8 exactly): what
 * the CPU's tests (test_matmul.c, test_matmul_files.c) and the GPU's case table
 * (gpu/test_matmul_cases.c) run.
 */
#ifndef OC_TESTS_MATMUL_PRODUCT_H
#define OC_TESTS_MATMUL_PRODUCT_H

#include <stdint.h>

#include "outcore.h"

/* The constant c of the documented error bound. */
#define MM_ACCURACY_C 2.0

/* C = op(A)·op(B): C is m x n, A is stored m x k (k x m with transpose_a), B k x n (n x k). */
typedef struct mm_product {
    oc_matmul_dtype ta, tb, requested;
    int64_t m, n, k;
    int transpose_a, transpose_b;
} mm_product;

/* Where and under which budgets a product runs (0: the default). */
typedef struct mm_run {
    oc_backend backend;
    const char *devices; /* NULL: device 0 */
    int64_t host_mem, gpu_mem, tile;
} mm_run;

/* rows x cols random elements of t, small integers for the integer types (malloc'ed). */
void *mm_random_matrix(oc_matmul_dtype t, int64_t rows, int64_t cols);

/* Element i of a matrix of type t as a double (the value the product sees). */
double mm_value(oc_matmul_dtype t, const void *p, int64_t i);

/* Checks C (rt) of product p against the reference computed from its operands a and b within
 * the documented bound (int32: exactly); reports the first element off it (CHECK_MSG).
 * Returns 1 when one is. */
int mm_off_reference(const mm_product *p, const void *a, const void *b, const void *c, oc_matmul_dtype rt);

/* Runs p on random operands in memory (the same ones for every run of the same p) as r says;
 * returns the result (malloc'ed) and its dtype, checked against the reference when `check`.
 * *stats, when given, is the run's. */
void *mm_run_product(const mm_product *p, const mm_run *r, oc_matmul_dtype *rt, int check, oc_matmul_stats *stats);

#endif
