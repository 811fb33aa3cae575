/*
 * npy.c - the .npy format's reader: a memory-mapped reader of 0/1 matrices, and the header
 * of an array of any dtype and shape (for map). The writer is npy_out.c.
 *
 * File layout (numpy/lib/format.py):
 *
 *   offset 0   "\x93NUMPY"                     magic, 6 bytes
 *   offset 6   major, minor                     (1,0), (2,0) or (3,0)
 *   offset 8   header length, little-endian     2 bytes in 1.0, 4 bytes in 2.0 and 3.0
 *   then       a Python dict literal             {'descr': '|u1', 'fortran_order': False,
 *                                                 'shape': (R, C), } padded with spaces, '\n'
 *   then       the data, R*C elements in C order, or in Fortran order (column after column)
 *              when fortran_order is True; numpy starts it at a multiple of 64 bytes
 *
 * The reader maps the file and packs it row by row, so only the packed matrix (1 bit per
 * value) stays in memory: a 20 GB uint8 input becomes 2.5 GB. Pages already packed are
 * released from the mapping as it goes, so the process's resident size says what it holds.
 * A Fortran-order file (numpy.save of a transposed array) is read in place too, giving the
 * same bits and the same errors as the C-order file of the array: its bytes are packed in
 * bands of columns (oc_pack_rows_parallel), each band one run of the file, released once
 * packed. When even the packed matrix would take more than the host budget allows
 * (oc_read_options.host_mem_bytes), the reader checks the header and the size and leaves the
 * rows in the file (npy_source.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "matrix/matrix.h"
#include "matrix/matrix_build.h"
#include "io/io.h"
#include "io/mapped_file.h"
#include "io/formats/npy_source.h"
#include "io/formats/npy_array.h"
#include "mem/host_budget.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_MAX_DIMS 32

/* ---------------------------------------------------------------- header parsing */

typedef struct npy_header {
    char descr[40];
    int fortran_order;
    int ndim;
    int64_t shape[NPY_MAX_DIMS];
    int shape_overflow; /* a dimension does not fit int64 */
    int listed_dims;    /* dimensions the shape lists, counted past NPY_MAX_DIMS */
    unsigned seen;      /* bit 0 descr, bit 1 fortran_order, bit 2 shape */
} npy_header;

typedef struct header_cursor {
    const char *p, *begin, *end;
    const char *error; /* what was expected where parsing stopped */
} header_cursor;

static void skip_space(header_cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int accept(header_cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

static int expect(header_cursor *c, char ch, const char *what)
{
    if (accept(c, ch)) return 1;
    c->error = what;
    return 0;
}

/* A Python string literal in single or double quotes, without escapes (numpy never
 * writes any in these keys and values). */
static int parse_string(header_cursor *c, char *buf, size_t size)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) {
        c->error = "expected a quoted string";
        return 0;
    }
    char quote = *c->p++;
    size_t k = 0;
    while (c->p < c->end && *c->p != quote) {
        if (*c->p == '\\' || *c->p == '\n' || k + 1 >= size) {
            c->error = "a string is too long or has escapes";
            return 0;
        }
        /* A NUL would end the C string early: '<f8\0x' must not read as '<f8'. */
        if ((unsigned char)*c->p < 0x20) {
            c->error = "a string holds a control character";
            return 0;
        }
        buf[k++] = *c->p++;
    }
    if (c->p >= c->end) {
        c->error = "a string is not closed";
        return 0;
    }
    c->p++;
    buf[k] = '\0';
    return 1;
}

static int parse_word(header_cursor *c, const char *word)
{
    size_t n = strlen(word);
    skip_space(c);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, word, n) == 0) {
        c->p += n;
        return 1;
    }
    return 0;
}

static int parse_bool(header_cursor *c, int *out)
{
    if (parse_word(c, "True")) return *out = 1, 1;
    if (parse_word(c, "False")) return *out = 0, 1;
    c->error = "expected True or False";
    return 0;
}

/* A shape tuple: "()", "(5,)", "(3, 4)"; "3L" is what Python 2 numpy wrote. */
static int parse_shape(header_cursor *c, npy_header *h)
{
    if (!expect(c, '(', "expected '(' to open the shape")) return 0;
    h->ndim = 0;
    for (;;) {
        if (accept(c, ')')) return 1;
        skip_space(c);
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') {
            c->error = "expected a non-negative integer in the shape";
            return 0;
        }
        /* Python reads "040" as no number (a leading zero), and numpy refuses it. */
        if (*c->p == '0' && c->p + 1 < c->end && c->p[1] >= '0' && c->p[1] <= '9') {
            c->error = "a dimension of the shape has a leading zero";
            return 0;
        }
        uint64_t v = 0;
        int overflow = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            const uint64_t d = (uint64_t)(*c->p++ - '0');
            if (overflow || v > ((uint64_t)INT64_MAX - d) / 10) overflow = 1;
            else v = v * 10 + d;
        }
        if (c->p < c->end && *c->p == 'L') c->p++;
        /* Past NPY_MAX_DIMS the dimensions are only counted (npy_parse refuses them). */
        if (h->listed_dims < NPY_MAX_DIMS) {
            h->shape_overflow |= overflow;
            h->shape[h->ndim++] = overflow ? INT64_MAX : (int64_t)v;
        }
        if (h->listed_dims < INT_MAX) h->listed_dims++;
        if (accept(c, ')')) {
            /* "(6)" is a number in parentheses, not a tuple: numpy refuses it */
            if (h->listed_dims == 1) c->error = "the shape is no tuple: one dimension is written (N,)";
            return h->listed_dims != 1;
        }
        if (!expect(c, ',', "expected ',' or ')' in the shape")) return 0;
    }
}

static int parse_header_dict(header_cursor *c, npy_header *h)
{
    if (!expect(c, '{', "expected '{'")) return 0;
    for (;;) {
        if (accept(c, '}')) break;
        char key[32];
        if (!parse_string(c, key, sizeof key)) return 0;
        if (!expect(c, ':', "expected ':' after a key")) return 0;
        if (strcmp(key, "descr") == 0) {
            skip_space(c);
            if (c->p < c->end && *c->p == '[') {
                /* A list descr is a structured dtype: name it as such rather than "not a dict". */
                snprintf(h->descr, sizeof h->descr, "structured");
                h->seen |= 1;
                return 1;
            }
            if (!parse_string(c, h->descr, sizeof h->descr)) return 0;
            h->seen |= 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (!parse_bool(c, &h->fortran_order)) return 0;
            h->seen |= 2;
        } else if (strcmp(key, "shape") == 0) {
            if (!parse_shape(c, h)) return 0;
            h->seen |= 4;
        } else {
            c->error = "unexpected key (numpy writes only 'descr', 'fortran_order' and 'shape')";
            return 0;
        }
        if (accept(c, '}')) break;
        if (!expect(c, ',', "expected ',' or '}' after a value")) return 0;
    }
    skip_space(c);
    /* Some writers pad with NULs instead of spaces; numpy's own parser tolerates neither,
     * but the padding carries no meaning, so only other characters are an error. */
    while (c->p < c->end && *c->p == '\0') c->p++;
    if (c->p != c->end) {
        c->error = "text after the closing '}'";
        return 0;
    }
    if (h->seen != 7) {
        c->error = "a key is missing ('descr', 'fortran_order' and 'shape' are required)";
        return 0;
    }
    return 1;
}

/* The element kinds the reader accepts: 1-byte bool, unsigned or signed integers, in any
 * spelling numpy may use for a byte ('|u1', '<u1', '=u1', 'u1', '?' ...). */
typedef enum npy_kind { NPY_KIND_OTHER, NPY_KIND_BOOL, NPY_KIND_U8, NPY_KIND_I8 } npy_kind;

static npy_kind descr_kind(const char *descr)
{
    const char *d = descr;
    if (*d == '|' || *d == '<' || *d == '>' || *d == '=') d++;
    if (strcmp(d, "b1") == 0 || strcmp(d, "?") == 0) return NPY_KIND_BOOL;
    if (strcmp(d, "u1") == 0 || strcmp(d, "B") == 0) return NPY_KIND_U8;
    if (strcmp(d, "i1") == 0 || strcmp(d, "b") == 0) return NPY_KIND_I8;
    return NPY_KIND_OTHER;
}

/* The oc_map_dtype code of a numeric descr wider than a byte in this host's byte order
 * ("<f8", "<i4" on x86), or -1. */
static int wide_value_type(const char *descr)
{
    int type = -1;
    const char native = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? '<' : '>';
    if ((descr[0] != native && descr[0] != '=') || oc_map_dtype_parse(descr + 1, &type) != OC_OK) return -1;
    return oc_value_type_size(type) > 1 ? type : -1;
}

uint64_t oc_npy_header_end(const unsigned char *head, size_t got)
{
    const int v1 = got >= 10 && head[6] == 1, v2 = got >= 12 && (head[6] == 2 || head[6] == 3);
    if (v1) return 10 + ((uint64_t)head[8] | (uint64_t)head[9] << 8);
    if (v2)
        return 12 + ((uint64_t)head[8] | (uint64_t)head[9] << 8 | (uint64_t)head[10] << 16 | (uint64_t)head[11] << 24);
    return got;
}

/* Reads and checks the magic, version and header dict of a mapped file; on success sets
 * *data_offset to where the array starts. */
static oc_status npy_parse(oc_context *ctx, const char *path, const unsigned char *base, size_t size, npy_header *h,
                           size_t *data_offset)
{
    /* A file that is a prefix of the magic is a truncated .npy, not some other file. */
    if (memcmp(base, NPY_MAGIC, size < NPY_MAGIC_LEN ? size : NPY_MAGIC_LEN) != 0)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: not a .npy file (bad magic: it does not start with \\x93NUMPY)", path);
    if (size < 10)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: truncated .npy header: the file has only %zu bytes", path, size);
    unsigned major = base[6], minor = base[7];
    if (!((major >= 1 && major <= 3) && minor == 0))
        return oc_fail(ctx, OC_ERR_INPUT, "%s: unsupported .npy format version %u.%u (1.0, 2.0 and 3.0 are read)", path,
                       major, minor);
    const size_t prefix = major == 1 ? 10 : 12;
    if (size < prefix)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: truncated .npy header: the file has only %zu bytes", path, size);
    const uint64_t header_len = oc_npy_header_end(base, size) - prefix;
    if (header_len > size - prefix)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: truncated .npy header: it declares %" PRIu64 " header bytes but only %zu follow", path,
                       header_len, size - prefix);

    memset(h, 0, sizeof *h);
    header_cursor c = {.p = (const char *)base + prefix, .begin = (const char *)base + prefix};
    c.end = c.p + header_len;
    if (!parse_header_dict(&c, h))
        return oc_fail(ctx, OC_ERR_INPUT, "%s: the .npy header is not a valid dict: %s (at header byte %td)", path,
                       c.error, c.p - c.begin);
    if (h->listed_dims > NPY_MAX_DIMS) /* valid numpy (up to 64), past what outcore reads */
        return oc_fail(ctx, OC_ERR_INPUT, "%s: the array has %d dimensions; outcore reads at most %d (numpy allows 64)",
                       path, h->listed_dims, NPY_MAX_DIMS);
    *data_offset = prefix + (size_t)header_len;
    return OC_OK;
}

/* ---------------------------------------------------------------- reader */

/* The mapping a reader drops pages from as its blocks are packed. */
typedef struct release_ctx {
    oc_mapped_file *file;
    size_t offset;
    int64_t width; /* bytes a row */
    int64_t rows;  /* Fortran order: bytes a column; 0 in C order */
} release_ctx;

/* oc_pack_source.block_packed: C order gives whole rows, one run of the file; Fortran order
 * whole columns, one run, or a tile's part of each column, a run each. */
static void release_block(void *user, int64_t row0, int64_t rows, int64_t col0, int64_t cols)
{
    const release_ctx *r = user;
    if (!r->rows) {
        oc_mapped_file_release_range(r->file, r->offset + (size_t)(row0 * r->width),
                                     r->offset + (size_t)((row0 + rows) * r->width));
    } else if (rows == r->rows) {
        oc_mapped_file_release_range(r->file, r->offset + (size_t)(col0 * r->rows),
                                     r->offset + (size_t)((col0 + cols) * r->rows));
    } else {
        for (int64_t j = col0; j < col0 + cols; ++j)
            oc_mapped_file_release_range(r->file, r->offset + (size_t)(j * r->rows + row0),
                                         r->offset + (size_t)(j * r->rows + row0 + rows));
    }
}

/* What the header declares, checked against the options and the file's size: everything
 * the reader knows before it allocates (oc_npy_head stops here). */
typedef struct npy_matrix {
    npy_kind kind;
    int value_type; /* a wider number's oc_map_dtype (oc_values_to_matrix), -1 for the byte kinds */
    int64_t rows, cols, width;
    int fortran; /* the data lies column after column (a row or a column alone lies alike: 0) */
    size_t offset;
} npy_matrix;

static oc_status npy_matrix_layout(oc_context *ctx, const char *path, const oc_mapped_file *file,
                                   const oc_read_options *opts, npy_matrix *l)
{
    int64_t bits = opts->bits;
    npy_header h;
    size_t offset = 0;
    OC_CHECK(ctx, npy_parse(ctx, path, file->data, file->size, &h, &offset));

    npy_kind kind = descr_kind(h.descr);
    /* Wider numbers (int16 ... float64) are read by the rule every caller shares
     * (oc_values_to_matrix); -1 for the one-byte kinds above. */
    int value_type = kind == NPY_KIND_OTHER ? wide_value_type(h.descr) : -1;
    const char foreign = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? '>' : '<';
    int foreign_type = -1;
    if (kind == NPY_KIND_OTHER && value_type < 0 && h.descr[0] == foreign &&
        oc_map_dtype_parse(h.descr + 1, &foreign_type) == OC_OK)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: dtype '%s' is %s-endian: only this host's byte order is read (save the array "
                       "as .astype('%c%s'))",
                       path, h.descr, foreign == '>' ? "big" : "little", foreign == '>' ? '<' : '>', h.descr + 1);
    if (kind == NPY_KIND_OTHER && value_type < 0)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: dtype '%s' is not supported: the matrix must be numbers (bool, integers, float32 or "
                       "float64) holding 0 and 1, or any numbers with --binarize",
                       path, h.descr);
    if (h.shape_overflow) return oc_fail(ctx, OC_ERR_INPUT, "%s: a dimension of the shape overflows 64 bits", path);
    if (h.ndim != 2) {
        char shape[64] = "(";
        for (int d = 0; d < h.ndim && d < 4; ++d)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%" PRId64, d ? ", " : "", h.shape[d]);
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s)",
                 h.ndim == 1  ? ","
                 : h.ndim > 4 ? ", ..."
                              : "");
        return oc_fail(ctx, OC_ERR_INPUT, "%s: shape %s is not 2-D: a matrix needs rows and columns", path, shape);
    }
    int64_t rows = h.shape[0], width = h.shape[1], data_bytes;
    if (!oc_mul_i64(rows, width, &data_bytes))
        return oc_fail(ctx, OC_ERR_INPUT, "%s: dimensions %" PRId64 " x %" PRId64 " overflow 64-bit sizes", path, rows,
                       width);
    if (rows == 0 || width == 0)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: the matrix has %" PRId64 " rows and %" PRId64 " columns; both must be positive", path, rows,
                       width);
    int64_t cols = width;
    if (bits > 0) {
        /* numpy.packbits(A, axis=1) output: uint8 rows of ceil(bits / 8) bytes. */
        if (kind != NPY_KIND_U8 && kind != NPY_KIND_I8)
            return oc_fail(ctx, OC_ERR_INPUT, "%s: --bits expects numpy.packbits output (uint8) but the dtype is %s",
                           path, kind == NPY_KIND_BOOL ? "bool" : h.descr);
        int64_t need = bits / 8 + (bits % 8 != 0);
        /* The message's bit range is 8 * width: rows that wide cannot be packbits rows anyway. */
        if (width > INT64_MAX / 8)
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: --bits %" PRId64 " needs %" PRId64 " bytes per row but the rows have %" PRId64, path,
                           bits, need, width);
        if (need != width && width == bits)
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: --bits %" PRId64 " needs %" PRId64 " bytes per row but the rows have %" PRId64
                           ": one byte a column, as 0/1 values are stored rather than numpy.packbits rows; drop --bits",
                           path, bits, need, width);
        if (need != width)
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: --bits %" PRId64 " needs %" PRId64 " bytes per row but the rows have %" PRId64
                           " (%" PRId64 " to %" PRId64 " bits fit)",
                           path, bits, need, width, 8 * width - 7, 8 * width);
        cols = bits;
    }
    /* data_bytes counts elements: bytes for the one-byte kinds, a wider number's size each. */
    const size_t elem = value_type >= 0 ? oc_value_type_size(value_type) : 1;
    if ((uint64_t)data_bytes > (file->size - offset) / elem) {
        int64_t need;
        char need_text[32] = "more";
        if (oc_mul_i64(data_bytes, (int64_t)elem, &need)) snprintf(need_text, sizeof need_text, "%" PRId64, need);
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: truncated .npy data: %" PRId64 " x %" PRId64 " %s needs %s bytes after the header but the "
                       "file has %zu",
                       path, rows, width, h.descr, need_text, file->size - offset);
    }

    if (value_type >= 0) {
        /* Read whole into packed bits (a fraction of the file): never left in the file. */
        int64_t packed = oc_matrix_packed_bytes(rows, cols), budget = oc_host_budget_resolve(opts->host_mem_bytes);
        if (!oc_host_budget_keeps_input(packed, budget))
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: a %s matrix is read into memory as %" PRId64 " bytes of bits, more "
                           "than the host budget keeps (%" PRId64 " bytes): save it as uint8 0/1 to read it in panels",
                           path, h.descr, packed, budget);
    }
    *l = (npy_matrix){.kind = kind,
                      .value_type = value_type,
                      .rows = rows,
                      .cols = cols,
                      .width = width,
                      .fortran = h.fortran_order && rows > 1 && width > 1,
                      .offset = offset};
    return OC_OK;
}

static oc_status parse_npy(oc_context *ctx, const char *path, oc_mapped_file *file, void *arg, oc_matrix **out)
{
    const oc_read_options *opts = arg;
    int64_t bits = opts->bits;
    npy_matrix l;
    OC_CHECK(ctx, npy_matrix_layout(ctx, path, file, opts, &l));
    npy_kind kind = l.kind;
    int64_t rows = l.rows, cols = l.cols, width = l.width;
    size_t offset = l.offset;
    const int64_t elem = l.value_type >= 0 ? (int64_t)oc_value_type_size(l.value_type) : 1;
    /* Bytes from one row to the next, or in Fortran order from one column to the next. */
    const int64_t stride = (l.fortran ? rows : width) * elem;
    if (l.value_type >= 0)
        return oc_values_to_matrix(ctx, path, file->data + offset, rows, cols, stride, l.fortran, l.value_type,
                                   opts->binarize, out);
    oc_dense_bytes dense_kind = opts->binarize        ? OC_DENSE_BINARIZE
                                : kind == NPY_KIND_I8 ? OC_DENSE_INT8
                                : kind == NPY_KIND_U8 ? OC_DENSE_UINT8
                                                      : OC_DENSE_BYTES;
    /* Larger than the host budget keeps resident: leave the rows in the file (npy_source.c).
     * Only a real file can be read again later, not the caller's buffer. */
    if (!file->borrowed &&
        !oc_host_budget_keeps_input(oc_matrix_packed_bytes(rows, cols), oc_host_budget_resolve(opts->host_mem_bytes))) {
        oc_npy_layout layout = {.rows = rows,
                                .cols = cols,
                                .data_offset = (int64_t)offset,
                                .width = width,
                                .fortran = l.fortran,
                                .bits = bits,
                                .kind = dense_kind,
                                .dev = file->dev,
                                .ino = file->ino,
                                .file_size = (int64_t)file->size};
        OC_CHECK(ctx, oc_npy_source_open(ctx, path, &layout, out));
        return OC_OK;
    }
    OC_CHECK(ctx, oc_matrix_alloc_uninit(ctx, rows, cols, path, out));
    oc_matrix *m = *out;
    oc_mapped_file_advise_sequential(file);
    /* Every core packs its own blocks straight from the mapping into the matrix: the
     * source pages fault in on all threads at once, and each block drops its pages from
     * the mapping when done. */
    release_ctx release = {file, offset, width, l.fortran ? rows : 0};
    oc_pack_source src = {.data = file->data + offset,
                          .stride = stride,
                          .packed = bits > 0,
                          .order = OC_BITS_MSB_FIRST,
                          .kind = dense_kind,
                          .column_major = l.fortran,
                          .block_packed = release_block,
                          .user = &release};
    int64_t bad = -1, col = -1;
    OC_CHECK(ctx, oc_pack_rows_parallel(ctx, m, &src, 0, &bad, &col));
    if (bad < 0) return OC_OK;
    if (bits > 0)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: row %" PRId64 " has bit %" PRId64 " set but --bits %" PRId64 " says the rows hold %" PRId64
                       " columns (rows and columns count from 0)",
                       path, bad, col, bits, bits);
    if (!l.fortran) return oc_dense_value_error(ctx, m->name, dense_kind, cols, bad, col, src.data + bad * width);
    /* The message reads the whole row (whether it looks like packbits output). */
    unsigned char *row = malloc((size_t)cols);
    if (!row) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate a row of %" PRId64 " bytes", path, cols);
    for (int64_t j = 0; j < cols; ++j) row[j] = src.data[j * rows + bad];
    oc_status st = oc_dense_value_error(ctx, m->name, dense_kind, cols, bad, col, row);
    free(row);
    return st;
}

oc_status oc_npy_read(oc_context *ctx, const char *path, const oc_read_options *opts, oc_matrix **out)
{
    OC_CHECK(ctx, oc_mapped_read(ctx, path, parse_npy, (void *)opts, out));
    return OC_OK;
}

oc_status oc_npy_read_buffer(oc_context *ctx, const char *name, const void *data, size_t size,
                             const oc_read_options *opts, oc_matrix **out)
{
    oc_read_options defaults = OC_READ_OPTIONS_INIT;
    OC_CHECK(ctx, oc_buffer_read(ctx, name, data, size, parse_npy, (void *)(opts ? opts : &defaults), out));
    return OC_OK;
}

oc_status oc_npy_head(oc_context *ctx, const char *path, const oc_mapped_file *file, const oc_read_options *opts,
                      int64_t *rows, int64_t *cols)
{
    npy_matrix l;
    OC_CHECK(ctx, npy_matrix_layout(ctx, path, file, opts, &l));
    *rows = l.rows, *cols = l.cols;
    return OC_OK;
}

/* ---------------------------------------------------------------- any dtype and shape (map) */

oc_status oc_npy_array_parse(oc_context *ctx, const char *path, const unsigned char *base, size_t size,
                             oc_npy_array_info *out)
{
    npy_header h;
    size_t offset = 0;
    OC_CHECK(ctx, npy_parse(ctx, path, base, size, &h, &offset));
    if (h.shape_overflow) return oc_fail(ctx, OC_ERR_INPUT, "%s: a dimension of the shape overflows 64 bits", path);
    memset(out, 0, sizeof *out);
    snprintf(out->descr, sizeof out->descr, "%s", h.descr);
    out->fortran_order = h.fortran_order;
    out->ndim = h.ndim;
    memcpy(out->shape, h.shape, sizeof(int64_t) * (size_t)h.ndim);
    out->data_offset = offset;
    return OC_OK;
}
