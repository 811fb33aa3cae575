/*
 * matmul_source.h - one operand of a product: caller memory, a memory-mapped .npy, or a .npy
 * too large for the host budget, left in its file and read row segment by row segment.
 */
#ifndef OC_MATMUL_MATMUL_SOURCE_H
#define OC_MATMUL_MATMUL_SOURCE_H

#include <stdint.h>

#include "outcore.h"
#include "io/mapped_file.h"

typedef struct oc_mm_source {
    const char *name; /* the path, or "A" / "B" for memory: what messages name */
    oc_matmul_dtype dtype;
    int64_t rows, cols, ld;    /* as stored: element (r, c) at r*ld + c */
    int transposed;            /* a Fortran-order .npy: the stored rows are the array's columns */
    const unsigned char *data; /* element (0, 0) in memory or the mapping; NULL: read with pread */
    oc_mapped_file file;       /* a mapped input */
    int fd;                    /* an input read in panels (-1 otherwise) */
    int64_t data_offset;       /* file offset of element (0, 0) */
    int64_t file_size;
    uint64_t dev, ino; /* a file's identity (0, 0 for memory) */
} oc_mm_source;

/* Describes arr (label names memory in messages) and checks it: a .npy must be a 2-D array
 * (C order; Fortran order is read as the transpose of its C-order bytes) of a dtype a product reads, its data all in the file; memory must have a dtype, a
 * nonnegative shape and ld >= cols. A file whose data takes at most map_limit bytes is
 * mapped, a larger one is opened and read in segments. OC_ERR_INPUT naming the file. */
oc_status oc_mm_source_open(oc_context *ctx, const oc_matmul_array *arr, const char *label, int64_t map_limit,
                            oc_mm_source *s);

/* Bytes of s held in memory by the job: a mapped file's data (0 for memory and pread). */
int64_t oc_mm_source_mapped_bytes(const oc_mm_source *s);

/* The ncols elements of stored row `row` from column col0: a pointer into memory or the
 * mapping, or into buf (room for ncols elements), read with pread. NULL after a failed
 * read, its message in why (the file changed or could not be read). Thread-safe. */
const void *oc_mm_source_row(const oc_mm_source *s, int64_t row, int64_t col0, int64_t ncols, void *buf, char *why,
                             size_t why_size);

/* OC_OK when a file input still is what it was when opened (mapped_file.h's check). */
oc_status oc_mm_source_check(oc_context *ctx, const oc_mm_source *s);

/* Whether two operands are the same data: one file by any name, or the same memory. */
int oc_mm_source_same(const oc_mm_source *a, const oc_mm_source *b);

void oc_mm_source_close(oc_mm_source *s);

#endif
