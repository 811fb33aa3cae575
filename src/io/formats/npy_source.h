/*
 * npy_source.h - a .npy matrix left in its file and read on demand (npy_source.c).
 */
#ifndef OC_IO_FORMATS_NPY_SOURCE_H
#define OC_IO_FORMATS_NPY_SOURCE_H

#include <stdint.h>
#include "outcore.h"
#include "matrix/matrix_build.h"

/* What the header check found: where the rows are and what they hold. */
typedef struct oc_npy_layout {
    int64_t rows, cols;  /* the matrix (cols: --bits for packed input) */
    int64_t data_offset; /* file offset of row 0 */
    int64_t width;       /* bytes per row in the file */
    int fortran;         /* the file's bytes lie column after column (rows bytes a column) */
    int64_t bits;        /* > 0: numpy.packbits rows */
    oc_dense_bytes kind; /* otherwise: what the bytes hold */
    uint64_t dev, ino;   /* the identity of the file the header was read from */
    int64_t file_size;   /* its size then */
} oc_npy_layout;

/* Opens path again and returns a file-backed matrix over it (bits == NULL). */
oc_status oc_npy_source_open(oc_context *ctx, const char *path, const oc_npy_layout *layout, oc_matrix **out);

#endif
