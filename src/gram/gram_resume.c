/*
 * gram_resume.c - resumable Gram jobs (gram_resume.h): the journal opened or created, what
 * the records of an earlier run restore, and the checkpoints. The header's lines are
 * gram_resume_job.c's, the top-k snapshot file gram_resume_snapshot.c's.
 *
 * A checkpoint first checks the inputs (a .npy left in its file must keep its size:
 * oc_gram_inputs_unchanged), so that no record vouches for a tile that read rows after a
 * change. It then makes durable, in this order (so a record never vouches for bytes that
 * are not on the disk yet):
 *   dense     msync of the output's temporary file, then one TILE record per finished tile
 *   top-k     the snapshot (lists and the bitmap of tiles in them) to a temporary name,
 *             fsync, rename over PATH.outcore-journal.topk, then its TOPK record; lists
 *             kept apart (a device's) are first fetched and merged into the job's, each
 *             part at its own checkpoints (oc_resume_topk_lists)
 *   threshold the PAIRS records (appended as the pairs went to the output), then BLOCKS
 * and then the journal is fdatasync'ed. Checkpoints come where the backend has no tile in
 * flight, at most every OUTCORE_RESUME_INTERVAL seconds (default 2): a kill loses the work
 * since the last one. OUTCORE_RESUME_KILL_AFTER=k kills the process (SIGKILL) right after
 * the first checkpoint that brings the units on record (tiles; threshold: row blocks) to k
 * or more: the tests' crash at a chosen point.
 */
#include "gram/gram_resume.h"
#include "core/text_buf.h"
#include "gram/gram_resume_parts.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/threads.h"
#include "gram/select/select.h"
#include "io/crc32.h"
#include "io/io.h"
#include "io/journal.h"
#include "io/journal_start.h"
#include "io/sysio.h"

enum { REC_TEMP = 1, REC_PLAN = 2, REC_TILE = 3, REC_TOPK = 4, REC_PAIRS = 5, REC_BLOCKS = 6 };
enum { KIND_DENSE, KIND_TOPK, KIND_PAIRS };

#define PAIRS_FLUSH_BYTES (64 << 20) /* buffered pairs records that force a checkpoint */
#define PAIRS_WRITE_BYTES (8 << 20)  /* buffered pairs records written out within a drain */

typedef oc_journal_tile tile_crc;

typedef struct pairs_rec {
    int64_t offset;
    uint32_t len;
} pairs_rec;

/* Lists kept apart from the job's (a device's): the tiles in them that are not on record yet,
 * and when they were last merged into the job's. */
typedef struct resume_part {
    int64_t *tiles;
    int64_t count, cap;
    double last;
} resume_part;

struct oc_resume {
    oc_journal *journal;
    char *snap_path;
    const char *out_path; /* the output's (the caller's string, for the job's life) */
    uint32_t job_crc;
    int kind;
    size_t elem;
    /* what the journal held when this run started */
    char **temps;
    int ntemps;
    int64_t tile;
    tile_crc *recorded; /* dense: TILE records */
    int64_t nrecorded;
    pairs_rec *pairs; /* threshold: PAIRS records up to the last BLOCKS */
    int64_t npairs, pairs_cap, pairs_committed;
    int64_t blocks_done, pairs_done;
    int64_t uncommitted_off; /* payload offset of the first PAIRS record after the last BLOCKS */
    /* what the PAIRS records read so far hold, to check each record against the job: the
     * job's shape, the pairs' count, and the last pair (pairs come sorted by row, then column) */
    int64_t n, p;
    int symmetric;
    int64_t pairs_seen, last_row, last_col;
    /* this run */
    int64_t tiles_i, tiles_j;
    unsigned char *done;    /* bitmap of tiles on record (dense, top-k) */
    unsigned char *earlier; /* the tiles on record when this run began: the ones it skips */
    pthread_mutex_t lock;   /* guards pending, parts and (parts' checkpoints) the rest */
    tile_crc *pending;      /* finished since the last checkpoint */
    int64_t npending, pending_cap;
    resume_part parts[OC_MAX_LOGICAL_DEVICES]; /* top-k lists kept apart (oc_resume_topk_lists) */
    int64_t units, units_this_run, kill_after;
    double interval, last;
    void *dense_writer; /* oc_npy_out of the dense output */
    oc_resume_emit_fn emit;
    void *emit_user;
    int replaying;
    int inputs_changed; /* a checkpoint found an input changed: nothing more goes on record */
    int resumed;        /* the journal existed when this run started */
};

/* ---------------------------------------------------------------- reading the journal */
/* Whether a PAIRS record holds what oc_resume_pairs writes: its count of pairs and their rows,
 * columns and values, each pair in the job's shape (of A·Aᵀ, above the diagonal) and after the
 * last one read; then counted. A record that does not is damage: the journal ends before it. */
static int pairs_record_fits(oc_resume *r, const unsigned char *payload, uint32_t len)
{
    int64_t count;
    if (r->tile <= 0 || len < 8) return 0;
    memcpy(&count, payload, 8);
    const uint64_t each = 16 + (uint64_t)r->elem;
    if (count <= 0 || (uint64_t)count > (len - 8) / each || 8 + (uint64_t)count * each != len) return 0;
    for (int64_t k = 0; k < count; ++k) {
        int64_t row, col;
        memcpy(&row, payload + 8 + k * 8, 8);
        memcpy(&col, payload + 8 + (count + k) * 8, 8);
        if (row < 0 || row >= r->n || col < 0 || col >= r->p || (r->symmetric && col <= row)) return 0;
        if (row < r->last_row || (row == r->last_row && col <= r->last_col)) return 0;
        r->last_row = row;
        r->last_col = col;
    }
    r->pairs_seen += count;
    return 1;
}

static int on_record(void *user, uint32_t type, uint64_t unit, const void *payload, uint32_t len, int64_t offset)
{
    oc_resume *r = user;
    switch (type) {
    case REC_TEMP: {
        /* Only a temporary of this output (PATH.tmp-...) is ever reopened or removed, under
         * this run's spelling of the output's folder: a name elsewhere is damage, or planted,
         * and is ignored. */
        char *temp = oc_journal_temp_of(r->out_path, payload, len);
        if (!temp) return 0;
        char **temps = realloc(r->temps, (size_t)(r->ntemps + 1) * sizeof *temps);
        if (!temps) {
            free(temp);
            return 1;
        }
        r->temps = temps;
        r->temps[r->ntemps++] = temp;
        return 0;
    }
    case REC_PLAN:
        /* One plan; a second that differs is damage (the records after it are not this job's). */
        if ((int64_t)unit <= 0 || (r->tile && r->tile != (int64_t)unit)) return 1;
        r->tile = (int64_t)unit;
        return 0;
    case REC_TILE:
        return oc_journal_tile_add(&r->recorded, &r->nrecorded, unit, payload, len);
    case REC_TOPK:
        return 0; /* the snapshot file says it all; the record is the trail */
    case REC_PAIRS:
        if (!pairs_record_fits(r, payload, len)) return 1;
        if (r->npairs == r->pairs_cap) {
            int64_t cap = r->pairs_cap ? 2 * r->pairs_cap : 64;
            pairs_rec *p = realloc(r->pairs, (size_t)cap * sizeof *p);
            if (!p) return 1;
            r->pairs = p;
            r->pairs_cap = cap;
        }
        if (r->npairs == r->pairs_committed) r->uncommitted_off = offset;
        r->pairs[r->npairs++] = (pairs_rec){offset, len};
        return 0;
    case REC_BLOCKS: {
        /* Blocks delivered in order, the pairs on record before it all of theirs and no more. */
        int64_t pairs;
        if (len != 8 || r->tile <= 0) return 1;
        memcpy(&pairs, payload, 8);
        const int64_t blocks = (int64_t)unit, nblocks = (r->n + r->tile - 1) / r->tile;
        if (blocks < r->blocks_done || blocks > nblocks || pairs != r->pairs_seen ||
            (pairs > 0 && r->last_row >= blocks * r->tile))
            return 1;
        r->blocks_done = blocks;
        r->pairs_done = pairs;
        r->pairs_committed = r->npairs;
        r->uncommitted_off = -1;
        return 0;
    }
    default:
        return 1;
    }
}

/* ---------------------------------------------------------------- start and end */
/* The job oc_resume_start starts a journal for (oc_journal_keeper's user), and its record. */
typedef struct resume_starting {
    const oc_gram_job *job;
    const oc_output *out;
    oc_resume *r;
    int snap_exists;
} resume_starting;

static void resume_free(oc_resume *r);

static oc_status start_make(oc_context *ctx, void *user, const char *jpath, double interval, int64_t kill_after)
{
    resume_starting *s = user;
    const oc_gram_job *job = s->job;
    oc_resume *r = s->r = calloc(1, sizeof *r);
    if (!r) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    pthread_mutex_init(&r->lock, NULL);
    r->kind = job->opts->topk > 0 ? KIND_TOPK : job->opts->use_threshold ? KIND_PAIRS : KIND_DENSE;
    r->elem = oc_dtype_size(job->dtype);
    r->uncommitted_off = -1;
    r->n = job->n, r->p = job->p, r->symmetric = job->symmetric;
    r->last_row = r->last_col = -1;
    r->interval = interval;
    r->kill_after = kill_after;
    r->last = oc_now();
    for (int d = 0; d < OC_MAX_LOGICAL_DEVICES; ++d) r->parts[d].last = r->last;
    r->out_path = s->out->path;
    size_t jl = strlen(jpath);
    r->snap_path = malloc(jl + sizeof ".topk");
    if (!r->snap_path) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    snprintf(r->snap_path, jl + sizeof ".topk", "%s.topk", jpath);
    return oc_journal_side_check(ctx, r->snap_path, "top-k snapshot of the resume journal", &s->snap_exists);
}

static void start_drop(void *user)
{
    resume_starting *s = user;
    if (s->r) resume_free(s->r);
    s->r = NULL;
}

static oc_status start_held(oc_context *ctx, void *user, int found)
{
    const resume_starting *s = user;
    /* A snapshot's temporary that a kill left (mid-write) is removed here: the run that
     * finishes may write no snapshot of its own, whose writing would remove it. */
    oc_stale_temps_remove(ctx, s->r->snap_path);
    if (!found && s->snap_exists) unlink(s->r->snap_path); /* an earlier job's, whose journal is gone */
    return OC_OK;
}

static oc_status start_describe(oc_context *ctx, void *user, char **text)
{
    const resume_starting *s = user;
    return oc_resume_describe_job(ctx, s->job, s->out, text);
}

static int start_record(void *user, uint32_t type, uint64_t unit, const void *payload, uint32_t len, int64_t offset)
{
    return on_record(((resume_starting *)user)->r, type, unit, payload, len, offset);
}

static const char *start_temp(void *user) { return oc_resume_dense_temp(((resume_starting *)user)->r); }

oc_status oc_resume_start(oc_context *ctx, const oc_gram_job *job, const oc_output *out, oc_resume **out_r)
{
    *out_r = NULL;
    if (out->kind != OC_OUTPUT_FILE || !out->path) {
        if (job->opts->resume)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "resume: only a job that writes a file can be resumed");
        return OC_OK;
    }
    resume_starting s = {job, out, NULL, 0};
    const oc_journal_keeper k = {.out_path = out->path,
                                 .longest = ".outcore-journal.topk",
                                 .resume = job->opts->resume,
                                 .user = &s,
                                 .make = start_make,
                                 .drop = start_drop,
                                 .held = start_held,
                                 .describe = start_describe,
                                 .record = start_record,
                                 .temp = start_temp};
    oc_journal *journal;
    int resumed;
    OC_CHECK(ctx, oc_journal_start(ctx, &k, &journal, &resumed));
    if (!journal) return OC_OK;
    oc_resume *r = s.r;
    r->journal = journal;
    r->resumed = resumed;
    oc_status st = OC_OK;
    /* PAIRS after the last BLOCKS went to an output that died with its run. */
    if (resumed && r->uncommitted_off >= 0)
        OC_CHECK_GOTO(ctx, st, oc_journal_truncate_before(ctx, journal, r->uncommitted_off), cleanup);
    if (resumed) r->npairs = r->pairs_committed;
    /* The job as its journal holds it, paths as the first run spelled them: the snapshot of
     * a run that spelled them otherwise is still this job's. */
    r->job_crc = oc_journal_job_crc(journal);
    *out_r = r;
    return OC_OK;
cleanup:
    resume_free(r);
    return st;
}

static void resume_free(oc_resume *r)
{
    oc_journal_close(r->journal);
    for (int k = 0; k < r->ntemps; ++k) free(r->temps[k]);
    free(r->temps);
    free(r->recorded);
    free(r->pairs);
    free(r->done);
    free(r->earlier);
    free(r->pending);
    for (int d = 0; d < OC_MAX_LOGICAL_DEVICES; ++d) free(r->parts[d].tiles);
    free(r->snap_path);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

void oc_resume_finish(oc_resume *r)
{
    if (!r) return;
    unlink(oc_journal_name(r->journal));
    unlink(r->snap_path);
    resume_free(r);
}

void oc_resume_close(oc_resume *r)
{
    if (r) resume_free(r);
}

int oc_resume_worth_keeping(const oc_resume *r) { return r && (r->resumed || r->units > 0); }

/* ---------------------------------------------------------------- outputs */
const char *oc_resume_dense_temp(const oc_resume *r)
{
    return r->kind == KIND_DENSE && r->ntemps > 0 ? r->temps[r->ntemps - 1] : NULL;
}

oc_status oc_resume_record_temp(oc_context *ctx, oc_resume *r, const char *temp_path, void *dense_writer)
{
    r->dense_writer = dense_writer;
    /* A top-k or threshold output is written anew each run: what a killed run left goes. */
    for (int k = 0; k < r->ntemps; ++k)
        if (strcmp(r->temps[k], temp_path) != 0) unlink(r->temps[k]);
    if (r->ntemps > 0 && strcmp(r->temps[r->ntemps - 1], temp_path) == 0) return OC_OK;
    OC_CHECK(ctx, oc_journal_append(ctx, r->journal, REC_TEMP, 0, temp_path, (uint32_t)strlen(temp_path)));
    return oc_journal_flush(ctx, r->journal);
}

void oc_resume_set_emit(oc_resume *r, oc_resume_emit_fn emit, void *user)
{
    r->emit = emit;
    r->emit_user = user;
}

oc_status oc_resume_pairs(oc_context *ctx, oc_resume *r, const int64_t *rows, const int64_t *cols, const void *values,
                          int64_t count)
{
    if (r->replaying || count == 0) return OC_OK;
    size_t len = 8 + (size_t)count * (16 + r->elem);
    unsigned char *buf = malloc(len);
    if (!buf) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory journalling %lld pairs", (long long)count);
    memcpy(buf, &count, 8);
    memcpy(buf + 8, rows, (size_t)count * 8);
    memcpy(buf + 8 + (size_t)count * 8, cols, (size_t)count * 8);
    memcpy(buf + 8 + (size_t)count * 16, values, (size_t)count * r->elem);
    const oc_status st = oc_journal_append(ctx, r->journal, REC_PAIRS, 0, buf, (uint32_t)len);
    free(buf);
    OC_CHECK(ctx, st);
    /* A drain's pairs can be many more than the host budget holds: past a few MiB they go to
     * the file, unsynced (the BLOCKS record of the next checkpoint vouches for them; a resume
     * cuts PAIRS records after the last BLOCKS). */
    if (oc_journal_pending(r->journal) >= PAIRS_WRITE_BYTES) OC_CHECK(ctx, oc_journal_write(ctx, r->journal));
    return OC_OK;
}

/* ---------------------------------------------------------------- tiles */
int64_t oc_resume_tile_edge(const oc_resume *r) { return r ? r->tile : 0; }

int64_t oc_resume_group_tiles(const oc_resume *r, int threads)
{
    (void)r;
    return 4 * (int64_t)(threads > 0 ? threads : 1);
}

static int bit_get(const unsigned char *bits, int64_t k) { return bits[k >> 3] >> (k & 7) & 1; }
static void bit_set(unsigned char *bits, int64_t k) { bits[k >> 3] |= (unsigned char)(1u << (k & 7)); }

/* The CRC of dense tile (I, J)'s bytes in the output: its rows, then, for an off-diagonal
 * tile of A·Aᵀ, the rows of its mirror. */
static uint32_t dense_tile_crc(const oc_gram_job *job, int64_t tile, int64_t I, int64_t J)
{
    const oc_dense_sink *s = job->dense;
    const int64_t i0 = I * tile, j0 = J * tile;
    const int64_t rows = job->n - i0 < tile ? job->n - i0 : tile, cols = job->p - j0 < tile ? job->p - j0 : tile;
    uint32_t crc = 0;
    for (int64_t r = 0; r < rows; ++r)
        crc = oc_crc32_update(crc, s->base + ((i0 + r) * s->ld + j0) * (int64_t)s->elem_size,
                              (size_t)cols * s->elem_size);
    if (s->symmetric && I != J)
        for (int64_t c = 0; c < cols; ++c)
            crc = oc_crc32_update(crc, s->base + ((j0 + c) * s->ld + i0) * (int64_t)s->elem_size,
                                  (size_t)rows * s->elem_size);
    return crc;
}

static oc_status replay_pairs(oc_context *ctx, oc_resume *r, const oc_gram_job *job)
{
    oc_status st = OC_OK;
    unsigned char *buf = NULL;
    size_t cap = 0;
    r->replaying = 1;
    for (int64_t k = 0; k < r->npairs; ++k) {
        if (r->pairs[k].len > cap) {
            free(buf);
            cap = r->pairs[k].len;
            buf = malloc(cap);
            if (!buf) {
                st = oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory replaying the journal's pairs");
                goto cleanup;
            }
        }
        OC_CHECK_GOTO(ctx, st, oc_journal_read(ctx, r->journal, r->pairs[k].offset, buf, r->pairs[k].len), cleanup);
        int64_t count;
        memcpy(&count, buf, 8);
        /* rows and cols: 8-byte aligned in buf (malloc, offsets 8 + multiples of 8) */
        if (r->emit)
            OC_CHECK_GOTO(ctx, st,
                          r->emit(ctx, r->emit_user, (const int64_t *)(buf + 8), (const int64_t *)(buf + 8 + count * 8),
                                  buf + 8 + count * 16, count),
                          cleanup);
    }
    oc_select_pairs_resume(job->select, r->blocks_done, r->pairs_done);
cleanup:
    r->replaying = 0;
    free(buf);
    r->units = r->blocks_done;
    return st;
}

static oc_status resume_restore(oc_context *ctx, oc_resume *r, const oc_gram_job *job, int64_t tile);

oc_status oc_resume_begin(oc_context *ctx, oc_resume *r, const oc_gram_job *job, int64_t tile)
{
    if (r->done)
        return oc_fail(ctx, OC_ERR_INTERNAL, "%s: the journal's work was restored twice", oc_journal_name(r->journal));
    OC_CHECK(ctx, resume_restore(ctx, r, job, tile));
    if (r->kind == KIND_PAIRS) return OC_OK;
    /* The tiles to skip stay those of the earlier runs while checkpoints, on other threads
     * too, add this run's to done. */
    const size_t bytes = (size_t)(r->tiles_i * r->tiles_j + 7) / 8;
    r->earlier = malloc(bytes ? bytes : 1);
    if (!r->earlier) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory for the bitmap of the tiles done");
    memcpy(r->earlier, r->done, bytes);
    return OC_OK;
}

/* The plan recorded (a new job), or what the journal holds restored. */
static oc_status resume_restore(oc_context *ctx, oc_resume *r, const oc_gram_job *job, int64_t tile)
{
    if (r->tile && r->tile != tile)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: the journal counts tiles of %lld rows, which this backend cannot use "
                       "(its plan has %lld): resume with the backend that started the job",
                       oc_journal_name(r->journal), (long long)r->tile, (long long)tile);
    const int fresh = r->tile == 0;
    r->tile = tile;
    r->tiles_i = (job->n + tile - 1) / tile;
    r->tiles_j = (job->p + tile - 1) / tile;
    const int64_t ntiles = r->tiles_i * r->tiles_j;
    r->done = calloc((size_t)(ntiles + 7) / 8, 1);
    if (!r->done)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory for the bitmap of %lld tiles", (long long)ntiles);
    if (fresh) {
        OC_CHECK(ctx, oc_journal_append(ctx, r->journal, REC_PLAN, (uint64_t)tile, NULL, 0));
        return oc_journal_flush(ctx, r->journal);
    }
    if (r->kind == KIND_DENSE) {
        /* A tile counts as done only if its bytes in the file are the ones on record. */
        for (int64_t k = 0; k < r->nrecorded; ++k) {
            const int64_t idx = r->recorded[k].index;
            if (idx < 0 || idx >= ntiles || bit_get(r->done, idx)) continue;
            if (dense_tile_crc(job, tile, idx / r->tiles_j, idx % r->tiles_j) == r->recorded[k].crc) {
                bit_set(r->done, idx);
                r->units++;
            }
        }
        return OC_OK;
    }
    if (r->kind == KIND_TOPK) {
        if (oc_resume_snapshot_load(r->snap_path, r->job_crc, tile, ntiles, r->done, job))
            for (int64_t k = 0; k < ntiles; ++k) r->units += bit_get(r->done, k);
        return OC_OK;
    }
    return replay_pairs(ctx, r, job);
}

int oc_resume_skip(const oc_resume *r, int64_t I, int64_t J)
{
    if (r->kind == KIND_PAIRS) return I < r->blocks_done;
    return bit_get(r->earlier, I * r->tiles_j + J);
}

void oc_resume_tile_done(oc_resume *r, const oc_gram_job *job, int64_t I, int64_t J)
{
    if (r->kind == KIND_PAIRS) return;
    tile_crc t = {I * r->tiles_j + J, r->kind == KIND_DENSE ? dense_tile_crc(job, r->tile, I, J) : 0};
    pthread_mutex_lock(&r->lock);
    if (r->npending == r->pending_cap) {
        int64_t cap = r->pending_cap ? 2 * r->pending_cap : 256;
        tile_crc *p = realloc(r->pending, (size_t)cap * sizeof *p);
        if (!p) { /* not recorded: the tile is only computed again by a resumed run */
            pthread_mutex_unlock(&r->lock);
            return;
        }
        r->pending = p;
        r->pending_cap = cap;
    }
    r->pending[r->npending++] = t;
    pthread_mutex_unlock(&r->lock);
}

/* Top-k: the snapshot of the job's lists and the tiles on record, then its record. */
static oc_status record_topk(oc_context *ctx, oc_resume *r, const oc_gram_job *job)
{
    uint32_t crc;
    OC_CHECK(ctx, oc_resume_snapshot_write(ctx, r->snap_path, r->job_crc, r->tile, r->tiles_i * r->tiles_j, r->done,
                                           job, &crc));
    return oc_journal_append(ctx, r->journal, REC_TOPK, (uint64_t)r->units, &crc, 4);
}

/* Before a checkpoint records anything: the inputs as they were opened (gram_job.h). The
 * tiles finished since one changed may hold rows read after the change: none of those goes
 * on record, nor any later, and the job fails with the change. The tiles on record stay good:
 * a checkpoint comes after every read of the tiles it records, and a file's size that differs
 * then differed when a tile read the changed rows. */
static oc_status inputs_unchanged(oc_context *ctx, oc_resume *r, const oc_gram_job *job, int force)
{
    /* A forced checkpoint follows a failure: a change it finds keeps that failure's message. */
    const oc_status st =
        r->inputs_changed ? OC_ERR_INPUT : oc_gram_inputs_unchanged(force ? NULL : ctx, job->a, job->b);
    if (st != OC_OK) {
        r->inputs_changed = 1;
        r->npending = 0;
    }
    return st;
}

/* The end of a checkpoint: the journal flushed; the tests' kill point (units before it had
 * `before`). */
static oc_status record_flush(oc_context *ctx, oc_resume *r, int64_t before)
{
    OC_CHECK(ctx, oc_journal_flush(ctx, r->journal));
    r->units_this_run += r->units - before;
    if (r->kill_after > 0 && r->units_this_run > 0 && r->units >= r->kill_after) raise(SIGKILL);
    return OC_OK;
}

oc_status oc_resume_checkpoint(oc_context *ctx, oc_resume *r, const oc_gram_job *job, int force)
{
    const double now = oc_now();
    if (!force && now - r->last < r->interval &&
        !(r->kind == KIND_PAIRS && oc_journal_pending(r->journal) >= PAIRS_FLUSH_BYTES))
        return OC_OK;
    r->last = now;
    const int64_t before = r->units;
    if (r->kind == KIND_PAIRS) {
        const int64_t blocks = oc_select_pairs_blocks_delivered(job->select);
        const int64_t pairs = oc_select_pairs_count(job->select);
        if (blocks == r->blocks_done) return OC_OK;
        OC_CHECK(ctx, inputs_unchanged(ctx, r, job, force));
        OC_CHECK(ctx, oc_journal_append(ctx, r->journal, REC_BLOCKS, (uint64_t)blocks, &pairs, 8));
        r->units = r->blocks_done = blocks;
    } else {
        if (r->npending == 0) return OC_OK;
        OC_CHECK(ctx, inputs_unchanged(ctx, r, job, force));
        /* The tiles' bytes reach the disk before the records that vouch for them. */
        if (r->kind == KIND_DENSE && r->dense_writer) OC_CHECK(ctx, oc_npy_out_sync(ctx, r->dense_writer));
        for (int64_t k = 0; k < r->npending; ++k) {
            bit_set(r->done, r->pending[k].index);
            if (r->kind == KIND_DENSE)
                OC_CHECK(ctx, oc_journal_append(ctx, r->journal, REC_TILE, (uint64_t)r->pending[k].index,
                                                &r->pending[k].crc, 4));
        }
        r->units += r->npending;
        r->npending = 0;
        if (r->kind == KIND_TOPK) OC_CHECK(ctx, record_topk(ctx, r, job));
    }
    return record_flush(ctx, r, before);
}

/* ---------------------------------------------------------------- lists kept apart */
#define FETCH_BYTES (16 << 20) /* rows of a part's lists fetched at a time */

/* Rows [0, n) of part lists fetched in blocks and merged into the job's. Under r->lock. */
static oc_status merge_part(oc_context *ctx, const oc_gram_job *job, oc_resume_fetch_fn fetch, void *user)
{
    oc_select *s = job->select;
    const int64_t kept = oc_select_kept(s), n = job->n;
    if (kept <= 0 || n <= 0) return OC_OK;
    int64_t block = FETCH_BYTES / (kept * 8);
    if (block < 1) block = 1;
    if (block > n) block = n;
    uint64_t *keys = malloc((size_t)(block * kept) * 8);
    if (!keys) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory fetching %lld top-k lists", (long long)block);
    const int threads = oc_threads_resolve(job->opts->threads);
    oc_status st = OC_OK;
    for (int64_t row0 = 0; row0 < n; row0 += block) {
        const int64_t rows = n - row0 < block ? n - row0 : block;
        OC_CHECK_GOTO(ctx, st, fetch(user, row0, rows, keys), cleanup);
        const uint64_t *lists[1] = {keys};
        OC_CHECK_GOTO(ctx, st, oc_select_topk_merge_rows(ctx, s, lists, 1, row0, rows, threads), cleanup);
    }
cleanup:
    free(keys);
    return st;
}

oc_status oc_resume_topk_lists(oc_context *ctx, oc_resume *r, const oc_gram_job *job, int part, const int64_t *tiles,
                               int64_t count, int force, oc_resume_fetch_fn fetch, void *user)
{
    if (r->kind != KIND_TOPK || part < 0 || part >= OC_MAX_LOGICAL_DEVICES || !r->done)
        return oc_fail(ctx, OC_ERR_INTERNAL, "resume: top-k lists of part %d reported out of place", part);
    oc_status st = OC_OK;
    pthread_mutex_lock(&r->lock);
    resume_part *p = &r->parts[part];
    if (p->count + count > p->cap) {
        int64_t cap = p->cap ? 2 * p->cap : 256;
        while (cap < p->count + count) cap *= 2;
        int64_t *grown = realloc(p->tiles, (size_t)cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&r->lock);
            return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory for the list of %lld finished tiles", (long long)cap);
        }
        p->tiles = grown;
        p->cap = cap;
    }
    for (int64_t k = 0; k < count; ++k) p->tiles[p->count++] = tiles[2 * k] * r->tiles_j + tiles[2 * k + 1];
    const double now = oc_now();
    if (p->count == 0 || (!force && now - p->last < r->interval)) {
        pthread_mutex_unlock(&r->lock);
        return OC_OK;
    }
    p->last = now;
    /* The part's lists hold exactly its tiles so far (the caller's promise): merged into the
     * job's, which hold the tiles on record, they make the lists of both sets of tiles. */
    const int64_t before = r->units;
    st = inputs_unchanged(ctx, r, job, force);
    if (st != OC_OK) {
        p->count = 0;
        oc_trace_at(ctx, st, __FILE__, __LINE__);
        goto cleanup;
    }
    OC_CHECK_GOTO(ctx, st, merge_part(ctx, job, fetch, user), cleanup);
    for (int64_t k = 0; k < p->count; ++k)
        if (!bit_get(r->done, p->tiles[k])) {
            bit_set(r->done, p->tiles[k]);
            r->units++;
        }
    p->count = 0;
    OC_CHECK_GOTO(ctx, st, record_topk(ctx, r, job), cleanup);
    OC_CHECK_GOTO(ctx, st, record_flush(ctx, r, before), cleanup);
cleanup:
    pthread_mutex_unlock(&r->lock);
    return st;
}
