/*
 * gram_resume_parts.h - the pieces of gram_resume.c that stand alone; nothing outside
 * src/gram/gram_resume*.c includes this.
 *
 *   gram_resume_job.c       the journal's header: what identifies the job
 *   gram_resume_snapshot.c  the top-k snapshot file (PATH.outcore-journal.topk)
 */
#ifndef OC_GRAM_GRAM_RESUME_PARTS_H
#define OC_GRAM_GRAM_RESUME_PARTS_H

#include <stdint.h>

#include "outcore.h"
#include "gram/gram_job.h"

/* The header's "key value" lines for the job (malloc'd text in *text). topk: k > 0, pairs:
 * a threshold job, neither: dense. */
oc_status oc_resume_describe_job(oc_context *ctx, const oc_gram_job *job, const oc_output *out, char **text);

/* The snapshot of the job's top-k lists (oc_select_topk_keys) and the bitmap `done` of the
 * ntiles tiles of edge `tile` merged into them, for the job whose header has CRC job_crc:
 * written under path.new, flushed, renamed over path; its CRC in *crc. */
oc_status oc_resume_snapshot_write(oc_context *ctx, const char *path, uint32_t job_crc, int64_t tile, int64_t ntiles,
                                   const unsigned char *done, const oc_gram_job *job, uint32_t *crc);
/* Restores a snapshot of this job into its lists and `done`; returns 0 when there is none, or
 * it is another job's or damaged (the lists are then empty and `done` untouched). */
int oc_resume_snapshot_load(const char *path, uint32_t job_crc, int64_t tile, int64_t ntiles, unsigned char *done,
                            const oc_gram_job *job);

#endif
