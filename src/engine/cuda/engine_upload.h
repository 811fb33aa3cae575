/*
 * engine_upload.h - input rows from host memory (or their file) to device memory through the
 * pinned upload ring.
 *
 *   rows --copy split over pool workers and the driving thread--> pinned slot
 *        --cudaMemcpyAsync [h2d]--> device panel
 *
 * A panel goes up in slot-sized pieces of whole rows. Before refilling a slot the driving
 * thread waits for the event recorded after the copy that last read it; with two slots one
 * fills while the other uploads. One core copies far below the pinned link rate, so each
 * piece is copied by the plan's copy threads at once (oc_workers_split), with non-temporal
 * stores: the slot is read by the copy engine, not by a core.
 */
#ifndef OC_ENGINE_CUDA_ENGINE_UPLOAD_H
#define OC_ENGINE_CUDA_ENGINE_UPLOAD_H

#include <cuda_runtime_api.h>

#include "matrix/matrix.h"
#include "core/workers.h"
#include "engine/engine_plan.h"
#include "mem/pool.h"

typedef struct oc_engine_upload oc_engine_upload;

oc_status oc_engine_upload_open(oc_context *ctx, oc_pool *pool, const oc_engine_plan *plan, size_t alloc_bytes,
                                oc_workers *workers, oc_engine_upload **out);

/* Enqueues on h2d the upload of words [w0, w1) of rows [row0, row0 + rows) of m (0 and
 * m->words_per_row: the whole rows) to their places in the device rows at dst (row0's row,
 * m's row length apart); a slice of K is staged densely and placed by a 2-D copy. Returns
 * once the last piece is staged (its copy may still run). Adds to *seconds the host time
 * spent and to *waited the time spent waiting for a free slot. */
oc_status oc_engine_upload_rows(oc_context *ctx, oc_engine_upload *u, const oc_matrix *m, int64_t row0, int64_t rows,
                                int64_t w0, int64_t w1, void *dst, cudaStream_t h2d, double *seconds, double *waited);

/* Frees the ring (the device must be done with it). NULL: no-op. */
void oc_engine_upload_close(oc_engine_upload *u);

#endif
