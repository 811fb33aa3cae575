/*
 * gram_resume.c - resumable Gram jobs (gram_resume.h): the job's identity in the journal's
 * header, what the records of an earlier run restore, and the checkpoints.
 *
 * What a checkpoint makes durable, in this order (so a record never vouches for bytes that
 * are not on the disk yet):
 *   dense     msync of the output's temporary file, then one TILE record per finished tile
 *   top-k     the snapshot (lists and the bitmap of tiles in them) to a temporary name,
 *             fsync, rename over PATH.outcore-journal.topk, then its TOPK record
 *   threshold the PAIRS records (appended as the pairs went to the output), then BLOCKS
 * and then the journal is fdatasync'ed. Checkpoints come where the backend has no tile in
 * flight, at most every OUTCORE_RESUME_INTERVAL seconds (default 2): a kill loses the work
 * since the last one. OUTCORE_RESUME_KILL_AFTER=k kills the process (SIGKILL) right after
 * the first checkpoint that brings the units on record (tiles; threshold: row blocks) to k
 * or more: the tests' crash at a chosen point.
 */
#include "exec/gram_resume.h"

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
#include "core/text_buf.h"
#include "core/threads.h"
#include "exec/select.h"
#include "io/crc32.h"
#include "io/io.h"
#include "io/journal.h"
#include "io/sysio.h"

enum { REC_TEMP = 1, REC_PLAN = 2, REC_TILE = 3, REC_TOPK = 4, REC_PAIRS = 5, REC_BLOCKS = 6 };
enum { KIND_DENSE, KIND_TOPK, KIND_PAIRS };

#define SNAPSHOT_MAGIC 0x4B504F544A434F00ull /* "\0OCJTOPK" */
#define PAIRS_FLUSH_BYTES (64 << 20)         /* buffered pairs records that force a checkpoint */
#define INTERVAL_DEFAULT 2.0                 /* seconds between checkpoints */

typedef struct tile_crc {
    int64_t index;
    uint32_t crc;
} tile_crc;

typedef struct pairs_rec {
    int64_t offset;
    uint32_t len;
} pairs_rec;

struct oc_resume {
    oc_journal *journal;
    char *snap_path;
    uint32_t job_crc;
    int kind;
    size_t elem;
    /* what the journal held when this run started */
    char **temps;
    int ntemps;
    int64_t tile;
    tile_crc *recorded;          /* dense: TILE records */
    int64_t nrecorded;
    pairs_rec *pairs;            /* threshold: PAIRS records up to the last BLOCKS */
    int64_t npairs, pairs_cap, pairs_committed;
    int64_t blocks_done, pairs_done;
    int64_t uncommitted_off;     /* payload offset of the first PAIRS record after the last BLOCKS */
    /* this run */
    int64_t tiles_i, tiles_j;
    unsigned char *done;         /* bitmap of tiles on record (dense, top-k) */
    pthread_mutex_t lock;        /* guards pending */
    tile_crc *pending;           /* finished since the last checkpoint */
    int64_t npending, pending_cap;
    int64_t units, units_this_run, kill_after;
    double interval, last;
    void *dense_writer;          /* oc_npy_out of the dense output */
    oc_resume_emit_fn emit;
    void *emit_user;
    int replaying;
};

/* ---------------------------------------------------------------- the job's identity */
/* What identifies an input: its shape, the CRC of sampled rows' bits (any matrix, also one
 * from memory), and for one read from a file its path, size, modification time, and the
 * CRCs of its first 4 KiB (the .npy or .mtx header) and of 16 blocks spread over it. */
static oc_status describe_input(oc_context *ctx, oc_text *t, const char *tag, const oc_matrix *m)
{
    oc_text_printf(t, "%s.shape %lld %lld\n", tag, (long long)m->rows, (long long)m->cols);
    struct stat sb;
    if (m->has_source && stat(m->name, &sb) == 0 && S_ISREG(sb.st_mode) && (uint64_t)sb.st_dev == m->source_dev &&
        (uint64_t)sb.st_ino == m->source_ino) {
        oc_text_printf(t, "%s.path %s\n%s.size %lld\n%s.mtime %lld.%09ld\n", tag, m->name, tag, (long long)sb.st_size,
                       tag, (long long)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec);
        int fd = open(m->name, O_RDONLY | O_CLOEXEC);
        if (fd < 0) return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot read it again: %s", m->name, strerror(errno));
        char block[4096];
        ssize_t got = pread(fd, block, sizeof block, 0);
        uint32_t head = oc_crc32_update(0, block, got > 0 ? (size_t)got : 0), sample = 0;
        for (int k = 0; k < 16 && sb.st_size > 0; ++k) {
            got = pread(fd, block, sizeof block, (off_t)((sb.st_size - 1) / 16 * k));
            sample = oc_crc32_update(sample, block, got > 0 ? (size_t)got : 0);
        }
        close(fd);
        oc_text_printf(t, "%s.header_crc %08x\n%s.blocks_crc %08x\n", tag, (unsigned)head, tag, (unsigned)sample);
    }
    uint64_t *row = aligned_alloc(64, (size_t)m->words_per_row * 8);
    if (!row) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate a row of %s", m->name);
    uint32_t crc = 0;
    const int64_t samples = m->rows < 64 ? m->rows : 64;
    oc_status st = OC_OK;
    for (int64_t k = 0; k < samples && st == OC_OK; ++k) {
        st = oc_matrix_load_rows(ctx, m, samples > 1 ? k * (m->rows - 1) / (samples - 1) : 0, 1, row);
        crc = oc_crc32_update(crc, row, (size_t)m->words_per_row * 8);
    }
    free(row);
    oc_text_printf(t, "%s.rows_crc %08x\n", tag, (unsigned)crc);
    return st;
}

/* The header: everything that changes the output's bytes. Not the backend, threads, tile or
 * budgets, which do not (a job may resume on another machine or backend). */
static oc_status describe_job(oc_context *ctx, const oc_gram_job *job, const oc_output *out, int kind, char **text)
{
    const oc_gram_options *o = job->opts;
    char ext[16];
    oc_text t = {0};
    oc_text_printf(&t, "output %s\nformat %s\nproduct %s\nmetric %s\ndtype %s\n", out->path,
                   oc_path_extension(out->path, ext, sizeof ext), job->symmetric ? "A.At" : "A.Bt",
                   oc_metric_name(job->metric), oc_dtype_name(job->dtype));
    if (kind == KIND_TOPK) oc_text_printf(&t, "topk %lld\n", (long long)o->topk);
    else if (kind == KIND_PAIRS) oc_text_printf(&t, "threshold %.17g\n", o->threshold);
    else oc_text_printf(&t, "dense\n");
    oc_status st = describe_input(ctx, &t, "a", job->a);
    if (st == OC_OK && !job->symmetric) st = describe_input(ctx, &t, "b", job->b);
    if (st != OC_OK) {
        free(t.data);
        return st;
    }
    return oc_text_finish(ctx, &t, text);
}

/* ---------------------------------------------------------------- reading the journal */
static int on_record(void *user, uint32_t type, uint64_t unit, const void *payload, uint32_t len, int64_t offset)
{
    oc_resume *r = user;
    switch (type) {
    case REC_TEMP: {
        char **temps = realloc(r->temps, (size_t)(r->ntemps + 1) * sizeof *temps);
        if (!temps) return 1;
        r->temps = temps;
        r->temps[r->ntemps] = strndup(payload, len);
        if (r->temps[r->ntemps]) r->ntemps++;
        return 0;
    }
    case REC_PLAN:
        if (!r->tile) r->tile = (int64_t)unit;
        return 0;
    case REC_TILE: {
        if (len != 4) return 1;
        tile_crc *rec = realloc(r->recorded, (size_t)(r->nrecorded + 1) * sizeof *rec);
        if (!rec) return 1;
        r->recorded = rec;
        rec[r->nrecorded].index = (int64_t)unit;
        memcpy(&rec[r->nrecorded++].crc, payload, 4);
        return 0;
    }
    case REC_TOPK: return 0; /* the snapshot file says it all; the record is the trail */
    case REC_PAIRS:
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
    case REC_BLOCKS:
        if (len != 8) return 1;
        r->blocks_done = (int64_t)unit;
        memcpy(&r->pairs_done, payload, 8);
        r->pairs_committed = r->npairs;
        r->uncommitted_off = -1;
        return 0;
    default: return 1;
    }
}

/* ---------------------------------------------------------------- start and end */
oc_status oc_resume_start(oc_context *ctx, const oc_gram_job *job, const oc_output *out, oc_resume **out_r)
{
    *out_r = NULL;
    if (out->kind != OC_OUTPUT_FILE || !out->path) {
        if (job->opts->resume)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "resume: only a job that writes a file can be resumed");
        return OC_OK;
    }
    char *jpath = oc_journal_path_for(out->path);
    if (!jpath) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    int exists = access(jpath, F_OK) == 0;
    if (!job->opts->resume) {
        oc_status st = exists ? oc_fail(ctx, OC_ERR_INPUT, "%s: an interrupted job left this journal: run the same "
                                        "command with --resume (Python: resume=True) to continue it, or remove it "
                                        "(and %s.tmp-*) to start over", jpath, out->path)
                              : OC_OK;
        free(jpath);
        return st;
    }
    oc_resume *r = calloc(1, sizeof *r);
    char *text = NULL;
    oc_status st = OC_OK;
    if (!r) {
        free(jpath);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    }
    pthread_mutex_init(&r->lock, NULL);
    r->kind = job->opts->topk > 0 ? KIND_TOPK : job->opts->use_threshold ? KIND_PAIRS : KIND_DENSE;
    r->elem = oc_dtype_size(job->dtype);
    r->uncommitted_off = -1;
    const char *iv = getenv("OUTCORE_RESUME_INTERVAL"), *kill_after = getenv("OUTCORE_RESUME_KILL_AFTER");
    r->interval = iv && *iv ? strtod(iv, NULL) : INTERVAL_DEFAULT;
    r->kill_after = kill_after && *kill_after ? strtoll(kill_after, NULL, 10) : 0;
    r->last = oc_now();
    size_t jl = strlen(jpath);
    r->snap_path = malloc(jl + sizeof ".topk");
    if (!r->snap_path) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
        goto cleanup;
    }
    snprintf(r->snap_path, jl + sizeof ".topk", "%s.topk", jpath);
    OC_CHECK_GOTO(describe_job(ctx, job, out, r->kind, &text));
    r->job_crc = oc_crc32_update(0, text, strlen(text));
    if (exists) {
        OC_CHECK_GOTO(oc_journal_open(ctx, jpath, text, on_record, r, &r->journal));
        /* PAIRS after the last BLOCKS went to an output that died with its run. */
        if (r->uncommitted_off >= 0) OC_CHECK_GOTO(oc_journal_truncate_before(ctx, r->journal, r->uncommitted_off));
        r->npairs = r->pairs_committed;
    } else {
        unlink(r->snap_path); /* an earlier job's, whose journal is gone */
        OC_CHECK_GOTO(oc_journal_create(ctx, jpath, text, &r->journal));
    }
    free(text);
    free(jpath);
    *out_r = r;
    return OC_OK;
cleanup:
    free(text);
    free(jpath);
    oc_resume_close(r);
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
    free(r->pending);
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
    OC_CHECK(oc_journal_append(ctx, r->journal, REC_TEMP, 0, temp_path, (uint32_t)strlen(temp_path)));
    return oc_journal_flush(ctx, r->journal);
}

void oc_resume_set_emit(oc_resume *r, oc_resume_emit_fn emit, void *user)
{
    r->emit = emit;
    r->emit_user = user;
}

oc_status oc_resume_pairs(oc_context *ctx, oc_resume *r, const int64_t *rows, const int64_t *cols,
                          const void *values, int64_t count)
{
    if (r->replaying || count == 0) return OC_OK;
    size_t len = 8 + (size_t)count * (16 + r->elem);
    unsigned char *buf = malloc(len);
    if (!buf) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory journalling %lld pairs", (long long)count);
    memcpy(buf, &count, 8);
    memcpy(buf + 8, rows, (size_t)count * 8);
    memcpy(buf + 8 + (size_t)count * 8, cols, (size_t)count * 8);
    memcpy(buf + 8 + (size_t)count * 16, values, (size_t)count * r->elem);
    oc_status st = oc_journal_append(ctx, r->journal, REC_PAIRS, 0, buf, (uint32_t)len);
    free(buf);
    return st;
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
        crc = oc_crc32_update(crc, s->base + ((i0 + r) * s->ld + j0) * (int64_t)s->elem_size, (size_t)cols * s->elem_size);
    if (s->symmetric && I != J)
        for (int64_t c = 0; c < cols; ++c)
            crc = oc_crc32_update(crc, s->base + ((j0 + c) * s->ld + i0) * (int64_t)s->elem_size,
                                  (size_t)rows * s->elem_size);
    return crc;
}

/* The snapshot of the top-k lists: header, bitmap of the tiles in them, keys, CRC. */
typedef struct snapshot_head {
    uint64_t magic;
    uint32_t job_crc, pad;
    int64_t tiles, n, kept, tile;
} snapshot_head;

static int load_snapshot(oc_resume *r, const oc_gram_job *job, int64_t ntiles)
{
    oc_select *s = job->select;
    const int64_t kept = oc_select_kept(s), bitmap = (ntiles + 7) / 8;
    int fd = open(r->snap_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    snapshot_head h;
    int ok = pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h && h.magic == SNAPSHOT_MAGIC && h.job_crc == r->job_crc &&
             h.tiles == ntiles && h.n == job->n && h.kept == kept && h.tile == r->tile;
    unsigned char *bits = ok ? malloc((size_t)bitmap) : NULL;
    uint64_t *keys = oc_select_topk_keys(s);
    size_t key_bytes = (size_t)(job->n * kept) * 8;
    uint32_t crc = 0, want = 0;
    if (bits && pread(fd, bits, (size_t)bitmap, sizeof h) == (ssize_t)bitmap &&
        (key_bytes == 0 || pread(fd, keys, key_bytes, (off_t)(sizeof h + (size_t)bitmap)) == (ssize_t)key_bytes) &&
        pread(fd, &want, 4, (off_t)(sizeof h + (size_t)bitmap + key_bytes)) == 4) {
        crc = oc_crc32_update(oc_crc32_update(oc_crc32_update(0, &h, sizeof h), bits, (size_t)bitmap), keys, key_bytes);
        ok = crc == want;
    } else {
        ok = 0;
    }
    close(fd);
    if (ok) {
        memcpy(r->done, bits, (size_t)bitmap);
        oc_select_topk_restored(s);
        for (int64_t k = 0; k < ntiles; ++k) r->units += bit_get(bits, k);
    } else if (key_bytes) {
        memset(keys, 0, key_bytes); /* a damaged snapshot: start the lists again */
    }
    free(bits);
    return ok;
}

static oc_status replay_pairs(oc_context *ctx, oc_resume *r, const oc_gram_job *job)
{
    oc_status st = OC_OK;
    unsigned char *buf = NULL;
    size_t cap = 0;
    r->replaying = 1;
    for (int64_t k = 0; k < r->npairs && st == OC_OK; ++k) {
        if (r->pairs[k].len > cap) {
            free(buf);
            cap = r->pairs[k].len;
            buf = malloc(cap);
            if (!buf) {
                st = oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory replaying the journal's pairs");
                break;
            }
        }
        st = oc_journal_read(ctx, r->journal, r->pairs[k].offset, buf, r->pairs[k].len);
        int64_t count;
        if (st == OC_OK) memcpy(&count, buf, 8);
        /* rows and cols: 8-byte aligned in buf (malloc, offsets 8 + multiples of 8) */
        if (st == OC_OK && r->emit)
            st = r->emit(ctx, r->emit_user, (const int64_t *)(buf + 8), (const int64_t *)(buf + 8 + count * 8),
                         buf + 8 + count * 16, count);
    }
    r->replaying = 0;
    free(buf);
    if (st == OC_OK) oc_select_pairs_resume(job->select, r->blocks_done, r->pairs_done);
    r->units = r->blocks_done;
    return st;
}

oc_status oc_resume_begin(oc_context *ctx, oc_resume *r, const oc_gram_job *job, int64_t tile)
{
    if (r->tile && r->tile != tile)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: the journal counts tiles of %lld rows, which this backend cannot use "
                       "(its plan has %lld): resume with the backend that started the job", oc_journal_name(r->journal),
                       (long long)r->tile, (long long)tile);
    const int fresh = r->tile == 0;
    r->tile = tile;
    r->tiles_i = (job->n + tile - 1) / tile;
    r->tiles_j = (job->p + tile - 1) / tile;
    const int64_t ntiles = r->tiles_i * r->tiles_j;
    r->done = calloc((size_t)(ntiles + 7) / 8, 1);
    if (!r->done) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory for the bitmap of %lld tiles", (long long)ntiles);
    if (fresh) {
        OC_CHECK(oc_journal_append(ctx, r->journal, REC_PLAN, (uint64_t)tile, NULL, 0));
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
        load_snapshot(r, job, ntiles);
        return OC_OK;
    }
    return replay_pairs(ctx, r, job);
}

int oc_resume_skip(const oc_resume *r, int64_t I, int64_t J)
{
    if (r->kind == KIND_PAIRS) return I < r->blocks_done;
    return bit_get(r->done, I * r->tiles_j + J);
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

static oc_status write_snapshot(oc_context *ctx, oc_resume *r, const oc_gram_job *job)
{
    const int64_t ntiles = r->tiles_i * r->tiles_j, bitmap = (ntiles + 7) / 8, kept = oc_select_kept(job->select);
    snapshot_head h = {.magic = SNAPSHOT_MAGIC, .job_crc = r->job_crc, .tiles = ntiles, .n = job->n, .kept = kept,
                       .tile = r->tile};
    const uint64_t *keys = oc_select_topk_keys(job->select);
    const size_t key_bytes = (size_t)(job->n * kept) * 8;
    uint32_t crc = oc_crc32_update(oc_crc32_update(oc_crc32_update(0, &h, sizeof h), r->done, (size_t)bitmap), keys,
                                   key_bytes);
    size_t len = strlen(r->snap_path);
    char *tmp = malloc(len + 5);
    if (!tmp) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    snprintf(tmp, len + 5, "%s.new", r->snap_path);
    int fd = oc_sys_open(ctx, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    int err = fd < 0 ? errno : 0;
    if (!err) err = oc_sys_write_all(ctx, fd, &h, sizeof h, 0);
    if (!err) err = oc_sys_write_all(ctx, fd, r->done, (size_t)bitmap, (int64_t)sizeof h);
    if (!err && key_bytes) err = oc_sys_write_all(ctx, fd, keys, key_bytes, (int64_t)(sizeof h + (size_t)bitmap));
    if (!err) err = oc_sys_write_all(ctx, fd, &crc, 4, (int64_t)(sizeof h + (size_t)bitmap + key_bytes));
    if (!err && oc_sys_fsync(ctx, fd) != 0) err = errno;
    if (fd >= 0) close(fd);
    if (!err && oc_sys_rename(ctx, tmp, r->snap_path) != 0) err = errno;
    if (err) unlink(tmp);
    free(tmp);
    if (err) return oc_io_fail(ctx, "writing the top-k snapshot", r->snap_path, err, -1, -1, -1);
    return oc_journal_append(ctx, r->journal, REC_TOPK, (uint64_t)r->units, &crc, 4);
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
        const int64_t blocks = oc_select_pairs_blocks_delivered(job->select), pairs = oc_select_pairs_count(job->select);
        if (blocks == r->blocks_done) return OC_OK;
        OC_CHECK(oc_journal_append(ctx, r->journal, REC_BLOCKS, (uint64_t)blocks, &pairs, 8));
        r->units = r->blocks_done = blocks;
    } else {
        if (r->npending == 0) return OC_OK;
        /* The tiles' bytes reach the disk before the records that vouch for them. */
        if (r->kind == KIND_DENSE && r->dense_writer) OC_CHECK(oc_npy_out_sync(ctx, r->dense_writer));
        for (int64_t k = 0; k < r->npending; ++k) {
            bit_set(r->done, r->pending[k].index);
            if (r->kind == KIND_DENSE)
                OC_CHECK(oc_journal_append(ctx, r->journal, REC_TILE, (uint64_t)r->pending[k].index,
                                           &r->pending[k].crc, 4));
        }
        r->units += r->npending;
        r->npending = 0;
        if (r->kind == KIND_TOPK) OC_CHECK(write_snapshot(ctx, r, job));
    }
    OC_CHECK(oc_journal_flush(ctx, r->journal));
    r->units_this_run += r->units - before;
    if (r->kill_after > 0 && r->units_this_run > 0 && r->units >= r->kill_after) raise(SIGKILL);
    return OC_OK;
}
