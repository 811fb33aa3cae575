/*
 * select.h - top-k and threshold selection: the destination of a Gram job that wants each
 * row's best columns or every pair past a threshold instead of the dense matrix.
 *
 * Semantics (docs/topk.md says them for users):
 *  - top-k: per row the k best columns in the order of select_key.h (score descending, then
 *    column ascending; Hamming ascending); for A·Aᵀ the row itself is excluded. Slots past
 *    the candidates a row has get index -1 and score 0; with a minimum score, the columns
 *    that miss it leave the lists when they are handed over (oc_select_topk_result), their
 *    slots index -1 and score NaN (float), -1 (int32) or 65535 (uint16).
 *  - threshold: every pair whose score passes (>= T; Hamming <= T), compared in the result
 *    dtype; for A·Aᵀ each unordered pair once as (i, j) with i < j, the diagonal excluded.
 *    Pairs leave sorted by (row, col).
 *
 * Data flow and memory:
 *
 *   top-k   tile (I, J) --oc_select_tile (any worker)--> per-worker candidate buffers
 *           --merge under the row's stripe lock--> keys[n][kept], floors[n]
 *           (A·Aᵀ: the tile feeds its rows and, mirrored, its columns)
 *           The device keeps its own lists and hands them over with oc_select_topk_keys.
 *   pairs   tile (I, J) --oc_select_tile or oc_select_add_pairs--> a chunk of row block I
 *           --row block complete and every earlier block delivered--> oc_select_drain on
 *           the caller's thread --(row, col) order, batches--> emit (writer or callback)
 *
 * Top-k holds n * kept keys plus per-worker buffers (at most a tile of keys each): O(n·K +
 * tiles in flight). Pairs wait in memory only until their row block is complete; past
 * buffer_bytes of waiting pairs, further chunks go to an unlinked temporary file and are read
 * back when delivered, so the memory stays bounded whatever the number of pairs.
 *
 * Threads: oc_select_tile and oc_select_add_pairs may run concurrently on any threads (one
 * worker index per thread); oc_select_drain and the result calls run on the caller's thread
 * only, which is where emit is called. Worker failures are kept in the object and recorded
 * on the context by oc_select_drain / oc_select_check.
 */
#ifndef OC_GRAM_SELECT_SELECT_H
#define OC_GRAM_SELECT_SELECT_H

#include <stdint.h>

#include "outcore.h"
#include "gram/select/select_config.h"
#include "gram/select/select_key.h"

/* Validates (indices must fit select_key.h: n, p < 2^32 - 1) and allocates the top-k lists. */
oc_status oc_select_create(oc_context *ctx, const oc_select_config *cfg, oc_select **out);
void oc_select_free(oc_select *s);

oc_select_mode oc_select_get_mode(const oc_select *s);
oc_key_kind oc_select_key_kind(const oc_select *s);
/* Top-k: keys kept per row, min(k, candidates a row can have). */
int64_t oc_select_kept(const oc_select *s);
/* Top-k: the bytes its lists hold whole for the job (keys and a floor a row); 0 for pairs,
 * whose waiting pairs spill past buffer_bytes. */
int64_t oc_select_lists_bytes(const oc_select *s);
/* Pairs: a pair passes when its score key is >= this; above 0xFFFFFFFF none passes. */
uint64_t oc_select_min_key(const oc_select *s);

/* Called by the backend once it knows its tile edge (row blocks are tiles of this edge) and
 * how many workers call oc_select_tile concurrently (0: none, e.g. a device selects). */
oc_status oc_select_begin(oc_context *ctx, oc_select *s, int64_t tile, int workers);

/* Instead of oc_select_begin, for a backend that computes whole rows (the sparse path):
 * row blocks of `rows` rows, whose pairs come in pieces of whole rows of one block,
 * oc_select_add_pairs(s, i0, 0, rows, ...) with global columns, in any order, each row once; a
 * block is complete when every one of its rows came. Top-k lists are filled through
 * oc_select_topk_keys. No oc_select_tile calls. */
oc_status oc_select_begin_rows(oc_context *ctx, oc_select *s, int64_t rows);
/* Whole rows: the pairs a worker gathers before it hands them over as a piece, when `workers`
 * gather at once: their buffers together take about as much as the pairs that may wait in
 * memory before they spill (buffer_bytes), whatever the pairs of a block. */
int64_t oc_select_piece_pairs(const oc_select *s, int workers);

/* Worker `worker` hands over converted tile (i0, j0) of rows x cols, elements ld apart. For
 * A·Aᵀ only elements whose global column exceeds their global row are read, so a top-k tile
 * may also come in row slices (i0 + r0, j0) of a tile; a threshold tile must come whole.
 * Thread-safe. */
oc_status oc_select_tile(oc_select *s, int worker, int64_t i0, int64_t j0, int64_t rows, int64_t cols, const void *tile,
                         int64_t ld);

/* Jaccard top-k straight from a tile's uint32 counts (ld apart) and its rows' and columns'
 * popcounts (pop_a[rows], pop_b[cols]): returns 1 when the tile was selected so, 0 when it
 * must come converted through oc_select_tile instead (another mode or metric, or a list of
 * the tile still needs the tile's scores for its first floor). Thread-safe. */
int oc_select_tile_counts(oc_select *s, int worker, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                          const uint32_t *counts, int64_t ld, const int64_t *pop_a, const int64_t *pop_b);

/* Pairs a device already selected from tile (i0, j0): row_counts[rows] pairs per tile row, in
 * row order, columns tile-local and ascending within a row. Copied; thread-safe. */
oc_status oc_select_add_pairs(oc_select *s, int64_t i0, int64_t j0, int64_t rows, const uint32_t *row_counts,
                              const uint32_t *cols, const void *values, int64_t count);

/* Top-k: the n x kept key lists (row-major, best first, 0 = empty), for a device to fill. */
uint64_t *oc_select_topk_keys(oc_select *s);

/* Top-k: merges `count` other devices' n x kept lists (same layout) into the lists, keeping
 * each row's kept best keys, on `threads` threads over blocks of rows. Keys are totally
 * ordered (select_key.h), so the result does not depend on the order in which devices are
 * merged, nor on which device computed which tile. */
oc_status oc_select_topk_merge(oc_context *ctx, oc_select *s, const uint64_t *const *lists, int count, int threads);
/* The same for rows [row0, row0 + rows) only: the lists hold those rows (rows x kept). A key
 * in both lists is kept once, so merging lists that cover some tiles twice (a resumed job's
 * lists and a device's, gram_resume.h) gives the lists of the union of their tiles. */
oc_status oc_select_topk_merge_rows(oc_context *ctx, oc_select *s, const uint64_t *const *lists, int count,
                                    int64_t row0, int64_t rows, int threads);

/* Caller's thread: delivers every complete row block, in order, to emit. */
oc_status oc_select_drain(oc_context *ctx, oc_select *s);

/* Records a worker's failure on ctx (OC_OK when none). */
oc_status oc_select_check(oc_context *ctx, oc_select *s);

/* After the backend: top-k into indices[n*k] and scores[n*k] (either may be NULL), rows shared
 * by `threads` workers. */
oc_status oc_select_topk_result(oc_context *ctx, oc_select *s, int threads, int64_t *indices, void *scores);
/* The same for rows [first, first + rows) alone, into indices[rows*k] and scores[rows*k]:
 * a block for a writer that streams the lists. */
oc_status oc_select_topk_rows(oc_context *ctx, oc_select *s, int64_t first, int64_t rows, int64_t *indices,
                              void *scores);
/* The score of a top-k slot no column fills (select.h's semantics): 0, or with a minimum
 * score NaN (float32), -1 (int32), 65535 (uint16). */
void oc_select_padding_score(oc_dtype dtype, int use_min_score, void *score);
/* After the backend: delivers what is left and checks every row block arrived. */
oc_status oc_select_pairs_finish(oc_context *ctx, oc_select *s);
/* Pairs delivered so far. */
int64_t oc_select_pairs_count(const oc_select *s);

/* Resumed jobs (gram/gram_resume.h), after oc_select_begin: pairs: the row blocks delivered
 * so far (the next one to deliver), and the mark that blocks [0, blocks) and their `pairs`
 * pairs were delivered by an earlier run (their tiles must not come); top-k: the floors
 * made again from lists restored into oc_select_topk_keys. */
int64_t oc_select_pairs_blocks_delivered(const oc_select *s);
void oc_select_pairs_resume(oc_select *s, int64_t blocks, int64_t pairs);
void oc_select_topk_restored(oc_select *s);

#endif
