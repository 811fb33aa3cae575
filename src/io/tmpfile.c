/*
 * tmpfile.c - write-then-rename: every output is created as PATH.tmp-PID-RANDOM beside PATH
 * and renamed over PATH only when complete.
 *
 * The temporary file lives in the destination directory because rename(2) is atomic only
 * within one file system; a reader of PATH sees either the old file or the finished new one.
 * What PATH holds now is checked first (output_path.c: a missing folder, a folder, a pipe, a
 * read-only file are bad input naming the path), and the temporaries that dead processes left
 * beside it are removed (output_stale.c). The new file is created with O_EXCL under a name no
 * one can guess, holds an flock while it is open (its PID and the lock tell a later run
 * whether its job still runs), and takes the mode of the file it replaces. A sweep that cannot
 * see this process (another host or PID namespace sharing the folder) may remove the file
 * before its lock is taken: the name is checked to be the open file once locked, and a file
 * that lost it is replaced by a new one. The folder is held by a handle from the start, and
 * the file renamed and removed through it: a folder moved or removed while the job runs
 * fails the commit and keeps no temporary.
 *
 * Commit flushes the file to the disk (fsync) before it renames it: a rename that reaches
 * the disk before the data would leave, after a crash, a complete-looking name over an
 * empty or partial file; and the flush is where a deferred write error (a full disk under
 * delayed allocation, NFS) shows while the temporary name can still be removed. Every call
 * that creates, writes or renames goes through sysio.h, whose fault plan tests use.
 *
 * Scratch files (oc_scratch_open) hold data on its way to an output, never an output: they
 * are unlinked as soon as they exist, so no crash can leave one behind.
 */
#include <ctype.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/context.h"
#include "core/error.h"
#include "io/io.h"
#include "io/sysio.h"

const char *oc_path_extension(const char *path, char *buf, size_t bufsize)
{
    if (bufsize == 0) return buf;
    buf[0] = '\0';
    if (!path) return buf;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    /* Leading dots are part of the name (".bashrc", "..npy"), as os.path.splitext says. */
    while (*base == '.') ++base;
    const char *dot = strrchr(base, '.');
    if (!dot) return buf;
    size_t k = 0;
    for (const char *p = dot + 1; *p && k + 1 < bufsize; ++p) buf[k++] = (char)tolower((unsigned char)*p);
    buf[k] = '\0';
    return buf;
}

oc_status oc_create_fail(oc_context *ctx, const char *path, const char *what, int err)
{
    char dir[4096];
    oc_path_folder(path, dir, sizeof dir);
    switch (err) {
    case ENOENT: {
        /* A folder that is there but takes no new files (/proc, /sys) says ENOENT too. */
        struct stat sb;
        if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode))
            return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write %s: folder %s takes no new files (%s)", path, what, dir,
                           strerror(err));
        return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write %s: folder %s does not exist", path, what, dir);
    }
    case ENOTDIR:
        return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write %s: %s is not a folder", path, what, dir);
    case EACCES:
    case EPERM:
        return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write %s: no write permission in folder %s", path, what, dir);
    case EROFS:
        return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write %s: folder %s is on a read-only file system", path, what,
                       dir);
    case ENAMETOOLONG:
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: cannot write %s: its temporary name beside it is too long for "
                       "the file system",
                       path, what);
    case ENOSPC: /* the file system ran out of room (or of inodes), or its device failed */
    case EDQUOT:
    case EIO:
        return oc_io_fail(ctx, "creating", path, err, -1, -1, -1);
    default:
        return oc_fail(ctx, oc_open_fail_status(err), "%s: cannot create %s in folder %s: %s", path, what, dir,
                       strerror(err));
    }
}

/* RANDOM of a temporary name: 8 characters from getrandom, or, where it fails, from the
 * clock and the address of f (O_EXCL still settles any collision). */
static void random_suffix(char out[9], const void *f)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char bytes[8];
    if (getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != (ssize_t)sizeof bytes) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        uint64_t seed = (uint64_t)now.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32 ^ (uintptr_t)f;
        for (int k = 0; k < 8; ++k) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            bytes[k] = (unsigned char)seed;
        }
    }
    for (int k = 0; k < 8; ++k) out[k] = alphabet[bytes[k] % (sizeof alphabet - 1)];
    out[8] = '\0';
}

int oc_tmpfile_folder_open(const char *path)
{
    char folder[4096];
    oc_path_folder(path, folder, sizeof folder);
    return open(folder, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* Where f's names are resolved: its folder's handle and the names in it, or (no handle) the
 * working folder and the paths. */
static int folder_of(const oc_tmpfile *f) { return f->dir >= 0 ? f->dir : AT_FDCWD; }
static const char *temp_name(const oc_tmpfile *f) { return f->dir >= 0 ? oc_path_name(f->tmp_path) : f->tmp_path; }
static const char *final_name(const oc_tmpfile *f) { return f->dir >= 0 ? oc_path_name(f->path) : f->path; }

/* Takes the new temporary's lock and checks that it is still this job's: 1, or 0 when a
 * sweep removed it (or holds it to remove it), the descriptor then closed and a name still
 * on it removed. Another host's (or PID namespace's) sweep of stale temporaries, which cannot
 * see this process run, may remove a new temporary before its lock is taken. */
static int lock_own(oc_context *ctx, oc_tmpfile *f)
{
    if (ctx && oc_fault_plan_next(&ctx->faults, OC_FAULT_SWEEP) != OC_FAULT_NONE)
        (void)unlinkat(folder_of(f), temp_name(f), 0); /* the sweep, for the tests (fault.h) */
    /* Held while the file is open: a later run sees a live job's temporary by it. A lock
     * that cannot be taken at all (a file system without flock) leaves it unheld, as before. */
    const int held_elsewhere = flock(f->fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    const int own_name = oc_sys_path_names(f->fd, folder_of(f), temp_name(f));
    if (!held_elsewhere && own_name) return 1;
    if (own_name) (void)unlinkat(folder_of(f), temp_name(f), 0);
    close(f->fd);
    f->fd = -1;
    return 0;
}

oc_status oc_tmpfile_open(oc_context *ctx, const char *path, oc_tmpfile *f)
{
    if (!path || !f) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_tmpfile_open: NULL argument");
    f->path = f->tmp_path = NULL;
    f->fd = f->dir = -1;
    f->mode = 0;
    oc_output_prior prior;
    OC_CHECK(ctx, oc_output_path_check(ctx, path, &prior));
    oc_stale_temps_remove(ctx, path);

    size_t len = strlen(path), cap = len + OC_TMP_SUFFIX_MAX + 1;
    f->path = malloc(len + 1);
    f->tmp_path = malloc(cap);
    if (!f->path || !f->tmp_path) {
        oc_tmpfile_abort(f);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory for the output name", path);
    }
    memcpy(f->path, path, len + 1);
    f->dir = oc_tmpfile_folder_open(path);
    if (f->dir < 0) {
        int err = errno;
        free(f->tmp_path);
        f->tmp_path = NULL; /* nothing was created: abort must not unlink */
        oc_tmpfile_abort(f);
        return oc_create_fail(ctx, path, "the output", err);
    }

    /* Not mkstemp: it creates mode 0600, and an output should get the permissions any other
     * new file gets (0666 less the umask), or those of the file it replaces. O_EXCL (which
     * never follows a symbolic link) settles races; O_NOFOLLOW says so twice. */
    int swept = 0;
    for (int attempt = 0; attempt < 100 && f->fd < 0; ++attempt) {
        char suffix[9];
        random_suffix(suffix, f);
        snprintf(f->tmp_path, cap, "%s.tmp-%ld-%s", path, (long)getpid(), suffix);
        f->fd = oc_sys_openat(ctx, f->dir, temp_name(f), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (f->fd >= 0) {
            swept += !lock_own(ctx, f);
            continue;
        }
        if (errno != EEXIST) {
            int err = errno;
            free(f->tmp_path);
            f->tmp_path = NULL; /* nothing was created: abort must not unlink */
            oc_tmpfile_abort(f);
            return oc_create_fail(ctx, path, "the output", err);
        }
    }
    if (f->fd < 0) {
        free(f->tmp_path);
        f->tmp_path = NULL;
        oc_tmpfile_abort(f);
        if (swept)
            return oc_fail(ctx, OC_ERR_IO,
                           "%s: its temporary file beside it was removed by another process %d times as it was made",
                           path, swept);
        return oc_fail(ctx, OC_ERR_IO, "%s: could not find a free temporary name beside it", path);
    }
    if (prior.exists) {
        /* The replaced file's owner (only root can give a file away) and mode. */
        if (geteuid() == 0 && fchown(f->fd, prior.uid, prior.gid) != 0) {
            /* Best effort: where owners cannot be given (some network file systems), the new
             * file stays root's, as a file written by root is. */
        }
        f->mode = (unsigned)(prior.mode & 0777);
        if (fchmod(f->fd, (mode_t)(f->mode | S_IRUSR | S_IWUSR)) != 0) {
            int err = errno;
            oc_tmpfile_abort(f);
            return oc_fail(ctx, OC_ERR_IO, "%s: cannot give the new file the mode %04o of the old: %s", path, f->mode,
                           strerror(err));
        }
    }
    return OC_OK;
}

/* Whether the folder f->path names is still the one its temporary was made in (it was not
 * moved or removed meanwhile). */
static int folder_in_place(const oc_tmpfile *f)
{
    char folder[4096];
    oc_path_folder(f->path, folder, sizeof folder);
    struct stat made, named;
    if (f->dir < 0 || fstat(f->dir, &made) != 0) return 1; /* nothing to compare */
    return stat(folder, &named) == 0 && named.st_dev == made.st_dev && named.st_ino == made.st_ino;
}

/* Fails the commit with the one line `what` after removing the temporary; where it cannot
 * be removed, the line names it where it is now (a moved folder's new place, which
 * /proc/self/fd tells), and how to remove it. */
static oc_status fail_removing(oc_context *ctx, oc_tmpfile *f, const char *what)
{
    if (unlinkat(folder_of(f), temp_name(f), 0) == 0 || errno == ENOENT) {
        free(f->tmp_path);
        f->tmp_path = NULL;
        return oc_fail(ctx, OC_ERR_IO, "%s", what);
    }
    const int err = errno;
    char left[4096 + 256], output[4096 + 256];
    snprintf(left, sizeof left, "%s", f->tmp_path);
    snprintf(output, sizeof output, "%s", f->path);
    char link[64], now[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", f->dir);
    ssize_t n = f->dir >= 0 && !folder_in_place(f) ? readlink(link, now, sizeof now - 1) : -1;
    if (n > 0) {
        now[n] = '\0';
        snprintf(left, sizeof left, "%s/%s", now, temp_name(f));
        snprintf(output, sizeof output, "%s/%s", now, final_name(f));
    }
    free(f->tmp_path);
    f->tmp_path = NULL; /* left: abort must not try again */
    return oc_fail(ctx, OC_ERR_IO,
                   "%s; its temporary %s is left (%s): 'outcore clean %s' removes it once the folder can be written",
                   what, left, strerror(err), output);
}

oc_status oc_tmpfile_commit(oc_context *ctx, oc_tmpfile *f)
{
    if (!f || f->fd < 0 || !f->tmp_path)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_tmpfile_commit: the file is not open");
    char what[4096 + 512], folder[4096];
    oc_path_folder(f->path, folder, sizeof folder);
    oc_status st = OC_OK;
    if (f->mode && fchmod(f->fd, (mode_t)f->mode) != 0) {
        snprintf(what, sizeof what, "%s: cannot give the new file the mode %04o of the old: %s", f->path, f->mode,
                 strerror(errno));
        goto failed;
    }
    if (oc_sys_fsync(ctx, f->fd) != 0) {
        oc_io_describe(what, sizeof what, "flushing", f->path, errno, -1, -1, -1);
        goto failed;
    }
    /* close() can report a deferred write error (NFS); a file that failed there is not done. */
    int rc = oc_sys_close(ctx, f->fd);
    f->fd = -1;
    if (rc != 0) {
        oc_io_describe(what, sizeof what, "writing", f->path, errno, -1, -1, -1);
        goto failed;
    }
    /* Renamed within the folder it was made in, and only while path still names that folder:
     * a folder moved meanwhile would otherwise get the file at its new place, which is not
     * the output asked for. */
    if (!folder_in_place(f)) {
        snprintf(what, sizeof what,
                 "%s: the output's folder %s was moved or removed while the job ran: nothing written", f->path, folder);
        goto failed;
    }
    if (oc_sys_renameat(ctx, folder_of(f), temp_name(f), folder_of(f), final_name(f)) != 0) {
        /* A folder made read-only meanwhile refuses the removal too: the message names what
         * is left, and how to remove it once it can be. */
        oc_io_describe(what, sizeof what, "renaming the finished output to", f->path, errno, -1, -1, -1);
        goto failed;
    }
    free(f->tmp_path);
    f->tmp_path = NULL;
    (void)oc_sys_flush_folder(ctx, folder); /* the new name, as durable as the data under it */
    oc_tmpfile_abort(f);
    return OC_OK;
failed:
    st = fail_removing(ctx, f, what);
    oc_tmpfile_abort(f);
    return st;
}

void oc_tmpfile_abort(oc_tmpfile *f)
{
    if (!f) return;
    if (f->tmp_path) unlinkat(folder_of(f), temp_name(f), 0);
    oc_tmpfile_release(f);
}

void oc_tmpfile_release(oc_tmpfile *f)
{
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    if (f->dir >= 0) close(f->dir);
    free(f->tmp_path);
    free(f->path);
    f->tmp_path = f->path = NULL;
    f->fd = f->dir = -1;
}

const char *oc_scratch_dir(void)
{
    const char *dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

int oc_scratch_open(oc_context *ctx, char *tmpl)
{
    int fd = oc_sys_mkstemp(ctx, tmpl);
    if (fd >= 0) unlink(tmpl); /* a failed unlink leaves a name, not lost data: nothing to report */
    return fd;
}
