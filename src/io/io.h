/*
 * io.h - file formats: readers that produce oc_matrix, and the .npy output writer.
 *
 * Every reader names the file and the problem in its message and returns OC_ERR_INPUT
 * for bad input. Every writer writes under a temporary name in the destination directory
 * (PATH.tmp-PID-RANDOM) and renames it over PATH only when complete, so a failed or
 * interrupted job never leaves a file that looks done.
 */
#ifndef OC_IO_IO_H
#define OC_IO_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "outcore.h"
#include "core/dtype.h"

/* Readers (oc_matrix_read dispatches on the extension; opts is never NULL here). */
oc_status oc_npy_read(oc_context *ctx, const char *path, const oc_read_options *opts, oc_matrix **out);
oc_status oc_mtx_read(oc_context *ctx, const char *path, const oc_read_options *opts, oc_matrix **out);
oc_status oc_text_read(oc_context *ctx, const char *path, const oc_read_options *opts, oc_matrix **out);
/* The shape a .npy header or a .mtx size line declares, checked as its reader checks it
 * before allocating; nothing past the header is read (oc_mapped_head_fn: oc_matrix_peek runs
 * them through oc_mapped_head). */
struct oc_mapped_file;
oc_status oc_npy_head(oc_context *ctx, const char *path, const struct oc_mapped_file *file, const oc_read_options *opts,
                      int64_t *rows, int64_t *cols);
oc_status oc_mtx_head(oc_context *ctx, const char *path, const struct oc_mapped_file *file, const oc_read_options *opts,
                      int64_t *rows, int64_t *cols);
/* The same readers over size bytes in memory, name standing for the path in messages (the
 * fuzz targets' entry points: see oc_buffer_read in mapped_file.h); opts may be NULL. */
oc_status oc_npy_read_buffer(oc_context *ctx, const char *name, const void *data, size_t size,
                             const oc_read_options *opts, oc_matrix **out);
oc_status oc_mtx_read_buffer(oc_context *ctx, const char *name, const void *data, size_t size,
                             const oc_read_options *opts, oc_matrix **out);
oc_status oc_text_read_buffer(oc_context *ctx, const char *name, const void *data, size_t size,
                              const oc_read_options *opts, oc_matrix **out);

/* A dense .npy being written through a shared memory map. */
typedef struct oc_npy_out oc_npy_out;

/* Creates PATH's temporary file sized for a rows x cols array of dtype (INT32, UINT16,
 * FLOAT32 or, for oc_matrix_save, OC_NPY_UINT8: core/dtype.h), maps it, and returns the
 * address of element (0,0). Fails with OC_ERR_INPUT when the directory is missing or not
 * writable. */
oc_status oc_npy_out_create(oc_context *ctx, const char *path, int dtype, int64_t rows, int64_t cols, oc_npy_out **out,
                            void **data);
/* Before anything is read or created: OC_ERR_INPUT naming path when the rows x cols .npy of
 * dtype would pass 64-bit sizes or, with space nonzero, would not fit in the free space of
 * the file system of path's folder (both figures in the message; OC_OK when the free space
 * cannot be known). The writer checks again when it sizes the file (oc_sys_check_space),
 * crediting what a resumed file holds already. */
oc_status oc_npy_out_check_fits(oc_context *ctx, const char *path, int dtype, int64_t rows, int64_t cols, int space);
/* The same free-space refusal for a file of `bytes` at path holding `what` ("float64 200 x
 * 300"): the check matmul's and map's results make before any work, as gram's. */
oc_status oc_npy_out_check_room(oc_context *ctx, const char *path, const char *what, int64_t bytes);
/* Flushes, unmaps and renames the file into place; frees w. On failure (OC_ERR_IO naming the
 * file and the cause) nothing is left under either name. */
oc_status oc_npy_out_commit(oc_context *ctx, oc_npy_out *w);
/* Unmaps and removes the temporary file; frees w. NULL is a no-op. */
void oc_npy_out_abort(oc_npy_out *w);
/* For resumable jobs (gram/gram_resume.h): the temporary file's name; a flush of what was
 * stored so far to the disk (msync), the file staying temporary; a release of w that keeps
 * the temporary file for a later run (NULL is a no-op); and the reopening of such a file,
 * which must hold the header of a rows x cols array of dtype (else OC_ERR_INPUT naming it). */
const char *oc_npy_out_temp_path(const oc_npy_out *w);
oc_status oc_npy_out_sync(oc_context *ctx, oc_npy_out *w);
void oc_npy_out_keep(oc_npy_out *w);
oc_status oc_npy_out_reopen(oc_context *ctx, const char *path, const char *temp_path, int dtype, int64_t rows,
                            int64_t cols, oc_npy_out **out, void **data);
/* Nonzero when w's mapping was faulted in at creation (a memory file system): its writers
 * should not fault it in again (oc_dense_sink.populate). */
int oc_npy_out_prefaulted(const oc_npy_out *w);

/* Temporary-name helpers for every writer (and the resume journal's files): the file is
 * created as PATH.tmp-PID-RANDOM beside PATH (O_CREAT|O_EXCL|O_NOFOLLOW, RANDOM from
 * getrandom) and holds an exclusive flock for as long as it is open, so a later run can tell
 * a temporary of a live job from one a dead job left. oc_tmpfile_open first checks PATH
 * (oc_output_path_check) and removes the stale temporaries beside it (oc_stale_temps_remove);
 * a replaced file's mode (and, under root, owner) passes to the new one. */
typedef struct oc_tmpfile {
    char *path;     /* final name */
    char *tmp_path; /* where it is written */
    int fd;
    /* The folder the temporary was made in (O_PATH), or -1: it is renamed and removed
     * through this handle, so a folder moved while the job runs keeps no temporary. */
    int dir;
    /* The replaced file's permission bits, given to the new one at commit (0: none); until
     * then it has them and its owner's read and write, so that a resumed job can reopen a
     * write-only one (mode 0200) to carry on. */
    unsigned mode;
} oc_tmpfile;
oc_status oc_tmpfile_open(oc_context *ctx, const char *path, oc_tmpfile *f);
/* The one-line message of a file that could not be created in path's folder, for the
 * errno of the failed open: "C.npy: cannot write <what>: no write permission in folder
 * out" (a missing, unwritable or read-only folder: OC_ERR_INPUT, the user's to fix); a
 * full disk or a failing device is OC_ERR_IO (sysio.h). */
oc_status oc_create_fail(oc_context *ctx, const char *path, const char *what, int err);
/* fsync, close, rename over path; on failure (OC_ERR_IO, message naming path and the cause)
 * the temporary file is removed, and the message names it where it cannot be. A folder
 * that is no longer the one path names (moved or removed while the job ran) is a failure:
 * the file is not renamed into the folder's new place. Either way f is released. */
oc_status oc_tmpfile_commit(oc_context *ctx, oc_tmpfile *f);
/* Removes the temporary file and releases f. */
void oc_tmpfile_abort(oc_tmpfile *f);
/* Releases f and keeps its file (renamed already, or left for a resumed run): the names are
 * freed, the descriptor (unless the caller took it and set fd to -1) and the folder's
 * handle closed. */
void oc_tmpfile_release(oc_tmpfile *f);
/* The handle (O_PATH | O_DIRECTORY) of the folder of path, for f->dir of a temporary reopened
 * there, or -1 with errno set. */
int oc_tmpfile_folder_open(const char *path);

/* A scratch file that no name keeps (the side files of .npz pairs, the spill file of
 * threshold pairs): created from tmpl, whose last six characters XXXXXX are replaced as
 * mkstemp does, through sysio.h (so the fault plan reaches it), and unlinked at once, so
 * that nothing is left behind whatever happens; it lives until its descriptor is closed,
 * and its writes go through sysio.h too. Returns the descriptor, or -1 with errno set. */
int oc_scratch_open(oc_context *ctx, char *tmpl);
/* Where scratch files that belong to no output go: $TMPDIR, else /tmp. */
const char *oc_scratch_dir(void);

/* Fails with OC_ERR_INPUT when path names the file a or b (either may be NULL) was read
 * from, by any name: same path, another spelling, a symbolic or a hard link. */
oc_status oc_output_check_not_input(oc_context *ctx, const char *path, const oc_matrix *a, const oc_matrix *b);

/* ---------------------------------------------------------------- output paths (output_path.c) */
/* The longest suffix of a temporary name: ".tmp-" PID (10 digits) "-" RANDOM (8). */
#define OC_TMP_SUFFIX_MAX 24
/* What an existing regular output is: the file that replaces it gets its mode and owner. */
typedef struct oc_output_prior {
    int exists;
    mode_t mode;
    uid_t uid;
    gid_t gid;
} oc_output_prior;
/* OC_ERR_INPUT with one line when path cannot take an output: its folder missing or not
 * writable, path a folder, a pipe, a socket or a device, a file the user may not write, or a
 * name whose temporary name would pass NAME_MAX. prior (may be NULL) describes an existing
 * regular file. A symbolic link passes: the rename replaces the link, never its target. */
oc_status oc_output_path_check(oc_context *ctx, const char *path, oc_output_prior *prior);
/* An output written as .npy, before any work: an empty path is OC_ERR_INPUT (as
 * oc_output_path_check says), a name not ending in .npy OC_ERR_INVALID_ARGUMENT, "PATH: WHAT as
 * .npy; the name must end in .npy" (a leading dot is part of the name: "..npy" has no
 * extension). what: "a product is written". */
oc_status oc_output_npy_name(oc_context *ctx, const char *path, const char *what);
/* OC_ERR_INPUT when path's file name followed by side and then `extra` more characters (a
 * temporary suffix) would pass its file system's NAME_MAX. */
oc_status oc_output_name_fits(oc_context *ctx, const char *path, const char *side, size_t extra);
/* The folder part of path ("." when it has none). */
void oc_path_folder(const char *path, char *buf, size_t size);
/* The file name of path: what follows its last '/'. */
const char *oc_path_name(const char *path);

/* ---------------------------------------------------------------- stale temporaries (output_stale.c) */
/* Removes the temporaries PATH.tmp-PID-RANDOM beside path whose process is no longer running
 * (no process PID, and no flock held on the file once OC_LOCK_RELEASE_WAIT has passed: a
 * killed job's files are held a moment after it ended), except while path has a resume journal,
 * which owns them. Each removal goes to ctx's removed_fn (oc_context_set_removed_fn), or is
 * one line on stderr when it has none (or ctx is NULL). Returns how many were removed. */
int oc_stale_temps_remove(oc_context *ctx, const char *path);

/* Lower-case extension of path without the dot ("npy"), or "" when none. */
const char *oc_path_extension(const char *path, char *buf, size_t bufsize);

#endif
