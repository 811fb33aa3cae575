/*
 * sink.h - the dense destination of a Gram job: caller memory or a memory-mapped .npy.
 *
 * Tiles arrive already converted to the result dtype. For A·Aᵀ a tile (I, J) with J >= I
 * is stored in place and mirrored at (J, I); in a diagonal tile only the elements on or
 * above the diagonal are read (kernels may skip the rest), and the mirror fills the others.
 * Tiles never overlap, so sink writes need no lock.
 */
#ifndef OC_EXEC_SINK_H
#define OC_EXEC_SINK_H

#include <stddef.h>
#include <stdint.h>

typedef struct oc_dense_sink {
    char *base;         /* element (0, 0) */
    int64_t ld;         /* elements between rows */
    size_t elem_size;   /* bytes per element: 2 or 4 */
    int symmetric;
} oc_dense_sink;

/* Stores a rows x cols tile whose element (0,0) is C(i0, j0); tile rows are tile_ld
 * elements apart. */
void oc_dense_sink_store(const oc_dense_sink *sink, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                         const void *tile, int64_t tile_ld);

#endif
