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
 * whether its job still runs), and takes the mode of the file it replaces.
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

oc_status oc_tmpfile_open(oc_context *ctx, const char *path, oc_tmpfile *f)
{
    if (!path || !f) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_tmpfile_open: NULL argument");
    f->path = f->tmp_path = NULL;
    f->fd = -1;
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

    /* Not mkstemp: it creates mode 0600, and an output should get the permissions any other
     * new file gets (0666 less the umask), or those of the file it replaces. O_EXCL (which
     * never follows a symbolic link) settles races; O_NOFOLLOW says so twice. */
    for (int attempt = 0; attempt < 100; ++attempt) {
        char suffix[9];
        random_suffix(suffix, f);
        snprintf(f->tmp_path, cap, "%s.tmp-%ld-%s", path, (long)getpid(), suffix);
        f->fd = oc_sys_open(ctx, f->tmp_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (f->fd >= 0) break;
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
        return oc_fail(ctx, OC_ERR_IO, "%s: could not find a free temporary name beside it", path);
    }
    /* Held while the file is open: a later run sees a live job's temporary by it. */
    (void)flock(f->fd, LOCK_EX | LOCK_NB);
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

oc_status oc_tmpfile_commit(oc_context *ctx, oc_tmpfile *f)
{
    if (!f || f->fd < 0 || !f->tmp_path)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_tmpfile_commit: the file is not open");
    oc_status st = OC_OK;
    if (f->mode && fchmod(f->fd, (mode_t)f->mode) != 0) {
        st = oc_fail(ctx, OC_ERR_IO, "%s: cannot give the new file the mode %04o of the old: %s", f->path, f->mode,
                     strerror(errno));
        goto cleanup;
    }
    if (oc_sys_fsync(ctx, f->fd) != 0) {
        st = oc_io_fail(ctx, "flushing", f->path, errno, -1, -1, -1);
        goto cleanup;
    }
    /* close() can report a deferred write error (NFS); a file that failed there is not done. */
    int rc = oc_sys_close(ctx, f->fd);
    f->fd = -1;
    if (rc != 0) {
        st = oc_io_fail(ctx, "writing", f->path, errno, -1, -1, -1);
        goto cleanup;
    }
    if (oc_sys_rename(ctx, f->tmp_path, f->path) != 0) {
        const int err = errno;
        char what[4096 + 512];
        oc_io_describe(what, sizeof what, "renaming the finished output to", f->path, err, -1, -1, -1);
        /* A folder made read-only meanwhile refuses the removal too: the message names what
         * is left, and how to remove it once it can be. */
        if (unlink(f->tmp_path) == 0 || errno == ENOENT) st = oc_fail(ctx, OC_ERR_IO, "%s", what);
        else
            st = oc_fail(ctx, OC_ERR_IO,
                         "%s; its temporary %s is left (%s): 'outcore clean %s' removes it once the folder can be "
                         "written",
                         what, f->tmp_path, strerror(errno), f->path);
        goto cleanup;
    }
    free(f->tmp_path);
    f->tmp_path = NULL;
    char folder[4096];
    oc_path_folder(f->path, folder, sizeof folder);
    (void)oc_sys_flush_folder(ctx, folder); /* the new name, as durable as the data under it */
cleanup:
    oc_tmpfile_abort(f);
    return st;
}

void oc_tmpfile_abort(oc_tmpfile *f)
{
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    if (f->tmp_path) unlink(f->tmp_path);
    free(f->tmp_path);
    free(f->path);
    f->tmp_path = f->path = NULL;
    f->fd = -1;
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
