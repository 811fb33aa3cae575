/*
 * select_cuda.h - top-k and threshold selection in the CUDA pipeline (gram_cuda.c calls
 * these; the device work is gram_select.cu).
 *
 *   top-k, k <= OC_CUDA_SELECT_MAX_K: the n x kept key lists live on the device; after each
 *     tile the selection kernels update them on the compute stream; one D2H at the end.
 *   top-k, larger k: each tile is copied to pinned memory in row slices and selected on the
 *     host (stats say "host"): correct, but the tile crosses PCIe.
 *   threshold: after each tile the device counts, offsets and writes the passing pairs in
 *     (row, col) order into a pair buffer carved from the output slot; the row counts come
 *     back at once, the pairs when the next tile is selected (one tile of lag, so the copy
 *     overlaps the next kernel), and go to the host selection (oc_select_add_pairs) and from
 *     there, in row order, to the writer or callback on this (the caller's) thread.
 *
 * Device memory: the lists are fixed bytes of the plan (oc_cuda_select_fixed_bytes); the
 * pair buffer, its row counts and offsets take oc_cuda_select_extra_elem_bytes more per
 * element of the output slot, which the plan budgets by planning with a larger element.
 */
#ifndef OC_CUDA_SELECT_CUDA_H
#define OC_CUDA_SELECT_CUDA_H

#include "../exec/gram_job.h"
#include "device.h"
#include "gram_tile.h"

typedef struct oc_cuda_select oc_cuda_select;

/* Device bytes the selection needs besides the output slot (0 without selection). */
int64_t oc_cuda_select_fixed_bytes(const oc_gram_job *job);
/* Bytes the selection adds to each element of the (single) output slot. */
int64_t oc_cuda_select_extra_elem_bytes(const oc_gram_job *job);

/* Sets up for tiles of edge `tile` whose output slot `out_slot` has tile * tile result
 * elements followed by the extra bytes above. */
oc_status oc_cuda_select_open(oc_context *ctx, oc_cuda_device *dev, oc_gram_job *job, int64_t tile, void *out_slot,
                              oc_cuda_select **out);
/* After the kernel of `t` (enqueued on `compute`): selects it. May wait for the previous
 * tile's pairs and deliver them. */
oc_status oc_cuda_select_tile_done(oc_cuda_select *s, const oc_gram_tile *t, int64_t i0, int64_t j0,
                                   cudaStream_t compute, cudaStream_t d2h);
/* After the last tile: the lists come back, the last pairs are delivered. */
oc_status oc_cuda_select_finish(oc_cuda_select *s, cudaStream_t compute, cudaStream_t d2h);
/* Frees host state; device and pinned buffers go with the pool. NULL is a no-op. */
void oc_cuda_select_close(oc_cuda_select *s);

#endif
