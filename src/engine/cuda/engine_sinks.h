/*
 * engine_sinks.h - results from device memory to the dense destination: the pinned download
 * ring and the sink tasks that empty it.
 *
 *   device block --cudaMemcpy2DAsync [d2h]--> pinned slot --sink task on a pool worker:
 *   waits for the copy's event, oc_dense_sink_put (or _store to mirror on the host)--> C
 *
 * The driving thread acquires a slot (blocking while every slot is held: this bounds how far
 * it runs ahead of the sinks), enqueues the copy, records the slot's ready event and posts
 * the slot's task; the task releases the slot when its rows are delivered. A failure is
 * recorded in the ring and returned by the next acquire and by the drain.
 */
#ifndef OC_ENGINE_CUDA_ENGINE_SINKS_H
#define OC_ENGINE_CUDA_ENGINE_SINKS_H

#include <cuda_runtime_api.h>

#include "core/workers.h"
#include "engine/engine_plan.h"
#include "engine/sink.h"
#include "mem/pool.h"

typedef struct oc_engine_sinks oc_engine_sinks;

/* Download slots as the plan says, from `pool`'s pinned memory (alloc_bytes may exceed the
 * ring's need: a cached block's size). Deliveries go to `dense` on `workers`. */
oc_status oc_engine_sinks_open(oc_context *ctx, oc_pool *pool, const oc_engine_plan *plan, size_t alloc_bytes,
                               int device, oc_dense_sink *dense, int host_mirror, oc_workers *workers,
                               oc_engine_sinks **out);

/* Enqueues the download of a rows x cols block at src (rows `pitch` bytes apart) to
 * C(i0, j0) after whatever the d2h stream already waits for. Adds the bytes to *bytes and
 * the slot waits to *waited. */
oc_status oc_engine_sinks_download(oc_context *ctx, oc_engine_sinks *s, const char *src, size_t pitch, int64_t i0,
                                   int64_t j0, int64_t rows, int64_t cols, cudaStream_t d2h, int64_t *bytes,
                                   double *waited);

/* Waits until every posted delivery is done; returns the first failure. */
oc_status oc_engine_sinks_drain(oc_context *ctx, oc_engine_sinks *s);

/* Drains (ignoring failures) and frees. NULL: no-op. */
void oc_engine_sinks_close(oc_engine_sinks *s);

#endif
