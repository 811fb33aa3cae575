/*
 * input_file.h - opening an input file for reading: a regular file, or a one-line refusal
 * that names it; and the message of an input that changed while it was read, with the check
 * of its size that gives it.
 */
#ifndef OC_IO_INPUT_FILE_H
#define OC_IO_INPUT_FILE_H

#include <stdint.h>
#include <sys/stat.h>

#include "outcore.h"

/* Opens path read-only into *fd and fstat's it into *sb. A path that is missing or
 * unreadable, or that is not a regular file (a directory, a named pipe, a socket, a device),
 * fails with OC_ERR_INPUT naming it: "A.npy: not a regular file (a named pipe)". A named
 * pipe is refused at once, without waiting for a writer, and a device is never opened. */
oc_status oc_input_open(oc_context *ctx, const char *path, int *fd, struct stat *sb);

/* "A.npy: the file changed while being read (now N bytes, expected M)", OC_ERR_INPUT. */
oc_status oc_input_changed_at(oc_context *ctx, const char *file, int line, const char *path, int64_t now,
                              int64_t expected);
#define oc_input_changed(ctx, path, now, expected) \
    oc_input_changed_at((ctx), __FILE__, __LINE__, (path), (now), (expected))

/* OC_OK when the open file fd still has `expected` bytes (a file that cannot be stat'ed
 * passes); else the message above. ctx NULL: the status alone, nothing recorded. */
oc_status oc_input_check_size(oc_context *ctx, const char *path, int fd, int64_t expected);

#endif
