/*
 * map_cuda.h - what map's CUDA backend (map_cuda.c, element-wise plans) shares with its
 * reductions (map_cuda_reduce.c).
 */
#ifndef OC_MAP_CUDA_MAP_CUDA_H
#define OC_MAP_CUDA_MAP_CUDA_H

#include <cuda.h>

#include "map/map_plan.h"

/* Makes device 0's primary context current (the one oc_stream_run uses). */
oc_status oc_map_cuda_device(oc_context *ctx);

/* The kernel `name` of m's generated source (oc_map_emit_cuda), compiled with NVRTC. */
oc_status oc_map_cuda_function(oc_context *ctx, const oc_map_plan *m, const char *name, CUfunction *fn);

/* Runs spec under m's --gpu-mem, --host-mem and progress, then turns a failed launch (status failed, message why) or a set error flag
 * into map's message; fills stats' backend fields on success. */
oc_status oc_map_cuda_stream(oc_context *ctx, const oc_map_plan *m, const oc_stream_spec *spec, const oc_status *failed,
                             const char *why, const int *error, oc_map_stats *stats);

/* Runs m's reduction on device 0 into out (out_count values of out_type); docs/map.md,
 * "How it runs (GPU)". */
oc_status oc_map_cuda_reduce(oc_context *ctx, const oc_map_plan *m, void *out, oc_map_stats *stats);

#endif
