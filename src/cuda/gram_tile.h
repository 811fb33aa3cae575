/*
 * gram_tile.h - what a Gram kernel computes: one output tile from two panels on the device.
 *
 * Both kernels (gram_b1.cu, gram_popc.cu) take this struct. Panels are packed rows in the
 * layout of src/core/matrix.h: `words` 64-bit words per row (a multiple of 8, zero padded),
 * so the K loop has no tail. Element (r, c) of the tile is the AND-popcount of row r of a
 * and row c of b, converted by the job's metric and written at out[r * ld + c].
 */
#ifndef OC_CUDA_GRAM_TILE_H
#define OC_CUDA_GRAM_TILE_H

#include <stdint.h>

typedef struct oc_gram_tile {
    const uint64_t *a;      /* device: `rows` rows, `words` words apart */
    const uint64_t *b;      /* device: `cols` rows, `words` words apart */
    int64_t words;          /* words per row, a multiple of 8 */
    int rows, cols;         /* tile extent */
    const int32_t *pop_a;   /* device: popcounts of the rows of a (rows of them) */
    const int32_t *pop_b;   /* device: popcounts of the rows of b (cols of them) */
    void *out;              /* device: the converted tile */
    int64_t ld;             /* elements between output rows */
    int metric;             /* oc_metric */
    int dtype;              /* resolved oc_dtype: INT32, UINT16 or FLOAT32 */
    int upper_only;         /* a diagonal tile of A·Aᵀ: elements with c < r are not needed */
} oc_gram_tile;

/* CTAs of a bm x bn tiling of the tile that compute (those of a diagonal tile lying wholly
 * below the diagonal return at once): the kernels' bit-MACs are this times bm * bn * K. */
static inline int64_t oc_gram_tile_blocks(const oc_gram_tile *t, int bm, int bn)
{
    int64_t grid_m = (t->rows + bm - 1) / bm, grid_n = (t->cols + bn - 1) / bn, blocks = 0;
    for (int64_t i = 0; i < grid_m; ++i) {
        /* Block (i, j) computes unless (j + 1) * bn <= i * bm. */
        int64_t first = t->upper_only ? (i * bm) / bn : 0;
        blocks += grid_n > first ? grid_n - first : 0;
    }
    return blocks;
}

#endif
