/*
 * npy_header.h - the header of every .npy the library writes: dense outputs (npy.c) and the
 * members of .npz archives (npz.c). The reader's side of the format is in npy.c.
 *
 *   offset 0   "\x93NUMPY", major, minor       version 1.0: any header written here fits it
 *   offset 8   header length, little-endian    2 bytes
 *   then       {'descr': '<i4', 'fortran_order': False, 'shape': (R, C), }
 *              padded with spaces and ending in '\n', so that the data starts at a
 *              multiple of 64 bytes, as numpy writes it
 *
 * The data is written as this host holds it in memory, so the descr names the host's byte
 * order ('<' on little-endian hosts, '>' on big-endian ones; '|' for bytes): one rule for
 * every output, kept here.
 */
#ifndef OC_IO_FORMATS_NPY_HEADER_H
#define OC_IO_FORMATS_NPY_HEADER_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

#define OC_NPY_ALIGN 64       /* numpy's ARRAY_ALIGN: the data starts at a multiple of this */
#define OC_NPY_HEADER_MAX 256 /* room for any header oc_npy_header writes */

/* Writes the header of a C-order array of dtype (a code of core/dtype.h's table: an oc_dtype,
 * OC_NPY_UINT8, or OC_NPY_INT64 for indices, rows and columns of selection results) and shape
 * (d0,) (d1 < 0) or (d0, d1) into h (OC_NPY_HEADER_MAX bytes) and returns its length, the
 * offset of the data. fixed = 0: the natural length, a multiple of OC_NPY_ALIGN; else
 * exactly fixed bytes (a multiple of OC_NPY_ALIGN that holds the header), for a header
 * rewritten in place once the shape is known. */
size_t oc_npy_header(unsigned char *h, int dtype, int64_t d0, int64_t d1, size_t fixed);

/* The header of an array of any shape (ndim 0..32) and element descr ("<f8", "|b1"), in C
 * order, or in Fortran order when fortran_order is nonzero, into h (cap bytes;
 * OC_NPY_HEADER_ND_MAX always suffices); returns its length, a multiple of OC_NPY_ALIGN, or 0
 * when it does not fit in cap. */
#define OC_NPY_HEADER_ND_MAX 1024
size_t oc_npy_header_nd(unsigned char *h, size_t cap, const char *descr, int ndim, const int64_t *shape,
                        int fortran_order);

#endif
