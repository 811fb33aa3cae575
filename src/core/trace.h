/*
 * trace.h - OUTCORE_TRACE: where a job's time goes, phase by phase, to stderr. A diagnostic
 * for benchmarks; with the variable unset nothing is printed and a phase costs one clock read.
 * The CUDA engine's per-tile events are in engine/cuda/engine_trace.h.
 */
#ifndef OC_CORE_TRACE_H
#define OC_CORE_TRACE_H

/* Nonzero when OUTCORE_TRACE is set (to anything, even 0). */
int oc_tracing(void);
/* Nonzero when it is set to "tiles": each tile's kernel span too (engine/cuda/engine_trace.h). */
int oc_tracing_tiles(void);

/* Prints "outcore <who>: <phase> <seconds since *t>" (when tracing) and sets *t to now. */
void oc_trace_phase(double *t, const char *who, const char *phase);

#endif
