/*
 * output_stale.c - what interrupted jobs leave beside an output, found and removed (io.h's
 * oc_stale_temps_remove, outcore.h's oc_output_clean).
 *
 * A temporary is PATH.tmp-PID-RANDOM (tmpfile.c): PID is the process that created it, which
 * holds an exclusive flock on it while it is open. One is stale when nobody holds its lock
 * and no process PID runs: the lock settles a reused PID, the PID the moment between the
 * file's creation and its lock. A temporary of a resumable job outlives its process on
 * purpose: while PATH.outcore-journal exists, the journal owns them and only oc_output_clean
 * (outcore clean) removes them, with the journal. Names of older versions, PATH.tmp-XXXXXX,
 * say no process: only oc_output_clean removes them, when no lock is held.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/context.h"
#include "core/error.h"
#include "io/io.h"
#include "io/journal.h"
#include "io/sysio.h"

/* Whether name is a temporary of the output whose file name is base: its PID in *pid (0 for
 * an older version's name, which has none). */
static int temp_of(const char *name, const char *base, long *pid)
{
    size_t blen = strlen(base);
    if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp-", 5) != 0) return 0;
    const char *p = name + blen + 5, *dash = strchr(p, '-');
    size_t k;
    if (!dash) { /* PATH.tmp-XXXXXX */
        for (k = 0; p[k]; ++k)
            if (!((p[k] >= 'a' && p[k] <= 'z') || (p[k] >= 'A' && p[k] <= 'Z') || (p[k] >= '0' && p[k] <= '9')))
                return 0;
        *pid = 0;
        return k == 6;
    }
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end != dash || end == p || v <= 0 || errno) return 0;
    for (k = 1; dash[k]; ++k)
        if (!((dash[k] >= 'a' && dash[k] <= 'z') || (dash[k] >= 'A' && dash[k] <= 'Z') ||
              (dash[k] >= '0' && dash[k] <= '9')))
            return 0;
    *pid = v;
    return k == 9;
}

static int process_runs(long pid) { return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM); }

/* fd's exclusive lock, at once, or (wait) once a process that has just ended gives it up
 * (oc_sys_lock_released, which ctx's cancellation ends): 0, or -1 while another process
 * holds it. */
static int take_lock(int fd, int wait, const oc_context *ctx)
{
    return wait ? oc_sys_lock_released(fd, ctx) : flock(fd, LOCK_EX | LOCK_NB);
}

/* Opens name in dirfd and takes its lock: the descriptor when it is a regular file that no
 * process holds (its size in *bytes), else -1. The lock is held until the caller closes it;
 * wait as take_lock's. */
static int take_unheld(int dirfd, const char *name, int64_t *bytes, int wait, const oc_context *ctx)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || take_lock(fd, wait, ctx) != 0) {
        close(fd);
        return -1;
    }
    *bytes = (int64_t)sb.st_size;
    return fd;
}

typedef struct sweep {
    const char *folder;
    const char *base;      /* the output's file name */
    int older_names;       /* also PATH.tmp-XXXXXX of older versions */
    int print;             /* one line on stderr for each removal */
    int wait;              /* wait for the locks of processes that have ended */
    const oc_context *ctx; /* whose cancellation ends the waits */
    oc_removed_fn fn;      /* or this, called for each */
    void *user;
    int64_t removed;
    int failed;          /* the errno of the first removal that failed (0: none) */
    char failed_at[256]; /* and the file's name */
} sweep;

/* Notes a removal of name that failed with errno, the first kept. */
static void note_failure(sweep *s, const char *name)
{
    if (s->failed) return;
    s->failed = errno ? errno : EIO;
    snprintf(s->failed_at, sizeof s->failed_at, "%.255s", name);
}

static void report(sweep *s, const char *name, int64_t bytes, long pid)
{
    char path[4096 + 256];
    snprintf(path, sizeof path, "%s%s%s", strcmp(s->folder, ".") ? s->folder : "", strcmp(s->folder, ".") ? "/" : "",
             name);
    if (s->fn) {
        s->fn(s->user, path, bytes);
    } else if (s->print) {
        char size[40];
        oc_size_text(size, sizeof size, bytes);
        fprintf(stderr, "outcore: removed %s (%s), a temporary file left by process %ld, which is no longer running\n",
                path, size, pid);
    }
    s->removed++;
}

/* Removes name in dirfd and reports it. A name another process removed first (ENOENT: a
 * second `outcore clean`, a job that ended) is no failure, and nothing this run removed. */
static void remove_at(sweep *s, int dirfd, const char *name, int64_t bytes, long pid)
{
    if (unlinkat(dirfd, name, 0) == 0) report(s, name, bytes, pid);
    else if (errno != ENOENT) note_failure(s, name);
}

/* Removes the stale temporaries of s->base in its folder. */
static void sweep_temps(sweep *s)
{
    DIR *d = opendir(s->folder);
    if (!d) return;
    struct dirent *e;
    while (!oc_cancelled(s->ctx) && (e = readdir(d))) {
        long pid;
        if (!temp_of(e->d_name, s->base, &pid) || (pid == 0 && !s->older_names) || process_runs(pid)) continue;
        int64_t bytes = 0;
        int fd = take_unheld(dirfd(d), e->d_name, &bytes, s->wait && pid > 0, s->ctx);
        if (fd < 0) continue;
        /* A file this process reads (an input named like a temporary) is no one's leftover. */
        if (oc_sys_file_held_here(fd)) {
            close(fd);
            continue;
        }
        if (!process_runs(pid)) remove_at(s, dirfd(d), e->d_name, bytes, pid);
        close(fd);
    }
    closedir(d);
}

int oc_stale_temps_remove(oc_context *ctx, const char *path)
{
    char folder[4096];
    char *journal = oc_journal_path_for(path);
    struct stat sb;
    int owned = !journal || lstat(journal, &sb) == 0;
    free(journal);
    if (owned) return 0;
    oc_path_folder(path, folder, sizeof folder);
    /* A killed job's files are still held a moment after its parent saw it end: waited for
     * (oc_sys_lock_released), as outcore clean does, or its temporary would outlive it. */
    sweep s = {.folder = folder,
               .base = oc_path_name(path),
               .print = 1,
               .wait = 1,
               .ctx = ctx,
               .fn = ctx ? ctx->removed_fn : NULL,
               .user = ctx ? ctx->removed_user : NULL};
    sweep_temps(&s);
    return (int)s.removed;
}

/* Removes the journal of the output and its side files (JOURNAL.topk, JOURNAL.*.tmp-*),
 * unless a running job holds it. */
static oc_status clean_journal(oc_context *ctx, sweep *s, const char *journal)
{
    struct stat sb;
    int exists, fd;
    for (;;) {
        fd = -1;
        exists = lstat(journal, &sb) == 0;
        /* A folder under the journal's name is no journal outcore made: the job refuses it,
         * and it is the user's to remove (nothing in it is touched). */
        if (exists && S_ISDIR(sb.st_mode))
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: a folder under the resume journal's name, which no job made: remove it yourself",
                           journal);
        if (!exists || !S_ISREG(sb.st_mode)) break;
        fd = open(journal, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
            exists = errno != ENOENT;
            break;
        }
        if (take_lock(fd, s->wait, ctx) != 0) {
            const int e = errno;
            close(fd);
            if (e == ECANCELED)
                return oc_fail(ctx, OC_ERR_CANCELLED, "cancelled while waiting for the resume journal %s", journal);
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: a running job holds this resume journal: let it end (or stop it) "
                           "before cleaning",
                           journal);
        }
        /* The lock is the open file's, the removal by name: a journal removed meanwhile (its
         * job done, another clean) leaves nothing to remove, and one made since under its
         * name (a new job's) is looked at afresh, and refused while its job holds it. */
        if (oc_sys_path_names(fd, AT_FDCWD, journal)) break;
        close(fd);
    }
    /* ENOENT: another process removed it first, and there is nothing to remove. */
    if (exists && unlink(journal) != 0) {
        const int e = errno;
        if (e != ENOENT) {
            if (fd >= 0) close(fd);
            return oc_fail(ctx, OC_ERR_IO, "%s: cannot remove the resume journal: %s", journal, strerror(e));
        }
        exists = 0;
    }
    if (exists) {
        if (s->fn) s->fn(s->user, journal, (int64_t)sb.st_size);
        s->removed++;
    }
    if (fd >= 0) close(fd);
    /* Its side files: the top-k snapshot, and the temporaries of both. */
    char snapshot[4096 + 16];
    snprintf(snapshot, sizeof snapshot, "%s.topk", oc_path_name(journal));
    int dfd = open(s->folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int64_t bytes = 0;
    int snap = dfd >= 0 ? take_unheld(dfd, snapshot, &bytes, s->wait, ctx) : -1;
    if (snap >= 0) {
        remove_at(s, dfd, snapshot, bytes, 0);
        close(snap);
    }
    /* A link under the snapshot's name (which the job refuses) goes too: removing a link
     * leaves what it points to as it was. */
    struct stat link;
    if (snap < 0 && dfd >= 0 && fstatat(dfd, snapshot, &link, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(link.st_mode) &&
        unlinkat(dfd, snapshot, 0) == 0)
        report(s, snapshot, 0, 0);
    if (dfd >= 0) close(dfd);
    sweep side = *s;
    side.base = oc_path_name(journal);
    sweep_temps(&side);
    side.base = snapshot;
    sweep_temps(&side);
    s->removed = side.removed;
    s->failed = side.failed;
    memcpy(s->failed_at, side.failed_at, sizeof s->failed_at);
    return OC_OK;
}

oc_status oc_output_clean(oc_context *ctx, const char *path, oc_removed_fn fn, void *user, int64_t *removed)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    if (!path) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "output path is NULL");
    if (path[0] == '\0') return oc_fail(ctx, OC_ERR_INPUT, "the output path is empty");
    oc_context_begin_job(ctx);
    char folder[4096];
    oc_path_folder(path, folder, sizeof folder);
    struct stat sb;
    if (stat(folder, &sb) != 0 && errno == ENOENT)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: folder %s does not exist", path, folder);
    if (stat(folder, &sb) != 0) return oc_fail(ctx, OC_ERR_INPUT, "%s: folder %s: %s", path, folder, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return oc_fail(ctx, OC_ERR_INPUT, "%s: %s is not a folder", path, folder);
    char *journal = oc_journal_path_for(path);
    if (!journal) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    sweep s = {
        .folder = folder, .base = oc_path_name(path), .older_names = 1, .wait = 1, .ctx = ctx, .fn = fn, .user = user};
    oc_status st = clean_journal(ctx, &s, journal);
    free(journal);
    if (st != OC_OK) return st;
    sweep_temps(&s); /* with the journal gone, its temporaries are stale too */
    if (removed) *removed = s.removed;
    if (oc_cancelled(ctx)) return oc_fail(ctx, OC_ERR_CANCELLED, "cancelled: %lld files removed", (long long)s.removed);
    if (s.failed)
        return oc_fail(ctx, OC_ERR_IO, "%s%s%s: cannot remove it: %s", strcmp(folder, ".") ? folder : "",
                       strcmp(folder, ".") ? "/" : "", s.failed_at, strerror(s.failed));
    return OC_OK;
}
