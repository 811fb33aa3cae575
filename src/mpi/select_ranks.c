/*
 * select_ranks.c - top-k and threshold jobs over ranks: rows owned whole, results delivered
 * to rank 0, which writes the one file.
 *
 * Top-k: rank r computes its rows of oc_rank_rows_even against every column. For A·Aᵀ that is
 * an A·Bᵀ sub-job (a view of the rows against A), which does not exclude the row itself, so
 * it asks for k + 1 and drops column i from row i's list, or the last entry when i is not in
 * it: the k best of the other columns in the same order (select_key.h), then the -1 padding
 * of a row with fewer candidates. Whole rows cost A·Aᵀ twice the pairs of the upper triangle
 * (as the sparse path's rows do, docs/design-notes.md) but need no merge of partial lists:
 * each row's list is final on its rank, and rank 0 gathers them in row order.
 *
 * Threshold: rank r computes rows [b_r, b_r+1) of the split (A·Aᵀ: oc_rank_rows_triangle,
 * in chunks [c0, c1) against columns [c0, n), keeping the pairs with column > row; A·Bᵀ:
 * even, every column).
 * Every pair of a row is found on the rank that owns the row, and a sub-job delivers its
 * pairs in (row, col) order, so the ranks' pairs in rank order are the whole job's order.
 * Rank 0 appends its own pairs to the output as they come; the others spool theirs to an
 * unlinked scratch file, and after the compute agreement send them to rank 0 one rank after
 * the other, in pieces.
 *
 * Both end as the dense part does: the delivery ends with an agreement (a rank that could not
 * send, or was cancelled, fails it), and only then does rank 0 rename its file into place,
 * followed by the last agreement.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/threads.h"
#include "io/io.h"
#include "io/sysio.h"
#include "io/formats/select_out.h"
#include "gram/select/select.h"
#include "mpi/comm.h"
#include "mpi/rank_job.h"
#include "mpi/rank_split.h"

#define TAG_TOPK 11
#define TAG_PAIRS 12
#define PIECE_PAIRS (1 << 20) /* pairs per message from a rank's spool to rank 0 */

/* Rank 0's checks of the output path before anything is computed. */
static oc_status check_select_path(oc_rank_job *j, int topk)
{
    oc_context *ctx = j->ctx;
    OC_CHECK(ctx, oc_select_out_check_path(ctx, j->path, topk));
    return oc_output_check_not_input(ctx, j->path, j->a, j->b);
}

/* ---------------------------------------------------------------- top-k */

/* Row i's `wide` entries (the A·Bᵀ sub-job's, k + 1 of them or every column) without column
 * i, as k entries, padded (index -1, score pad) where fewer remain. */
static void drop_self(int64_t i, int64_t k, int64_t wide, size_t es, const char *pad, const int64_t *idx_in,
                      const char *sc_in, int64_t *idx_out, char *sc_out)
{
    int64_t w = 0;
    for (int64_t e = 0; e < wide && w < k; ++e) {
        if (idx_in[e] == i) continue;
        idx_out[w] = idx_in[e];
        memcpy(sc_out + w * es, sc_in + e * es, es);
        ++w;
    }
    /* A row that had fewer candidates already ends in -1 entries, which were copied. */
    for (; w < k; ++w) {
        idx_out[w] = -1;
        memcpy(sc_out + w * es, pad, es);
    }
}

static oc_status topk_compute(oc_rank_job *j, int64_t *idx, char *scores)
{
    const int64_t rows = j->row1 - j->row0, k = j->opts.topk;
    if (rows == 0) return OC_OK;
    oc_context *ctx = j->ctx;
    const size_t es = oc_dtype_size(j->dtype);
    oc_gram_options o = j->opts;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_TOPK;
    if (!j->symmetric) {
        out.indices = idx;
        out.scores = scores;
        return oc_rank_subjob(j, j->row0, j->row1, 0, j->p, &o, &out);
    }
    /* The row itself may be among a row's k + 1 best: one more, within the columns there are. */
    const int64_t wide = k + 1 <= j->p ? k + 1 : j->p;
    char pad[8];
    oc_select_padding_score(j->dtype, o.use_min_score, pad);
    o.topk = wide;
    int64_t *wide_idx = malloc((size_t)(rows * wide) * sizeof *wide_idx);
    char *wide_sc = malloc((size_t)(rows * wide) * es);
    oc_status st = OC_OK;
    if (!wide_idx || !wide_sc) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the top-%lld lists of %lld rows", (long long)wide,
                     (long long)rows);
        goto cleanup;
    }
    out.indices = wide_idx;
    out.scores = wide_sc;
    OC_CHECK_GOTO(ctx, st, oc_rank_subjob(j, j->row0, j->row1, 0, j->p, &o, &out), cleanup);
    for (int64_t r = 0; r < rows; ++r)
        drop_self(j->row0 + r, k, wide, es, pad, wide_idx + r * wide, wide_sc + r * wide * (int64_t)es, idx + r * k,
                  scores + r * k * (int64_t)es);
cleanup:
    free(wide_idx);
    free(wide_sc);
    return st;
}

/* Rank 0's result file, its path checked first. */
static oc_status topk_open(oc_rank_job *j, oc_topk_out **w)
{
    OC_CHECK(j->ctx, check_select_path(j, 1));
    OC_CHECK(j->ctx, oc_topk_out_create(j->ctx, j->path, w));
    return OC_OK;
}

/* Delivery: rank 0 receives every other rank's rows in place; the others send theirs. */
static oc_status topk_deliver(oc_rank_job *j, int64_t *idx, char *scores)
{
    oc_context *ctx = j->ctx;
    const int64_t k = j->opts.topk;
    const size_t es = oc_dtype_size(j->dtype);
    if (j->rank != 0) {
        const int64_t rows = j->row1 - j->row0;
        j->bytes_written += rows * k * (int64_t)(sizeof *idx + es);
        OC_CHECK(ctx, oc_mpi_send_bytes(ctx, idx, rows * k * (int64_t)sizeof *idx, 0, TAG_TOPK));
        OC_CHECK(ctx, oc_mpi_send_bytes(ctx, scores, rows * k * (int64_t)es, 0, TAG_TOPK));
        return OC_OK;
    }
    for (int r = 1; r < j->size; ++r) {
        int64_t r0, r1;
        oc_rank_rows_even(j->n, r, j->size, &r0, &r1);
        OC_CHECK(ctx, oc_mpi_recv_bytes(ctx, idx + r0 * k, (r1 - r0) * k * (int64_t)sizeof *idx, r, TAG_TOPK));
        OC_CHECK(ctx, oc_mpi_recv_bytes(ctx, scores + r0 * k * (int64_t)es, (r1 - r0) * k * (int64_t)es, r, TAG_TOPK));
    }
    return OC_OK;
}

oc_status oc_ranks_topk(oc_rank_job *j)
{
    oc_context *ctx = j->ctx;
    oc_rank_rows_even(j->n, j->rank, j->size, &j->row0, &j->row1);
    const int64_t k = j->opts.topk;
    const size_t es = oc_dtype_size(j->dtype);
    /* Rank 0 holds the whole result for the writer (as one process does); the others their rows. */
    const int64_t held = j->rank == 0 ? j->n : j->row1 - j->row0;
    oc_topk_out *w = NULL;
    int64_t *idx = malloc((size_t)(held * k > 0 ? held * k : 1) * sizeof *idx);
    char *scores = malloc((size_t)(held * k > 0 ? held * k : 1) * es);
    oc_status st = OC_OK;
    if (!idx || !scores)
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the top-%lld result of %lld rows", (long long)k,
                     (long long)held);
    if (st == OC_OK && j->rank == 0) st = topk_open(j, &w);
    st = oc_mpi_agree(ctx, st);
    if (st != OC_OK) goto cleanup;

    double t0 = oc_now();
    st = oc_rank_fault(j, topk_compute(j, idx, scores)); /* rank 0's rows start at row 0 of its arrays */
    j->seconds = oc_now() - t0;
    if (st != OC_OK) { /* the job fails whatever the others say: no temporary file waits for them */
        oc_topk_out_abort(w);
        w = NULL;
    }
    st = oc_mpi_agree(ctx, st);
    if (st != OC_OK) goto cleanup;

    st = oc_mpi_agree(ctx, oc_rank_cancelled(j, topk_deliver(j, idx, scores)));
    if (st != OC_OK) goto cleanup;

    /* Commit: every rank delivered its rows, so rank 0 renames the file into place. */
    if (j->rank == 0) {
        oc_topk_out *writer = w;
        w = NULL;
        st = oc_topk_out_commit(ctx, writer, j->n, k, idx, scores, j->dtype);
        if (st == OC_OK) j->bytes_written += j->n * k * (int64_t)(sizeof *idx + es); /* every rank's rows */
    }
    st = oc_mpi_agree(ctx, st);

cleanup:
    oc_topk_out_abort(w);
    free(idx);
    free(scores);
    return st;
}

/* ---------------------------------------------------------------- threshold pairs */

typedef struct pairs_sink {
    oc_rank_job *j;
    oc_pairs_out *writer; /* rank 0 */
    int spool;            /* the other ranks: scratch file descriptor */
    int64_t row0, col0;   /* the sub-job's first row and column in C */
    size_t es;
    int64_t *rows, *cols; /* translated batch */
    char *values;
    int64_t cap, count;
    oc_status failed;
    char *why; /* failed's message (malloc'd): oc_gram's own "the pairs callback asked to stop" replaces it on ctx */
} pairs_sink;

/* The sink's failure, st, with the message it had when it happened. */
static int sink_failed(pairs_sink *s, oc_status st)
{
    s->failed = st;
    if (st != OC_OK && !s->why) s->why = strdup(oc_context_last_error(s->j->ctx));
    return st != OC_OK;
}

static int write_all(int fd, const void *buf, size_t bytes)
{
    const char *p = buf;
    while (bytes > 0) {
        ssize_t w = write(fd, p, bytes);
        if (w <= 0) return -1;
        p += w;
        bytes -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t bytes)
{
    char *p = buf;
    while (bytes > 0) {
        ssize_t r = read(fd, p, bytes);
        if (r <= 0) return -1;
        p += r;
        bytes -= (size_t)r;
    }
    return 0;
}

/* A spooled batch: its count, then its rows, columns and values. A failure is worded as the
 * single process's spill file's (select_pairs.c): "disk full writing the temporary file of
 * threshold pairs in DIR: ...". */
static oc_status spool_batch(pairs_sink *s, int64_t count)
{
    oc_context *ctx = s->j->ctx;
    errno = 0;
    if (write_all(s->spool, &count, sizeof count) || write_all(s->spool, s->rows, (size_t)count * sizeof *s->rows) ||
        write_all(s->spool, s->cols, (size_t)count * sizeof *s->cols) ||
        write_all(s->spool, s->values, (size_t)count * s->es)) {
        const int err = errno ? errno : EIO;
        char name[4200];
        snprintf(name, sizeof name, "the temporary file of threshold pairs in %s", oc_scratch_dir());
        return oc_io_fail(ctx, "writing", name, err, oc_sys_file_size(s->spool), -1, -1);
    }
    return OC_OK;
}

static int on_pairs(void *user, const int64_t *rows, const int64_t *cols, const void *values, int64_t count)
{
    pairs_sink *s = user;
    oc_context *ctx = s->j->ctx;
    if (count > s->cap) {
        int64_t cap = count > 2 * s->cap ? count : 2 * s->cap;
        int64_t *r = realloc(s->rows, (size_t)cap * sizeof *r);
        if (r) s->rows = r;
        int64_t *c = realloc(s->cols, (size_t)cap * sizeof *c);
        if (c) s->cols = c;
        char *v = realloc(s->values, (size_t)cap * s->es);
        if (v) s->values = v;
        if (!r || !c || !v) {
            return sink_failed(
                s, oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate a batch of %lld pairs", (long long)count));
        }
        s->cap = cap;
    }
    int64_t kept = 0;
    for (int64_t e = 0; e < count; ++e) {
        int64_t row = rows[e] + s->row0, col = cols[e] + s->col0;
        /* A·Aᵀ: each unordered pair once, as (i, j) with i < j. */
        if (s->j->symmetric && col <= row) continue;
        s->rows[kept] = row;
        s->cols[kept] = col;
        memcpy(s->values + kept * (int64_t)s->es, (const char *)values + e * (int64_t)s->es, s->es);
        ++kept;
    }
    if (kept == 0) return 0;
    s->count += kept;
    if (s->writer) s->j->bytes_written += kept * (int64_t)(2 * sizeof(int64_t) + s->es);
    return sink_failed(s, s->writer ? oc_pairs_out_append(ctx, s->writer, s->rows, s->cols, s->values, kept)
                                    : spool_batch(s, kept));
}

/* A·Bᵀ: one sub-job of the rank's rows. A·Aᵀ: chunks [c0, c1) against columns [c0, n)
 * (oc_rank_triangle_chunk), in row order, so the pairs still leave in (row, col) order. */
static oc_status pairs_compute(oc_rank_job *j, pairs_sink *s)
{
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_PAIRS;
    out.pairs = on_pairs;
    out.pairs_user = s;
    const int64_t step = j->symmetric ? oc_rank_triangle_chunk(j->n) : j->row1 - j->row0;
    for (int64_t c0 = j->row0; c0 < j->row1; c0 += step) {
        int64_t c1 = c0 + step < j->row1 ? c0 + step : j->row1;
        s->row0 = c0;
        s->col0 = j->symmetric ? c0 : 0;
        oc_status st = oc_rank_subjob(j, c0, c1, s->col0, j->symmetric ? j->n : j->p, &j->opts, &out);
        /* The callback's own failure stopped the job (as a cancel): report it, not the cancel. */
        if (st != OC_OK)
            return s->failed != OC_OK ? oc_fail(j->ctx, s->failed, "%s", s->why ? s->why : "out of memory") : st;
    }
    return OC_OK;
}

/* A piece of m pairs from e0 on, sent to rank 0: its count, then the arrays. */
static oc_status send_piece(oc_context *ctx, const pairs_sink *s, int64_t e0, int64_t m)
{
    OC_CHECK(ctx, oc_mpi_send_bytes(ctx, &m, sizeof m, 0, TAG_PAIRS));
    OC_CHECK(ctx, oc_mpi_send_bytes(ctx, s->rows + e0, m * (int64_t)sizeof *s->rows, 0, TAG_PAIRS));
    OC_CHECK(ctx, oc_mpi_send_bytes(ctx, s->cols + e0, m * (int64_t)sizeof *s->cols, 0, TAG_PAIRS));
    OC_CHECK(ctx, oc_mpi_send_bytes(ctx, s->values + e0 * (int64_t)s->es, m * (int64_t)s->es, 0, TAG_PAIRS));
    return OC_OK;
}

/* The arrays of a piece of m pairs (values es bytes each) from rank r, after its count. */
static oc_status receive_piece(oc_context *ctx, int r, int64_t m, size_t es, int64_t *rows, int64_t *cols, char *values)
{
    OC_CHECK(ctx, oc_mpi_recv_bytes(ctx, rows, m * (int64_t)sizeof *rows, r, TAG_PAIRS));
    OC_CHECK(ctx, oc_mpi_recv_bytes(ctx, cols, m * (int64_t)sizeof *cols, r, TAG_PAIRS));
    OC_CHECK(ctx, oc_mpi_recv_bytes(ctx, values, m * (int64_t)es, r, TAG_PAIRS));
    return OC_OK;
}

/* Rank 0's result file, its path checked first. */
static oc_status pairs_open(oc_rank_job *j, oc_pairs_out **w)
{
    OC_CHECK(j->ctx, check_select_path(j, 0));
    OC_CHECK(j->ctx, oc_pairs_out_create(j->ctx, j->path, j->dtype, j->n, j->p, w));
    return OC_OK;
}

/* Rank r (> 0) sends its spool to rank 0 in pieces: a count, then the arrays; 0 ends. */
static oc_status send_spool(oc_rank_job *j, pairs_sink *s)
{
    oc_context *ctx = j->ctx;
    oc_status st = OC_OK;
    if (lseek(s->spool, 0, SEEK_SET) != 0) st = oc_fail(ctx, OC_ERR_IO, "cannot rewind the pairs' scratch file");
    int64_t count = 0;
    /* A cancel stops the sending; the end marker still goes, and the delivery's agreement fails. */
    while ((st = oc_rank_cancelled(j, st)) == OC_OK && read_all(s->spool, &count, sizeof count) == 0) {
        if (count > s->cap) {
            st = oc_fail(ctx, OC_ERR_INTERNAL, "a spooled batch is larger than any written");
            break;
        }
        if (read_all(s->spool, s->rows, (size_t)count * sizeof *s->rows) ||
            read_all(s->spool, s->cols, (size_t)count * sizeof *s->cols) ||
            read_all(s->spool, s->values, (size_t)count * s->es)) {
            st = oc_fail(ctx, OC_ERR_IO, "cannot read back the pairs' scratch file");
            break;
        }
        for (int64_t e0 = 0; e0 < count && st == OC_OK; e0 += PIECE_PAIRS) {
            int64_t m = count - e0 < PIECE_PAIRS ? count - e0 : PIECE_PAIRS;
            st = send_piece(ctx, s, e0, m);
            j->bytes_written += m * (int64_t)(2 * sizeof(int64_t) + s->es);
        }
    }
    /* The end marker goes even after a failure, so rank 0 is never left waiting. */
    int64_t end = 0;
    oc_status sent = oc_mpi_send_bytes(ctx, &end, sizeof end, 0, TAG_PAIRS);
    return st != OC_OK ? st : sent;
}

/* Rank 0 appends rank r's pieces; after a failure it still receives them all, dropping them. */
static oc_status receive_rank(oc_rank_job *j, pairs_sink *s, int r, oc_status st)
{
    oc_context *ctx = j->ctx;
    int64_t *rows = malloc(PIECE_PAIRS * sizeof *rows), *cols = malloc(PIECE_PAIRS * sizeof *cols);
    char *values = malloc(PIECE_PAIRS * s->es);
    if (!rows || !cols || !values) {
        free(rows);
        free(cols);
        free(values);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the receive buffers of threshold pairs");
    }
    for (;;) {
        int64_t m = 0;
        oc_status rs = oc_mpi_recv_bytes(ctx, &m, sizeof m, r, TAG_PAIRS);
        if (rs != OC_OK || m == 0) {
            if (st == OC_OK) st = rs;
            break;
        }
        rs = receive_piece(ctx, r, m, s->es, rows, cols, values);
        if (rs != OC_OK) {
            if (st == OC_OK) st = rs;
            break; /* the link is broken: nothing more can be matched */
        }
        st = oc_rank_cancelled(j, st); /* cancelled: the rest is received and dropped */
        if (st == OC_OK) st = oc_pairs_out_append(ctx, s->writer, rows, cols, values, m);
        if (st == OC_OK) { /* rank 0 writes them into the file: its bytes, as its own pairs are */
            s->count += m;
            j->bytes_written += m * (int64_t)(2 * sizeof(int64_t) + s->es);
        }
    }
    free(rows);
    free(cols);
    free(values);
    return st;
}

oc_status oc_ranks_pairs(oc_rank_job *j, int64_t *pairs)
{
    oc_context *ctx = j->ctx;
    oc_rank_rows_fn split = j->symmetric ? oc_rank_rows_triangle : oc_rank_rows_even;
    split(j->n, j->rank, j->size, &j->row0, &j->row1);
    pairs_sink s = {.j = j, .spool = -1, .es = oc_dtype_size(j->dtype)};
    oc_status st = OC_OK;
    if (j->rank == 0) {
        st = pairs_open(j, &s.writer);
    } else {
        char tmpl[4096];
        snprintf(tmpl, sizeof tmpl, "%s/outcore-rank-pairs-XXXXXX", oc_scratch_dir());
        if ((s.spool = oc_scratch_open(ctx, tmpl)) < 0)
            st = oc_fail(ctx, OC_ERR_IO, "cannot create a scratch file for threshold pairs in %s", oc_scratch_dir());
    }
    st = oc_mpi_agree(ctx, st);
    if (st != OC_OK) goto cleanup;

    double t0 = oc_now();
    st = oc_rank_fault(j, pairs_compute(j, &s));
    j->seconds = oc_now() - t0;
    if (st != OC_OK) { /* the job fails whatever the others say: no temporary file waits for them */
        oc_pairs_out_abort(s.writer);
        s.writer = NULL;
    }
    st = oc_mpi_agree(ctx, st);
    if (st != OC_OK) goto cleanup;

    if (j->rank == 0)
        for (int r = 1; r < j->size; ++r) st = receive_rank(j, &s, r, st);
    else st = send_spool(j, &s);
    /* A sender that failed or stopped still sent its end marker: rank 0 must not commit. */
    st = oc_mpi_agree(ctx, oc_rank_cancelled(j, st));
    if (st == OC_OK && j->rank == 0) {
        oc_pairs_out *writer = s.writer;
        s.writer = NULL;
        st = oc_pairs_out_commit(ctx, writer);
    }
    if (st == OC_OK) st = oc_mpi_agree(ctx, st);
    int64_t total = s.count;
    MPI_Bcast(&total, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    *pairs = total;

cleanup:
    oc_pairs_out_abort(s.writer);
    if (s.spool >= 0) close(s.spool);
    free(s.why);
    free(s.rows);
    free(s.cols);
    free(s.values);
    return st;
}
