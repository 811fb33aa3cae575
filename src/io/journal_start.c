/*
 * journal_start.c - a resumable job's journal found, checked against the job and kept, or
 * started (journal_start.h): the steps gram's and matmul's resume share, and their helpers.
 */
#include "io/journal_start.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/env.h"
#include "core/error.h"
#include "io/crc32.h"
#include "io/io.h"
#include "io/sysio.h"

#define OC_JOURNAL_INTERVAL_DEFAULT 2.0

oc_status oc_journal_side_check(oc_context *ctx, const char *path, const char *what, int *exists)
{
    struct stat sb;
    *exists = lstat(path, &sb) == 0;
    if (!*exists || S_ISREG(sb.st_mode)) return OC_OK;
    return oc_fail(ctx, OC_ERR_INPUT, "%s: the %s is %s, not a regular file: outcore does not follow it; remove it",
                   path, what,
                   S_ISLNK(sb.st_mode)   ? "a symbolic link"
                   : S_ISDIR(sb.st_mode) ? "a folder"
                                         : "special");
}

/* The refusal of a job run without --resume on an output that has the journal jpath: that
 * an interrupted job left it (how to continue or clean it), or that a running job holds it. */
static oc_status refuse_without_resume(oc_context *ctx, const char *jpath, const char *out_path)
{
    /* A running resumable job holds its journal's lock, exclusively: that job is not
     * interrupted. The probe's lock is shared, so that processes refused at once (the ranks
     * of an MPI job) do not see each other's probes as a running job. */
    int fd = open(jpath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), held = 0;
    if (fd >= 0) {
        held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
        close(fd);
    }
    if (held)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: a running job holds this journal (a resumable job on the same output): let it end, or "
                       "stop it and run the same command with --resume (Python: resume=True) to continue it",
                       jpath);
    return oc_fail(ctx, OC_ERR_INPUT,
                   "%s: an interrupted job left this journal: run the same command with --resume (Python: "
                   "resume=True) to continue it, or 'outcore clean %s' to start over",
                   jpath, out_path);
}

/* The CRC-32 of the whole file fd, read in large blocks. */
static oc_status file_crc(oc_context *ctx, int fd, const char *name, int64_t size, uint32_t *crc_out)
{
    enum { BLOCK = 4 << 20 };
    unsigned char *block = malloc(BLOCK);
    if (!block) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory for its checksum", name);
    uint32_t crc = 0;
    int64_t off = 0;
    while (off < size) {
        ssize_t got = pread(fd, block, BLOCK, (off_t)off);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            free(block);
            return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot read it again for its checksum: %s", name,
                           got < 0 ? strerror(errno) : "it is shorter than it was");
        }
        crc = oc_crc32_update(crc, block, (size_t)got);
        off += got;
    }
    free(block);
    *crc_out = crc;
    return OC_OK;
}

oc_status oc_journal_describe_file(oc_context *ctx, oc_text *t, const char *tag, const char *path,
                                   const struct stat *sb)
{
    oc_text_printf(t, "%s.path %s\n%s.size %lld\n%s.mtime %lld.%09ld\n", tag, path, tag, (long long)sb->st_size, tag,
                   (long long)sb->st_mtim.tv_sec, (long)sb->st_mtim.tv_nsec);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        return oc_fail(ctx, oc_open_fail_status(err), "%s: cannot read it again: %s", path, strerror(err));
    }
    uint32_t crc = 0;
    oc_status st = file_crc(ctx, fd, path, (int64_t)sb->st_size, &crc);
    close(fd);
    OC_CHECK(ctx, st);
    oc_text_printf(t, "%s.crc32 %08x\n", tag, (unsigned)crc);
    return OC_OK;
}

int oc_journal_tile_add(oc_journal_tile **list, int64_t *count, uint64_t unit, const void *payload, uint32_t len)
{
    if (len != 4) return 1;
    oc_journal_tile *grown = realloc(*list, (size_t)(*count + 1) * sizeof *grown);
    if (!grown) return 1;
    *list = grown;
    grown[*count].index = (int64_t)unit;
    memcpy(&grown[(*count)++].crc, payload, 4);
    return 0;
}

/* Removes the journal at jpath when the run that kept it renamed its result into place and was
 * stopped before it removed the journal (the window between a commit's rename and the
 * journal's removal): the temporary it recorded, temp, is gone and out_path is a regular
 * file. Such a journal has nothing to resume from: *dropped is then 1, and the caller starts
 * the job again as if it had found none. *dropped is 0 without temp. */
static oc_status drop_committed(oc_context *ctx, const char *jpath, const char *temp, const char *out_path,
                                int *dropped)
{
    struct stat sb;
    *dropped = 0;
    if (!temp || lstat(temp, &sb) == 0 || errno != ENOENT || lstat(out_path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return OC_OK;
    if (unlink(jpath) != 0 && errno != ENOENT)
        return oc_fail(ctx, OC_ERR_IO, "%s: cannot remove the stale resume journal %s: %s", out_path, jpath,
                       strerror(errno));
    *dropped = 1;
    return OC_OK;
}

char *oc_journal_temp_of(const char *out_path, const void *payload, size_t len)
{
    const char *p = payload, *rec_slash = memrchr(p, '/', len), *out_slash = strrchr(out_path, '/');
    const char *name = rec_slash ? rec_slash + 1 : p, *base = out_slash ? out_slash + 1 : out_path;
    const size_t nl = len - (size_t)(name - p), bl = strlen(base), dl = (size_t)(base - out_path);
    if (!bl || memchr(p, '\0', len) || nl <= bl + 5 || memcmp(name, base, bl) != 0 ||
        memcmp(name + bl, ".tmp-", 5) != 0)
        return NULL;
    char *temp = malloc(dl + nl + 1);
    if (!temp) return NULL;
    memcpy(temp, out_path, dl);
    memcpy(temp + dl, name, nl);
    temp[dl + nl] = '\0';
    return temp;
}

/* Where the header text names input `tag` ("TAG.path PATH" at the start of a line): its path
 * in *name, *nl characters; 0 when it names none (an input from memory). */
static int input_path(const char *text, char tag, const char **name, int *nl)
{
    const char key[] = {tag, '.', 'p', 'a', 't', 'h', ' ', '\0'};
    for (const char *s = text; s && *s;) {
        if (strncmp(s, key, sizeof key - 1) == 0) {
            *name = s + sizeof key - 1;
            *nl = (int)strcspn(*name, "\n");
            return 1;
        }
        s = strchr(s, '\n');
        if (s) s++;
    }
    return 0;
}

/* Whether two paths (n1, n2 characters) name the same file: the same text, or the same
 * file here (a relative path resolved from this run's folder). */
static int same_file(const char *p1, int n1, const char *p2, int n2)
{
    if (n1 == n2 && memcmp(p1, p2, (size_t)n1) == 0) return 1;
    char *a = strndup(p1, (size_t)n1), *b = strndup(p2, (size_t)n2);
    struct stat sa, sb;
    const int same =
        a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    free(a);
    free(b);
    return same;
}

/* An oc_journal_differ_fn's words for a header line of input "a." or "b." (shape, size,
 * mtime, crc32, rows_crc) that differs: its results so far are not this input's. When the
 * journal's header have_job names the input by the path job_text (the job's header) names it
 * by, or by another spelling of the same file, the input changed since the journal jpath of
 * output out_path was written; else it is another input than the journal's, whose path is
 * quoted. Leaves buf alone for any other line. */
static void input_changed(const char *have_job, const char *job_text, const char *jpath, const char *out_path,
                          const char *want, size_t wl, char *buf, size_t size)
{
    static const struct {
        const char *key, *what;
    } keys[] = {{"shape", "shape"},
                {"size", "size"},
                {"mtime", "modification time"},
                {"crc32", "content"},
                {"rows_crc", "content"}};
    if (wl < 3 || (want[0] != 'a' && want[0] != 'b') || want[1] != '.') return;
    const char *what = NULL;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; ++k) {
        size_t kl = strlen(keys[k].key);
        if (wl > 2 + kl && memcmp(want + 2, keys[k].key, kl) == 0 && want[2 + kl] == ' ') what = keys[k].what;
    }
    if (!what) return;
    const char *name, *was;
    int nl, wasl;
    if (!input_path(job_text, want[0], &name, &nl)) {
        name = want[0] == 'a' ? "input A" : "input B";
        nl = (int)strlen(name);
    } else if (input_path(have_job, want[0], &was, &wasl) && !same_file(was, wasl, name, nl)) {
        /* The journal's input was another file, or another spelling from another folder. */
        snprintf(buf, size,
                 "%.*s: not the input the journal %s was made for (named '%.*s' there; its %s differs): its "
                 "results so far are not this input's; remove the journal (outcore clean %s) to start over",
                 nl, name, jpath, wasl, was, what, out_path);
        return;
    }
    snprintf(buf, size,
             "%.*s: the input changed since the journal %s was written (its %s differs): its results so far "
             "are not this input's; remove the journal (outcore clean %s) to start over",
             nl, name, jpath, what, out_path);
}

/* The seconds between two checkpoints of a resumable job (OUTCORE_RESUME_INTERVAL, else
 * OC_JOURNAL_INTERVAL_DEFAULT) and the tile count after which it kills itself for the tests
 * (OUTCORE_RESUME_KILL_AFTER, else 0: never); a value that is not what docs/environment.md
 * says is refused, naming the variable (OC_ERR_INVALID_ARGUMENT). */
static oc_status journal_env(oc_context *ctx, double *interval, int64_t *kill_after)
{
    *interval = OC_JOURNAL_INTERVAL_DEFAULT;
    *kill_after = 0;
    if (oc_env_seconds("OUTCORE_RESUME_INTERVAL", interval) < 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "OUTCORE_RESUME_INTERVAL=%s: expected seconds, a decimal number >= 0",
                       getenv("OUTCORE_RESUME_INTERVAL"));
    if (oc_env_whole("OUTCORE_RESUME_KILL_AFTER", 0, INT64_MAX, kill_after) < 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "OUTCORE_RESUME_KILL_AFTER=%s: expected a whole number >= 0",
                       getenv("OUTCORE_RESUME_KILL_AFTER"));
    return OC_OK;
}

/* ---------------------------------------------------------------- a job's start */
/* What oc_journal_load's hooks read while oc_journal_start loads a journal. */
typedef struct journal_loading {
    const oc_journal_keeper *k;
    const char *text, *jpath; /* the job's header lines, the journal's name */
} journal_loading;

static void loading_differ(void *user, const char *have_job, const char *have, size_t hl, const char *want, size_t wl,
                           char *buf, size_t size)
{
    (void)have, (void)hl;
    const journal_loading *l = user;
    input_changed(have_job, l->text, l->jpath, l->k->out_path, want, wl, buf, size);
}

static int loading_record(void *user, uint32_t type, uint64_t unit, const void *payload, uint32_t len, int64_t offset)
{
    const journal_loading *l = user;
    return l->k->record(l->k->user, type, unit, payload, len, offset);
}

oc_status oc_journal_start(oc_context *ctx, const oc_journal_keeper *k, oc_journal **journal, int *resumed)
{
    *journal = NULL;
    *resumed = 0;
    char *jpath = oc_journal_path_for(k->out_path);
    if (!jpath) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    char *text = NULL;
    oc_journal *j = NULL;
    int exists = 0, made = 0, dropped = 0;
    double interval;
    int64_t kill_after;
    oc_status st = OC_OK;
    OC_CHECK_GOTO(ctx, st, oc_journal_side_check(ctx, jpath, "resume journal", &exists), cleanup);
    if (!k->resume) {
        if (exists) OC_CHECK_GOTO(ctx, st, refuse_without_resume(ctx, jpath, k->out_path), cleanup);
        goto cleanup;
    }
    OC_CHECK_GOTO(ctx, st, oc_output_name_fits(ctx, k->out_path, k->longest, OC_TMP_SUFFIX_MAX), cleanup);
    OC_CHECK_GOTO(ctx, st, journal_env(ctx, &interval, &kill_after), cleanup);
    made = 1;
    OC_CHECK_GOTO(ctx, st, k->make(ctx, k->user, jpath, interval, kill_after), cleanup);
    /* The journal held before anything beside it is touched and the inputs are read whole to
     * describe the job: meanwhile a second run of the command, or `outcore clean`, is
     * refused. */
    if (exists) OC_CHECK_GOTO(ctx, st, oc_journal_hold(ctx, jpath, &j), cleanup);
    /* One removed while this run waited for its lock (`outcore clean`, its job ended) is none:
     * the job starts over, as a run without a journal does. */
    exists = j != NULL;
    if (k->held) OC_CHECK_GOTO(ctx, st, k->held(ctx, k->user, exists), cleanup);
    OC_CHECK_GOTO(ctx, st, k->describe(ctx, k->user, &text), cleanup);
    if (exists) {
        journal_loading l = {k, text, jpath};
        OC_CHECK_GOTO(ctx, st, oc_journal_load(ctx, j, text, loading_differ, loading_record, &l), cleanup);
        /* A run stopped after its rename: the job runs from the start. */
        OC_CHECK_GOTO(ctx, st, drop_committed(ctx, jpath, k->temp(k->user), k->out_path, &dropped), cleanup);
    } else {
        OC_CHECK_GOTO(ctx, st, oc_journal_create(ctx, jpath, text, &j), cleanup);
    }

cleanup:
    free(text);
    free(jpath);
    if (st != OC_OK || dropped) {
        oc_journal_close(j);
        if (made) k->drop(k->user);
        return dropped ? oc_journal_start(ctx, k, journal, resumed) : st;
    }
    *journal = j;
    *resumed = exists;
    return OC_OK;
}
