/*
 * matrix_build.h - packing caller or file data into an oc_matrix, shared by the public
 * constructors (matrix_build.c) and the file readers (src/io).
 */
#ifndef OC_CORE_MATRIX_BUILD_H
#define OC_CORE_MATRIX_BUILD_H

#include <stdint.h>
#include "core/matrix.h"

/* Packs rows [row0, row0 + nrows) of m from dense 0/1 bytes: src points at row row0, rows
 * are stride bytes apart, m->cols bytes each. A byte other than 0 or 1 fails with
 * OC_ERR_INPUT naming m's name and the 0-based row and column; the value is shown signed
 * when is_signed (int8 data). */
oc_status oc_matrix_pack_dense_rows(oc_context *ctx, oc_matrix *m, int64_t row0, int64_t nrows,
                                    const unsigned char *src, int64_t stride, int is_signed);

#endif
