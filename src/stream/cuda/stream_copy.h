/*
 * stream_copy.h - a streamed job's copies, through the pinned rings (mem/staging.h):
 *
 *   upload:   acquire an h2d slot (waits for the event of the copy that last read it) ->
 *             gather the piece from the host array into it (split over the pool's workers)
 *             -> cudaMemcpyAsync on h2d -> record the slot's event -> release at once
 *   download: acquire a d2h slot -> cudaMemcpyAsync into it on d2h -> record its ready event
 *             -> post a delivery task: a pool worker waits for the event, scatters the piece
 *             into the host array and releases the slot
 *
 *   pinned:   an array whose host memory is page-locked (oc_pinned_alloc, cudaHostAlloc, a
 *             registration) skips the rings: one cudaMemcpyAsync (2D when the chunk axis is
 *             not the first) between it and the device on h2d or d2h. That saves the gather
 *             or scatter, a read and a write of every byte in host memory, which bounds a
 *             streamed job from pageable memory. OUTCORE_PINNED_DIRECT=0 turns it off.
 *
 * A chunk crosses in slot-sized pieces of its device layout (stream/stream_job.h), so slots
 * need not hold a whole row. Failures found by delivery tasks are recorded on the ring and
 * returned by the next acquire or by oc_stream_copy_drain.
 */
#ifndef OC_STREAM_CUDA_STREAM_COPY_H
#define OC_STREAM_CUDA_STREAM_COPY_H

#include <cuda_runtime_api.h>

#include "core/workers.h"
#include "stream/stream_job.h"
#include "stream/stream_plan.h"
#include "mem/pool.h"

typedef struct oc_stream_copy oc_stream_copy;

/* Rings and events from pool's pinned memory as the plan sizes them, for job's arrays: a
 * ring of 0 slots is not made, nor one that no array would pass through (every array that
 * crosses that way is pinned and copied straight). workers run the gathers' parts and the
 * deliveries. Whether each array is pinned is found here, once: job->arrays must stay in
 * place until close, and upload and download take its entries, not copies of them. */
oc_status oc_stream_copy_open(oc_context *ctx, oc_pool *pool, const oc_stream_plan *plan, const oc_stream_job *job,
                              int device, oc_workers *workers, oc_stream_copy **out);

/* Enqueues rows [start, start+rows) of a (all of a SIDE array: start 0, rows 1) into the
 * device buffer dev on stream h2d. Blocks only for a free upload slot. */
oc_status oc_stream_copy_upload(oc_context *ctx, oc_stream_copy *c, const oc_stream_job_array *a, int64_t start,
                                int64_t rows, void *dev, cudaStream_t h2d);

/* Enqueues the download of rows [start, start+rows) of a from dev on d2h and their delivery
 * to a's host memory. Blocks only for a free download slot. */
oc_status oc_stream_copy_download(oc_context *ctx, oc_stream_copy *c, const oc_stream_job_array *a, int64_t start,
                                  int64_t rows, const void *dev, cudaStream_t d2h);

/* Waits until every delivery is done; returns the first failure a task recorded. */
oc_status oc_stream_copy_drain(oc_context *ctx, oc_stream_copy *c);

/* Bytes enqueued each way, and of both, those copied straight from or to pinned arrays. */
void oc_stream_copy_bytes(const oc_stream_copy *c, int64_t *h2d, int64_t *d2h, int64_t *direct);

/* The rings' pinned bytes (0 when every array crosses straight). */
int64_t oc_stream_copy_pinned_bytes(const oc_stream_copy *c);

/* Drains (ignoring failures), frees the rings and events. NULL: no-op. */
void oc_stream_copy_close(oc_stream_copy *c);

#endif
