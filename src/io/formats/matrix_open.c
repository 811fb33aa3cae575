/*
 * matrix_open.c - the public file entry points: oc_matrix_open picks a reader by the
 * file's extension from the table of input formats (oc_input_format), oc_matrix_peek the same
 * reader's look at the header alone; oc_matrix_save
 * writes a matrix as .npy (0/1 bytes or packbits rows).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/process/bus_signal.h"
#include "core/context.h"
#include "core/error.h"
#include "matrix/matrix.h"
#include "core/abi/struct_version.h"
#include "core/text_buf.h"
#include "core/threads.h"
#include "core/trace.h"
#include "io/io.h"
#include "io/mapped_file.h"
#include "mem/host_budget.h"

/* Version 1 of oc_read_options ends before host_mem_bytes (docs/abi.md). */
#define OC_READ_OPTIONS_V1_SIZE OC_STRUCT_VERSION_SIZE(oc_read_options, host_mem_bytes)

/* opts, or the defaults when NULL, as the current version of the struct (a version-1 struct
 * gets host_mem_bytes's default) in *buf, the budget resolved (a default one is read from
 * /proc before the file is mapped, not while it is: a signal then finds the file mapped only
 * while it is read); NULL after a failure recorded on ctx: a size that is no version's, or a
 * negative budget (as oc_gram_options and oc_matmul_options refuse it). */
static const oc_read_options *read_options(oc_context *ctx, const oc_read_options *opts, oc_read_options *buf)
{
    *buf = (oc_read_options)OC_READ_OPTIONS_INIT;
    if (opts && opts->struct_size == OC_READ_OPTIONS_V1_SIZE) { /* before host_mem_bytes (docs/abi.md): its default */
        memcpy(buf, opts, OC_READ_OPTIONS_V1_SIZE);
        buf->struct_size = sizeof *buf;
    } else if (opts && opts->struct_size != sizeof(oc_read_options)) { /* no version's size (docs/abi.md) */
        oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                "oc_read_options.struct_size is %zu, expected %zu: start from OC_READ_OPTIONS_INIT", opts->struct_size,
                sizeof(oc_read_options));
        return NULL;
    } else if (opts && opts->host_mem_bytes < 0) {
        oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                "oc_read_options.host_mem_bytes is %" PRId64
                ": the host memory budget must be a positive size (0: the default)",
                opts->host_mem_bytes);
        return NULL;
    } else if (opts) {
        *buf = *opts;
    }
    buf->host_mem_bytes = oc_host_budget_resolve(buf->host_mem_bytes);
    return buf;
}

/* Each input format's suffix, reader and header's reader (NULL: a text file declares no shape). */
static const struct {
    const char *name;
    oc_status (*read)(oc_context *ctx, const char *path, const oc_read_options *opts, oc_matrix **out);
    oc_mapped_head_fn head;
} formats[] = {
    [OC_INPUT_NPY] = {"npy", oc_npy_read, oc_npy_head},
    [OC_INPUT_MTX] = {"mtx", oc_mtx_read, oc_mtx_head},
    [OC_INPUT_TXT] = {"txt", oc_text_read, NULL},
    [OC_INPUT_CSV] = {"csv", oc_text_read, NULL},
};

/* A format added to oc_input_format without its row here (or the reverse) stops the build. */
_Static_assert(sizeof formats / sizeof formats[0] == OC_INPUT_FORMAT_COUNT,
               "formats[] needs one row per oc_input_format");

const char *oc_input_format_name(oc_input_format f)
{
    return (unsigned)f < OC_INPUT_FORMAT_COUNT ? formats[f].name : NULL;
}

/* The input format of path's extension in *format; else fails: an unknown extension, or
 * --bits with a file that is not .npy. */
static oc_status input_format(oc_context *ctx, const char *path, const oc_read_options *opts, int *format)
{
    int64_t bits = opts->bits;
    if (!path[0]) return oc_fail(ctx, OC_ERR_INPUT, "an input file's name is empty");
    if (bits < 0) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: --bits %" PRId64 " is negative", path, bits);
    char ext[16];
    oc_path_extension(path, ext, sizeof ext);
    if (bits > 0 && strcmp(ext, formats[OC_INPUT_NPY].name) != 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: --bits applies to .npy files of numpy.packbits output only",
                       path);
    int f = 0;
    while (f < OC_INPUT_FORMAT_COUNT && strcmp(ext, formats[f].name) != 0) ++f;
    if (f == OC_INPUT_FORMAT_COUNT) {
        oc_text names = {0}; /* ".npy, .mtx, .txt and .csv" */
        for (int i = 0; i < OC_INPUT_FORMAT_COUNT; ++i)
            oc_text_printf(&names, "%s.%s",
                           i == 0                           ? ""
                           : i == OC_INPUT_FORMAT_COUNT - 1 ? " and "
                                                            : ", ",
                           formats[i].name);
        oc_status st =
            oc_fail(ctx, OC_ERR_INPUT, "%s: unknown file type%s%s%s; supported inputs are %s", path,
                    ext[0] ? " '." : "", ext, ext[0] ? "'" : " (no extension)", names.data ? names.data : "?");
        free(names.data);
        return st;
    }
    *format = f;
    return OC_OK;
}

static oc_status matrix_read_call(oc_context *ctx, const char *path, const oc_read_options *opts, oc_matrix **out)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT; /* a job: its workers and its cancel flag */
    if (!path || !out) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "reading a matrix: the path or out is NULL");
    /* Reading a large file is a job: oc_context_cancel stops it, and a cancel left over from
     * an earlier job must not. */
    oc_context_begin_job(ctx);
    oc_read_options buf;
    if (!(opts = read_options(ctx, opts, &buf))) return OC_ERR_INVALID_ARGUMENT;
    int f;
    OC_CHECK(ctx, input_format(ctx, path, opts, &f));
    double t = oc_now();
    OC_CHECK(ctx, formats[f].read(ctx, path, opts, out));
    if (oc_tracing()) {    /* OUTCORE_TRACE says which inputs stay in their files */
        char *what = NULL; /* the heap's: no frame of every read holds a message's buffer */
        if (asprintf(&what, "%s%s", path, oc_matrix_file_backed(*out) ? " (left in its file)" : "") >= 0) {
            oc_trace_phase(&t, "read", what);
            free(what);
        }
    }
    return OC_OK;
}

/* Reading maps the file: SIGBUS deliverable meanwhile (core/process/bus_signal.h). */
oc_status oc_matrix_read(oc_context *ctx, const char *path, const oc_read_options *opts, oc_matrix **out)
{
    OC_RETURN_WITH_BUS_SIGNAL(matrix_read_call(ctx, path, opts, out));
}

static oc_status matrix_peek_call(oc_context *ctx, const char *path, const oc_read_options *opts, int64_t *rows,
                                  int64_t *cols)
{
    if (!path || !rows || !cols)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "peeking at a matrix: the path, rows or cols is NULL");
    oc_read_options buf;
    if (!(opts = read_options(ctx, opts, &buf))) return OC_ERR_INVALID_ARGUMENT;
    int f;
    OC_CHECK(ctx, input_format(ctx, path, opts, &f));
    /* Written only once the call succeeds (outcore.h: out-parameters). */
    int64_t r = -1, c = -1; /* text: its rows are known once read */
    if (formats[f].head) OC_CHECK(ctx, oc_mapped_head(ctx, path, formats[f].head, opts, &r, &c));
    *rows = r, *cols = c;
    return OC_OK;
}

/* Reads the header from the file's mapping: SIGBUS deliverable meanwhile. */
oc_status oc_matrix_peek(oc_context *ctx, const char *path, const oc_read_options *opts, int64_t *rows, int64_t *cols)
{
    OC_RETURN_WITH_BUS_SIGNAL(matrix_peek_call(ctx, path, opts, rows, cols));
}

oc_status oc_matrix_open(oc_context *ctx, const char *path, int64_t bits, oc_matrix **out)
{
    oc_read_options opts = OC_READ_OPTIONS_INIT;
    opts.bits = bits;
    OC_CHECK(ctx, oc_matrix_read(ctx, path, &opts, out));
    return OC_OK;
}

static oc_status matrix_save_call(oc_context *ctx, const oc_matrix *m, const char *path, int packed)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    if (!m || !path) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_matrix_save: NULL argument");
    if (packed != 0 && packed != 1)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_matrix_save: packed %d: expected 0 or 1", packed);
    /* A job of its own: its writes are counted from the first for the fault plan (fault.h). */
    oc_context_begin_job(ctx);
    char ext[16];
    if (strcmp(oc_path_extension(path, ext, sizeof ext), "npy") != 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: a matrix is saved as .npy; the name must end in .npy", path);
    int64_t width = packed ? (m->cols + 7) / 8 : m->cols;
    oc_npy_out *w;
    void *data;
    OC_CHECK(ctx, oc_npy_out_create(ctx, path, OC_NPY_UINT8, m->rows, width, &w, &data));
    /* A file-backed or lists matrix is copied through a buffer of about 1 MB of rows
     * (oc_matrix_load_rows fills lists rows without packing the whole matrix). */
    const int64_t row_bytes = m->words_per_row * 8;
    const int64_t chunk = oc_matrix_resident(m) ? m->rows : (1 << 20) / row_bytes > 0 ? (1 << 20) / row_bytes : 1;
    uint64_t *buf = oc_matrix_resident(m) ? NULL : aligned_alloc(64, (size_t)(chunk * row_bytes));
    if (!oc_matrix_resident(m) && !buf) {
        oc_npy_out_abort(w);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory for a %lld-byte row buffer", path,
                       (long long)(chunk * row_bytes));
    }
    unsigned char *dst = data;
    for (int64_t r0 = 0; r0 < m->rows; r0 += chunk) {
        const int64_t nr = m->rows - r0 < chunk ? m->rows - r0 : chunk;
        const uint64_t *rows = buf ? buf : m->bits + r0 * m->words_per_row;
        oc_status st = buf ? oc_matrix_load_rows(ctx, m, r0, nr, buf) : OC_OK;
        if (st != OC_OK) {
            free(buf);
            oc_npy_out_abort(w);
            return oc_trace_at(ctx, st, __FILE__, __LINE__);
        }
        for (int64_t i = 0; i < nr; ++i, dst += width) {
            const unsigned char *row = (const unsigned char *)(rows + i * m->words_per_row);
            if (packed) {
                /* The packed layout is numpy.packbits order with zero padding: the row's first
                 * bytes are the file's bytes. */
                memcpy(dst, row, (size_t)width);
            } else {
                for (int64_t j = 0; j < m->cols; ++j) dst[j] = (unsigned char)((row[j >> 3] >> (7 - (j & 7))) & 1);
            }
        }
    }
    free(buf);
    OC_CHECK(ctx, oc_npy_out_commit(ctx, w));
    return OC_OK;
}

/* A matrix left in its file is read from its mapping: SIGBUS deliverable meanwhile. */
oc_status oc_matrix_save(oc_context *ctx, const oc_matrix *m, const char *path, int packed)
{
    OC_RETURN_WITH_BUS_SIGNAL(matrix_save_call(ctx, m, path, packed));
}
