/*
 * select_cuda.h - top-k and threshold selection in the CUDA pipeline (gram_cuda.c calls
 * these; the device work is gram_select.cu and, for fused tiles, the Gram kernel's epilogue).
 *
 *   top-k, k <= OC_CUDA_SELECT_MAX_K: the n x kept key lists and their floors live on the
 *     device; every tile's selection updates them on the selection's own stream; one D2H at
 *     the end.
 *   top-k, larger k: each tile is copied to pinned memory in row slices and selected on the
 *     host (stats say "host"): correct, but the tile crosses PCIe.
 *   threshold: after each tile the device writes the passing pairs in (row, col) order into
 *     a pair buffer; the row counts come back at once, the pairs when the next tile is
 *     selected (one tile of lag, so the copy overlaps the next kernel), and go to the host
 *     selection (oc_select_add_pairs) and from there, in row order, to the writer or
 *     callback on this (the caller's) thread.
 *
 * Fused tiles (b1 kernel, device selection): the Gram kernel does not write the tile; its
 * epilogue compares each element with the row's floor (top-k) or the threshold and appends
 * the few that pass to bounded per-row buckets in the tile's output slot (gram_tile.h), so
 * the selection reads kilobytes instead of the tile. A bucket that overflows makes the
 * pipeline run the tile again in dense mode and select it with the dense kernels. Top-k
 * fuses every tile (a CTA appends at most k keys per row and column, so even a row's first
 * tile, before its floor prunes, fits the buckets) and orders the tiles after the ones that
 * seed their lists; a threshold tile is fused unless recent tiles overflowed.
 * With fusion the tiles alternate between two compute streams and the selection follows
 * each tile on its own stream, in tile order.
 *
 * Device memory: the lists and floors are fixed bytes of the plan
 * (oc_cuda_select_fixed_bytes); the pair buffer, its row counts and offsets take
 * oc_cuda_select_extra_elem_bytes more per element of an output slot, the buckets
 * oc_cuda_select_edge_bytes per tile row, which the plan budgets.
 */
#ifndef OC_GRAM_SELECT_CUDA_SELECT_CUDA_H
#define OC_GRAM_SELECT_CUDA_SELECT_CUDA_H

#include "gram/gram_job.h"
#include "engine/cuda/device.h"
#include "gram/cuda/gram_tile.h"

typedef struct oc_cuda_select oc_cuda_select;

/* Whether the job's tiles may be fused (selection on the device and the b1 kernel). */
int oc_cuda_select_can_fuse(const oc_gram_job *job, int b1_kernel);
/* Device bytes the selection needs besides the output slots (0 without selection). */
int64_t oc_cuda_select_fixed_bytes(const oc_gram_job *job);
/* Bytes the selection adds to each element of an output slot. */
int64_t oc_cuda_select_extra_elem_bytes(const oc_gram_job *job);
/* Bytes the selection adds to an output slot per tile row (the fused tiles' buckets). */
int64_t oc_cuda_select_edge_bytes(const oc_gram_job *job, int b1_kernel);

/* Several devices share one job's selection (docs/architecture.md): this is device `index` of
 * `count`. Device 0 begins the selection and, on the caller's thread, delivers the pairs
 * every device hands over; each other device's top-k lists come back into `topk_keys`
 * (n x kept) for the caller to merge (oc_select_topk_merge), device 0's into the selection's
 * unless its topk_keys is set too (a resumed job, whose selection holds the restored lists:
 * gram_resume.h; count may then be 1). */
typedef struct oc_cuda_floors oc_cuda_floors;
typedef struct oc_cuda_select_share {
    int index, count;
    uint64_t *topk_keys;
    /* Top-k fused on the device: the job's table of each device's floors, when every device
     * can read every other's memory (select_floors.cuh); NULL: each device prunes with its
     * own. */
    oc_cuda_floors *floors;
} oc_cuda_select_share;

/* The floors table of a top-k job on `count` devices: each device's selection publishes its
 * floors there once they are zeroed, and before each fused tile raises its own to the
 * highest published. NULL when memory is short (the devices then prune alone). */
oc_cuda_floors *oc_cuda_floors_create(int count);
/* After the job's devices are done. NULL is a no-op. */
void oc_cuda_floors_free(oc_cuda_floors *f);

/* Once per job, before any device's selection opens or selects: the host selection's row
 * blocks of edge `tile`, and for host top-k a worker per device (`devices`). No-op without
 * a selection. */
oc_status oc_cuda_select_begin(oc_context *ctx, oc_gram_job *job, int64_t tile, int devices);
/* Sets up for tiles of edge `tile` whose `nslots` output slots each have tile * tile result
 * elements followed by the extra bytes above. share: NULL for a job on one device. */
oc_status oc_cuda_select_open(oc_context *ctx, oc_cuda_device *dev, oc_gram_job *job, int64_t tile, void *const *slots,
                              int nslots, int b1_kernel, const oc_cuda_select_share *share, oc_cuda_select **out);
/* How many tiles were fused and overflowed so far (threshold: overflows counted as their
 * counts come back; top-k: once the lists are back). */
void oc_cuda_select_counts(const oc_cuda_select *s, int64_t *fused, int64_t *overflowed);
/* Fused top-k tiles that first raised this device's floors to the other devices' (0 on one
 * device, or where the floors are not shared). */
int64_t oc_cuda_select_floor_imports(const oc_cuda_select *s);
/* Host seconds spent waiting for threshold pairs and handing them over (OUTCORE_TRACE). */
void oc_cuda_select_host_seconds(const oc_cuda_select *s, double *wait, double *work);

/* Whether the job's top-k lists are kept on the device (k up to OC_CUDA_SELECT_MAX_K); else
 * each tile is selected into the host's lists. */
int oc_cuda_select_topk_on_device(const oc_gram_job *job);
/* Device top-k, a resumable job's checkpoint (oc_resume_fetch_fn): once every tile enqueued so
 * far was selected, rows [row0, row0 + rows) of the device's lists into dest (rows x kept). */
oc_status oc_cuda_select_lists_fetch(oc_cuda_select *s, int64_t row0, int64_t rows, uint64_t *dest);

/* Fused top-k of A·Aᵀ: the diagonal tiles, which seed each panel's lists from its own
 * rows, should come before the tiles that need them when the order is free (every panel
 * resident), so that no tile waits for the selection of the one just before it. */
int oc_cuda_select_seeds_first(const oc_gram_job *job, int b1_kernel);

/* Before tile t = (I, J) in output slot `slot` is enqueued on `stream`: sets its global
 * offsets and, when it is fused, its selection fields (tile->select != OC_TILE_DENSE); top-k
 * makes `stream` wait for the selection of the tiles that seeded its panels' lists. */
oc_status oc_cuda_select_tile_begin(oc_cuda_select *s, int64_t t, int slot, int64_t I, int64_t J, oc_gram_tile *tile,
                                    cudaStream_t stream);
/* After the kernels of `tile` (enqueued on `stream`): selects it on the selection stream and
 * records `slot_free` there once the output slot may be reused. May wait for the previous
 * tile's pairs and deliver them. */
oc_status oc_cuda_select_tile_done(oc_cuda_select *s, const oc_gram_tile *tile, int slot, cudaStream_t stream,
                                   cudaStream_t d2h, cudaEvent_t slot_free);
/* After the last tile: the lists come back, the last pairs are delivered. */
oc_status oc_cuda_select_finish(oc_cuda_select *s, cudaStream_t d2h);
/* Frees host state and the selection stream; device and pinned buffers go with the pool.
 * NULL is a no-op. */
void oc_cuda_select_close(oc_cuda_select *s);

#endif
