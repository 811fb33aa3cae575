/*
 * matmul_array.h - an oc_matmul_array over memory, for the tests of oc_matmul.
 */
#ifndef OC_TESTS_MATMUL_ARRAY_H
#define OC_TESTS_MATMUL_ARRAY_H

#include "outcore.h"

/* rows x cols elements of t at data, rows contiguous (ld 0: the column count). */
static inline oc_matmul_array mem(oc_matmul_dtype t, void *data, int64_t rows, int64_t cols)
{
    oc_matmul_array a = OC_MATMUL_ARRAY_INIT;
    a.dtype = t;
    a.data = data;
    a.rows = rows;
    a.cols = cols;
    return a;
}

#endif
