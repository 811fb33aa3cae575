/*
 * tmpfile.c - write-then-rename: every output is created as PATH.tmp-XXXXXX beside PATH and
 * renamed over PATH only when complete.
 *
 * The temporary file lives in the destination directory because rename(2) is atomic only
 * within one file system; a reader of PATH sees either the old file or the finished new one.
 * A missing or unwritable directory is found here, before any work starts, and reported as
 * bad input naming the path.
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
    const char *dot = strrchr(base, '.');
    /* ".bashrc" is a name, not an extension, as os.path.splitext says. */
    if (!dot || dot == base) return buf;
    size_t k = 0;
    for (const char *p = dot + 1; *p && k + 1 < bufsize; ++p) buf[k++] = (char)tolower((unsigned char)*p);
    buf[k] = '\0';
    return buf;
}

/* The directory part of path, for messages ("." when path has none). */
static void path_directory(const char *path, char *buf, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, size, ".");
    else if (slash == path)
        snprintf(buf, size, "/");
    else
        snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

oc_status oc_create_fail(oc_context *ctx, const char *path, const char *what, int err)
{
    char dir[4096];
    path_directory(path, dir, sizeof dir);
    switch (err) {
    case ENOENT:
        return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write %s: directory %s does not exist", path, what, dir);
    case ENOTDIR: return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write %s: %s is not a directory", path, what, dir);
    case EACCES:
    case EPERM:
        return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write %s: no write permission in directory %s", path, what, dir);
    case EROFS:
        return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write %s: directory %s is on a read-only file system", path,
                       what, dir);
    case ENOSPC: /* the file system ran out of room (or of inodes), or its device failed */
    case EDQUOT:
    case EIO: return oc_io_fail(ctx, "creating", path, err, -1, -1, -1);
    default: return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot create %s in directory %s: %s", path, what, dir, strerror(err));
    }
}

oc_status oc_tmpfile_open(oc_context *ctx, const char *path, oc_tmpfile *f)
{
    if (!path || !f) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_tmpfile_open: NULL argument");
    f->path = f->tmp_path = NULL;
    f->fd = -1;
    if (path[0] == '\0') return oc_fail(ctx, OC_ERR_INPUT, "the output path is empty");
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return oc_fail(ctx, OC_ERR_INPUT, "%s: the output path is a directory", path);

    size_t len = strlen(path);
    f->path = malloc(len + 1);
    f->tmp_path = malloc(len + sizeof ".tmp-XXXXXX");
    if (!f->path || !f->tmp_path) {
        oc_tmpfile_abort(f);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory for the output name", path);
    }
    memcpy(f->path, path, len + 1);

    /* Not mkstemp: it creates mode 0600, and an output should get the permissions any other
     * new file gets (0666 less the umask). The name is random enough; O_EXCL settles races. */
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t seed = (uint64_t)now.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32 ^ (uintptr_t)f;
    for (int attempt = 0; attempt < 100; ++attempt) {
        char suffix[7];
        for (int k = 0; k < 6; ++k) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            suffix[k] = alphabet[seed % (sizeof alphabet - 1)];
        }
        suffix[6] = '\0';
        snprintf(f->tmp_path, len + sizeof ".tmp-XXXXXX", "%s.tmp-%s", path, suffix);
        f->fd = oc_sys_open(ctx, f->tmp_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (f->fd >= 0) return OC_OK;
        if (errno != EEXIST) {
            int err = errno;
            free(f->tmp_path);
            f->tmp_path = NULL; /* nothing was created: abort must not unlink */
            oc_tmpfile_abort(f);
            return oc_create_fail(ctx, path, "the output", err);
        }
    }
    free(f->tmp_path);
    f->tmp_path = NULL;
    oc_tmpfile_abort(f);
    return oc_fail(ctx, OC_ERR_IO, "%s: could not find a free temporary name beside it", path);
}

oc_status oc_tmpfile_commit(oc_context *ctx, oc_tmpfile *f)
{
    if (!f || f->fd < 0 || !f->tmp_path)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_tmpfile_commit: the file is not open");
    oc_status st = OC_OK;
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
        st = oc_io_fail(ctx, "renaming the finished output to", f->path, errno, -1, -1, -1);
        goto cleanup;
    }
    free(f->tmp_path);
    f->tmp_path = NULL;
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
