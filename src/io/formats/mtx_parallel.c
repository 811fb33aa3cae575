/*
 * mtx_parallel.c - the entry lines of a MatrixMarket file parsed on all cores.
 *
 * The lines after the size line are cut into chunks at line ends; each thread parses whole
 * chunks into coordinates of its own, and the chunks are joined in order. Only the fast path
 * lives here: any line that is not a valid entry, or a count of entries other than the size
 * line's, makes the caller parse the file again on one thread, which knows line numbers and
 * says exactly what is wrong. A valid file is read once.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/threads.h"
#include "matrix/matrix_build.h"
#include "io/mapped_file.h"
#include "io/formats/mtx_tokens.h"

typedef struct chunk {
    const unsigned char *begin, *end;
    coords c;        /* this chunk's ones */
    int64_t entries; /* entry lines, zeros included */
    int bad;         /* a line the sequential parser must explain */
} chunk;

typedef struct parallel_job {
    const struct oc_context *ctx; /* read for its cancel */
    chunk *chunks;
    int pattern, real, mirror, binarize;
    int64_t rows, cols;
} parallel_job;

static oc_status chunk_task(void *arg, int64_t task, int worker)
{
    (void)worker;
    const parallel_job *pj = arg;
    chunk *ch = &pj->chunks[task];
    /* An entry takes at least 4 bytes ("1 1\n"): the chunk's size bounds its ones. */
    ch->c.most = ((int64_t)(ch->end - ch->begin) / 4 + 1) * (pj->mirror ? 2 : 1);
    const unsigned char *pos = ch->begin;
    const char *line;
    size_t len;
    token tok[MTX_MAX_TOKENS];
    const int want = pj->pattern ? 2 : 3;
    int64_t next_check = OC_CANCEL_CHECK_BYTES;
    while (oc_next_line(&pos, ch->end, &line, &len)) {
        /* A cancel stops the chunk; the caller's parse on one thread then says so. */
        if (pos - ch->begin >= next_check) {
            if (oc_cancelled(pj->ctx)) return OC_ERR_CANCELLED;
            next_check += OC_CANCEL_CHECK_BYTES;
        }
        if (is_skippable(line, len)) continue;
        int64_t i, j;
        if (split(line, len, tok) != want || !parse_int(&tok[0], &i) || !parse_int(&tok[1], &j) || i < 1 ||
            i > pj->rows || j < 1 || j > pj->cols) {
            ch->bad = 1;
            return OC_OK;
        }
        int one = 1;
        if (!pj->pattern) {
            mtx_value v = classify_value(&tok[2], pj->real);
            if (v == VALUE_NOT_A_NUMBER || (v == VALUE_OTHER && !pj->binarize)) {
                ch->bad = 1;
                return OC_OK;
            }
            one = v != VALUE_ZERO;
        }
        ch->entries++;
        if (one && (!coords_push(&ch->c, (uint32_t)(i - 1), (uint32_t)(j - 1)) ||
                    (pj->mirror && i != j && !coords_push(&ch->c, (uint32_t)(j - 1), (uint32_t)(i - 1)))))
            return OC_ERR_NO_MEMORY;
    }
    return OC_OK;
}

int oc_mtx_parse_parallel(struct oc_context *ctx, const unsigned char *body, size_t size, int pattern, int real,
                          int mirror, int binarize, int64_t entries, int threads, coords *c)
{
    const int64_t nchunks = 4 * (int64_t)threads;
    parallel_job pj = {.ctx = ctx,
                       .pattern = pattern,
                       .real = real,
                       .mirror = mirror,
                       .binarize = binarize,
                       .rows = c->rows,
                       .cols = c->cols};
    pj.chunks = calloc((size_t)nchunks, sizeof *pj.chunks);
    if (!pj.chunks) return 0;
    const unsigned char *end = body + size, *at = body;
    for (int64_t k = 0; k < nchunks; ++k) {
        const unsigned char *cut =
            k == nchunks - 1 ? end : body + (size_t)((double)size * (double)(k + 1) / (double)nchunks);
        if (cut < at) cut = at;
        const unsigned char *nl = cut < end ? memchr(cut, '\n', (size_t)(end - cut)) : NULL;
        cut = nl ? nl + 1 : end;
        pj.chunks[k].begin = at;
        pj.chunks[k].end = cut;
        at = cut;
    }
    int ok = oc_parallel_run(ctx, threads, nchunks, chunk_task, &pj, NULL, NULL) == OC_OK;
    int64_t seen = 0, ones = 0;
    for (int64_t k = 0; k < nchunks; ++k) {
        ok = ok && !pj.chunks[k].bad;
        seen += pj.chunks[k].entries;
        ones += pj.chunks[k].c.count;
    }
    ok = ok && seen == entries && ones <= c->most;
    if (ok) {
        c->row = malloc((size_t)(ones ? ones : 1) * sizeof *c->row);
        c->col = malloc((size_t)(ones ? ones : 1) * sizeof *c->col);
        c->cap = ones;
        if (!c->row || !c->col) {
            free(c->row);
            free(c->col);
            *c = (coords){.most = c->most, .rows = c->rows, .cols = c->cols};
            ok = 0;
        }
    }
    for (int64_t k = 0; k < nchunks; ++k) {
        if (ok) {
            memcpy(c->row + c->count, pj.chunks[k].c.row, (size_t)pj.chunks[k].c.count * sizeof *c->row);
            memcpy(c->col + c->count, pj.chunks[k].c.col, (size_t)pj.chunks[k].c.count * sizeof *c->col);
            c->count += pj.chunks[k].c.count;
        }
        free(pj.chunks[k].c.row);
        free(pj.chunks[k].c.col);
    }
    free(pj.chunks);
    return ok;
}
