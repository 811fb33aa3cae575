/*
 * sink.h - the dense destination of a Gram job: caller memory or a memory-mapped .npy.
 *
 * Tiles arrive already converted to the result dtype. For A·Aᵀ a tile (I, J) with J >= I
 * is stored in place and mirrored at (J, I); in a diagonal tile only the elements on or
 * above the diagonal are read (kernels may skip the rest), and the mirror fills the others.
 * Tiles never overlap, so sink writes need no lock.
 */
#ifndef OC_ENGINE_SINK_H
#define OC_ENGINE_SINK_H

#include <stddef.h>
#include <stdint.h>

typedef struct oc_dense_sink {
    char *base;       /* element (0, 0) */
    int64_t ld;       /* elements between rows */
    size_t elem_size; /* bytes per element: 2 or 4 */
    int symmetric;
    /* Nonzero: oc_dense_sink_put faults the destination of a whole-row block in with one call
     * before copying (memory nothing has touched yet: a caller's fresh array, an output
     * mapping on disk). Zero for memory already faulted in (an output pre-faulted on tmpfs),
     * where the call would walk every page again for nothing. */
    int populate;
} oc_dense_sink;

/* The mirror of a tile of a symmetric result: element (r, c) of the tile (rows x cols, its
 * rows tile_ld elements apart, elem bytes each) strictly above the diagonal, c > r + diag,
 * goes to row c, column r of dst (ld elements between rows). For the tile at (i0, j0) of C,
 * dst is C at (j0, i0) and diag is i0 - j0: every element (i, j) with j > i then lands at
 * (j, i). */
void oc_tile_mirror(void *dst, int64_t ld, const void *tile, int64_t tile_ld, int64_t rows, int64_t cols, int64_t diag,
                    size_t elem);

/* Stores a rows x cols tile (rows tile_ld elements apart, elem bytes each) at C(i0, j0) of C
 * (c its element (0, 0), ld elements between rows); of a symmetric C, only the tile's
 * elements on or above the diagonal, each also at its mirror (oc_tile_mirror). Gram's sinks
 * and matmul's A·Aᵀ store their tiles so. */
void oc_tile_store(void *c, int64_t ld, int64_t i0, int64_t j0, int64_t rows, int64_t cols, const void *tile,
                   int64_t tile_ld, size_t elem, int symmetric);

/* oc_tile_store into the sink's destination. */
void oc_dense_sink_store(const oc_dense_sink *sink, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                         const void *tile, int64_t tile_ld);

/* Stores a rows x cols block at C(i0, j0) as it is: no diagonal rule and no mirror (a
 * backend that produced the mirror itself sends it as a block of its own). Rows are copied
 * with non-temporal stores where the platform has them: the destination is written once
 * and not read again by the job, so loading its lines into the cache first (what a plain
 * store does) would only double the memory traffic of the copy. Blocks never overlap, so
 * concurrent puts need no lock. */
void oc_dense_sink_put(const oc_dense_sink *sink, int64_t i0, int64_t j0, int64_t rows, int64_t cols, const void *block,
                       int64_t block_ld);

#endif
