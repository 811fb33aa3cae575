/*
 * mapped_file.h - an input file mapped read-only, shared by the readers so that a missing,
 * unreadable, empty or irregular file gets the same message whatever its format.
 *
 * A file that shrinks while it is mapped does not end the process: the mapping is guarded
 * (map_guard.h), pages past the new end read as zeros, and oc_mapped_file_check then fails
 * the read with "A.npy: the file changed while being read (now N bytes, expected M)", so a
 * reader never returns what it made of the zeros.
 */
#ifndef OC_IO_MAPPED_FILE_H
#define OC_IO_MAPPED_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "outcore.h"

typedef struct oc_mapped_file {
    const unsigned char *data; /* size bytes, read-only; NULL when closed */
    size_t size;               /* > 0 once open */
    size_t released;           /* pages below this offset were dropped from the mapping */
    uint64_t dev, ino;         /* the file's identity (st_dev, st_ino) */
    int borrowed;              /* data is the caller's memory (oc_buffer_read): never advised,
                                * released or unmapped */
    int fd;                    /* the open file, for its size after reading (-1: none) */
    int guard;                 /* its slot in map_guard.h (-1: none) */
    int64_t shrunk_to;         /* >= 0: OUTCORE_FAULT_SHRINK cut it to this size (fault.h); -1: no */
} oc_mapped_file;

/* Maps path. Fails with OC_ERR_INPUT naming path when it is missing, unreadable, not a
 * regular file or empty (input_file.h), and says when the address space limit (ulimit -v)
 * is what stops the mapping. */
oc_status oc_mapped_file_open(oc_context *ctx, const char *path, oc_mapped_file *f);

/* Whether the file shrank under a read of the mapping so far (cheap: a flag). */
int oc_mapped_file_faulted(const oc_mapped_file *f);

/* OC_OK when the file still has the size it was mapped with and no read met its end; else
 * fails with the message above (OC_ERR_INPUT). A borrowed buffer always passes. */
oc_status oc_mapped_file_check(oc_context *ctx, const char *path, const oc_mapped_file *f);

/* Tells the kernel the file is read front to back (larger read-ahead). */
void oc_mapped_file_advise_sequential(oc_mapped_file *f);

/* Drops the whole pages below offset from the mapping: they stay in the page cache but no
 * longer count as this process's resident memory. Reading them again is still valid. */
void oc_mapped_file_release_before(oc_mapped_file *f, size_t offset);

/* Drops the whole pages inside [begin, end) from the mapping, as release_before does. Any
 * thread: readers that pack row blocks in parallel drop each block's pages when done (the
 * pages it shares with a neighbouring block stay). */
void oc_mapped_file_release_range(const oc_mapped_file *f, size_t begin, size_t end);

/* The next line of [*pos, end) without its end (a final line may lack one); advances *pos.
 * A line ends at '\n' or at a '\r' that no '\n' follows (the old Mac ending, which numpy's
 * loadtxt reads as one too); "\r\n" ends a line at its '\n', the '\r' left in the line for
 * the parsers, which take it as a blank. Returns 0 at the end of the data. The search goes a
 * window at a time, so that a file with no '\n' at all is read in linear time. */
static inline int oc_next_line(const unsigned char **pos, const unsigned char *end, const char **line, size_t *len)
{
    if (*pos >= end) return 0;
    const unsigned char *p = *pos, *stop = end, *next = end;
    while (p < end) {
        const size_t left = (size_t)(end - p), w = left < 4096 ? left : 4096;
        const unsigned char *nl = memchr(p, '\n', w);
        const unsigned char *cr = memchr(p, '\r', nl ? (size_t)(nl - p) : w);
        if (cr && cr + 1 < end && cr[1] == '\n') cr = NULL; /* "\r\n": the line ends at the '\n' */
        if (cr) {
            stop = cr, next = cr + 1;
            break;
        }
        if (nl) {
            stop = nl, next = nl + 1;
            break;
        }
        p += w;
    }
    *line = (const char *)*pos;
    *len = (size_t)(stop - *pos);
    *pos = next;
    return 1;
}

/* Parses a mapped file into a matrix; allocates *m itself. On failure it may leave a
 * partly filled *m behind: oc_mapped_read frees it. */
typedef oc_status (*oc_mapped_parse_fn)(oc_context *ctx, const char *path, oc_mapped_file *f, void *arg, oc_matrix **m);

/* Maps path, runs parse, checks the file did not change (oc_mapped_file_check, whose
 * message takes the place of the parser's), unmaps; *out is set only on success. Keeps each
 * reader free of cleanup paths: a parser fails by returning. */
oc_status oc_mapped_read(oc_context *ctx, const char *path, oc_mapped_parse_fn parse, void *arg, oc_matrix **out);

/* Runs parse over size bytes the caller holds, named name in messages, as oc_mapped_read
 * runs it over a file (an empty buffer is "the file is empty"). The fuzz targets read through
 * it: their inputs are heap buffers of the exact size, so AddressSanitizer sees a read past
 * the end, which the page-rounded tail of a mapping would hide. */
oc_status oc_buffer_read(oc_context *ctx, const char *name, const void *data, size_t size, oc_mapped_parse_fn parse,
                         void *arg, oc_matrix **out);

/* A reader's look at a file's header, for the shape it declares (oc_matrix_peek): maps path,
 * runs head, which reads only the header's pages and sets *rows and *cols, then checks the
 * file did not change and unmaps. The fault plan's OUTCORE_FAULT_SHRINK is left to the read
 * that follows. *rows and *cols are set only on success. */
typedef oc_status (*oc_mapped_head_fn)(oc_context *ctx, const char *path, const oc_mapped_file *f,
                                       const oc_read_options *opts, int64_t *rows, int64_t *cols);
oc_status oc_mapped_head(oc_context *ctx, const char *path, oc_mapped_head_fn head, const oc_read_options *opts,
                         int64_t *rows, int64_t *cols);

/* Unmaps; a closed or never-opened (zeroed) file is a no-op. */
void oc_mapped_file_close(oc_mapped_file *f);

#endif
