/*
 * gram_select.cuh - top-k and threshold selection of one Gram tile on the device: one host
 * entry point.
 *
 * The tile is the converted result the Gram kernel left in its output slot (rows x cols of
 * the result dtype, ld elements apart); nothing of it leaves the device. Keys and the order
 * are those of src/gram/select/select_key.h, so the device keeps exactly the lists the CPU keeps.
 */
#ifndef OC_GRAM_CUDA_GRAM_SELECT_CUH
#define OC_GRAM_CUDA_GRAM_SELECT_CUH

#include <stdint.h>

#include "engine/cuda/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest k the device lists support; larger k are selected on the host. */
#define OC_CUDA_SELECT_MAX_K 128
/* The largest bucket of a fused threshold tile (a warp sorts it in shared memory). */
#define OC_CUDA_SELECT_MAX_BUCKET 512
/* In the overflow count: a tile overflowed that could not (an internal error). */
#define OC_CUDA_SELECT_UNEXPECTED 0x80000000u

typedef struct oc_select_tile_args {
    const void *tile; /* device: the converted tile */
    int64_t ld;       /* elements between tile rows */
    int rows, cols;
    int64_t i0, j0; /* global row and column of element (0, 0) */
    int kind;       /* oc_key_kind */
    int symmetric;  /* A·Aᵀ: only elements with global column > global row count */
    /* top-k (topk_lists != NULL): n x kept keys, best first, 0 = empty */
    uint64_t *topk_lists;
    int kept;
    /* threshold (topk_lists == NULL): a pair passes when its score key >= min_key */
    uint32_t min_key;
    uint32_t *row_counts;  /* device: rows + 1 entries: pairs per row, then the total */
    uint32_t *row_offsets; /* device: rows entries, exclusive prefix sums */
    uint32_t *pair_cols;   /* device: tile-local columns, in (row, col) order */
    void *pair_values;     /* device: scores of the result dtype */
    /* top-k: the kept-th key of each list (what a candidate must beat), kept with the lists
     * for the fused epilogue; NULL when nothing reads them */
    uint64_t *floors;
    /* Fused tiles (gram_tile.h): the kernel left bounded buckets instead of the tile, and a
     * dense pass recomputed the tile only if *over. The selection then runs the dense
     * kernels above only if *over, and otherwise takes the buckets: top-k merges them into
     * the lists; threshold sorts each row's bucket by column (row_counts are the buckets'
     * counts). */
    int fused;
    const uint32_t *over;
    int may_overflow; /* fused top-k: 0 when no bucket can overflow (no dense kernels) */
    int bucket;
    const uint32_t *col_counts;
    const uint64_t *row_keys, *col_keys;
    uint32_t *overflows; /* top-k: counts the fused tiles that overflowed (may be NULL); a tile
                                * that overflowed where may_overflow was 0 sets OC_CUDA_SELECT_UNEXPECTED */
} oc_select_tile_args;

/* Enqueues the selection of one tile on `stream` (asynchronous). Top-k: updates the lists of
 * the tile's rows and, for A·Aᵀ, mirrored, of its columns (the rows of column panel J), in
 * two launches, so that a diagonal tile never updates a list from two warps at once; a
 * fused tile's buckets in one launch with a warp per list. Threshold: counts, prefix sums
 * and writes the passing pairs in (row, col) order. */
oc_status oc_cuda_select_tile(oc_context *ctx, oc_cuda_device *dev, const oc_select_tile_args *args,
                              cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
