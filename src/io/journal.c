/*
 * journal.c - the resume journal's file format (journal.h): header, records, the scan that
 * finds where a crash cut the journal, buffered appends flushed with fdatasync.
 *
 * Writes go through sysio.h so that the fault plan reaches them; a journal that cannot be
 * written fails the job as any output would (OC_ERR_IO naming it).
 */
#include "io/journal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/crc32.h"
#include "io/io.h"
#include "io/sysio.h"

#define JOURNAL_MAGIC_LINE "outcore-journal 1\n"
#define RECORD_MAGIC 0x4A52434Fu /* "OCRJ" */
#define RECORD_MAX (1u << 30)    /* a longer length is damage, not a record */

typedef struct record_head {
    uint32_t magic, type;
    uint64_t unit;
    uint32_t len, crc;
} record_head;

struct oc_journal {
    char *path;
    int fd;
    int64_t end;        /* where the next record goes */
    unsigned char *buf; /* records appended, not yet written */
    size_t used, cap;
    uint32_t job_crc; /* of the job's lines in the header */
};

char *oc_journal_path_for(const char *output_path)
{
    size_t len = strlen(output_path);
    char *p = malloc(len + sizeof ".outcore-journal");
    if (p) snprintf(p, len + sizeof ".outcore-journal", "%s.outcore-journal", output_path);
    return p;
}

int oc_journal_present(const char *output_path)
{
    char *journal = oc_journal_path_for(output_path);
    struct stat sb;
    const int present = journal && lstat(journal, &sb) == 0;
    free(journal);
    return present;
}

const char *oc_journal_name(const oc_journal *j) { return j->path; }
size_t oc_journal_pending(const oc_journal *j) { return j->used; }
uint32_t oc_journal_job_crc(const oc_journal *j) { return j->job_crc; }

static uint32_t record_crc(const record_head *h, const void *payload)
{
    uint32_t crc = oc_crc32_update(0, &h->type, sizeof h->type);
    crc = oc_crc32_update(crc, &h->unit, sizeof h->unit);
    crc = oc_crc32_update(crc, &h->len, sizeof h->len);
    return oc_crc32_update(crc, payload, h->len);
}

/* The header text: the job's lines and the line with their CRC. */
static char *header_text(const char *job, size_t *len)
{
    size_t body = strlen(JOURNAL_MAGIC_LINE) + strlen(job);
    char *text = malloc(body + 16);
    if (!text) return NULL;
    memcpy(text, JOURNAL_MAGIC_LINE, strlen(JOURNAL_MAGIC_LINE));
    memcpy(text + strlen(JOURNAL_MAGIC_LINE), job, strlen(job));
    snprintf(text + body, 16, "crc %08x\n", (unsigned)oc_crc32_update(0, text, body));
    *len = body + 13;
    return text;
}

static oc_status journal_alloc(oc_context *ctx, const char *path, oc_journal **out)
{
    oc_journal *j = calloc(1, sizeof *j);
    if (j) j->path = strdup(path);
    if (!j || !j->path) {
        free(j);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    j->fd = -1;
    *out = j;
    return OC_OK;
}

oc_status oc_journal_create(oc_context *ctx, const char *path, const char *job, oc_journal **out)
{
    oc_journal *j = NULL;
    OC_CHECK(ctx, journal_alloc(ctx, path, &j));
    size_t len;
    char *text = header_text(job, &len);
    oc_status st = OC_OK;
    if (!text) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory", path);
        goto fail;
    }
    /* Written whole under a new name no one can guess, then renamed: a link planted under
     * the journal's name is refused by the callers' side check, never followed. The
     * temporary's lock (tmpfile.c) stays with the journal: it says a running job holds it. */
    oc_tmpfile f;
    st = oc_tmpfile_open(ctx, path, &f);
    if (st != OC_OK) {
        free(text);
        goto fail;
    }
    int err = oc_sys_write_all(ctx, f.fd, text, len, 0);
    if (!err && oc_sys_fsync(ctx, f.fd) != 0) err = errno;
    /* Never over a journal another job made since this one looked (two runs of one command
     * started together): that job holds it, and this one is refused. */
    if (!err && oc_sys_rename_noreplace(ctx, f.tmp_path, path) != 0) err = errno;
    free(text);
    if (err) {
        oc_tmpfile_abort(&f);
        st = err == EEXIST ? oc_fail(ctx, OC_ERR_INPUT,
                                     "%s: another job made this resume journal while this one started: a running job "
                                     "holds it; let it end",
                                     path)
                           : oc_io_fail(ctx, "writing the resume journal", path, err, -1, -1, -1);
        goto fail;
    }
    j->fd = f.fd;
    f.fd = -1;
    oc_tmpfile_release(&f);
    j->end = (int64_t)len;
    j->job_crc = oc_crc32_update(0, job, strlen(job));
    *out = j;
    return OC_OK;
fail:
    oc_journal_close(j);
    return st;
}

/* Whether a header line only names a file by its path: "output PATH", "TAG.path PATH". Such a
 * line is not compared (journal.h, oc_journal_open): a path is one spelling of a file, and
 * the lines around it say which file it is (the input's size, time and content; the output is
 * the one the journal lies beside). */
static int names_a_path(const char *line, size_t len)
{
    const char *space = memchr(line, ' ', len);
    const size_t kl = space ? (size_t)(space - line) : len;
    return (kl == 6 && memcmp(line, "output", 6) == 0) || (kl > 5 && memcmp(line + kl - 5, ".path", 5) == 0);
}

/* The next line of the header text at *p that is compared: its start in *line, its length
 * in *len, and *p past it; 0 at the end of the text. */
static int next_compared(const char **p, const char **line, size_t *len)
{
    while (**p) {
        const char *s = *p, *e = strchr(s, '\n');
        const size_t l = e ? (size_t)(e - s) : strlen(s);
        *p = e ? e + 1 : s + l;
        if (!names_a_path(s, l)) {
            *line = s;
            *len = l;
            return 1;
        }
    }
    return 0;
}

/* Whether the journal's header `have` is the job's `want`: the same lines in the same order,
 * the ones that name a path left out of both. Sets *hl_out and the rest to the first pair of
 * lines that differ (a missing line has length 0). */
static int same_job(const char *have, const char *want, const char **h_out, size_t *hl_out, const char **w_out,
                    size_t *wl_out)
{
    for (;;) {
        const char *h = "", *w = "";
        size_t hl = 0, wl = 0;
        const int hn = next_compared(&have, &h, &hl), wn = next_compared(&want, &w, &wl);
        if (!hn && !wn) return 1;
        if (hn != wn || hl != wl || memcmp(h, w, hl) != 0) {
            *h_out = h, *hl_out = hl, *w_out = w, *wl_out = wl;
            return 0;
        }
    }
}

/* The message for the first lines where the journal's header and the job's differ: the
 * caller's differ says what it means, else both lines are quoted. */
static void first_difference(const char *path, const char *have_job, const char *have, size_t hl, const char *want,
                             size_t wl, oc_journal_differ_fn differ, void *user, char *buf, size_t size)
{
    buf[0] = '\0';
    if (differ) differ(user, have_job, have, hl, want, wl, buf, size);
    if (buf[0]) return;
    snprintf(buf, size,
             "%s: the journal was made for another job: %s%.*s%s (journal) against %s%.*s%s (this "
             "job); remove it to start over",
             path, hl ? "'" : "", (int)hl, have, hl ? "'" : "nothing", wl ? "'" : "", (int)wl, want,
             wl ? "'" : "nothing");
}

/* The most of a journal's start that its header is looked for in. */
#define JOURNAL_HEADER_MAX ((size_t)1 << 16)

/* Reads the header at the start of the file into a string; returns its length in the
 * file, 0 when it is damaged (or no memory is left to read it). The buffer is the heap's:
 * a resume runs on its caller's stack, which may be small (docs/cli.md, "Memory"). */
static size_t read_header(int fd, char **job_out)
{
    char *buf = malloc(JOURNAL_HEADER_MAX);
    if (!buf) return 0;
    size_t len = 0;
    ssize_t got = pread(fd, buf, JOURNAL_HEADER_MAX - 1, 0);
    const size_t ml = strlen(JOURNAL_MAGIC_LINE);
    if (got > 0) buf[got] = '\0';
    char *crc_line =
        got > 0 && (size_t)got >= ml && memcmp(buf, JOURNAL_MAGIC_LINE, ml) == 0 ? strstr(buf, "\ncrc ") : NULL;
    if (crc_line && (size_t)(crc_line + 1 - buf) + 13 <= (size_t)got) {
        size_t body = (size_t)(crc_line + 1 - buf);
        unsigned crc = 0;
        if (sscanf(crc_line + 5, "%8x", &crc) == 1 && crc_line[13] == '\n' && crc == oc_crc32_update(0, buf, body) &&
            (*job_out = strndup(buf + ml, body - ml)))
            len = body + 13;
    }
    free(buf);
    return len;
}

/* A journal made where the file system has no RENAME_NOREPLACE goes in by link and unlink
 * (oc_sys_rename_noreplace): a crash between them leaves it with its temporary's name too
 * (PATH.tmp-*, the same file). That name, and only that, is removed; 0 when it was. */
static int drop_creation_name(const char *path, const struct stat *sb)
{
    char folder[4096];
    oc_path_folder(path, folder, sizeof folder);
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    const size_t blen = strlen(base);
    DIR *d = opendir(folder);
    if (!d) return -1;
    int dropped = -1;
    struct dirent *e;
    while (dropped != 0 && (e = readdir(d))) {
        struct stat other;
        if (strncmp(e->d_name, base, blen) != 0 || strncmp(e->d_name + blen, ".tmp-", 5) != 0) continue;
        if (fstatat(dirfd(d), e->d_name, &other, AT_SYMLINK_NOFOLLOW) == 0 && other.st_dev == sb->st_dev &&
            other.st_ino == sb->st_ino)
            dropped = unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
    return dropped;
}

oc_status oc_journal_hold(oc_context *ctx, const char *path, oc_journal **out)
{
    *out = NULL;
    oc_journal *j = NULL;
    OC_CHECK(ctx, journal_alloc(ctx, path, &j));
    oc_status st = OC_OK;
    for (;;) {
        /* O_NOFOLLOW: a journal that is a symbolic link is refused, not followed. */
        j->fd = oc_sys_open(ctx, path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
        struct stat sb;
        int unlocked = 0;
        if (j->fd < 0 && errno == ENOENT) break; /* removed since the caller saw it: no journal */
        else if (j->fd < 0)
            st = oc_fail(ctx, OC_ERR_INPUT, "%s: cannot open the resume journal: %s", path,
                         errno == ELOOP ? "it is a symbolic link; remove it" : strerror(errno));
        else if (fstat(j->fd, &sb) != 0 || !S_ISREG(sb.st_mode))
            st = oc_fail(ctx, OC_ERR_INPUT, "%s: the resume journal is not a regular file; remove it", path);
        else if (sb.st_nlink == 2 && drop_creation_name(path, &sb) == 0 && fstat(j->fd, &sb) != 0)
            st = oc_fail(ctx, OC_ERR_INPUT, "%s: cannot read the resume journal: %s", path, strerror(errno));
        /* A journal this library made has one name; it is appended to, which another name (a
         * hard link) would see change: a file outside the output's names. */
        else if (sb.st_nlink != 1)
            st = oc_fail(ctx, OC_ERR_INPUT,
                         "%s: the resume journal has other names (hard links), which resuming would write "
                         "through; remove it or them",
                         path);
        else if ((unlocked = oc_sys_lock_released(j->fd, ctx)) != 0 && errno == ECANCELED)
            st = oc_fail(ctx, OC_ERR_CANCELLED, "cancelled while waiting for the resume journal %s", path);
        else if (unlocked != 0 && errno == EWOULDBLOCK)
            st = oc_fail(ctx, OC_ERR_INPUT, "%s: a running job holds this resume journal: let it end before resuming",
                         path);
        if (st != OC_OK) {
            oc_journal_close(j);
            return st;
        }
        /* The lock is the open file's: a journal removed while this run waited for it
         * (`outcore clean`, its job ended) is no journal, and the file now under its name, if
         * any, is opened afresh. */
        if (oc_sys_path_names(j->fd, AT_FDCWD, path)) {
            *out = j;
            return OC_OK;
        }
        close(j->fd);
        j->fd = -1;
    }
    oc_journal_close(j);
    return OC_OK;
}

oc_status oc_journal_open(oc_context *ctx, const char *path, const char *job, oc_journal_differ_fn differ,
                          oc_journal_record_fn fn, void *user, oc_journal **out)
{
    oc_journal *j = NULL;
    OC_CHECK(ctx, oc_journal_hold(ctx, path, &j));
    if (!j) return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot open the resume journal: %s", path, strerror(ENOENT));
    const oc_status st = oc_journal_load(ctx, j, job, differ, fn, user);
    if (st != OC_OK) {
        oc_journal_close(j);
        return st;
    }
    *out = j;
    return OC_OK;
}

oc_status oc_journal_load(oc_context *ctx, oc_journal *j, const char *job, oc_journal_differ_fn differ,
                          oc_journal_record_fn fn, void *user)
{
    const char *path = j->path;
    oc_status st = OC_OK;
    char *have = NULL;
    unsigned char *payload = NULL;
    size_t hlen = read_header(j->fd, &have);
    if (!hlen) {
        st = oc_fail(ctx, OC_ERR_INPUT,
                     "%s: not a resume journal of this version, or its header is damaged: remove "
                     "it to start over",
                     path);
        goto fail;
    }
    const char *hd, *wd;
    size_t hdl, wdl;
    if (!same_job(have, job, &hd, &hdl, &wd, &wdl)) {
        char diff[1024];
        first_difference(path, have, hd, hdl, wd, wdl, differ, user, diff, sizeof diff);
        st = oc_fail(ctx, OC_ERR_INPUT, "%s", diff);
        goto fail;
    }
    j->job_crc = oc_crc32_update(0, have, strlen(have));
    int64_t off = (int64_t)hlen, size = oc_sys_file_size(j->fd);
    size_t cap = 0;
    for (;;) {
        record_head h;
        if (off + (int64_t)sizeof h > size || pread(j->fd, &h, sizeof h, off) != (ssize_t)sizeof h) break;
        if (h.magic != RECORD_MAGIC || h.len > RECORD_MAX || off + (int64_t)sizeof h + h.len > size) break;
        if (h.len > cap) {
            unsigned char *p = realloc(payload, h.len);
            if (!p) {
                st = oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory reading a record of %u bytes", path, h.len);
                goto fail;
            }
            payload = p;
            cap = h.len;
        }
        if (h.len && pread(j->fd, payload, h.len, off + (int64_t)sizeof h) != (ssize_t)h.len) break;
        if (record_crc(&h, payload) != h.crc) break;
        if (fn && fn(user, h.type, h.unit, payload, h.len, off + (int64_t)sizeof h)) break;
        off += (int64_t)sizeof h + h.len;
    }
    j->end = off;
    free(have);
    free(payload);
    /* A record cut short, or damaged, and what follows it are not the journal's. */
    if (off < size && oc_sys_ftruncate(ctx, j->fd, off) != 0)
        return oc_io_fail(ctx, "truncating the resume journal", path, errno, -1, -1, -1);
    return OC_OK;
fail:
    free(have);
    free(payload);
    return st;
}

oc_status oc_journal_truncate_before(oc_context *ctx, oc_journal *j, int64_t offset)
{
    int64_t at = offset - (int64_t)sizeof(record_head);
    if (at >= j->end) return OC_OK;
    j->used = 0;
    if (oc_sys_ftruncate(ctx, j->fd, at) != 0 || oc_sys_fsync(ctx, j->fd) != 0)
        return oc_io_fail(ctx, "truncating the resume journal", j->path, errno, -1, -1, -1);
    j->end = at;
    return OC_OK;
}

oc_status oc_journal_read(oc_context *ctx, oc_journal *j, int64_t offset, void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t got = pread(j->fd, (char *)buf + done, len - done, offset + (int64_t)done);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            return oc_fail(ctx, OC_ERR_IO, "%s: cannot read the resume journal: %s", j->path,
                           got < 0 ? strerror(errno) : "it is shorter than its records say");
        done += (size_t)got;
    }
    return OC_OK;
}

oc_status oc_journal_append(oc_context *ctx, oc_journal *j, uint32_t type, uint64_t unit, const void *payload,
                            uint32_t len)
{
    record_head h = {.magic = RECORD_MAGIC, .type = type, .unit = unit, .len = len};
    h.crc = record_crc(&h, payload);
    size_t need = j->used + sizeof h + len;
    if (need > j->cap) {
        size_t cap = j->cap ? j->cap : 4096;
        while (cap < need) cap *= 2;
        unsigned char *p = realloc(j->buf, cap);
        if (!p) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory for %zu bytes of records", j->path, need);
        j->buf = p;
        j->cap = cap;
    }
    memcpy(j->buf + j->used, &h, sizeof h);
    if (len) memcpy(j->buf + j->used + sizeof h, payload, len);
    j->used = need;
    return OC_OK;
}

oc_status oc_journal_write(oc_context *ctx, oc_journal *j)
{
    if (j->used) {
        int err = oc_sys_write_all(ctx, j->fd, j->buf, j->used, j->end);
        if (err) return oc_io_fail(ctx, "writing the resume journal", j->path, err, -1, -1, -1);
        j->end += (int64_t)j->used;
        j->used = 0;
    }
    return OC_OK;
}

oc_status oc_journal_flush(oc_context *ctx, oc_journal *j)
{
    OC_CHECK(ctx, oc_journal_write(ctx, j));
    /* fdatasync: the records and the file's new length; its times may wait. */
    if (fdatasync(j->fd) != 0 && errno != EINVAL)
        return oc_io_fail(ctx, "flushing the resume journal", j->path, errno, -1, -1, -1);
    return OC_OK;
}

void oc_journal_close(oc_journal *j)
{
    if (!j) return;
    if (j->fd >= 0) close(j->fd);
    free(j->buf);
    free(j->path);
    free(j);
}
