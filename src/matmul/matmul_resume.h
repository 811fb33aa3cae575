/*
 * matmul_resume.h - resumable products (oc_matmul_options.resume; docs/resume.md): the job
 * layer keeps a journal beside the .npy it writes (io/journal.h), PATH.outcore-journal. Its
 * header names the job (the output, the inputs' shapes, dtypes, transposes and files, the
 * result's dtype); its records say what is done:
 *
 *   TEMP   the output's temporary file, which a resumed run reopens
 *   PLAN   the backend's tile grid, K panel depth and multiply (payload: a text line), then
 *          the options that choose them: a resumed run must plan the same (another plan may
 *          change the last bits of float results)
 *   TILE   unit = tile index I * tiles_n + J of the plan's grid, payload = the CRC-32 of the
 *          tile's bytes in the file (then of its mirror, for an off-diagonal tile of A·Aᵀ)
 *
 * write_tile reports what it stored (oc_mm_resume_written, any thread, pieces of a tile in any
 * order); a tile whose every element is stored is finished. Checkpoints come when a tile
 * finishes, at most every OUTCORE_RESUME_INTERVAL seconds (default 2): the inputs are checked
 * first (oc_mm_source_check: a size that differs, a read of a mapping that met the end of its
 * file), then the output is msync'ed, the finished tiles' records written and the journal
 * fdatasync'ed. A record never vouches for bytes that are not on the disk, nor for a tile
 * that may have read an input after it changed: once one changed, no tile goes on record any
 * more and the job fails. The tiles recorded before stay good: a read past the end of a
 * mapped file marks the mapping before it reads zeros (map_guard.h), and a checkpoint comes
 * after the reads of the tiles it records. OUTCORE_RESUME_KILL_AFTER=k kills the process
 * (SIGKILL) after the first checkpoint that brings the tiles on record to k or more.
 */
#ifndef OC_MATMUL_MATMUL_RESUME_H
#define OC_MATMUL_MATMUL_RESUME_H

#include <stdint.h>

#include "outcore.h"
#include "io/io.h"
#include "matmul/matmul_job.h"
#include "matmul/matmul_source.h"

typedef struct oc_mm_resume oc_mm_resume;

/* What identifies the job: its operands (op(A)'s and op(B)'s sources and transposes; b NULL
 * for A·Aᵀ from A alone) and the result's dtype; and B's source whenever the job reads one
 * (A·Aᵀ of B the same file included), checked with A's at each checkpoint. */
typedef struct oc_mm_resume_job {
    const oc_mm_source *a, *b;
    int transpose_a, transpose_b;
    oc_matmul_dtype result;
    const oc_mm_source *b_read;
} oc_mm_resume_job;

/* Before the output is created. Without opts->resume: refuses (OC_ERR_INPUT, saying how to
 * resume or start over) when the output has a journal, else *out = NULL. With it: refuses an
 * output in memory (OC_ERR_INVALID_ARGUMENT), opens the journal (refusing one of another
 * job, OC_ERR_INPUT naming what differs) or creates one. */
oc_status oc_mm_resume_start(oc_context *ctx, const oc_matmul_job *job, const oc_mm_resume_job *id,
                             const oc_matmul_options *opts, const oc_matmul_array *c, oc_mm_resume **out);

/* The temporary file a resumed run reopens, or NULL to create one. */
const char *oc_mm_resume_temp(const oc_mm_resume *r);
/* Records the output's temporary file (flushed); `writer` is synced at each checkpoint. */
oc_status oc_mm_resume_record_temp(oc_context *ctx, oc_mm_resume *r, oc_npy_out *writer, unsigned char *data,
                                   int64_t ld, size_t elem);

/* The callbacks of matmul_job.h (job->io is the job layer's oc_mm_io). */
oc_status oc_mm_resume_plan_tiles(const oc_matmul_job *job, int64_t tm, int64_t tn, int64_t kp, const char *how);
int oc_mm_resume_tile_done(const oc_matmul_job *job, int64_t row0, int64_t col0);
/* write_tile stored rows x cols elements from (row0, col0), within one tile of the plan. */
oc_status oc_mm_resume_written(oc_context *ctx, oc_mm_resume *r, const oc_matmul_job *job, int64_t row0, int64_t rows,
                               int64_t col0, int64_t cols);
/* After a failure: puts the tiles finished since the last checkpoint on record, unless an
 * input changed (then nothing, and ctx keeps the failure's message). */
oc_status oc_mm_resume_checkpoint(oc_context *ctx, oc_mm_resume *r);

/* Whether a failed job's journal and temporary file are worth keeping: it was resumed, or it
 * has tiles on record. */
int oc_mm_resume_worth_keeping(const oc_mm_resume *r);
/* After the output was renamed into place (or nothing is worth keeping): removes the journal.
 * Frees r; NULL is a no-op. */
void oc_mm_resume_finish(oc_mm_resume *r);
/* After a failure: the journal stays for a later run. Frees r; NULL is a no-op. */
void oc_mm_resume_close(oc_mm_resume *r);

#endif
