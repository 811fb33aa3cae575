/*
 * crc32.h - CRC-32 with zip's polynomial, as the .npz writer stores it: zlib's crc32 where
 * the build found zlib (OC_HAVE_ZLIB), else a table-driven one giving the same values.
 */
#ifndef OC_IO_CRC32_H
#define OC_IO_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* The running CRC after buf (start from 0); any len. */
uint32_t oc_crc32_update(uint32_t crc, const void *buf, size_t len);
/* The CRC of A||B from those of A and B and B's length: a streamed member's CRC without
 * reading its data again. */
uint32_t oc_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

#endif
