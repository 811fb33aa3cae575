/*
 * matmul_resume.c - resumable products (matmul_resume.h): the journal's header (what
 * identifies the job), the plan on record, the tiles finished and the checkpoints.
 */
#include "matmul/matmul_resume.h"

#include <inttypes.h>
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
#include "io/crc32.h"
#include "io/journal.h"
#include "io/journal_start.h"
#include "matmul/matmul_dtype.h"
#include "matmul/matmul_io.h"

enum { REC_TEMP = 1, REC_PLAN = 2, REC_TILE = 3 };

typedef oc_journal_tile tile_crc;

/* A tile some of whose elements are stored: how many. */
typedef struct in_flight {
    int64_t index, cells;
} in_flight;

struct oc_mm_resume {
    oc_journal *journal;
    const char *out_path;        /* the caller's string, for the job's life */
    char *options;               /* the options that choose the plan: one line */
    const oc_mm_source *read[2]; /* the sources the job reads, checked at each checkpoint */
    /* what the journal held when this run started */
    char *temp;
    char *plan; /* the PLAN record: plan line, options line */
    tile_crc *recorded;
    int64_t nrecorded;
    /* the output */
    oc_npy_out *writer;
    unsigned char *data;
    int64_t ld;
    size_t elem;
    /* this run */
    int64_t tm, tn, tiles_m, tiles_n;
    int symmetric;
    unsigned char *done;    /* tiles on record */
    unsigned char *earlier; /* the tiles on record when the plan was checked: the ones skipped */
    pthread_mutex_t lock;   /* guards what follows */
    in_flight *flight;
    int64_t nflight, flight_cap;
    tile_crc *pending; /* finished since the last checkpoint */
    int64_t npending, pending_cap;
    int64_t units, units_this_run, kill_after;
    double interval, last;
    int resumed;
    int failed; /* a checkpoint failed: later ones are not tried */
};

/* ---------------------------------------------------------------- the job's header */
/* An operand: its shape, dtype and transpose; a file's path, size, time and CRC (io/journal.h:
 * the path, one spelling of the file, is not compared), memory's CRC of all its elements. */
static oc_status describe_operand(oc_context *ctx, oc_text *t, const char *tag, const oc_mm_source *s, int transpose)
{
    oc_text_printf(t, "%s.shape %" PRId64 " %" PRId64 "\n%s.dtype %s\n%s.transpose %d\n", tag, s->rows, s->cols, tag,
                   oc_matmul_dtype_name(s->dtype), tag, transpose);
    struct stat sb;
    if (s->dev || s->ino) {
        if (stat(s->name, &sb) != 0 || (uint64_t)sb.st_dev != s->dev || (uint64_t)sb.st_ino != s->ino)
            return oc_fail(ctx, OC_ERR_INPUT, "%s: the file was replaced while the job started", s->name);
        return oc_journal_describe_file(ctx, t, tag, s->name, &sb);
    }
    /* GPU memory is not read on the host; a later process could not give the same memory
     * anyway, so nothing identifies it across runs. */
    if (s->gpu_device >= 0)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: resume: an operand in GPU memory cannot be identified by a later run; give it as a .npy "
                       "path or host memory",
                       s->name);
    const size_t elem = oc_matmul_dtype_size(s->dtype);
    uint32_t crc = 0;
    for (int64_t r = 0; r < s->rows && s->data; r++)
        crc = oc_crc32_update(crc, s->data + (size_t)(r * s->ld) * elem, (size_t)s->cols * elem);
    oc_text_printf(t, "%s.rows_crc %08x\n", tag, (unsigned)crc);
    return OC_OK;
}

/* Everything that changes the result's bits, but the plan (a PLAN record). */
static oc_status describe_job(oc_context *ctx, const oc_matmul_job *job, const oc_mm_resume_job *id,
                              const char *out_path, char **text)
{
    oc_text t = {0};
    oc_text_printf(
        &t, "output %s\ncommand matmul\nproduct %s\nshape %" PRId64 " %" PRId64 " %" PRId64 "\ndtype %s\ntf32 %d\n",
        out_path, job->symmetric ? "A.At" : "A.B", job->m, job->n, job->k, oc_matmul_dtype_name(id->result), job->tf32);
    oc_status st;
    OC_CHECK_GOTO(ctx, st, describe_operand(ctx, &t, "a", id->a, id->transpose_a), cleanup);
    if (id->b) OC_CHECK_GOTO(ctx, st, describe_operand(ctx, &t, "b", id->b, id->transpose_b), cleanup);
    return oc_text_finish(ctx, &t, text);
cleanup:
    free(t.data);
    return st;
}

/* The options that choose the plan, one line: what a refusal names when the plan changed. */
static char *describe_options(const oc_matmul_options *o)
{
    char line[512];
    oc_snprintf(line, sizeof line,
                "--backend %s --host-mem %" PRId64 " --gpu-mem %" PRId64 " --gpu-mem-fraction %g --tile %" PRId64
                " --devices %s --device %d --threads %d",
                oc_backend_name(o->backend), o->host_mem_bytes, o->gpu_mem_bytes, o->gpu_mem_fraction, o->tile,
                o->devices && *o->devices ? o->devices : "-", o->device, oc_threads_resolve(o->threads));
    return strdup(line);
}

/* ---------------------------------------------------------------- reading the journal */
static int on_record(void *user, uint32_t type, uint64_t unit, const void *payload, uint32_t len, int64_t offset)
{
    (void)offset;
    oc_mm_resume *r = user;
    switch (type) {
    case REC_TEMP: {
        /* Only a temporary of this output (PATH.tmp-...) is ever reopened, under this run's
         * spelling of the output's folder: a name elsewhere is damage, or planted, and is
         * ignored. */
        char *temp = oc_journal_temp_of(r->out_path, payload, len);
        if (!temp) return 0;
        free(r->temp);
        r->temp = temp;
        return 0;
    }
    case REC_PLAN:
        if (r->plan || memchr(payload, '\0', len)) return 0;
        r->plan = strndup(payload, len);
        return r->plan == NULL;
    case REC_TILE:
        return oc_journal_tile_add(&r->recorded, &r->nrecorded, unit, payload, len);
    default:
        return 1;
    }
}

/* ---------------------------------------------------------------- start and end */
static void resume_free(oc_mm_resume *r)
{
    oc_journal_close(r->journal);
    free(r->options);
    free(r->temp);
    free(r->plan);
    free(r->recorded);
    free(r->done);
    free(r->earlier);
    free(r->flight);
    free(r->pending);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* The product oc_mm_resume_start starts a journal for (oc_journal_keeper's user), and its
 * record. */
typedef struct resume_starting {
    const oc_matmul_job *job;
    const oc_mm_resume_job *id;
    const oc_matmul_options *opts;
    const char *out_path;
    oc_mm_resume *r;
} resume_starting;

static oc_status start_make(oc_context *ctx, void *user, const char *jpath, double interval, int64_t kill_after)
{
    (void)jpath;
    resume_starting *s = user;
    oc_mm_resume *r = s->r = calloc(1, sizeof *r);
    if (!r) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    pthread_mutex_init(&r->lock, NULL);
    r->interval = interval;
    r->kill_after = kill_after;
    r->last = oc_now();
    r->out_path = s->out_path;
    r->read[0] = s->id->a;
    r->read[1] = s->id->b_read;
    r->options = describe_options(s->opts);
    if (!r->options) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    return OC_OK;
}

static void start_drop(void *user)
{
    resume_starting *s = user;
    if (s->r) resume_free(s->r);
    s->r = NULL;
}

static oc_status start_describe(oc_context *ctx, void *user, char **text)
{
    const resume_starting *s = user;
    return describe_job(ctx, s->job, s->id, s->out_path, text);
}

static int start_record(void *user, uint32_t type, uint64_t unit, const void *payload, uint32_t len, int64_t offset)
{
    return on_record(((resume_starting *)user)->r, type, unit, payload, len, offset);
}

static const char *start_temp(void *user) { return ((resume_starting *)user)->r->temp; }

oc_status oc_mm_resume_start(oc_context *ctx, const oc_matmul_job *job, const oc_mm_resume_job *id,
                             const oc_matmul_options *opts, const oc_matmul_array *c, oc_mm_resume **out)
{
    *out = NULL;
    if (!c->path) {
        if (opts->resume)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "resume: only a product written to a .npy file can be resumed, not one into memory");
        return OC_OK;
    }
    resume_starting s = {job, id, opts, c->path, NULL};
    const oc_journal_keeper k = {.out_path = c->path,
                                 .longest = ".outcore-journal",
                                 .resume = opts->resume,
                                 .user = &s,
                                 .make = start_make,
                                 .drop = start_drop,
                                 .describe = start_describe,
                                 .record = start_record,
                                 .temp = start_temp};
    oc_journal *journal;
    int resumed;
    OC_CHECK(ctx, oc_journal_start(ctx, &k, &journal, &resumed));
    if (!journal) return OC_OK;
    s.r->journal = journal;
    s.r->resumed = resumed;
    *out = s.r;
    return OC_OK;
}

int oc_mm_resume_worth_keeping(const oc_mm_resume *r) { return r && (r->resumed || r->units > 0); }

void oc_mm_resume_finish(oc_mm_resume *r)
{
    if (!r) return;
    unlink(oc_journal_name(r->journal));
    resume_free(r);
}

void oc_mm_resume_close(oc_mm_resume *r)
{
    if (r) resume_free(r);
}

/* ---------------------------------------------------------------- the output */
const char *oc_mm_resume_temp(const oc_mm_resume *r) { return r->temp; }

oc_status oc_mm_resume_record_temp(oc_context *ctx, oc_mm_resume *r, oc_npy_out *writer, unsigned char *data,
                                   int64_t ld, size_t elem)
{
    r->writer = writer;
    r->data = data;
    r->ld = ld;
    r->elem = elem;
    const char *temp = oc_npy_out_temp_path(writer);
    if (r->temp && strcmp(r->temp, temp) == 0) return OC_OK;
    OC_CHECK(ctx, oc_journal_append(ctx, r->journal, REC_TEMP, 0, temp, (uint32_t)strlen(temp)));
    return oc_journal_flush(ctx, r->journal);
}

/* ---------------------------------------------------------------- tiles */
static int bit_get(const unsigned char *bits, int64_t k) { return bits[k >> 3] >> (k & 7) & 1; }
static void bit_set(unsigned char *bits, int64_t k) { bits[k >> 3] |= (unsigned char)(1u << (k & 7)); }

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The CRC of tile `index`'s bytes in the output: its rows, then, for an off-diagonal tile of
 * A·Aᵀ, the rows of its mirror. */
static uint32_t tile_crc_of(const oc_mm_resume *r, const oc_matmul_job *job, int64_t index)
{
    const int64_t i0 = index / r->tiles_n * r->tm, j0 = index % r->tiles_n * r->tn;
    const int64_t rows = min64(r->tm, job->m - i0), cols = min64(r->tn, job->n - j0);
    uint32_t crc = 0;
    for (int64_t i = 0; i < rows; ++i)
        crc = oc_crc32_update(crc, r->data + (size_t)((i0 + i) * r->ld + j0) * r->elem, (size_t)cols * r->elem);
    if (r->symmetric && i0 != j0)
        for (int64_t j = 0; j < cols; ++j)
            crc = oc_crc32_update(crc, r->data + (size_t)((j0 + j) * r->ld + i0) * r->elem, (size_t)rows * r->elem);
    return crc;
}

static oc_mm_resume *job_resume(const oc_matmul_job *job) { return ((const oc_mm_io *)job->io)->resume; }

/* The length of the option at the start of an option line: up to the next " --". */
static size_t option_len(const char *line)
{
    const char *next = strstr(line + 1, " --");
    return next ? (size_t)(next - line) : strlen(line);
}

/* An option of an option line as the user gave it: a value the line records for "not given"
 * (0, or "-" for no device list) as "no --tile", and the share of free memory as the
 * percentage --gpu-mem takes. */
static void option_shown(const char *opt, size_t len, char *out, size_t size)
{
    if (*opt == ' ') ++opt, --len;
    char text[160];
    snprintf(text, sizeof text, "%.*s", (int)len, opt);
    char *value = strchr(text, ' ');
    if (!value) {
        snprintf(out, size, "%s", text);
        return;
    }
    *value++ = '\0';
    const int fraction = strcmp(text, "--gpu-mem-fraction") == 0;
    if (strcmp(value, "0") == 0 || strcmp(value, "-") == 0)
        snprintf(out, size, "no %s", fraction ? "--gpu-mem percentage" : text);
    else if (fraction) oc_snprintf(out, size, "--gpu-mem %g%%", oc_strtod(value, NULL) * 100.0);
    else snprintf(out, size, "%s %s", text, value);
}

/* The first option that differs between two option lines ("--host-mem 1 --tile 0"), into buf. */
static void options_changed(const char *then, const char *now, char *buf, size_t size)
{
    snprintf(buf, size, "under the same options: the backend auto picks, or the devices' free memory, differ");
    while (*then && *now) {
        const size_t tl = option_len(then), nl = option_len(now);
        if (tl != nl || memcmp(then, now, tl) != 0) {
            char was[192], is[192];
            option_shown(then, tl, was, sizeof was);
            option_shown(now, nl, is, sizeof is);
            snprintf(buf, size, "it was planned with %s, this run with %s", was, is);
            return;
        }
        then += tl;
        now += nl;
    }
}

oc_status oc_mm_resume_plan_tiles(const oc_matmul_job *job, int64_t tm, int64_t tn, int64_t kp, const char *how)
{
    oc_context *ctx = job->ctx;
    oc_mm_resume *r = job_resume(job);
    if (tm < 1 || tn < 1 || r->done)
        return oc_fail(ctx, OC_ERR_INTERNAL, "%s: the plan was reported twice or is empty",
                       oc_journal_name(r->journal));
    char line[512];
    snprintf(line, sizeof line, "tiles %" PRId64 " x %" PRId64 ", K panels of %" PRId64 ", %s", tm, tn, kp, how);
    if (r->plan) {
        const size_t pl = strcspn(r->plan, "\n");
        if (pl != strlen(line) || memcmp(r->plan, line, pl) != 0) {
            char why[600];
            options_changed(r->plan[pl] ? r->plan + pl + 1 : "", r->options, why, sizeof why);
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: the journal's job ran on %.*s, this run plans %s (%s): another plan may change the "
                           "result's last bits; resume with the options that started the job, or 'outcore clean "
                           "%s' to start over",
                           oc_journal_name(r->journal), (int)pl, r->plan, line, why, r->out_path);
        }
    } else {
        char payload[1100];
        const int len = snprintf(payload, sizeof payload, "%s\n%s", line, r->options);
        OC_CHECK(ctx, oc_journal_append(ctx, r->journal, REC_PLAN, 0, payload, (uint32_t)len));
        OC_CHECK(ctx, oc_journal_flush(ctx, r->journal));
    }
    r->tm = tm;
    r->tn = tn;
    r->symmetric = job->symmetric;
    r->tiles_m = (job->m + tm - 1) / tm;
    r->tiles_n = (job->n + tn - 1) / tn;
    const size_t bytes = (size_t)(r->tiles_m * r->tiles_n + 7) / 8;
    r->done = calloc(bytes ? bytes : 1, 1);
    r->earlier = malloc(bytes ? bytes : 1);
    if (!r->done || !r->earlier)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory for the bitmap of the tiles done");
    /* A tile counts as done only if its bytes in the file are the ones on record. */
    for (int64_t k = 0; k < r->nrecorded; ++k) {
        const int64_t idx = r->recorded[k].index;
        if (idx < 0 || idx >= r->tiles_m * r->tiles_n || bit_get(r->done, idx)) continue;
        if (tile_crc_of(r, job, idx) == r->recorded[k].crc) {
            bit_set(r->done, idx);
            r->units++;
        }
    }
    memcpy(r->earlier, r->done, bytes);
    return OC_OK;
}

int oc_mm_resume_tile_done(const oc_matmul_job *job, int64_t row0, int64_t col0)
{
    const oc_mm_resume *r = job_resume(job);
    return r->earlier && bit_get(r->earlier, row0 / r->tm * r->tiles_n + col0 / r->tn);
}

/* Under r->lock: OC_OK when every source the job reads is what it was when opened
 * (oc_mm_source_check; ctx NULL: no message). A tile finished since one changed may hold
 * what was read after the change: the finished tiles are dropped and no later checkpoint
 * records any. */
static oc_status inputs_unchanged(oc_context *ctx, oc_mm_resume *r)
{
    oc_status st = OC_OK;
    for (int i = 0; i < 2 && st == OC_OK; ++i)
        if (r->read[i]) st = oc_mm_source_check(ctx, r->read[i]);
    if (st != OC_OK) {
        r->npending = 0;
        r->failed = 1;
    }
    return st;
}

/* Under r->lock: the tiles finished since the last one put on record, the inputs checked and
 * the output flushed first; the tests' kill point. */
static oc_status checkpoint_locked(oc_context *ctx, oc_mm_resume *r)
{
    r->last = oc_now();
    if (r->npending == 0 || r->failed) return OC_OK;
    oc_status st;
    OC_CHECK_GOTO(ctx, st, inputs_unchanged(ctx, r), failed);
    if (r->writer) OC_CHECK_GOTO(ctx, st, oc_npy_out_sync(ctx, r->writer), failed);
    for (int64_t k = 0; k < r->npending; ++k)
        OC_CHECK_GOTO(
            ctx, st, oc_journal_append(ctx, r->journal, REC_TILE, (uint64_t)r->pending[k].index, &r->pending[k].crc, 4),
            failed);
    OC_CHECK_GOTO(ctx, st, oc_journal_flush(ctx, r->journal), failed);
    for (int64_t k = 0; k < r->npending; ++k) bit_set(r->done, r->pending[k].index);
    r->units += r->npending;
    r->units_this_run += r->npending;
    r->npending = 0;
    if (r->kill_after > 0 && r->units_this_run > 0 && r->units >= r->kill_after) raise(SIGKILL);
    return OC_OK;
failed:
    r->failed = 1;
    return st;
}

/* Under r->lock: `cells` more elements of tile index stored; 1 when it is now whole. */
static int add_cells(oc_mm_resume *r, int64_t index, int64_t cells, int64_t whole)
{
    int64_t k = 0;
    while (k < r->nflight && r->flight[k].index != index) ++k;
    if (k == r->nflight) {
        if (cells == whole) return 1; /* the whole tile at once: the CPU's way */
        if (r->nflight == r->flight_cap) {
            const int64_t cap = r->flight_cap ? 2 * r->flight_cap : 16;
            in_flight *f = realloc(r->flight, (size_t)cap * sizeof *f);
            if (!f) return 0; /* not recorded: the tile is only computed again by a resumed run */
            r->flight = f;
            r->flight_cap = cap;
        }
        r->flight[r->nflight++] = (in_flight){index, 0};
    }
    r->flight[k].cells += cells;
    if (r->flight[k].cells < whole) return 0;
    r->flight[k] = r->flight[--r->nflight];
    return 1;
}

oc_status oc_mm_resume_written(oc_context *ctx, oc_mm_resume *r, const oc_matmul_job *job, int64_t row0, int64_t rows,
                               int64_t col0, int64_t cols)
{
    if (!r->done || rows <= 0 || cols <= 0) return OC_OK;
    const int64_t I = row0 / r->tm, J = col0 / r->tn, index = I * r->tiles_n + J;
    const int64_t whole = min64(r->tm, job->m - I * r->tm) * min64(r->tn, job->n - J * r->tn);
    pthread_mutex_lock(&r->lock);
    const int finished = add_cells(r, index, rows * cols, whole);
    pthread_mutex_unlock(&r->lock);
    if (!finished) return OC_OK;
    const tile_crc t = {index, tile_crc_of(r, job, index)};
    oc_status st = OC_OK;
    pthread_mutex_lock(&r->lock);
    if (r->npending == r->pending_cap) {
        const int64_t cap = r->pending_cap ? 2 * r->pending_cap : 64;
        tile_crc *p = realloc(r->pending, (size_t)cap * sizeof *p);
        if (p) {
            r->pending = p;
            r->pending_cap = cap;
        }
    }
    if (r->npending < r->pending_cap) r->pending[r->npending++] = t;
    if (oc_now() - r->last >= r->interval) st = checkpoint_locked(ctx, r);
    pthread_mutex_unlock(&r->lock);
    return st;
}

oc_status oc_mm_resume_checkpoint(oc_context *ctx, oc_mm_resume *r)
{
    pthread_mutex_lock(&r->lock);
    /* The job failed already: an input that changed is not checked again with a message,
     * which would take the place of the failure's (often that change, as the read saw it). */
    oc_status st = r->done ? inputs_unchanged(NULL, r) : OC_OK;
    if (st == OC_OK && r->done) st = checkpoint_locked(ctx, r);
    pthread_mutex_unlock(&r->lock);
    return st;
}
