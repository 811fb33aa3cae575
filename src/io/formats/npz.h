/*
 * npz.h - .npz archives as numpy.load reads them: a zip file whose entries ("members") are
 * .npy files, stored uncompressed with their CRC-32 (crc32.h). Every local header carries a
 * ZIP64 extra field with both sizes, so one layout serves members of any size; the central
 * directory adds ZIP64 fields only where a size or an offset passes 4 GiB, and the end
 * records a ZIP64 end record and locator only when the directory starts past it.
 *
 * A member is its local header, its .npy header (npy_header.h) and its data. A writer puts
 * members one after another, from offset 0, and ends the file with oc_npz_finish. The
 * helpers return 0 or the errno of the write that failed (their writes go through sysio.h);
 * the caller turns it into the one message of a failed output.
 */
#ifndef OC_IO_FORMATS_NPZ_H
#define OC_IO_FORMATS_NPZ_H

#include <stddef.h>
#include <stdint.h>

#include "outcore.h"
#include "io/formats/npy_header.h"

/* Bytes of the local header of a member whose name has name_len characters. */
#define OC_NPZ_LOCAL_HEADER(name_len) (30 + (name_len) + 20)

typedef struct oc_npz_entry {
    char name[16];   /* "indices.npy" ... */
    uint32_t crc;    /* of the .npy header and the data */
    uint64_t size;   /* of the .npy header and the data: stored = compressed = uncompressed */
    uint64_t offset; /* of the local header */
} oc_npz_entry;

/* The two headers in front of a member's data. */
typedef struct oc_npz_headers {
    unsigned char local[OC_NPZ_LOCAL_HEADER(15)]; /* names have at most 15 characters */
    size_t local_len;
    unsigned char npy[OC_NPY_HEADER_MAX];
    size_t npy_len;
} oc_npz_headers;

/* Sets e's offset (off), size and CRC, and writes h, for a member of dtype (npy_header.h)
 * and shape (d0,) (d1 < 0) or (d0, d1) whose data_bytes bytes of data have CRC-32 data_crc;
 * npy_fixed as oc_npy_header's `fixed`. e->name is set by the caller. */
void oc_npz_member(oc_npz_entry *e, oc_npz_headers *h, uint64_t off, int dtype, int64_t d0, int64_t d1,
                   size_t npy_fixed, uint32_t data_crc, uint64_t data_bytes);

/* The central directory of the count members e and the end records, at fd's position,
 * which is the file's end, off. */
int oc_npz_finish(oc_context *ctx, int fd, const oc_npz_entry *e, int count, uint64_t off);

#endif
