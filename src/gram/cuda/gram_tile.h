/*
 * gram_tile.h - what a Gram kernel computes: one output tile from two panels on the device.
 *
 * Both kernels (gram_b1.cu, gram_popc.cu) take this struct. Panels are packed rows in the
 * layout of src/matrix/matrix.h: `words` 64-bit words per row (a multiple of 8, zero padded),
 * so the K loop has no tail. Element (r, c) of the tile is the AND-popcount of row r of a
 * and row c of b, converted by the job's metric and written at out[r * ld + c].
 */
#ifndef OC_GRAM_CUDA_GRAM_TILE_H
#define OC_GRAM_CUDA_GRAM_TILE_H

#include <stdint.h>

typedef struct oc_gram_tile {
    const uint64_t *a;    /* device: `rows` rows, `words` words apart (but see stride) */
    const uint64_t *b;    /* device: `cols` rows, `words` words apart (but see stride) */
    int64_t words;        /* words of each row the tile counts over (K), a multiple of 8 */
    int rows, cols;       /* tile extent */
    const int32_t *pop_a; /* device: popcounts of the rows of a (rows of them) */
    const int32_t *pop_b; /* device: popcounts of the rows of b (cols of them) */
    void *out;            /* device, 8-byte aligned: the converted tile */
    int64_t ld;           /* elements between output rows */
    int metric;           /* oc_metric */
    int dtype;            /* resolved oc_dtype: INT32, UINT16 or FLOAT32 */
    int upper_only;       /* a diagonal tile of A·Aᵀ: elements with c < r are not needed */
    /* Dense mode only: when not NULL the kernel runs only if *run_if != 0 (the second,
     * dense pass over a fused tile whose buckets overflowed: see below). */
    const uint32_t *run_if;
    /* Fused selection (select != OC_TILE_DENSE, b1 kernel only): instead of storing the tile
     * the epilogue offers each element to bounded per-row buckets (select_cuda.h):
     *   OC_TILE_TOPK:  key (score, column) to row r's bucket when it beats floors[i0 + r], and
     *                  for A·Aᵀ key (score, row) to column c's bucket when it beats
     *                  floors[j0 + c] (the mirror); of one row's (column's) keys in one
     *                  CTA's block only the best `kept` (the others cannot be in the list);
     *   OC_TILE_PAIRS: (column, value) to row r's bucket when its score key >= min_key.
     * A full bucket sets *over; the pipeline then runs the tile again in dense mode and
     * selects from it, and the buckets are ignored. */
    int select;                      /* oc_tile_select */
    int64_t i0, j0;                  /* global row and column of element (0, 0) */
    int kind;                        /* oc_key_kind of the scores */
    int symmetric;                   /* A·Aᵀ: only elements with global column > global row count */
    const uint64_t *floors;          /* top-k: the key a candidate of each list must beat (0: any) */
    int kept;                        /* top-k: keys kept per list */
    int seed;                        /* top-k: no list of the tile's rows or columns has a floor yet */
    uint32_t min_key;                /* pairs: the score key a pair needs */
    int bucket;                      /* slots per bucket */
    uint32_t *row_count, *col_count; /* entries offered to each bucket (may pass `bucket`) */
    uint64_t *row_keys, *col_keys;   /* tile rows (cols) x bucket */
    uint32_t *over;                  /* set when any bucket overflowed */
    /* Whether a bucket can overflow at all: top-k adds at most kept keys per CTA block to a
     * line's bucket, so a tile whose lines cross few enough blocks cannot (then the dense
     * pass and the selection's dense kernels are not launched; oc_gram_topk_may_overflow). */
    int may_overflow;
    /* Tiles split on K (wgmma kernel only; 0 and NULL elsewhere): the rows lie `stride`
     * words apart (0: `words`), a and b pointing at the slice's first word, and, when acc_in
     * is not NULL, the counts of the K already done (int32, acc_ld apart) are added to the
     * tile's before its epilogue. A partial slice is then a dense int32 counts tile into
     * that buffer (out == acc_in: each element is read and written by one thread). */
    int64_t stride;
    const int32_t *acc_in;
    int64_t acc_ld;
} oc_gram_tile;

/* The CTA block of both 1-bit tensor-core kernels (gram_b1_block.cuh): BM rows by BN
 * columns of the output tile. */
#define OC_GRAM_B1_BM 128
#define OC_GRAM_B1_BN 256

/* Top-k: whether a fused tile of rows x cols can fill a bucket of `bucket` slots. Each CTA
 * block offers a row's bucket at most kept keys (one per block along the row) and, for
 * A·Aᵀ, a column's bucket at most kept (one per block down the column). */
static inline int oc_gram_topk_may_overflow(int rows, int cols, int symmetric, int kept, int bucket)
{
    const int64_t along_row = (cols + OC_GRAM_B1_BN - 1) / OC_GRAM_B1_BN;
    const int64_t down_col = symmetric ? (rows + OC_GRAM_B1_BM - 1) / OC_GRAM_B1_BM : 0;
    const int64_t most = (int64_t)kept * (along_row > down_col ? along_row : down_col);
    return most > bucket;
}

/* Relative margin of the fused epilogue's float prefilter (gram_epilogue.cuh says why it is
 * safe). */
#define OC_FUSE_MARGIN 1e-5f

typedef enum oc_tile_select { OC_TILE_DENSE = 0, OC_TILE_TOPK = 1, OC_TILE_PAIRS = 2 } oc_tile_select;

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
