/*
 * select_out.h - files of top-k and threshold results (.npz, .tsv, .mtx), written under a
 * temporary name and renamed when complete (see io.h).
 *
 *   top-k      .npz: indices (int64 n x k), scores (result dtype n x k)
 *              .tsv: header "row<TAB>rank<TAB>col<TAB>score", one line per existing neighbour
 *   threshold  .npz: rows, cols (int64), values (result dtype), one element per pair
 *              .mtx: MatrixMarket coordinate integer|real general, 1-based, n x p
 *              .tsv: header "row<TAB>col<TAB>score"
 *
 * .npz entries are stored (not compressed) with their CRC-32, so numpy.load can map them;
 * ZIP64 fields appear wherever a size or offset passes 4 GiB (npz.h). Threshold pairs stream: their
 * number is known only at the end, so the rows array goes straight into the archive and its
 * headers are patched at the end, while cols and values go to unlinked side files in the
 * output's directory and are copied in at commit (copy_file_range where the kernel can).
 */
#ifndef OC_IO_FORMATS_SELECT_OUT_H
#define OC_IO_FORMATS_SELECT_OUT_H

#include <stdint.h>

#include "outcore.h"

/* OC_OK when path's extension suits the output (topk != 0: .npz, .tsv; threshold: .npz, .mtx,
 * .tsv); else OC_ERR_INVALID_ARGUMENT naming the path and the extensions that fit. */
oc_status oc_select_out_check_path(oc_context *ctx, const char *path, int topk);

/* A top-k file: opened (temporary name) before the job so that a bad path fails first,
 * written and renamed by commit (indices, scores: n x k, row-major), which frees w. */
typedef struct oc_topk_out oc_topk_out;
oc_status oc_topk_out_create(oc_context *ctx, const char *path, oc_topk_out **out);
oc_status oc_topk_out_commit(oc_context *ctx, oc_topk_out *w, int64_t n, int64_t k, const int64_t *indices,
                             const void *scores, oc_dtype dtype);
void oc_topk_out_abort(oc_topk_out *w); /* NULL is a no-op */
/* Fills rows [first, first + rows) of the n x k lists into indices and scores (rows x k each,
 * row-major; either may be NULL). */
typedef oc_status (*oc_topk_rows_fn)(void *user, int64_t first, int64_t rows, int64_t *indices, void *scores);
/* oc_topk_out_commit with the lists asked for in blocks of rows as they are written: memory
 * for a block (a few MiB), not for n x k arrays. */
oc_status oc_topk_out_commit_rows(oc_context *ctx, oc_topk_out *w, int64_t n, int64_t k, oc_dtype dtype,
                                  oc_topk_rows_fn rows, void *user);

typedef struct oc_pairs_out oc_pairs_out;

/* Opens the temporary file(s) of a threshold result of an n x p matrix. */
oc_status oc_pairs_out_create(oc_context *ctx, const char *path, oc_dtype dtype, int64_t n, int64_t p,
                              oc_pairs_out **out);
/* Appends pairs in (row, col) order; values have dtype. */
oc_status oc_pairs_out_append(oc_context *ctx, oc_pairs_out *w, const int64_t *rows, const int64_t *cols,
                              const void *values, int64_t count);
/* Finishes the file and renames it into place; frees w (also on failure). */
oc_status oc_pairs_out_commit(oc_context *ctx, oc_pairs_out *w);
/* Removes the temporary file(s); frees w. NULL is a no-op. */
void oc_pairs_out_abort(oc_pairs_out *w);
/* The temporary file's name (a resumable job records it: gram/gram_resume.h). */
const char *oc_topk_out_temp_path(const oc_topk_out *w);
const char *oc_pairs_out_temp_path(const oc_pairs_out *w);

#endif
