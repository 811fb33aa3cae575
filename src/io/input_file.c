/* input_file.c - opening inputs (input_file.h). */
#include "io/input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "io/sysio.h"

/* What a file that is not a regular file is, for its message. */
static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a named pipe";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    return "not a file";
}

static oc_status not_regular(oc_context *ctx, const char *path, mode_t mode)
{
    return oc_fail(ctx, OC_ERR_INPUT, "%s: not a regular file (%s)", path, file_kind(mode));
}

oc_status oc_input_open(oc_context *ctx, const char *path, int *fd, struct stat *sb)
{
    *fd = -1;
    if (!path[0]) return oc_fail(ctx, OC_ERR_INPUT, "an input file's name is empty");
    /* Refused before opening: opening a device can have effects of its own. The descriptor's
     * own fstat below decides, so a file swapped in between is still seen for what it is. */
    if (stat(path, sb) == 0 && !S_ISREG(sb->st_mode)) return not_regular(ctx, path, sb->st_mode);
    /* O_NONBLOCK: a named pipe put in place since the stat opens at once instead of waiting
     * for a writer; O_NOCTTY: a terminal never becomes the controlling one. */
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (f < 0) {
        int err = errno;
        if (err == ENOENT) return oc_fail(ctx, OC_ERR_INPUT, "%s: no such file", path);
        if (err == EACCES) return oc_fail(ctx, OC_ERR_INPUT, "%s: permission denied", path);
        if (err == ENXIO && stat(path, sb) == 0) return not_regular(ctx, path, sb->st_mode); /* a socket */
        return oc_fail(ctx, oc_open_fail_status(err), "%s: cannot open: %s", path, strerror(err));
    }
    if (fstat(f, sb) != 0) {
        int err = errno;
        close(f);
        return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot stat: %s", path, strerror(err));
    }
    if (!S_ISREG(sb->st_mode)) {
        close(f);
        return not_regular(ctx, path, sb->st_mode);
    }
    /* Reads of a regular file block as usual. */
    int flags = fcntl(f, F_GETFL);
    if (flags >= 0) fcntl(f, F_SETFL, flags & ~O_NONBLOCK);
    *fd = f;
    return OC_OK;
}

oc_status oc_input_changed_at(oc_context *ctx, const char *file, int line, const char *path, int64_t now,
                              int64_t expected)
{
    return oc_fail_at(ctx, OC_ERR_INPUT, file, line,
                      "%s: the file changed while being read (now %" PRId64 " bytes, expected %" PRId64 ")", path, now,
                      expected);
}

oc_status oc_input_check_size(oc_context *ctx, const char *path, int fd, int64_t expected)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0 || (int64_t)sb.st_size == expected) return OC_OK;
    return oc_input_changed(ctx, path, (int64_t)sb.st_size, expected);
}
