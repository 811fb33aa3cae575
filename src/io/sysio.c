/* sysio.c - write-side system calls behind the fault plan, and their messages (sysio.h). */
#include "io/sysio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/text_buf.h"
#include "core/context.h"
#include "core/error.h"
#include "core/threads.h"

/* How the next call of `call` must go: OC_FAULT_NONE when it runs as asked. */
static oc_fault_mode next_fault(oc_context *ctx, oc_fault_call call)
{
    return ctx ? oc_fault_plan_next(&ctx->faults, call) : OC_FAULT_NONE;
}

/* Sets errno for an injected failure; returns -1 for the caller to return. */
static int injected(oc_fault_mode mode)
{
    errno = mode == OC_FAULT_ENOSPC ? ENOSPC : EIO;
    return -1;
}

/* A write that must fail fails; one that must be short asks for half (a 1-byte write cannot
 * be short and goes whole). */
static int write_fault(oc_context *ctx, size_t *len)
{
    oc_fault_mode mode = next_fault(ctx, OC_FAULT_WRITE);
    if (mode == OC_FAULT_SHORT) {
        if (*len > 1) *len /= 2;
        return 0;
    }
    return mode == OC_FAULT_NONE ? 0 : injected(mode);
}

int oc_sys_open(oc_context *ctx, const char *path, int flags, mode_t mode)
{
    return oc_sys_openat(ctx, AT_FDCWD, path, flags, mode);
}

int oc_sys_openat(oc_context *ctx, int dirfd, const char *path, int flags, mode_t mode)
{
    oc_fault_mode f = next_fault(ctx, OC_FAULT_OPEN);
    return f == OC_FAULT_NONE ? openat(dirfd, path, flags, mode) : injected(f);
}

int oc_sys_mkstemp(oc_context *ctx, char *tmpl)
{
    oc_fault_mode f = next_fault(ctx, OC_FAULT_OPEN);
    return f == OC_FAULT_NONE ? mkostemp(tmpl, O_CLOEXEC) : injected(f);
}

ssize_t oc_sys_write(oc_context *ctx, int fd, const void *buf, size_t len)
{
    return write_fault(ctx, &len) ? -1 : write(fd, buf, len);
}

int oc_sys_write_planned(oc_context *ctx, size_t *len) { return write_fault(ctx, len); }

ssize_t oc_sys_pwrite(oc_context *ctx, int fd, const void *buf, size_t len, off_t off)
{
    return write_fault(ctx, &len) ? -1 : pwrite(fd, buf, len, off);
}

ssize_t oc_sys_copy_file_range(oc_context *ctx, int fd_in, off_t *off_in, int fd_out, size_t len)
{
    if (write_fault(ctx, &len)) return -1;
    loff_t in = *off_in;
    ssize_t c = copy_file_range(fd_in, &in, fd_out, NULL, len, 0);
    *off_in = (off_t)in;
    return c;
}

int oc_sys_ftruncate(oc_context *ctx, int fd, off_t len)
{
    oc_fault_mode f = next_fault(ctx, OC_FAULT_TRUNCATE);
    return f == OC_FAULT_NONE ? ftruncate(fd, len) : injected(f);
}

int oc_sys_fallocate(oc_context *ctx, int fd, off_t off, off_t len)
{
    oc_fault_mode f = next_fault(ctx, OC_FAULT_TRUNCATE);
    return f == OC_FAULT_NONE ? fallocate(fd, 0, off, len) : injected(f);
}

void *oc_sys_mmap_shared(oc_context *ctx, int fd, size_t len)
{
    oc_fault_mode f = next_fault(ctx, OC_FAULT_MMAP);
    if (f != OC_FAULT_NONE) return injected(f), MAP_FAILED;
    return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
}

int oc_sys_msync(oc_context *ctx, void *addr, size_t len)
{
    oc_fault_mode f = next_fault(ctx, OC_FAULT_FSYNC);
    return f == OC_FAULT_NONE ? msync(addr, len, MS_SYNC) : injected(f);
}

int oc_sys_fsync(oc_context *ctx, int fd)
{
    oc_fault_mode f = next_fault(ctx, OC_FAULT_FSYNC);
    return f == OC_FAULT_NONE ? fsync(fd) : injected(f);
}

int oc_sys_close(oc_context *ctx, int fd)
{
    oc_fault_mode f = next_fault(ctx, OC_FAULT_CLOSE);
    if (f == OC_FAULT_NONE) return close(fd);
    close(fd); /* the descriptor is gone either way, as after a real failure of close */
    return injected(f);
}

int oc_sys_renameat(oc_context *ctx, int fromdir, const char *from, int todir, const char *to)
{
    oc_fault_mode f = next_fault(ctx, OC_FAULT_RENAME);
    return f == OC_FAULT_NONE ? renameat(fromdir, from, todir, to) : injected(f);
}

int oc_sys_rename_noreplace(oc_context *ctx, const char *from, const char *to)
{
    oc_fault_mode f = next_fault(ctx, OC_FAULT_RENAME);
    if (f != OC_FAULT_NONE) return injected(f);
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
    if (link(from, to) == 0) return unlink(from) == 0 || errno == ENOENT ? 0 : -1;
    if (errno == EEXIST) return -1;
    return rename(from, to);
}

int oc_sys_flush_folder(oc_context *ctx, const char *folder)
{
    oc_fault_mode f = next_fault(ctx, OC_FAULT_FLUSH_FOLDER);
    if (f != OC_FAULT_NONE) return injected(f), errno;
    const int fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno;
    const int err = fsync(fd) == 0 ? 0 : errno;
    close(fd);
    return err;
}

int oc_sys_write_all(oc_context *ctx, int fd, const void *buf, size_t len, int64_t off)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = off < 0 ? oc_sys_write(ctx, fd, p, len) : oc_sys_pwrite(ctx, fd, p, len, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return errno;
        /* A regular file that takes nothing and says no error would make this loop spin. */
        if (w == 0) return EIO;
        p += w, len -= (size_t)w;
        if (off >= 0) off += w;
    }
    return 0;
}

int64_t oc_address_space_limit(void)
{
    struct rlimit as;
    return getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY ? (int64_t)as.rlim_cur : -1;
}

int64_t oc_sys_file_size(int fd)
{
    struct stat sb;
    return fd >= 0 && fstat(fd, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

int oc_sys_lock_released(int fd, const oc_context *ctx)
{
    const struct timespec pause = {0, 10 * 1000 * 1000};
    const double end = oc_now() + OC_LOCK_RELEASE_WAIT;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
        if (errno != EWOULDBLOCK || oc_now() >= end) return -1;
        if (oc_cancelled(ctx)) {
            errno = ECANCELED;
            return -1;
        }
        nanosleep(&pause, NULL);
    }
}

int oc_sys_path_names(int fd, int dir, const char *path)
{
    struct stat held, named;
    return fstat(fd, &held) == 0 && held.st_nlink > 0 && fstatat(dir, path, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
           named.st_dev == held.st_dev && named.st_ino == held.st_ino;
}

int oc_sys_file_held_here(int fd)
{
    struct stat want;
    if (fstat(fd, &want) != 0) return 0;
    int held = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        struct dirent *e;
        while (!held && (e = readdir(d))) {
            char *end;
            const long other = strtol(e->d_name, &end, 10);
            struct stat sb;
            if (*end || end == e->d_name || other == fd || other == dirfd(d)) continue;
            held = fstat((int)other, &sb) == 0 && sb.st_dev == want.st_dev && sb.st_ino == want.st_ino;
        }
        closedir(d);
    }
    /* A mapping outlives its descriptor: "address perms offset major:minor inode path". */
    FILE *maps = held ? NULL : fopen("/proc/self/maps", "re");
    char line[8192];
    while (maps && !held && fgets(line, sizeof line, maps)) {
        unsigned major, minor;
        unsigned long long inode;
        held = sscanf(line, "%*s %*s %*s %x:%x %llu", &major, &minor, &inode) == 3 &&
               inode == (unsigned long long)want.st_ino && makedev(major, minor) == want.st_dev;
    }
    if (maps) fclose(maps);
    return held;
}

/* ---------------------------------------------------------------- messages */

/* The decimal unit people read sizes in for `big` bytes: its scale and name (bytes below 1 kB). */
static double size_unit(int64_t big, const char **name)
{
    static const char *const units[] = {"bytes", "kB", "MB", "GB", "TB", "PB"};
    double scale = 1;
    int unit = 0;
    while ((double)big >= 1000.0 * scale && unit < 5) scale *= 1000.0, unit++;
    *name = units[unit];
    return scale;
}

/* v in the unit chosen for `big`: "1.2" or, in bytes, "512". */
static void size_in(char *buf, size_t size, int64_t v, double scale)
{
    if (scale == 1) oc_snprintf(buf, size, "%lld", (long long)v);
    else oc_snprintf(buf, size, "%.1f", (double)v / scale);
}

void oc_size_text(char *buf, size_t size, int64_t bytes)
{
    const char *unit;
    char v[24];
    size_in(v, sizeof v, bytes, size_unit(bytes, &unit));
    oc_snprintf(buf, size, "%s %s", v, unit);
}

/* A file system that reports no size (some FUSE and network ones) says nothing of its space. */
static int64_t vfs_avail(const struct statvfs *vfs)
{
    return vfs->f_blocks == 0 ? -1 : (int64_t)vfs->f_bavail * (int64_t)vfs->f_frsize;
}

int64_t oc_folder_free_bytes(const char *folder)
{
    struct statvfs vfs;
    return statvfs(folder, &vfs) == 0 ? vfs_avail(&vfs) : -1;
}

oc_status oc_sys_check_space(oc_context *ctx, int fd, const char *name, int64_t need)
{
    struct statvfs vfs;
    struct stat sb;
    if (fstatvfs(fd, &vfs) != 0 || fstat(fd, &sb) != 0 || vfs_avail(&vfs) < 0) return OC_OK;
    /* What the file holds already (a resumed output) is not needed again. */
    int64_t have = (int64_t)sb.st_blocks * 512, avail = vfs_avail(&vfs);
    if (need - have <= avail) return OC_OK;
    char a[40], b[40];
    oc_size_text(a, sizeof a, need);
    oc_size_text(b, sizeof b, avail);
    return oc_fail(ctx, OC_ERR_IO, "disk full writing %s: it needs %s, its file system has %s free", name, a, b);
}

/* "1.2 of 4.0 GB written", "1.2 GB written" (total < 0), "4.0 GB needed, 1.2 GB free". */
static void progress_text(char *buf, size_t size, int err, int64_t done, int64_t total, int free_fd)
{
    const char *unit;
    char a[32], b[32];
    struct statvfs vfs;
    if (done >= 0) {
        double scale = size_unit(done > total ? done : total, &unit);
        size_in(a, sizeof a, done, scale);
        size_in(b, sizeof b, total, scale);
        if (total >= 0) oc_snprintf(buf, size, "%s of %s %s written", a, b, unit);
        else oc_snprintf(buf, size, "%s %s written", a, unit);
    } else if (total >= 0) {
        size_in(a, sizeof a, total, size_unit(total, &unit));
        int n = oc_snprintf(buf, size, "%s %s needed", a, unit);
        struct stat sb;
        if ((err == ENOSPC || err == EDQUOT) && free_fd >= 0 && fstatvfs(free_fd, &vfs) == 0 &&
            fstat(free_fd, &sb) == 0 && n > 0 && (size_t)n < size) {
            /* A failed fallocate may keep what it reserved until the file goes: that was free. */
            int64_t avail = (int64_t)vfs.f_bavail * (int64_t)vfs.f_frsize + (int64_t)sb.st_blocks * 512;
            size_in(b, sizeof b, avail, size_unit(avail, &unit));
            oc_snprintf(buf + n, size - (size_t)n, ", %s %s free", b, unit);
        }
    } else {
        buf[0] = '\0';
    }
}

void oc_io_describe(char *buf, size_t size, const char *action, const char *name, int err, int64_t done, int64_t total,
                    int free_fd)
{
    char progress[128];
    progress_text(progress, sizeof progress, err, done, total, free_fd);
    const char *cause = NULL;
    int64_t as_limit = err == ENOMEM ? oc_address_space_limit() : -1;
    if (as_limit >= 0) {
        oc_snprintf(buf, size, "%s %s failed: the address space limit (ulimit -v, %lld bytes) is too small%s%s", action,
                    name, (long long)as_limit, progress[0] ? "; " : "", progress);
        return;
    }
    switch (err) {
    case ENOSPC:
        cause = "disk full";
        break;
    case EDQUOT:
        cause = "disk quota exceeded";
        break;
    case EIO:
        cause = "I/O error";
        break;
    }
    if (cause) oc_snprintf(buf, size, "%s %s %s%s%s", cause, action, name, progress[0] ? ": " : "", progress);
    else oc_snprintf(buf, size, "%s %s failed: %s%s%s", action, name, strerror(err), progress[0] ? "; " : "", progress);
}

oc_status oc_io_fail_at(oc_context *ctx, const char *file, int line, const char *action, const char *name, int err,
                        int64_t done, int64_t total, int free_fd)
{
    /* The heap's, beside oc_fail_at's own buffer on the stack: a failure deep in a job keeps
     * to the stack a caller may run on (docs/cli.md, "Memory"). */
    char *msg = malloc(OC_MESSAGE_MAX);
    if (!msg) return oc_fail_at(ctx, OC_ERR_IO, file, line, "%s %s failed: %s", action, name, strerror(err));
    oc_io_describe(msg, OC_MESSAGE_MAX, action, name, err, done, total, free_fd);
    oc_status st = oc_fail_at(ctx, OC_ERR_IO, file, line, "%s", msg);
    free(msg);
    return st;
}
