/*
 * select_pairs.c - threshold pairs from Gram tiles (see select.h for the data flow,
 * select_key.h for the order, docs/topk.md for the semantics).
 *
 * A tile's pairs form one chunk of its row block, sorted by (row, col) within the tile. A
 * row block is complete when all its tiles have arrived (a whole-rows backend's: when each
 * of its rows came, in pieces of rows); complete blocks are delivered in row order on the
 * caller's thread by oc_select_drain, which walks each row across the block's chunks in
 * column-tile (or piece) order: the (row, col) order needs no sort. Chunks beyond
 * buffer_bytes of waiting pairs are written to an unlinked scratch file (the I/O layer's:
 * io.h's oc_scratch_open, its writes through sysio.h, whose fault plan tests use) and read
 * back at delivery.
 *
 * Lock order: plock alone; a worker never holds it with a top-k lock stripe.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "matrix/matrix.h"
#include "io/io.h"
#include "io/sysio.h"
#include "gram/select/select.h"
#include "gram/select/select_state.h"

#define EMIT_BATCH 65536 /* pairs per emit call */

/* ---------------------------------------------------------------- a tile's pairs */
/* out[n] = element e of values, both of the kind's dtype: a typed copy, bit for bit. */
OC_SELECT_INSTANCE void copy_value(const oc_key_kind kind, void *out, int64_t n, const void *values, int64_t e)
{
    switch (kind) {
    case OC_KEY_F32:
        ((float *)out)[n] = ((const float *)values)[e];
        break;
    case OC_KEY_I32:
    case OC_KEY_I32_REV:
        ((int32_t *)out)[n] = ((const int32_t *)values)[e];
        break;
    default:
        ((uint16_t *)out)[n] = ((const uint16_t *)values)[e];
        break;
    }
}

/* The pairs of a converted tile of key kind `kind` (a constant in each instance, so that
 * the test has no switch) into w's buffers: columns, values and pairs per row. Returns
 * their number. */
OC_SELECT_INSTANCE int64_t tile_pairs(const oc_select *s, sel_worker *w, int64_t i0, int64_t j0, int64_t rows,
                                      int64_t cols, const void *restrict tile, int64_t ld, const oc_key_kind kind)
{
    const uint32_t mk = (uint32_t)s->min_key;
    void *vals = w->pvals;
    int64_t n = 0;
    for (int64_t r = 0; r < rows; ++r) {
        int64_t before = n;
        for (int64_t c = oc_select_first_column(s, i0 + r, j0, cols); c < cols; ++c)
            if (oc_key_score(kind, tile, r * ld + c) >= mk) {
                w->pcols[n] = (uint32_t)c;
                copy_value(kind, vals, n++, tile, r * ld + c);
            }
        w->pcounts[r] = (uint32_t)(n - before);
    }
    return n;
}

/* ---------------------------------------------------------------- set-up */
void oc_select_pairs_create(oc_select *s)
{
    s->buffer_bytes = s->cfg.buffer_bytes > 0 ? s->cfg.buffer_bytes : OC_SELECT_BUFFER_DEFAULT;
    s->min_key = oc_select_score_min_key(s->kind, s->cfg.threshold);
}

/* The rows of row block b. */
static int64_t block_rows(const oc_select *s, int64_t b)
{
    const int64_t i0 = b * s->tile;
    return s->cfg.n - i0 < s->tile ? s->cfg.n - i0 : s->tile;
}

oc_status oc_select_pairs_begin(oc_context *ctx, oc_select *s)
{
    const int64_t tile = s->tile, tt = tile * tile; /* select.c checked the product */
    const int workers = s->nworkers;
    s->nblocks = (s->cfg.n + tile - 1) / tile;
    s->blocks = calloc((size_t)(s->nblocks ? s->nblocks : 1), sizeof *s->blocks);
    s->out_rows = malloc(EMIT_BATCH * sizeof *s->out_rows);
    s->out_cols = malloc(EMIT_BATCH * sizeof *s->out_cols);
    s->out_vals = malloc(EMIT_BATCH * s->elem);
    s->read_cols = malloc(EMIT_BATCH * sizeof *s->read_cols);
    s->read_vals = malloc(EMIT_BATCH * s->elem);
    if (!s->blocks || !s->out_rows || !s->out_cols || !s->out_vals || !s->read_cols || !s->read_vals)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the threshold pair buffers");
    for (int64_t b = 0; b < s->nblocks; ++b) s->blocks[b].expected = s->cfg.symmetric ? s->tiles_j - b : s->tiles_j;
    for (int i = 0; i < workers; ++i) {
        sel_worker *w = &s->workers[i];
        w->pcols = malloc((size_t)tt * sizeof *w->pcols);
        w->pvals = malloc((size_t)tt * s->elem);
        w->pcounts = malloc((size_t)tile * sizeof *w->pcounts);
        if (!w->pcols || !w->pvals || !w->pcounts)
            return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate threshold buffers for %d workers", workers);
    }
    return OC_OK;
}

oc_status oc_select_pairs_rows(oc_select *s)
{
    for (int64_t b = 0; b < s->nblocks; ++b) s->blocks[b].expected = block_rows(s, b);
    return OC_OK;
}

static void free_chunk(pair_chunk *c)
{
    free(c->row_counts);
    free(c->cols);
    free(c->values);
    memset(c, 0, sizeof *c);
}

void oc_select_pairs_free(oc_select *s)
{
    if (s->workers)
        for (int i = 0; i < s->nworkers; ++i) {
            sel_worker *w = &s->workers[i];
            free(w->pcols);
            free(w->pvals);
            free(w->pcounts);
        }
    if (s->blocks)
        for (int64_t b = 0; b < s->nblocks; ++b)
            if (s->blocks[b].chunks) {
                for (int64_t k = 0; k < s->blocks[b].nchunks; ++k) free_chunk(&s->blocks[b].chunks[k]);
                free(s->blocks[b].chunks);
            }
    free(s->blocks);
    if (s->spill_fd >= 0) close(s->spill_fd);
    free(s->out_rows);
    free(s->out_cols);
    free(s->out_vals);
    free(s->read_cols);
    free(s->read_vals);
}

int64_t oc_select_pairs_count(const oc_select *s) { return s->emitted; }

/* ---------------------------------------------------------------- chunks and the spill file */
static int read_all(int fd, void *buf, size_t len, int64_t off)
{
    char *p = buf;
    while (len > 0) {
        ssize_t r = pread(fd, p, len, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r, len -= (size_t)r, off += r;
    }
    return 0;
}

/* Records a failed create or write of the spill file as the selection's error. */
static void spill_failed(oc_select *s, const char *action, int err)
{
    char name[4200], msg[sizeof s->errmsg];
    snprintf(name, sizeof name, "the temporary file of threshold pairs in %s", oc_scratch_dir());
    oc_io_describe(msg, sizeof msg, action, name, err, oc_sys_file_size(s->spill_fd), -1, -1);
    oc_select_set_error(s, OC_ERR_IO, "%s", msg);
}

/* The spill file, created when the first chunk spills. Called with plock held. */
static int spill_open(oc_select *s)
{
    if (s->spill_fd >= 0) return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/outcore-pairs-XXXXXX", oc_scratch_dir());
    int fd = oc_scratch_open(s->io_ctx, path);
    if (fd < 0) {
        spill_failed(s, "creating", errno);
        return -1;
    }
    s->spill_fd = fd;
    return 0;
}

/* Puts chunk c of row block I in its place: a tile's in the slot of its column tile J, a piece
 * of whole rows after the block's others. Called with plock held; -1 when out of memory. */
static int place_chunk(oc_select *s, int64_t I, int64_t J, const pair_chunk *c)
{
    row_block *b = &s->blocks[I];
    if (!s->whole_rows) {
        if (!b->chunks) {
            if (!(b->chunks = calloc((size_t)b->expected, sizeof *b->chunks))) return -1;
            b->nchunks = b->cap = b->expected;
        }
        b->chunks[J - (s->cfg.symmetric ? I : 0)] = *c;
        b->done++;
        return 0;
    }
    if (b->nchunks == b->cap) {
        const int64_t cap = b->cap ? 2 * b->cap : 4;
        pair_chunk *more = realloc(b->chunks, (size_t)cap * sizeof *more);
        if (!more) return -1;
        b->chunks = more, b->cap = cap;
    }
    b->chunks[b->nchunks++] = *c; /* in any order: delivery walks rows, each in the piece holding it */
    b->done += c->rows;
    return 0;
}

/* Stores a tile's pairs, or a piece of whole rows, as a chunk of its row block; copies
 * everything it keeps. */
static oc_status add_chunk(oc_select *s, int64_t i0, int64_t j0, int64_t rows, const uint32_t *row_counts,
                           const uint32_t *cols, const void *values, int64_t count)
{
    const int64_t I = i0 / s->tile, J = j0 / s->tile;
    pair_chunk c = {.row0 = i0 - I * s->tile, .rows = rows, .count = count, .spill_off = -1};
    if (count > 0) {
        c.row_counts = malloc((size_t)rows * sizeof *c.row_counts);
        if (!c.row_counts) goto no_memory;
        memcpy(c.row_counts, row_counts, (size_t)rows * sizeof *c.row_counts);
        c.mem_bytes = rows * (int64_t)sizeof *c.row_counts;
    }
    pthread_mutex_lock(&s->plock);
    int spill = count > 0 && s->pending_bytes + count * (int64_t)(4 + s->elem) > s->buffer_bytes;
    if (spill) {
        /* The file's end is reserved under the lock; writing at it happens after. */
        if (spill_open(s) != 0) {
            pthread_mutex_unlock(&s->plock);
            free_chunk(&c);
            return OC_ERR_IO;
        }
        c.spill_off = s->spill_end;
        s->spill_end += count * (int64_t)(4 + s->elem);
    }
    pthread_mutex_unlock(&s->plock);
    if (spill) {
        int64_t values_off = c.spill_off + count * 4;
        int err = oc_sys_write_all(s->io_ctx, s->spill_fd, cols, (size_t)count * 4, c.spill_off);
        if (!err) err = oc_sys_write_all(s->io_ctx, s->spill_fd, values, (size_t)count * s->elem, values_off);
        if (err) {
            spill_failed(s, "writing", err);
            free_chunk(&c);
            return OC_ERR_IO;
        }
    } else if (count > 0) {
        c.cols = malloc((size_t)count * sizeof *c.cols);
        c.values = malloc((size_t)count * s->elem);
        if (!c.cols || !c.values) goto no_memory;
        memcpy(c.cols, cols, (size_t)count * sizeof *c.cols);
        memcpy(c.values, values, (size_t)count * s->elem);
        c.mem_bytes += count * (int64_t)(4 + s->elem);
    }

    pthread_mutex_lock(&s->plock);
    if (place_chunk(s, I, J, &c) != 0) {
        pthread_mutex_unlock(&s->plock);
        goto no_memory;
    }
    s->pending_bytes += c.mem_bytes;
    pthread_mutex_unlock(&s->plock);
    return OC_OK;

no_memory:
    free_chunk(&c);
    oc_select_set_error(s, OC_ERR_NO_MEMORY, "cannot allocate %lld threshold pairs of tile rows %lld..",
                        (long long)count, (long long)i0);
    return OC_ERR_NO_MEMORY;
}

oc_status oc_select_pairs_tile(oc_select *s, sel_worker *w, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                               const void *tile, int64_t ld)
{
    int64_t n = 0;
    if (s->min_key <= 0xFFFFFFFFu) switch (s->kind) {
        case OC_KEY_F32:
            n = tile_pairs(s, w, i0, j0, rows, cols, tile, ld, OC_KEY_F32);
            break;
        case OC_KEY_I32:
            n = tile_pairs(s, w, i0, j0, rows, cols, tile, ld, OC_KEY_I32);
            break;
        case OC_KEY_U16:
            n = tile_pairs(s, w, i0, j0, rows, cols, tile, ld, OC_KEY_U16);
            break;
        case OC_KEY_I32_REV:
            n = tile_pairs(s, w, i0, j0, rows, cols, tile, ld, OC_KEY_I32_REV);
            break;
        default:
            n = tile_pairs(s, w, i0, j0, rows, cols, tile, ld, OC_KEY_U16_REV);
            break;
        }
    return add_chunk(s, i0, j0, rows, w->pcounts, w->pcols, w->pvals, n);
}

oc_status oc_select_add_pairs(oc_select *s, int64_t i0, int64_t j0, int64_t rows, const uint32_t *row_counts,
                              const uint32_t *cols, const void *values, int64_t count)
{
    return add_chunk(s, i0, j0, rows, row_counts, cols, values, count);
}

/* ---------------------------------------------------------------- delivery */
static oc_status flush_out(oc_context *ctx, oc_select *s, int64_t *n)
{
    if (*n == 0) return OC_OK;
    if (s->cfg.emit) OC_CHECK(ctx, s->cfg.emit(ctx, s->cfg.emit_user, s->out_rows, s->out_cols, s->out_vals, *n));
    s->emitted += *n;
    *n = 0;
    return OC_OK;
}

/* Appends `count` pairs of row `row` whose columns are j0 + cols[i]. */
static oc_status append(oc_context *ctx, oc_select *s, int64_t *n, int64_t row, int64_t j0, const uint32_t *cols,
                        const unsigned char *values, int64_t count)
{
    while (count > 0) {
        int64_t take = EMIT_BATCH - *n < count ? EMIT_BATCH - *n : count;
        for (int64_t i = 0; i < take; ++i) {
            s->out_rows[*n + i] = row;
            s->out_cols[*n + i] = j0 + cols[i];
        }
        memcpy(s->out_vals + *n * s->elem, values, (size_t)take * s->elem);
        *n += take, cols += take, values += take * s->elem, count -= take;
        if (*n == EMIT_BATCH) OC_CHECK(ctx, flush_out(ctx, s, n));
    }
    return OC_OK;
}

static oc_status deliver_block(oc_context *ctx, oc_select *s, int64_t I)
{
    row_block *b = &s->blocks[I];
    const int64_t i0 = I * s->tile, rows = block_rows(s, I);
    const int64_t first_j = s->cfg.symmetric ? I : 0;
    int64_t *cursor = calloc((size_t)(b->nchunks ? b->nchunks : 1), sizeof *cursor), n = 0;
    if (!cursor)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the delivery state of %lld chunks",
                       (long long)b->nchunks);
    oc_status st = OC_OK;
    for (int64_t r = 0; r < rows && st == OC_OK; ++r)
        for (int64_t k = 0; k < b->nchunks && st == OC_OK; ++k) {
            pair_chunk *c = &b->chunks[k];
            if (c->count == 0 || r < c->row0 || r >= c->row0 + c->rows || c->row_counts[r - c->row0] == 0) continue;
            int64_t cnt = c->row_counts[r - c->row0], j0 = s->whole_rows ? 0 : (first_j + k) * s->tile;
            if (c->spill_off < 0) {
                st = append(ctx, s, &n, i0 + r, j0, c->cols + cursor[k], c->values + cursor[k] * s->elem, cnt);
            } else {
                for (int64_t done = 0; done < cnt && st == OC_OK;) {
                    int64_t part = cnt - done < EMIT_BATCH ? cnt - done : EMIT_BATCH, at = cursor[k] + done;
                    if (read_all(s->spill_fd, s->read_cols, (size_t)part * 4, c->spill_off + at * 4) != 0 ||
                        read_all(s->spill_fd, s->read_vals, (size_t)part * s->elem,
                                 c->spill_off + c->count * 4 + at * (int64_t)s->elem) != 0) {
                        st = oc_fail(ctx, OC_ERR_IO, "reading threshold pairs back from the temporary file failed: %s",
                                     strerror(errno));
                        break;
                    }
                    st = append(ctx, s, &n, i0 + r, j0, s->read_cols, s->read_vals, part);
                    done += part;
                }
            }
            cursor[k] += cnt;
        }
    if (st == OC_OK) st = flush_out(ctx, s, &n);
    free(cursor);
    int64_t freed = 0;
    for (int64_t k = 0; k < b->nchunks; ++k) {
        freed += b->chunks[k].mem_bytes;
        free_chunk(&b->chunks[k]);
    }
    free(b->chunks);
    b->chunks = NULL;
    b->nchunks = b->cap = 0;
    pthread_mutex_lock(&s->plock);
    s->pending_bytes -= freed;
    pthread_mutex_unlock(&s->plock);
    return st == OC_OK ? OC_OK : oc_trace_at(ctx, st, __FILE__, __LINE__);
}

oc_status oc_select_drain(oc_context *ctx, oc_select *s)
{
    OC_CHECK(ctx, oc_select_check(ctx, s));
    if (s->cfg.mode != OC_SELECT_PAIRS) return OC_OK;
    for (;;) {
        pthread_mutex_lock(&s->plock);
        int ready = s->next_block < s->nblocks && s->blocks[s->next_block].done == s->blocks[s->next_block].expected;
        int64_t I = s->next_block;
        if (ready) s->next_block++;
        pthread_mutex_unlock(&s->plock);
        if (!ready) return OC_OK;
        OC_CHECK(ctx, deliver_block(ctx, s, I));
    }
}

oc_status oc_select_pairs_finish(oc_context *ctx, oc_select *s)
{
    OC_CHECK(ctx, oc_select_drain(ctx, s));
    if (s->next_block != s->nblocks)
        return oc_fail(ctx, OC_ERR_INTERNAL, "threshold selection: row block %lld of %lld never completed",
                       (long long)s->next_block, (long long)s->nblocks);
    return OC_OK;
}
