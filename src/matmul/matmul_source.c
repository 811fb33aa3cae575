/*
 * matmul_source.c - the operands of a product (matmul_source.h): headers checked once,
 * then rows read in place (memory, a mapping) or with pread (a file beyond the budget).
 */
#include "matmul/matmul_source.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/gpu_probe.h"
#include "io/input_file.h"
#include "io/formats/npy_array.h"
#include "matmul/matmul_dtype.h"
#include "matrix/matrix.h"

static oc_status open_memory(oc_context *ctx, const oc_matmul_array *arr, const char *label, oc_mm_source *s)
{
    if (!arr->data && arr->rows > 0 && arr->cols > 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: neither a path nor data", label);
    if (oc_matmul_dtype_size(arr->dtype) == 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: dtype %d is not one a product reads", label, (int)arr->dtype);
    if (arr->rows < 0 || arr->cols < 0 || arr->ld < 0 || (arr->ld && arr->ld < arr->cols))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "%s: shape %" PRId64 " x %" PRId64 " with ld %" PRId64
                       " (ld must be 0 or at least the column count)",
                       label, arr->rows, arr->cols, arr->ld);
    s->dtype = arr->dtype;
    s->rows = arr->rows;
    s->cols = arr->cols;
    s->ld = arr->ld ? arr->ld : arr->cols;
    s->data = arr->data;
    if (oc_memory_span(s->data, s->rows, s->cols, s->ld, oc_matmul_dtype_size(s->dtype)) < 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "%s: %" PRId64 " x %" PRId64 " elements with ld %" PRId64
                       " would reach past the end of the address space",
                       label, s->rows, s->cols, s->ld);
    if (oc_mm_array_gpu(arr))
        OC_CHECK(ctx, oc_mm_gpu_memory(ctx, label, arr->data, s->rows, s->cols, s->ld, oc_matmul_dtype_size(s->dtype),
                                       &s->gpu_device));
    return OC_OK;
}

oc_status oc_mm_gpu_memory(oc_context *ctx, const char *label, const void *p, int64_t rows, int64_t cols, int64_t ld,
                           size_t elem, int *device)
{
    *device = -1;
    if (rows <= 0 || cols <= 0) return OC_OK;
#ifdef OC_HAVE_CUDA
    /* The device's kernels read whole elements: one that straddles its size's boundary would
     * fault on the device, ending the process's CUDA context (the caller's framework's too). */
    if ((uintptr_t)p % elem != 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "%s: GPU memory at %p is not aligned to its %zu-byte elements (a view that starts inside "
                       "an element?)",
                       label, p, elem);
    const unsigned char *first = p, *last = first + ((size_t)((rows - 1) * ld + cols)) * elem - 1;
    const int d0 = oc_gpu_probe_cuda.memory_device(first), d1 = oc_gpu_probe_cuda.memory_device(last);
    if (d0 < 0 || d1 != d0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "%s: marked gpu, but its %" PRId64 " x %" PRId64
                       " elements are not CUDA device memory of one device from the first to the last",
                       label, rows, cols);
    *device = d0;
    return OC_OK;
#else
    (void)p, (void)ld, (void)elem;
    return oc_fail(ctx, OC_ERR_UNSUPPORTED, "%s: in GPU memory, but this build of outcore has no CUDA backend", label);
#endif
}

/* The header of path (fd open): its dtype, shape and where the data starts. The file is
 * mapped up to the end of the header its prefix declares (numpy writes headers of any
 * length up to 4 GiB, and reads them past its default limit when told to), never past its
 * size: the parser reports a header cut short. */
static oc_status read_header(oc_context *ctx, const char *path, oc_mm_source *s)
{
    unsigned char prefix[12] = {0};
    const ssize_t got = s->file_size > 0 ? pread(s->fd, prefix, sizeof prefix, 0) : 0;
    if (got < 0) return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot read: %s", path, strerror(errno));
    const uint64_t declared = oc_npy_header_end(prefix, (size_t)got);
    const size_t want = (uint64_t)s->file_size < declared ? (size_t)s->file_size : (size_t)declared;
    const unsigned char *head = prefix;
    void *map = NULL;
    if (want > (size_t)got) {
        map = mmap(NULL, want, PROT_READ, MAP_PRIVATE, s->fd, 0);
        if (map == MAP_FAILED)
            return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot map its header: %s", path, strerror(errno));
        head = map;
    }
    oc_npy_array_info info;
    oc_status st = oc_npy_array_parse(ctx, path, head, map ? want : (size_t)got, &info);
    if (map) munmap(map, want);
    OC_CHECK(ctx, st);
    /* The dtype first: a structured one's shape is not parsed (it reads as 0-dimensional). */
    s->dtype = oc_matmul_dtype_from_descr(info.descr);
    if (s->dtype == OC_MATMUL_DEFAULT)
        return oc_fail(
            ctx, OC_ERR_INPUT,
            "%s: dtype '%s' is not one matmul reads (float64, float32, float16, int8-64, uint8-64, bool in this "
            "host's byte order; bfloat16 from memory)",
            path, info.descr);
    if (info.ndim != 2 && info.ndim != 1)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: a %d-dimensional array; a product takes matrices (2-D) and vectors (1-D)", path, info.ndim);
    /* A vector is stored as one row of k (the caller reads it as a column where it is B).
     * Fortran order stores the transpose in C order: read it so, and flip the operand's op. */
    s->vector = info.ndim == 1;
    s->transposed = !s->vector && info.fortran_order;
    s->rows = s->vector ? 1 : info.shape[s->transposed ? 1 : 0];
    s->cols = s->vector ? info.shape[0] : info.shape[s->transposed ? 0 : 1];
    s->ld = s->cols;
    s->data_offset = (int64_t)info.data_offset;
    int64_t elem = (int64_t)oc_matmul_dtype_size(s->dtype), count = 0, bytes = 0;
    const int overflow =
        __builtin_mul_overflow(s->rows, s->cols, &count) || __builtin_mul_overflow(count, elem, &bytes);
    if (overflow || bytes > s->file_size - s->data_offset)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: truncated .npy: a %" PRId64 " x %" PRId64 " %s array needs %s%" PRId64
                       " data bytes, the file has %" PRId64,
                       path, s->rows, s->cols, oc_matmul_dtype_name(s->dtype), overflow ? "more than " : "",
                       overflow ? INT64_MAX : bytes, s->file_size - s->data_offset);
    return OC_OK;
}

oc_status oc_mm_array_check_size(oc_context *ctx, const oc_matmul_array *arr, const char *label)
{
    if (oc_mm_array_size_ok(arr)) return OC_OK;
    return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                   "%s: oc_matmul_array.struct_size is %zu, expected %zu: start from OC_MATMUL_ARRAY_INIT", label,
                   arr->struct_size, sizeof(oc_matmul_array));
}

oc_status oc_mm_source_open(oc_context *ctx, const oc_matmul_array *arr, const char *label, int64_t map_limit,
                            oc_mm_source *s)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->gpu_device = -1;
    s->file.fd = -1;
    s->file.guard = -1;
    s->name = label;
    OC_CHECK(ctx, oc_mm_array_check_size(ctx, arr, label));
    if (!arr->path) return open_memory(ctx, arr, label, s);
    s->name = arr->path;
    struct stat sb;
    OC_CHECK(ctx, oc_input_open(ctx, arr->path, &s->fd, &sb));
    s->file_size = (int64_t)sb.st_size;
    s->dev = (uint64_t)sb.st_dev;
    s->ino = (uint64_t)sb.st_ino;
    OC_CHECK(ctx, read_header(ctx, arr->path, s));
    if (s->rows * s->cols * (int64_t)oc_matmul_dtype_size(s->dtype) > map_limit || s->rows * s->cols == 0)
        return OC_OK; /* read in segments (an empty matrix is never read) */
    close(s->fd);
    s->fd = -1;
    OC_CHECK(ctx, oc_mapped_file_open(ctx, arr->path, &s->file));
    if ((int64_t)s->file.size != s->file_size || s->file.dev != s->dev || s->file.ino != s->ino)
        return oc_input_changed(ctx, arr->path, (int64_t)s->file.size, s->file_size);
    oc_mapped_file_advise_sequential(&s->file);
    s->data = s->file.data + s->data_offset;
    return OC_OK;
}

const void *oc_mm_source_row(const oc_mm_source *s, int64_t row, int64_t col0, int64_t ncols, void *buf, char *why,
                             size_t why_size)
{
    size_t elem = oc_matmul_dtype_size(s->dtype);
    if (s->data) return s->data + ((size_t)row * (size_t)s->ld + (size_t)col0) * elem;
    size_t want = (size_t)ncols * elem, done = 0;
    off_t off = (off_t)(s->data_offset + ((int64_t)row * s->ld + col0) * (int64_t)elem);
    while (done < want) {
        ssize_t got = pread(s->fd, (char *)buf + done, want - done, off + (off_t)done);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            if (got < 0) snprintf(why, why_size, "%s: cannot read: %s", s->name, strerror(errno));
            else
                snprintf(why, why_size, "%s: the file changed while being read (it ends before row %" PRId64 ")",
                         s->name, row);
            return NULL;
        }
        done += (size_t)got;
    }
    return buf;
}

oc_status oc_mm_source_check(oc_context *ctx, const oc_mm_source *s)
{
    if (s->file.data) OC_CHECK(ctx, oc_mapped_file_check(ctx, s->name, &s->file));
    if (s->fd >= 0) OC_CHECK(ctx, oc_input_check_size(ctx, s->name, s->fd, s->file_size));
    return OC_OK;
}

int64_t oc_mm_source_mapped_bytes(const oc_mm_source *s)
{
    return s->file.data ? s->rows * s->cols * (int64_t)oc_matmul_dtype_size(s->dtype) : 0;
}

int64_t oc_mm_source_file_bytes(const oc_mm_source *s)
{
    return s->file.data || s->fd >= 0 ? s->rows * s->cols * (int64_t)oc_matmul_dtype_size(s->dtype) : 0;
}

int oc_mm_source_same(const oc_mm_source *a, const oc_mm_source *b)
{
    if (a->dev || a->ino) return a->dev == b->dev && a->ino == b->ino;
    return !b->dev && !b->ino && a->data == b->data && a->dtype == b->dtype && a->rows == b->rows &&
           a->cols == b->cols && a->ld == b->ld;
}

void oc_mm_source_close(oc_mm_source *s)
{
    oc_mapped_file_close(&s->file);
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    s->data = NULL;
}
