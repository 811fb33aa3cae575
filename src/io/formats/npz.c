/*
 * npz.c - members and directory of .npz archives (npz.h).
 *
 * Layout (offsets grow downwards; a writer may patch a member's headers in place later):
 *
 *   local header 1 (ZIP64 extra: both sizes) + npy header 1 + data 1
 *   local header 2 ...                                                   one per member
 *   central directory, [ZIP64 end record + locator], end record
 *
 * A member's CRC covers its npy header and its data: the header's CRC is combined in front
 * of the data's (oc_crc32_combine), so data that streamed to a file is never read back to
 * be checksummed.
 */
#include "io/formats/npz.h"

#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "core/env.h"
#include "io/crc32.h"
#include "io/sysio.h"

static void put16(unsigned char *p, uint32_t v) { p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8); }
static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; ++i) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

/* What a zip date holds: 1980-01-01 to 2107-12-31 (UTC seconds). */
#define DOS_EPOCH_FIRST 315532800LL
#define DOS_EPOCH_LAST 4354819198LL

/* The members' modification time: now, or SOURCE_DATE_EPOCH (seconds, UTC) where it is set,
 * the reproducible-builds convention, so that two runs of one job (an interrupted and resumed
 * one among them) can write the same bytes. A value is a whole number of seconds >= 0, held
 * to the dates a zip can write (as zip tools do); anything else is not one, and the time is
 * now's, as without it. */
static void dos_time(uint32_t *time_out, uint32_t *date_out)
{
    int64_t epoch = 0;
    const int fixed = oc_env_whole("SOURCE_DATE_EPOCH", 0, INT64_MAX, &epoch) > 0;
    if (fixed) epoch = epoch < DOS_EPOCH_FIRST ? DOS_EPOCH_FIRST : epoch > DOS_EPOCH_LAST ? DOS_EPOCH_LAST : epoch;
    time_t now = fixed ? (time_t)epoch : time(NULL);
    struct tm tm;
    if (!(fixed ? gmtime_r(&now, &tm) : localtime_r(&now, &tm)) || tm.tm_year < 80 || tm.tm_year > 207) {
        now = (time_t)DOS_EPOCH_FIRST; /* a clock no zip date holds: the first it does */
        gmtime_r(&now, &tm);
    }
    *time_out = (uint32_t)(tm.tm_hour << 11 | tm.tm_min << 5 | tm.tm_sec / 2);
    *date_out = (uint32_t)((tm.tm_year - 80) << 9 | (tm.tm_mon + 1) << 5 | tm.tm_mday);
}

/* A local header with a ZIP64 extra field holding both sizes (the 32-bit fields say
 * 0xFFFFFFFF), so one layout serves entries of any size. */
static size_t local_header(unsigned char *h, const oc_npz_entry *e)
{
    uint32_t t, d;
    dos_time(&t, &d);
    size_t nl = strlen(e->name);
    put32(h, 0x04034b50u);
    put16(h + 4, 45); /* version needed: ZIP64 */
    put16(h + 6, 0);
    put16(h + 8, 0); /* stored */
    put16(h + 10, t);
    put16(h + 12, d);
    put32(h + 14, e->crc);
    put32(h + 18, 0xFFFFFFFFu);
    put32(h + 22, 0xFFFFFFFFu);
    put16(h + 26, (uint32_t)nl);
    put16(h + 28, 20);
    memcpy(h + 30, e->name, nl);
    unsigned char *x = h + 30 + nl;
    put16(x, 0x0001);
    put16(x + 2, 16);
    put64(x + 4, e->size);
    put64(x + 12, e->size);
    return OC_NPZ_LOCAL_HEADER(nl);
}

int oc_npz_finish(oc_context *ctx, int fd, const oc_npz_entry *e, int count, uint64_t off)
{
    unsigned char buf[512];
    size_t len = 0;
    uint32_t t, d;
    dos_time(&t, &d);
    for (int i = 0; i < count; ++i) {
        size_t nl = strlen(e[i].name);
        int big = e[i].size >= 0xFFFFFFFFu, far = e[i].offset >= 0xFFFFFFFFu;
        size_t extra = (big ? 16 : 0) + (far ? 8 : 0);
        unsigned char *h = buf + len;
        put32(h, 0x02014b50u);
        put16(h + 4, 3 << 8 | 45); /* made by: Unix, ZIP 4.5 */
        put16(h + 6, 45);
        put16(h + 8, 0);
        put16(h + 10, 0);
        put16(h + 12, t);
        put16(h + 14, d);
        put32(h + 16, e[i].crc);
        put32(h + 20, big ? 0xFFFFFFFFu : (uint32_t)e[i].size);
        put32(h + 24, big ? 0xFFFFFFFFu : (uint32_t)e[i].size);
        put16(h + 28, (uint32_t)nl);
        put16(h + 30, (uint32_t)(extra ? extra + 4 : 0));
        put16(h + 32, 0);
        put16(h + 34, 0);
        put16(h + 36, 0);
        put32(h + 38, 0100644u << 16);
        put32(h + 42, far ? 0xFFFFFFFFu : (uint32_t)e[i].offset);
        memcpy(h + 46, e[i].name, nl);
        unsigned char *x = h + 46 + nl;
        if (extra) {
            put16(x, 0x0001);
            put16(x + 2, (uint32_t)extra);
            x += 4;
            if (big) put64(x, e[i].size), put64(x + 8, e[i].size), x += 16;
            if (far) put64(x, e[i].offset), x += 8;
        }
        len = (size_t)(x - buf);
    }
    uint64_t cd_size = len, cd_off = off;
    if (cd_off >= 0xFFFFFFFFu) {
        unsigned char *z = buf + len;
        put32(z, 0x06064b50u);
        put64(z + 4, 44);
        put16(z + 12, 3 << 8 | 45);
        put16(z + 14, 45);
        put32(z + 16, 0);
        put32(z + 20, 0);
        put64(z + 24, (uint64_t)count);
        put64(z + 32, (uint64_t)count);
        put64(z + 40, cd_size);
        put64(z + 48, cd_off);
        unsigned char *l = z + 56;
        put32(l, 0x07064b50u);
        put32(l + 4, 0);
        put64(l + 8, cd_off + cd_size);
        put32(l + 16, 1);
        len += 56 + 20;
    }
    unsigned char *r = buf + len;
    put32(r, 0x06054b50u);
    put16(r + 4, 0);
    put16(r + 6, 0);
    put16(r + 8, (uint32_t)count);
    put16(r + 10, (uint32_t)count);
    put32(r + 12, (uint32_t)cd_size);
    put32(r + 16, cd_off >= 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)cd_off);
    put16(r + 20, 0);
    len += 22;
    return oc_sys_write_all(ctx, fd, buf, len, -1);
}

void oc_npz_member(oc_npz_entry *e, oc_npz_headers *h, uint64_t off, int dtype, int64_t d0, int64_t d1,
                   size_t npy_fixed, uint32_t data_crc, uint64_t data_bytes)
{
    h->npy_len = oc_npy_header(h->npy, dtype, d0, d1, npy_fixed);
    e->offset = off;
    e->size = h->npy_len + data_bytes;
    e->crc = oc_crc32_combine(oc_crc32_update(0, h->npy, h->npy_len), data_crc, data_bytes);
    h->local_len = local_header(h->local, e);
}
