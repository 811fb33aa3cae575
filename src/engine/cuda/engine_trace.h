/*
 * engine_trace.h - OUTCORE_TRACE=1: when the GPU computed each tile, to stderr (the phase
 * times are core/trace.h's). A diagnostic for benchmarks: with the variable unset nothing here
 * records an event or allocates.
 */
#ifndef OC_ENGINE_CUDA_ENGINE_TRACE_H
#define OC_ENGINE_CUDA_ENGINE_TRACE_H

#include <stdint.h>
#include <cuda_runtime_api.h>

#include "outcore.h"
#include "core/trace.h"

typedef struct oc_engine_trace oc_engine_trace;

/* Timed events around each of `ntiles` tiles' kernels. */
oc_status oc_engine_trace_open(oc_context *ctx, int64_t ntiles, oc_engine_trace **out);
oc_status oc_engine_trace_begin(oc_context *ctx, oc_engine_trace *tr, cudaStream_t stream);
oc_status oc_engine_trace_tile_begin(oc_context *ctx, oc_engine_trace *tr, int64_t t, cudaStream_t stream);
oc_status oc_engine_trace_tile_end(oc_context *ctx, oc_engine_trace *tr, int64_t t, cudaStream_t stream);

/* Once the device is idle: the kernels' time summed over tiles, and the spans when at least
 * one tile's kernels ran with the longest gaps between them (named by the tile that ended
 * each gap). Idle gaps say the GPU was starved; a busy time above the plan's kernel model
 * says the kernels ran slower than on one large tile. */
double oc_engine_trace_kernel_seconds(const oc_engine_trace *tr);
void oc_engine_trace_busy(const oc_engine_trace *tr);

void oc_engine_trace_close(oc_engine_trace *tr);

#endif
