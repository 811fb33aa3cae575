/*
 * output_path.c - whether a path can take an output, checked before any work (io.h,
 * oc_output_check in outcore.h).
 *
 * An output is written as a new file beside its name and renamed over it, so what the name
 * holds now decides what the rename would do:
 *
 *   nothing             a new file appears (its folder must exist and take new files)
 *   a regular file      it is replaced, if the user may write it, as cp without -f would
 *                       replace it; the new file gets its mode (and, under root, its owner);
 *                       refused when append-only or immutable (chattr +a, +i), as is a
 *                       folder with either, where no rename can happen
 *   a folder            refused: "adir is a folder"
 *   a symbolic link     the link is replaced by the new file; what it points to is not
 *                       touched (a link to a folder is refused as the folder is)
 *   a pipe, a socket,
 *   a device            refused: the rename would replace it (or, as root, /dev/null)
 *
 * and every name written beside it (PATH.tmp-PID-RANDOM, the journal's) must fit the file
 * system's NAME_MAX.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/io.h"

void oc_path_folder(const char *path, char *buf, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(buf, size, ".");
    else if (slash == path) snprintf(buf, size, "/");
    else snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

const char *oc_path_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

oc_status oc_output_name_fits(oc_context *ctx, const char *path, const char *side, size_t extra)
{
    char dir[4096];
    oc_path_folder(path, dir, sizeof dir);
    const char *slash = strrchr(path, '/');
    size_t len = strlen(slash ? slash + 1 : path) + strlen(side) + extra;
    long name_max = pathconf(dir, _PC_NAME_MAX);
    if (name_max <= 0) name_max = NAME_MAX;
    if ((long)len <= name_max) return OC_OK;
    long room = name_max - (long)(strlen(side) + extra);
    return oc_fail(ctx, OC_ERR_INPUT,
                   "%s: the name is too long: the file written beside it (NAME%s.tmp-PID-RANDOM) would have %zu "
                   "characters, more than the %ld its file system allows; use a name of at most %ld characters",
                   path, side, len, name_max, room > 0 ? room : 0);
}

/* The kind of a file that is not regular, for messages. */
static const char *file_kind(mode_t mode)
{
    if (S_ISFIFO(mode)) return "a named pipe";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "not a regular file";
}

oc_status oc_output_npy_name(oc_context *ctx, const char *path, const char *what)
{
    char ext[16];
    if (!*path) return oc_fail(ctx, OC_ERR_INPUT, "the output path is empty");
    if (strcmp(oc_path_extension(path, ext, sizeof ext), "npy") != 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: %s as .npy; the name must end in .npy", path, what);
    return OC_OK;
}

/* What keeps a name from being renamed over or out of a folder: "append-only (chattr +a)" or
 * "immutable (chattr +i)" of the file or folder at path (its inode flags), else NULL (also
 * where they cannot be read: a file system without them, a file the user may not open). */
static const char *rename_barrier(const char *path, int folder)
{
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | (folder ? O_DIRECTORY : 0));
    int flags = 0;
    const int got = fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (fd >= 0) close(fd);
    if (!got) return NULL;
    if (flags & FS_IMMUTABLE_FL) return "immutable (chattr +i)";
    if (flags & FS_APPEND_FL) return "append-only (chattr +a)";
    return NULL;
}

oc_status oc_output_path_check(oc_context *ctx, const char *path, oc_output_prior *prior)
{
    if (prior) *prior = (oc_output_prior){0};
    if (!path) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "output path is NULL");
    if (path[0] == '\0') return oc_fail(ctx, OC_ERR_INPUT, "the output path is empty");
    char dir[4096];
    oc_path_folder(path, dir, sizeof dir);
    struct stat sb, target;
    if (stat(dir, &sb) != 0) {
        if (errno == ENOENT)
            return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write the output: folder %s does not exist", path, dir);
        if (errno == ENOTDIR)
            return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write the output: %s is not a folder", path, dir);
        return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write the output: folder %s: %s", path, dir, strerror(errno));
    }
    if (!S_ISDIR(sb.st_mode))
        return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write the output: %s is not a folder", path, dir);
    const struct stat folder = sb;
    /* No entry of such a folder can be renamed: the finished file would stay a temporary. */
    const char *barrier = rename_barrier(dir, 1);
    if (barrier)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: cannot write the output: folder %s is %s, so no finished file can be renamed into "
                       "place in it",
                       path, dir, barrier);
    if (faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0) {
        if (errno == EROFS)
            return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write the output: folder %s is on a read-only file system",
                           path, dir);
        if (errno == EACCES)
            return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write the output: no write permission in folder %s", path,
                           dir);
    }
    if (lstat(path, &sb) != 0) {
        if (errno != ENOENT)
            return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write the output: %s", path, strerror(errno));
    } else if ((folder.st_mode & S_ISVTX) && geteuid() != 0 && sb.st_uid != geteuid() && folder.st_uid != geteuid()) {
        /* A sticky folder (/tmp) lets only a name's owner (or the folder's) replace it: the
         * rename at the end would fail after all the work. */
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: cannot replace the output: it is another user's (uid %u) in the sticky folder %s, "
                       "where only its owner may replace it; remove it or choose another name",
                       path, (unsigned)sb.st_uid, dir);
    } else if (S_ISDIR(sb.st_mode) || (S_ISLNK(sb.st_mode) && stat(path, &target) == 0 && S_ISDIR(target.st_mode))) {
        return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write the output: %s is a folder", path, path);
    } else if (S_ISLNK(sb.st_mode)) {
        /* Replaced by the new file; its target is not touched. */
    } else if (!S_ISREG(sb.st_mode)) {
        return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot write the output: it is %s, not a regular file", path,
                       file_kind(sb.st_mode));
    } else {
        /* The rename at the end would fail after all the work. */
        if ((barrier = rename_barrier(path, 0)))
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: cannot replace the output: it is %s, which the new file cannot be renamed over; "
                           "remove the attribute (chattr) or choose another name",
                           path, barrier);
        if (!(sb.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)))
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: cannot replace the output: it is read-only (mode %04o); remove it "
                           "or make it writable first",
                           path, (unsigned)(sb.st_mode & 07777));
        if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) != 0 && errno != EROFS)
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: cannot replace the output: you may not write it (owner uid %u, "
                           "mode %04o); remove it or choose another name",
                           path, (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 07777));
        if (prior) *prior = (oc_output_prior){.exists = 1, .mode = sb.st_mode, .uid = sb.st_uid, .gid = sb.st_gid};
    }
    return oc_output_name_fits(ctx, path, "", OC_TMP_SUFFIX_MAX);
}

oc_status oc_output_check(oc_context *ctx, const char *path)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    return oc_output_path_check(ctx, path, NULL);
}
