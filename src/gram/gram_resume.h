/*
 * gram_resume.h - resumable Gram jobs (opts.resume; docs/design-notes.md, "Resume").
 *
 * A resumable job keeps a journal beside its output (io/journal.h). Its header names the job
 * (inputs and the options that change the bytes); its records say what is done:
 *
 *   TEMP    a temporary file of this job's output (dense: the one a resumed run reopens)
 *   PLAN    unit = the tile edge; a resumed run uses the same tiles whatever its backend
 *   TILE    dense: unit = tile index I * tiles_j + J, payload = the CRC-32 of its bytes in
 *           the file (the tile, then its mirror for an off-diagonal tile of A·Aᵀ)
 *   TOPK    top-k: unit = tiles in the snapshot file (PATH.outcore-journal.topk) just
 *           renamed into place, payload = its CRC-32
 *   PAIRS   threshold: pairs delivered to the output (rows, cols, values), in order
 *   BLOCKS  threshold: unit = row blocks delivered so far, payload = pairs so far; the
 *           PAIRS records after the last BLOCKS record are not part of the journal
 *
 * The backend asks oc_resume_skip before each tile, reports each finished tile with
 * oc_resume_tile_done (any thread), and calls oc_resume_checkpoint where every tile it
 * started has finished (and, for threshold jobs, after oc_select_drain): that is where the
 * inputs are checked (oc_gram_inputs_unchanged: one changed fails the job, and nothing more
 * goes on record), the dense output is msync'ed and then the records are written and
 * fdatasync'ed, so that a record never reaches the disk before the bytes it vouches for, nor
 * vouches for a tile that read an input after it changed.
 */
#ifndef OC_GRAM_GRAM_RESUME_H
#define OC_GRAM_GRAM_RESUME_H

#include <stdint.h>

#include "outcore.h"
#include "gram/gram_job.h"

typedef struct oc_resume oc_resume;

/* Before the output is opened. Without opts->resume: refuses (OC_ERR_INPUT, saying how to
 * resume or start over) when the output has a journal, else *out = NULL. With it: opens the
 * journal (refusing one of another job, OC_ERR_INPUT naming what differs) or creates one. */
oc_status oc_resume_start(oc_context *ctx, const oc_gram_job *job, const oc_output *out, oc_resume **out_r);

/* The dense output's temporary file that a resumed run reopens, or NULL to create one. */
const char *oc_resume_dense_temp(const oc_resume *r);
/* Records the temporary file of this run's output (flushed). */
oc_status oc_resume_record_temp(oc_context *ctx, oc_resume *r, const char *temp_path, void *dense_writer);
/* The emit of threshold pairs to the output: a resumed run replays the journal's pairs
 * through it; pairs that pass through oc_resume_pairs are journalled. */
typedef oc_status (*oc_resume_emit_fn)(oc_context *ctx, void *user, const int64_t *rows, const int64_t *cols,
                                       const void *values, int64_t count);
void oc_resume_set_emit(oc_resume *r, oc_resume_emit_fn emit, void *user);
oc_status oc_resume_pairs(oc_context *ctx, oc_resume *r, const int64_t *rows, const int64_t *cols, const void *values,
                          int64_t count);

/* Backends. The tile edge of the journal (0: none yet, the backend chooses). */
int64_t oc_resume_tile_edge(const oc_resume *r);
/* After the backend chose its tile edge and began the selection, once per job: records the
 * plan, or checks the dense tiles in the file and restores the top-k lists (into
 * oc_select_topk_keys) or the delivered pairs. */
oc_status oc_resume_begin(oc_context *ctx, oc_resume *r, const oc_gram_job *job, int64_t tile);
/* Whether tile (I, J) is done (or, threshold, its row block delivered): the backend skips it. */
int oc_resume_skip(const oc_resume *r, int64_t I, int64_t J);
/* Tile (I, J) is in the dense sink or the selection. Thread-safe. */
void oc_resume_tile_done(oc_resume *r, const oc_gram_job *job, int64_t I, int64_t J);
/* No tile in flight: records what finished, when the interval has passed (or force). */
oc_status oc_resume_checkpoint(oc_context *ctx, oc_resume *r, const oc_gram_job *job, int force);
/* Top-k lists kept apart from the job's (a device's: select_cuda.h), on one or several parts
 * of a job. Part `part` reports `count` tiles (I, J pairs) that its lists now hold, and holds
 * no other tile than those it reported so far: its lists are exactly the lists of those tiles.
 * When the part's last merge is OUTCORE_RESUME_INTERVAL old (or force), fetch(user, row0,
 * rows, dest) copies rows [row0, row0 + rows) of its n x kept lists (best first) into dest,
 * block by block; they are merged into the job's lists (oc_select_topk_keys; a key in both is
 * kept once), its tiles go on record and the snapshot is written. The job's lists are then
 * those of every tile on record, whichever part computed it, whenever the merge came; the
 * backend merges the parts' final lists into them the same way. Thread-safe. */
typedef oc_status (*oc_resume_fetch_fn)(void *user, int64_t row0, int64_t rows, uint64_t *dest);
oc_status oc_resume_topk_lists(oc_context *ctx, oc_resume *r, const oc_gram_job *job, int part, const int64_t *tiles,
                               int64_t count, int force, oc_resume_fetch_fn fetch, void *user);
/* Tiles a backend should run between checkpoints for `threads` workers. */
int64_t oc_resume_group_tiles(const oc_resume *r, int threads);

/* After the output was renamed into place: removes the journal and its snapshot. Frees r. */
void oc_resume_finish(oc_resume *r);
/* After a failure: the journal stays for a later run. Frees r; NULL is a no-op. */
void oc_resume_close(oc_resume *r);
/* Whether a failed job's journal is worth keeping: it was resumed, or it has work on record
 * (a new job that failed before any checkpoint leaves nothing: oc_resume_finish instead). */
int oc_resume_worth_keeping(const oc_resume *r);

#endif
