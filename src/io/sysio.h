/*
 * sysio.h - the one door of every writer to the file system, and the messages of its
 * failures.
 *
 * Each oc_sys_* call does what the system call of its name does (same return value, errno
 * set on failure), after asking ctx's fault plan (src/core/fault.h) whether this call must
 * fail instead; ctx NULL asks nothing. Writers of outputs, their side files and the spill
 * file of threshold pairs call nothing else to create, size, map, write, flush or rename a
 * file, so a test that fails the k-th call of each kind reaches every write error path.
 * Reading, closing a file that failed already, and unlink stay plain system calls: they
 * are not where a full disk or a failing device shows.
 */
#ifndef OC_IO_SYSIO_H
#define OC_IO_SYSIO_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "outcore.h"

int oc_sys_open(oc_context *ctx, const char *path, int flags, mode_t mode);
/* open of path relative to the folder dirfd (openat; AT_FDCWD: as oc_sys_open). */
int oc_sys_openat(oc_context *ctx, int dirfd, const char *path, int flags, mode_t mode);
int oc_sys_mkstemp(oc_context *ctx, char *tmpl);
ssize_t oc_sys_write(oc_context *ctx, int fd, const void *buf, size_t len);
ssize_t oc_sys_pwrite(oc_context *ctx, int fd, const void *buf, size_t len, off_t off);
/* For a write made through another library (MPI-IO): asks the fault plan about it as
 * oc_sys_write would. -1 with errno set when it must fail; 0 when it goes ahead, with *len
 * halved when it must be short. */
int oc_sys_write_planned(oc_context *ctx, size_t *len);
ssize_t oc_sys_copy_file_range(oc_context *ctx, int fd_in, off_t *off_in, int fd_out, size_t len);
int oc_sys_ftruncate(oc_context *ctx, int fd, off_t len);
int oc_sys_fallocate(oc_context *ctx, int fd, off_t off, off_t len);
/* A shared read-write mapping of len bytes of fd from offset 0; MAP_FAILED on failure. */
void *oc_sys_mmap_shared(oc_context *ctx, int fd, size_t len);
int oc_sys_msync(oc_context *ctx, void *addr, size_t len);
int oc_sys_fsync(oc_context *ctx, int fd);
/* close() of a file that was written: it may report a deferred write error (NFS). */
int oc_sys_close(oc_context *ctx, int fd);
/* rename of from in the folder fromdir to `to` in the folder todir (renameat; AT_FDCWD:
 * relative to the working folder). */
int oc_sys_renameat(oc_context *ctx, int fromdir, const char *from, int todir, const char *to);
/* rename that fails with EEXIST when `to` exists (renameat2's RENAME_NOREPLACE, or a hard
 * link where the file system lacks it; a plain rename where it has neither). */
int oc_sys_rename_noreplace(oc_context *ctx, const char *from, const char *to);
/* Flushes a folder (fsync of the directory), so that a name renamed into it survives a
 * crash; returns 0 or the errno. Best effort: the data is on the disk under its name by
 * then, and a file system that cannot flush a folder (or fails to) leaves the job done. Its
 * fault kind (OC_FAULT_FLUSH_FOLDER) is there for tests to count the call and to fail it. */
int oc_sys_flush_folder(oc_context *ctx, const char *folder);

/* Writes all len bytes of buf at offset off (off < 0: at the file position), retrying
 * interrupted and short writes: a short write is not an error, the call after it tells.
 * Returns 0, or the errno of the call that failed (EIO for a write that wrote nothing). */
int oc_sys_write_all(oc_context *ctx, int fd, const void *buf, size_t len, int64_t off);

/* The process's address space limit (RLIMIT_AS, `ulimit -v`) in bytes, or -1 when there is
 * none: what an ENOMEM from mmap means when it is set. */
int64_t oc_address_space_limit(void);

/* The size of the file behind fd, or -1: how much of an output was written when it failed. */
int64_t oc_sys_file_size(int fd);

/* Takes fd's exclusive lock (flock) for a job that resumes another's files, waiting up to
 * OC_LOCK_RELEASE_WAIT seconds while another process holds it: a job killed a moment ago
 * (kill -9) still holds its files while the system tears it down, past the moment its
 * parent has seen it end. Returns 0, or -1 with errno (EWOULDBLOCK: a running job holds it;
 * ECANCELED: ctx, which may be NULL, was cancelled meanwhile: Ctrl-C ends the wait at once). */
#define OC_LOCK_RELEASE_WAIT 3.0
int oc_sys_lock_released(int fd, const oc_context *ctx);

/* Whether path (resolved against the folder handle dir, or AT_FDCWD) still names the file fd
 * is open on (the same device and inode, a link at path not followed). A lock is taken on an
 * open file but files are removed by name: a file locked after another process removed it (or
 * put another file under its name) is no longer the one the name stands for, and the caller
 * looks at path again. */
int oc_sys_path_names(int fd, int dir, const char *path);

/* Whether this process holds the file fd is open on through another descriptor, or maps it:
 * an input of a job in progress, which no cleanup or resumed run may take for a temporary of
 * its own, whatever its name. Reads /proc/self (fd, maps); 0 where they cannot be read. */
int oc_sys_file_held_here(int fd);

/* bytes as people read them: "512 bytes", "1.2 MB", "80.0 GB". */
void oc_size_text(char *buf, size_t size, int64_t bytes);

/* The bytes free to an unprivileged writer (f_bavail * f_frsize) on the file system of
 * folder, or -1 when unknown (statvfs fails, or the file system reports no size). */
int64_t oc_folder_free_bytes(const char *folder);

/* OC_ERR_IO "disk full writing NAME: it needs 80.0 GB, its file system has 75.3 GB free"
 * when the file system of fd has less than `need` bytes free beyond what fd's file already
 * holds; OC_OK otherwise, or when the free space cannot be known. Writers check it before
 * they size or reserve a file, so a job that cannot fit fails before it fills the disk. */
oc_status oc_sys_check_space(oc_context *ctx, int fd, const char *name, int64_t need);

/* The one-line message of a write-side failure:
 *   "disk full writing C.npy: 1.2 of 4.0 GB written"        (ENOSPC; EDQUOT: "disk quota exceeded")
 *   "I/O error writing C.npy: 1.2 GB written"               (EIO; total unknown)
 *   "disk full reserving space for C.npy: 4.0 GB needed, 1.2 GB free"
 *   "mapping C.npy failed: the address space limit (ulimit -v, 102400000 bytes) is too small"
 *                                                           (ENOMEM under RLIMIT_AS)
 *   "writing C.npy failed: Read-only file system"           (any other errno)
 * `action` is the verb phrase before the name ("writing", "creating", "reserving space
 * for"); done and total are bytes (negative: unknown); free_fd >= 0 adds the free space of
 * its file system when nothing was written. oc_io_describe writes it into buf; oc_io_fail
 * records it on ctx and returns OC_ERR_IO. */
void oc_io_describe(char *buf, size_t size, const char *action, const char *name, int err, int64_t done, int64_t total,
                    int free_fd);
oc_status oc_io_fail_at(oc_context *ctx, const char *file, int line, const char *action, const char *name, int err,
                        int64_t done, int64_t total, int free_fd);
#define oc_io_fail(ctx, ...) oc_io_fail_at((ctx), __FILE__, __LINE__, __VA_ARGS__)

/* The status of a failed open or create whose other causes are the caller's input: running
 * out of descriptors or memory (EMFILE, ENFILE, ENOMEM) is the process's state, OC_ERR_IO
 * (exit 1); anything else OC_ERR_INPUT (exit 2). */
static inline oc_status oc_open_fail_status(int err)
{
    return err == EMFILE || err == ENFILE || err == ENOMEM ? OC_ERR_IO : OC_ERR_INPUT;
}

#endif
