/*
 * map_reduce.h - the steps of a reduction both backends share, which fix its order: the
 * combine of a run of values and the finish (a mean's division, the cast into the output).
 * The CPU evaluator defines that order (docs/map.md, "Reductions"), so the bodies are its own
 * (map/cpu/map_cpu_reduce.c); the GPU backend's host side combines its per-row partials and
 * finishes its result with them, reaching them through this job-level header rather than the
 * CPU backend's.
 */
#ifndef OC_MAP_MAP_REDUCE_H
#define OC_MAP_MAP_REDUCE_H

#include <stdint.h>

#include "map/map_plan.h"

/* The reduction op of x[0..n) (values of the reduction type t) into *out, in the CPU's order:
 * float sums 0 + numpy's pairwise sum, integer sums modulo 2^64, min and max with numpy's NaN
 * propagation (n > 0). */
void oc_map_reduce_values(int t, oc_map_reduce op, const void *x, int64_t n, void *out);

/* Finishes m's reduction: res holds the result in the reduction's type (out_count values, or
 * one without out_ndim); divides a mean by the reduced count, then casts into out when res is
 * not out. */
void oc_map_reduce_finish(const oc_map_plan *m, void *res, void *out);

#endif
