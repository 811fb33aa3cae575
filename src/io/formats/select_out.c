/*
 * select_out.c - .npz, .tsv and .mtx files of top-k and threshold results (select_out.h).
 *
 * .npz layout of a threshold result (offsets grow downwards):
 *
 *   local header "rows.npy" (ZIP64 extra: sizes patched at commit)
 *   npy header, fixed 128 bytes (shape patched at commit)
 *   rows data ............................ streamed while the job runs
 *   local header "cols.npy"   + npy header + cols data    copied from side file 1 at commit
 *   local header "values.npy" + npy header + values data  copied from side file 2 at commit
 *   central directory, [ZIP64 end record + locator], end record
 *
 * The members' records are npz.c's (their .npy headers npy_header.c's, their CRC crc32.c's).
 * Data CRCs are computed here while the data streams; npz.c combines each member's header
 * CRC in front of its data's at the end, so no byte is read back to be checksummed. The side
 * files are io.h's scratch files (oc_scratch_open), beside the output.
 *
 * Errors: the helpers that write return 0 or the errno of the call that failed; the entry
 * points turn it into the one message of a failed output (write_failed: the cause and how
 * much of the output was written), and the caller's abort removes every file. All writes go
 * through sysio.h.
 */
#include "io/formats/select_out.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/text_buf.h"
#include "core/error.h"
#include "io/crc32.h"
#include "io/io.h"
#include "io/formats/npz.h"
#include "io/formats/output_format.h"
#include "io/sysio.h"

#define BUF_BYTES (1 << 20)
#define NPY_STREAM_HEADER 128 /* room for any 1-D shape: patched in place */
#define MTX_COUNT_WIDTH 20    /* digits of any int64 */

/* ---------------------------------------------------------------- buffered streams */
typedef struct out_stream {
    int fd;
    unsigned char *buf;
    size_t len;
    int checksum; /* keep crc (npz data) */
    uint32_t crc; /* of the bytes put so far */
    int64_t bytes;
} out_stream;

/* The message of a failed write of the output `path` whose bytes so far are in fds[0..n). */
static oc_status write_failed(oc_context *ctx, const char *path, int err, const int *fds, int n)
{
    int64_t done = 0;
    for (int i = 0; i < n; ++i) {
        int64_t size = oc_sys_file_size(fds[i]);
        if (size > 0) done += size;
    }
    return oc_io_fail(ctx, "writing", path, err, done, -1, -1);
}

static int stream_flush(oc_context *ctx, out_stream *s)
{
    if (s->len == 0) return 0;
    size_t len = s->len;
    s->len = 0;
    return oc_sys_write_all(ctx, s->fd, s->buf, len, -1);
}

static int stream_put(oc_context *ctx, out_stream *s, const void *data, size_t len)
{
    if (s->checksum) s->crc = oc_crc32_update(s->crc, data, len);
    s->bytes += (int64_t)len;
    if (s->len + len > BUF_BYTES) {
        int err = stream_flush(ctx, s);
        if (err) return err;
    }
    if (len >= BUF_BYTES) return oc_sys_write_all(ctx, s->fd, data, len, -1);
    memcpy(s->buf + s->len, data, len);
    s->len += len;
    return 0;
}

/* ---------------------------------------------------------------- text lines */
static char *put_i64(char *p, int64_t v)
{
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    if (v < 0) *p++ = '-';
    do tmp[n++] = (char)('0' + u % 10), u /= 10;
    while (u);
    while (n) *p++ = tmp[--n];
    return p;
}

/* A score as text: integers exactly, float32 with 9 significant digits (round-trips). */
static char *put_score(char *p, oc_dtype dtype, const void *values, int64_t i)
{
    switch (dtype) { /* no default: a dtype added to oc_dtype is named here by -Wswitch */
    case OC_DTYPE_FLOAT32:
        return p + sprintf(p, "%.9g", (double)((const float *)values)[i]); /* '.': oc_numeric_begin */
    case OC_DTYPE_UINT16:
        return put_i64(p, ((const uint16_t *)values)[i]);
    case OC_DTYPE_INT32:
        return put_i64(p, ((const int32_t *)values)[i]);
    case OC_DTYPE_DEFAULT: /* a job's result dtype is resolved before anything is written */
    case OC_DTYPE_COUNT:
        break;
    }
    return p;
}

/* ---------------------------------------------------------------- checks */
oc_status oc_select_out_check_path(oc_context *ctx, const char *path, int topk)
{
    return oc_output_format_check(ctx, path, topk ? OC_RESULT_TOPK : OC_RESULT_THRESHOLD, topk ? "top-k" : "threshold");
}

/* ---------------------------------------------------------------- top-k */
struct oc_topk_out {
    oc_tmpfile f;
};

oc_status oc_topk_out_create(oc_context *ctx, const char *path, oc_topk_out **out)
{
    OC_CHECK(ctx, oc_select_out_check_path(ctx, path, 1));
    oc_topk_out *w = calloc(1, sizeof *w);
    if (!w) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate the writer", path);
    oc_status st = oc_tmpfile_open(ctx, path, &w->f);
    if (st != OC_OK) {
        free(w);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    *out = w;
    return OC_OK;
}

void oc_topk_out_abort(oc_topk_out *w)
{
    if (!w) return;
    oc_tmpfile_abort(&w->f);
    free(w);
}

/* Bytes of lists asked for at a time: the file is written from blocks of rows, not from
 * n x k arrays beside the selection's own lists. */
#define TOPK_BLOCK_BYTES ((int64_t)4 << 20)

/* One .npz member of the n x k lists (indices, or scores when !want_indices) at *off: its
 * data written block by block after room for its headers, which follow with the data's
 * CRC-32. Advances *off past it. */
static int topk_member(oc_context *ctx, int fd, oc_npz_entry *e, uint64_t *off, int dtype, int64_t n, int64_t k,
                       size_t elem, int want_indices, oc_topk_rows_fn rows_fn, void *user, unsigned char *block,
                       int64_t block_rows, oc_status *st)
{
    oc_npz_headers h;
    const uint64_t bytes = (uint64_t)n * (uint64_t)k * elem;
    oc_npz_member(e, &h, *off, dtype, n, k, 0, 0, bytes); /* the headers' length: the CRC changes no byte count */
    uint64_t at = *off + h.local_len + h.npy_len;
    uint32_t crc = 0;
    int err = 0;
    for (int64_t first = 0; first < n && !err; first += block_rows) {
        const int64_t rows = n - first < block_rows ? n - first : block_rows;
        *st = rows_fn(user, first, rows, want_indices ? (int64_t *)block : NULL, want_indices ? NULL : block);
        if (*st != OC_OK) return 0;
        const size_t len = (size_t)(rows * k) * elem;
        crc = oc_crc32_update(crc, block, len);
        err = oc_sys_write_all(ctx, fd, block, len, (int64_t)at);
        at += len;
    }
    oc_npz_member(e, &h, *off, dtype, n, k, 0, crc, bytes);
    if (!err) err = oc_sys_write_all(ctx, fd, h.local, h.local_len, (int64_t)*off);
    if (!err) err = oc_sys_write_all(ctx, fd, h.npy, h.npy_len, (int64_t)(*off + h.local_len));
    *off = at;
    return err;
}

oc_status oc_topk_out_commit_rows(oc_context *ctx, oc_topk_out *w, int64_t n, int64_t k, oc_dtype dtype,
                                  oc_topk_rows_fn rows_fn, void *user)
{
    oc_status st = OC_OK;
    int err = 0;
    unsigned char *buf = NULL, *block = NULL;
    int64_t *indices = NULL;
    const char *path = w->f.path;
    int fd = w->f.fd;
    const size_t elem = oc_dtype_size(dtype);
    const int64_t row_bytes = k * (8 + (int64_t)elem);
    const int64_t block_rows = row_bytes > 0 && TOPK_BLOCK_BYTES / row_bytes > 0 ? TOPK_BLOCK_BYTES / row_bytes : 1;
    if (oc_output_format_of(path) == OC_FORMAT_NPZ) {
        block = malloc((size_t)(block_rows * k * 8 > 0 ? block_rows * k * 8 : 1));
        if (!block) {
            st =
                oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate a block of the top-%lld lists", path, (long long)k);
            goto cleanup;
        }
        oc_npz_entry e[2] = {{.name = "indices.npy"}, {.name = "scores.npy"}};
        uint64_t off = 0;
        err = topk_member(ctx, fd, &e[0], &off, OC_NPY_INT64, n, k, 8, 1, rows_fn, user, block, block_rows, &st);
        if (!err && st == OC_OK)
            err = topk_member(ctx, fd, &e[1], &off, dtype, n, k, elem, 0, rows_fn, user, block, block_rows, &st);
        if (st != OC_OK) goto cleanup;
        if (!err && lseek(fd, (off_t)off, SEEK_SET) < 0) err = errno;
        if (!err) err = oc_npz_finish(ctx, fd, e, 2, off);
    } else {
        out_stream s = {.fd = fd};
        buf = s.buf = malloc(BUF_BYTES);
        indices = malloc((size_t)(block_rows * k > 0 ? block_rows * k : 1) * 8);
        block = malloc((size_t)(block_rows * k > 0 ? block_rows * k : 1) * elem);
        if (!buf || !indices || !block) {
            st = oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate the output buffer", path);
            goto cleanup;
        }
        static const char header[] = "row\trank\tcol\tscore\n";
        err = stream_put(ctx, &s, header, sizeof header - 1);
        void *locale = oc_numeric_begin(); /* scores with '.', whatever the caller's locale */
        for (int64_t first = 0; first < n && !err && st == OC_OK; first += block_rows) {
            const int64_t rows = n - first < block_rows ? n - first : block_rows;
            st = rows_fn(user, first, rows, indices, block);
            for (int64_t i = 0; i < rows && !err && st == OC_OK; ++i)
                for (int64_t r = 0; r < k && !err && indices[i * k + r] >= 0; ++r) {
                    char line[96], *p = line;
                    p = put_i64(p, first + i), *p++ = '\t';
                    p = put_i64(p, r), *p++ = '\t';
                    p = put_i64(p, indices[i * k + r]), *p++ = '\t';
                    p = put_score(p, dtype, block, i * k + r), *p++ = '\n';
                    err = stream_put(ctx, &s, line, (size_t)(p - line));
                }
        }
        oc_numeric_end(locale);
        if (st != OC_OK) goto cleanup;
        if (!err) err = stream_flush(ctx, &s);
    }
    if (err) {
        st = write_failed(ctx, path, err, &fd, 1);
        goto cleanup;
    }
    OC_CHECK_GOTO(ctx, st, oc_tmpfile_commit(ctx, &w->f), cleanup);

cleanup:
    free(buf);
    free(block);
    free(indices);
    oc_topk_out_abort(w);
    return st;
}

/* The lists in memory (n x k arrays), handed to oc_topk_out_commit_rows block by block. */
typedef struct topk_arrays {
    int64_t k;
    size_t elem;
    const int64_t *indices;
    const void *scores;
} topk_arrays;

static oc_status copy_rows(void *user, int64_t first, int64_t rows, int64_t *indices, void *scores)
{
    const topk_arrays *a = user;
    if (indices) memcpy(indices, a->indices + first * a->k, (size_t)(rows * a->k) * 8);
    if (scores)
        memcpy(scores, (const char *)a->scores + (size_t)(first * a->k) * a->elem, (size_t)(rows * a->k) * a->elem);
    return OC_OK;
}

oc_status oc_topk_out_commit(oc_context *ctx, oc_topk_out *w, int64_t n, int64_t k, const int64_t *indices,
                             const void *scores, oc_dtype dtype)
{
    topk_arrays a = {.k = k, .elem = oc_dtype_size(dtype), .indices = indices, .scores = scores};
    return oc_topk_out_commit_rows(ctx, w, n, k, dtype, copy_rows, &a);
}

/* ---------------------------------------------------------------- threshold pairs */
typedef enum { PAIRS_NPZ, PAIRS_MTX, PAIRS_TSV } pairs_format;

struct oc_pairs_out {
    pairs_format format;
    oc_tmpfile f;
    out_stream main;    /* npz: rows data; text: the lines */
    out_stream side[2]; /* npz: cols, values */
    oc_dtype dtype;
    size_t elem;
    int64_t n, p, count;
    int64_t mtx_count_at; /* offset of the .mtx size line's count field */
};

void oc_pairs_out_abort(oc_pairs_out *w)
{
    if (!w) return;
    oc_tmpfile_abort(&w->f);
    free(w->main.buf);
    for (int i = 0; i < 2; ++i) {
        if (w->side[i].fd >= 0) close(w->side[i].fd);
        free(w->side[i].buf);
    }
    free(w);
}

/* How much of w's output is written so far (its file and its side files), for messages. */
static oc_status pairs_write_failed(oc_context *ctx, const oc_pairs_out *w, int err)
{
    const int fds[3] = {w->f.fd, w->side[0].fd, w->side[1].fd};
    return write_failed(ctx, w->f.path, err, fds, 3);
}

/* An unlinked scratch file beside the output: same file system, nothing left behind. */
static oc_status side_open(oc_context *ctx, const char *path, int *fd)
{
    size_t len = strlen(path);
    char *tmpl = malloc(len + 32);
    if (!tmpl) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory", path);
    snprintf(tmpl, len + 32, "%s.side-XXXXXX", path);
    *fd = oc_scratch_open(ctx, tmpl);
    int err = errno;
    free(tmpl);
    if (*fd < 0) return oc_io_fail(ctx, "creating a scratch file beside", path, err, -1, -1, -1);
    return OC_OK;
}

/* The file's first bytes: the room for the rows entry's headers (.npz) or the text header. */
static int pairs_write_head(oc_context *ctx, oc_pairs_out *w)
{
    if (w->format == PAIRS_NPZ) {
        /* Room for the rows entry's headers, written for real at commit. */
        unsigned char zero[OC_NPZ_LOCAL_HEADER(8) + NPY_STREAM_HEADER] = {0};
        return oc_sys_write_all(ctx, w->f.fd, zero, sizeof zero, -1);
    }
    if (w->format == PAIRS_MTX) {
        char head[256];
        int len = snprintf(head, sizeof head,
                           "%%%%MatrixMarket matrix coordinate %s general\n"
                           "%% outcore threshold pairs, 1-based; each line: row col score\n%lld %lld ",
                           w->dtype == OC_DTYPE_FLOAT32 ? "real" : "integer", (long long)w->n, (long long)w->p);
        w->mtx_count_at = len;
        /* The count is known at the end: a fixed-width field, patched in place. */
        len += snprintf(head + len, sizeof head - (size_t)len, "%-*s\n", MTX_COUNT_WIDTH, "0");
        return oc_sys_write_all(ctx, w->f.fd, head, (size_t)len, -1);
    }
    static const char header[] = "row\tcol\tscore\n";
    return oc_sys_write_all(ctx, w->f.fd, header, sizeof header - 1, -1);
}

oc_status oc_pairs_out_create(oc_context *ctx, const char *path, oc_dtype dtype, int64_t n, int64_t p,
                              oc_pairs_out **out)
{
    OC_CHECK(ctx, oc_select_out_check_path(ctx, path, 0));
    oc_pairs_out *w = calloc(1, sizeof *w);
    if (!w) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate the writer", path);
    w->f.fd = w->side[0].fd = w->side[1].fd = -1;
    w->dtype = dtype;
    w->elem = oc_dtype_size(dtype);
    w->n = n, w->p = p;
    const int format = oc_output_format_of(path);
    w->format = format == OC_FORMAT_NPZ ? PAIRS_NPZ : format == OC_FORMAT_MTX ? PAIRS_MTX : PAIRS_TSV;
    oc_status st = oc_tmpfile_open(ctx, path, &w->f);
    if (st != OC_OK) {
        free(w);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    w->main = (out_stream){.fd = w->f.fd, .buf = malloc(BUF_BYTES), .checksum = w->format == PAIRS_NPZ};
    if (!w->main.buf) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate the output buffer", path);
        goto cleanup;
    }
    if (w->format == PAIRS_NPZ)
        for (int i = 0; i < 2; ++i) {
            OC_CHECK_GOTO(ctx, st, side_open(ctx, path, &w->side[i].fd), cleanup);
            w->side[i].checksum = 1;
            if (!(w->side[i].buf = malloc(BUF_BYTES))) {
                st = oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate the output buffer", path);
                goto cleanup;
            }
        }
    int err = pairs_write_head(ctx, w);
    if (err) {
        st = pairs_write_failed(ctx, w, err);
        goto cleanup;
    }
    *out = w;
    return OC_OK;

cleanup:
    oc_pairs_out_abort(w);
    return st;
}

oc_status oc_pairs_out_append(oc_context *ctx, oc_pairs_out *w, const int64_t *rows, const int64_t *cols,
                              const void *values, int64_t count)
{
    int err = 0;
    if (w->format == PAIRS_NPZ) {
        err = stream_put(ctx, &w->main, rows, (size_t)count * 8);
        if (!err) err = stream_put(ctx, &w->side[0], cols, (size_t)count * 8);
        if (!err) err = stream_put(ctx, &w->side[1], values, (size_t)count * w->elem);
    } else {
        const int64_t base = w->format == PAIRS_MTX ? 1 : 0;
        const char sep = w->format == PAIRS_MTX ? ' ' : '\t';
        void *locale = oc_numeric_begin(); /* scores with '.', whatever the caller's locale */
        for (int64_t i = 0; i < count && !err; ++i) {
            char line[96], *p = line;
            p = put_i64(p, rows[i] + base), *p++ = sep;
            p = put_i64(p, cols[i] + base), *p++ = sep;
            p = put_score(p, w->dtype, values, i), *p++ = '\n';
            err = stream_put(ctx, &w->main, line, (size_t)(p - line));
        }
        oc_numeric_end(locale);
    }
    if (err) return pairs_write_failed(ctx, w, err);
    w->count += count;
    return OC_OK;
}

/* Appends side file `s` (its `bytes` from offset 0) to the output: in the kernel where it
 * can, else through s's buffer (empty once flushed). */
static int copy_side(oc_context *ctx, oc_pairs_out *w, out_stream *s)
{
    int64_t left = s->bytes;
    off_t in = 0;
    while (left > 0) {
        ssize_t c = oc_sys_copy_file_range(ctx, s->fd, &in, w->f.fd, (size_t)left);
        if (c < 0 && errno == EINTR) continue;
        /* Not supported between these files (another file system, an old kernel, a file
         * system that declines): the copy by hand below does it. Any other error is the
         * output's, a full disk above all, and a hand copy would only meet it again. */
        if (c < 0 && errno != EXDEV && errno != ENOSYS && errno != EOPNOTSUPP && errno != EINVAL) return errno;
        if (c <= 0) break;
        left -= c;
    }
    while (left > 0) {
        ssize_t r = pread(s->fd, s->buf, left < BUF_BYTES ? (size_t)left : BUF_BYTES, in);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return errno;
        if (r == 0) return EIO; /* the scratch file is shorter than what was written to it */
        int err = oc_sys_write_all(ctx, w->f.fd, s->buf, (size_t)r, -1);
        if (err) return err;
        in += r, left -= r;
    }
    return 0;
}

static int commit_npz(oc_context *ctx, oc_pairs_out *w)
{
    oc_npz_entry e[3] = {{.name = "rows.npy"}, {.name = "cols.npy"}, {.name = "values.npy"}};
    const int dtype[3] = {OC_NPY_INT64, OC_NPY_INT64, w->dtype};
    out_stream *data[3] = {&w->main, &w->side[0], &w->side[1]};
    oc_npz_headers h;
    int err = 0;
    for (int i = 0; i < 3 && !err; ++i) err = stream_flush(ctx, data[i]);
    if (err) return err;

    /* rows: headers patched in front of the streamed data */
    oc_npz_member(&e[0], &h, 0, dtype[0], w->count, -1, NPY_STREAM_HEADER, w->main.crc, (uint64_t)w->main.bytes);
    if ((err = oc_sys_write_all(ctx, w->f.fd, h.local, h.local_len, 0)) ||
        (err = oc_sys_write_all(ctx, w->f.fd, h.npy, h.npy_len, (int64_t)h.local_len)))
        return err;
    uint64_t off = h.local_len + h.npy_len + (uint64_t)w->main.bytes;

    for (int i = 1; i < 3; ++i) {
        oc_npz_member(&e[i], &h, off, dtype[i], w->count, -1, 0, data[i]->crc, (uint64_t)data[i]->bytes);
        if ((err = oc_sys_write_all(ctx, w->f.fd, h.local, h.local_len, -1)) ||
            (err = oc_sys_write_all(ctx, w->f.fd, h.npy, h.npy_len, -1)) || (err = copy_side(ctx, w, data[i])))
            return err;
        off += h.local_len + h.npy_len + (uint64_t)data[i]->bytes;
    }
    return oc_npz_finish(ctx, w->f.fd, e, 3, off);
}

oc_status oc_pairs_out_commit(oc_context *ctx, oc_pairs_out *w)
{
    oc_status st = OC_OK;
    int err;
    if (w->format == PAIRS_NPZ) {
        err = commit_npz(ctx, w);
    } else {
        err = stream_flush(ctx, &w->main);
        if (!err && w->format == PAIRS_MTX) {
            char field[MTX_COUNT_WIDTH + 1];
            snprintf(field, sizeof field, "%-*lld", MTX_COUNT_WIDTH, (long long)w->count);
            err = oc_sys_write_all(ctx, w->f.fd, field, MTX_COUNT_WIDTH, w->mtx_count_at);
        }
    }
    if (err) {
        st = pairs_write_failed(ctx, w, err);
        goto cleanup;
    }
    OC_CHECK_GOTO(ctx, st, oc_tmpfile_commit(ctx, &w->f), cleanup);
cleanup:
    oc_pairs_out_abort(w);
    return st;
}

/* The temporary names, for a resumable job's journal (a later run removes what a killed one
 * left). */
const char *oc_topk_out_temp_path(const oc_topk_out *w) { return w->f.tmp_path; }
const char *oc_pairs_out_temp_path(const oc_pairs_out *w) { return w->f.tmp_path; }
