/*
 * matmul_source.h - one operand of a product: caller memory, a memory-mapped .npy, or a .npy
 * too large for the host budget, left in its file and read row segment by row segment.
 */
#ifndef OC_MATMUL_MATMUL_SOURCE_H
#define OC_MATMUL_MATMUL_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "outcore.h"
#include "core/abi/struct_version.h"
#include "io/mapped_file.h"

/* oc_matmul_array's versions (docs/abi.md): the first ended before `gpu`, which reads as 0
 * for it. An array of any other size than the two is refused. */
#define OC_MM_ARRAY_V1_SIZE OC_STRUCT_VERSION_SIZE(oc_matmul_array, gpu)
static inline int oc_mm_array_size_ok(const oc_matmul_array *arr)
{
    return arr->struct_size == OC_MM_ARRAY_V1_SIZE || arr->struct_size == sizeof(oc_matmul_array);
}

/* OC_OK, or OC_ERR_INVALID_ARGUMENT naming label ("A", "B", "C") when arr's size is no
 * version's: nothing past struct_size is read before this says it is one. */
oc_status oc_mm_array_check_size(oc_context *ctx, const oc_matmul_array *arr, const char *label);

static inline int oc_mm_array_gpu(const oc_matmul_array *arr)
{
    return arr->struct_size >= sizeof(oc_matmul_array) && arr->gpu;
}

typedef struct oc_mm_source {
    const char *name; /* the path, or "A" / "B" for memory: what messages name */
    oc_matmul_dtype dtype;
    int64_t rows, cols, ld;    /* as stored: element (r, c) at r*ld + c */
    int transposed;            /* a Fortran-order .npy: the stored rows are the array's columns */
    int vector;                /* a 1-D .npy: one stored row of cols elements, without a transpose of its own */
    const unsigned char *data; /* element (0, 0) in memory or the mapping; NULL: read with pread */
    oc_mapped_file file;       /* a mapped input */
    int fd;                    /* an input read in panels (-1 otherwise) */
    int64_t data_offset;       /* file offset of element (0, 0) */
    int64_t file_size;
    uint64_t dev, ino; /* a file's identity (0, 0 for memory) */
    int gpu_device;    /* memory on this CUDA device (oc_matmul_array.gpu), else -1 */
} oc_mm_source;

/* Describes arr (label names memory in messages) and checks it: a .npy must be a 2-D array
 * (C order; Fortran order is read as the transpose of its C-order bytes) or a 1-D one (one
 * stored row, `vector`; the caller decides whether it is a row or a column) of a dtype a product
 * reads, its data all in the file; memory must have a dtype, a nonnegative shape and
 * ld >= cols, and memory marked gpu must be CUDA device memory at both ends
 * (oc_mm_gpu_memory). A file whose data takes at most map_limit bytes is mapped, a larger one
 * is opened and read in segments. OC_ERR_INPUT naming the file. */
oc_status oc_mm_source_open(oc_context *ctx, const oc_matmul_array *arr, const char *label, int64_t map_limit,
                            oc_mm_source *s);

/* The CUDA device of rows x cols elements of elem bytes from p, ld elements between rows,
 * when p starts on an element's boundary and both ends are device memory of that device;
 * else OC_ERR_INVALID_ARGUMENT naming label (OC_ERR_UNSUPPORTED in a build without CUDA).
 * Empty memory is on no device (-1). */
oc_status oc_mm_gpu_memory(oc_context *ctx, const char *label, const void *p, int64_t rows, int64_t cols, int64_t ld,
                           size_t elem, int *device);

/* Bytes of s held in memory by the job: a mapped file's data (0 for memory and pread). */
int64_t oc_mm_source_mapped_bytes(const oc_mm_source *s);
/* The data bytes of an operand read from a file (mapped or not); 0 for one in memory. */
int64_t oc_mm_source_file_bytes(const oc_mm_source *s);

/* The ncols elements of stored row `row` from column col0: a pointer into memory or the
 * mapping, or into buf (room for ncols elements), read with pread. NULL after a failed
 * read, its message in why (the file changed or could not be read). Thread-safe. */
const void *oc_mm_source_row(const oc_mm_source *s, int64_t row, int64_t col0, int64_t ncols, void *buf, char *why,
                             size_t why_size);

/* OC_OK when a file input still is what it was when opened: its size, and for a mapped one
 * no read past its end (mapped_file.h's check). ctx NULL: the status alone, nothing recorded. */
oc_status oc_mm_source_check(oc_context *ctx, const oc_mm_source *s);

/* Whether two operands are the same data: one file by any name, or the same memory. */
int oc_mm_source_same(const oc_mm_source *a, const oc_mm_source *b);

void oc_mm_source_close(oc_mm_source *s);

#endif
