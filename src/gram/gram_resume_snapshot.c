/*
 * gram_resume_snapshot.c - the top-k snapshot of a resumable job (gram_resume_parts.h):
 *
 *   header   magic, the CRC of the journal's header (the job), tiles, n, kept, tile edge
 *   bitmap   one bit per tile, set for the tiles merged into the lists
 *   keys     n x kept, as oc_select_topk_keys holds them
 *   crc      CRC-32 of all of the above
 *
 * It is written whole under a temporary name (io.h's oc_tmpfile: created anew, never through a
 * link), flushed and renamed, so the file under its name is always one complete snapshot; a
 * damaged or foreign one is not loaded, and a link under its name is not followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "gram/gram_resume_parts.h"
#include "gram/select/select.h"
#include "io/crc32.h"
#include "io/io.h"
#include "io/sysio.h"

#define SNAPSHOT_MAGIC 0x4B504F544A434F00ull /* "\0OCJTOPK" */

/* The snapshot of the top-k lists: header, bitmap of the tiles in them, keys, CRC. */
typedef struct snapshot_head {
    uint64_t magic;
    uint32_t job_crc, pad;
    int64_t tiles, n, kept, tile;
} snapshot_head;

int oc_resume_snapshot_load(const char *path, uint32_t job_crc, int64_t tile, int64_t ntiles, unsigned char *done,
                            const oc_gram_job *job)
{
    oc_select *s = job->select;
    const int64_t kept = oc_select_kept(s), bitmap = (ntiles + 7) / 8;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return 0;
    snapshot_head h;
    int ok = pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h && h.magic == SNAPSHOT_MAGIC && h.job_crc == job_crc &&
             h.tiles == ntiles && h.n == job->n && h.kept == kept && h.tile == tile;
    unsigned char *bits = ok ? malloc((size_t)bitmap) : NULL;
    uint64_t *keys = oc_select_topk_keys(s);
    size_t key_bytes = (size_t)(job->n * kept) * 8;
    uint32_t crc = 0, want = 0;
    if (bits && pread(fd, bits, (size_t)bitmap, sizeof h) == (ssize_t)bitmap &&
        (key_bytes == 0 || pread(fd, keys, key_bytes, (off_t)(sizeof h + (size_t)bitmap)) == (ssize_t)key_bytes) &&
        pread(fd, &want, 4, (off_t)(sizeof h + (size_t)bitmap + key_bytes)) == 4) {
        crc = oc_crc32_update(oc_crc32_update(oc_crc32_update(0, &h, sizeof h), bits, (size_t)bitmap), keys, key_bytes);
        ok = crc == want;
    } else {
        ok = 0;
    }
    close(fd);
    if (ok) {
        memcpy(done, bits, (size_t)bitmap);
        oc_select_topk_restored(s);
    } else if (key_bytes) {
        memset(keys, 0, key_bytes); /* a damaged snapshot: start the lists again */
    }
    free(bits);
    return ok;
}

oc_status oc_resume_snapshot_write(oc_context *ctx, const char *path, uint32_t job_crc, int64_t tile, int64_t ntiles,
                                   const unsigned char *done, const oc_gram_job *job, uint32_t *crc_out)
{
    const int64_t bitmap = (ntiles + 7) / 8, kept = oc_select_kept(job->select);
    snapshot_head h = {
        .magic = SNAPSHOT_MAGIC, .job_crc = job_crc, .tiles = ntiles, .n = job->n, .kept = kept, .tile = tile};
    const uint64_t *keys = oc_select_topk_keys(job->select);
    const size_t key_bytes = (size_t)(job->n * kept) * 8;
    uint32_t crc =
        oc_crc32_update(oc_crc32_update(oc_crc32_update(0, &h, sizeof h), done, (size_t)bitmap), keys, key_bytes);
    oc_tmpfile f;
    OC_CHECK(ctx, oc_tmpfile_open(ctx, path, &f));
    int err = oc_sys_write_all(ctx, f.fd, &h, sizeof h, 0);
    if (!err) err = oc_sys_write_all(ctx, f.fd, done, (size_t)bitmap, (int64_t)sizeof h);
    if (!err && key_bytes) err = oc_sys_write_all(ctx, f.fd, keys, key_bytes, (int64_t)(sizeof h + (size_t)bitmap));
    if (!err) err = oc_sys_write_all(ctx, f.fd, &crc, 4, (int64_t)(sizeof h + (size_t)bitmap + key_bytes));
    if (!err) {
        oc_status st = oc_tmpfile_commit(ctx, &f); /* releases f either way */
        if (st != OC_OK) return oc_trace_at(ctx, st, __FILE__, __LINE__);
    } else {
        oc_tmpfile_abort(&f);
        return oc_io_fail(ctx, "writing the top-k snapshot", path, err, -1, -1, -1);
    }
    *crc_out = crc;
    return OC_OK;
}
