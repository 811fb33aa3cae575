/*
 * npy_array.h - .npy arrays of any dtype and shape, for `outcore map` (the 0/1 matrix
 * reader and the dense writer of io.h cover fixed types and two dimensions).
 */
#ifndef OC_IO_FORMATS_NPY_ARRAY_H
#define OC_IO_FORMATS_NPY_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include "outcore.h"
#include "io/io.h"

typedef struct oc_npy_array_info {
    char descr[40]; /* as in the header: "<f8", "|b1" */
    int fortran_order;
    int ndim;
    int64_t shape[32];
    size_t data_offset; /* where the data starts */
} oc_npy_array_info;

/* Where the header that the first `got` bytes of a .npy declare ends (its prefix and its
 * length field: version 1.0, or 2.0 and 3.0), or `got` when they cannot tell (too few bytes,
 * another version): the bytes a reader needs before oc_npy_array_parse, which names any
 * problem. */
uint64_t oc_npy_header_end(const unsigned char *head, size_t got);

/* Checks the magic, version and header dict of the .npy in [base, base+size) and describes
 * it; the caller checks the descr and that the data fits the file. OC_ERR_INPUT naming path. */
oc_status oc_npy_array_parse(oc_context *ctx, const char *path, const unsigned char *base, size_t size,
                             oc_npy_array_info *out);

/* oc_npy_out_create for any shape (ndim 0..32) and element descr of elem bytes, its data in
 * Fortran order when fortran_order is nonzero (the header says so; the caller writes the
 * elements in that order): commit and abort as for oc_npy_out_create. */
oc_status oc_npy_out_create_nd(oc_context *ctx, const char *path, const char *descr, size_t elem, int ndim,
                               const int64_t *shape, int fortran_order, oc_npy_out **out, void **data);
/* oc_npy_out_create_nd for a writer that says where it writes: a file of more than one
 * reservation chunk (16 MiB) has its first chunk's blocks reserved on return and the rest
 * reserved on a thread of its own, chunk after chunk from the start, while the job runs, so
 * that a memory file system's fallocate, which zeroes every page, does not come before the job.
 * Before writing anything past the header, a writer calls oc_npy_out_ready for the bytes it
 * writes; commit waits for the rest and fails as a failed reservation would have. */
oc_status oc_npy_out_create_nd_ahead(oc_context *ctx, const char *path, const char *descr, size_t elem, int ndim,
                                     const int64_t *shape, oc_npy_out **out, void **data);
/* Waits until the first `bytes` of w's data (after its header) hold their blocks: 0 then, at
 * once for a writer not created ahead; else the errno of the failed reservation (EINTR when it
 * was stopped), with its one-line message ("disk full writing C.npy: ...") in message. Any
 * thread. */
int oc_npy_out_ready(oc_npy_out *w, size_t bytes, char *message, size_t size);
/* oc_npy_out_reopen (io.h) of a temporary file that oc_npy_out_create_nd made for a
 * resumable job: it must hold that array's header and size, else OC_ERR_INPUT naming it. */
oc_status oc_npy_out_reopen_nd(oc_context *ctx, const char *path, const char *temp_path, const char *descr, size_t elem,
                               int ndim, const int64_t *shape, oc_npy_out **out, void **data);

#endif
