/*
 * map_cpu_eval.h - the block interpreter of map on the CPU: evaluates the plan's IR over any
 * range of the element-wise result's flat (C order) indices, at most OC_MAP_BLOCK elements
 * at a time, one typed loop per IR node (map_cpu_ops.h) over cache-resident buffers, as
 * numexpr does.
 *
 * One evaluator per thread: it owns its buffers (one block per constant, and one per value
 * live at once among the other nodes) and holds no lock; many evaluators read one plan at
 * once.
 */
#ifndef OC_MAP_CPU_MAP_CPU_EVAL_H
#define OC_MAP_CPU_MAP_CPU_EVAL_H

#include <stdint.h>
#include "map/map_plan.h"

/* Elements per block: a few such buffers per node stay in L2 while the loops run. */
#define OC_MAP_BLOCK 4096

typedef struct oc_map_eval oc_map_eval;

/* NULL when out of memory. */
oc_map_eval *oc_map_eval_create(const oc_map_plan *m);
void oc_map_eval_free(oc_map_eval *ev);

/* Evaluates elements [start, start + n) (n <= OC_MAP_BLOCK) of the expression; returns a
 * pointer to the n results, of type m->expr_type, valid until the next call. With dst not
 * NULL the results may be written there instead (and dst returned): the caller's output
 * when its type is the expression's. *error is set to 1 on a runtime error (an integer to a
 * negative integer power). */
const void *oc_map_eval_block(oc_map_eval *ev, int64_t start, int64_t n, void *dst, int *error);

#endif
