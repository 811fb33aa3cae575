/*
 * map_cpu.h - what the element-wise driver (map_cpu.c) and the reductions (map_cpu_reduce.c)
 * share: the job's threads, cancellation, progress and first error.
 */
#ifndef OC_MAP_CPU_MAP_CPU_H
#define OC_MAP_CPU_MAP_CPU_H

#include <pthread.h>
#include <stdatomic.h>
#include "core/workers.h"
#include "map/cpu/map_cpu_eval.h"

typedef struct oc_map_cpu_job {
    oc_context *ctx;
    const oc_map_plan *m;
    oc_workers *workers;
    int threads;
    pthread_t caller;  /* progress is reported from the calling thread only */
    atomic_llong done; /* elements evaluated, for progress */
    double last_progress;
    atomic_int failed; /* 1: out of memory, 2: negative integer power, 3: cancelled,
                                * 4: an input file shrank (mapped_file.h) */
    int release;       /* the inputs exceed the host budget: drop pages once read */
} oc_map_cpu_job;

/* Drops the pages of the file inputs' elements [begin, end) (and of out's, when not NULL and
 * the output is a file) from the process's mapping once they are read: they stay in the page
 * cache, but a job over inputs larger than --host-mem holds only what it is reading. */
void oc_map_cpu_release(const oc_map_plan *m, unsigned char *out, int64_t begin, int64_t end);

/* Counts n more elements done; on the calling thread, reports progress about ten times a
 * second. Returns nonzero when the job must stop (cancel, an input file that shrank, or another
 * part failed). */
int oc_map_cpu_tick(oc_map_cpu_job *job, int64_t n);

/* Runs the reduction of job->m into out (map_cpu_reduce.c). */
oc_status oc_map_cpu_reduce(oc_map_cpu_job *job, void *out);

/* The reduction op of x[0..n) (values of the reduction type t) into *out, in the CPU's order:
 * float sums 0 + numpy's pairwise sum, integer sums modulo 2^64, min and max with numpy's NaN
 * propagation (n > 0). The GPU backend combines its per-row partials with it. */
void oc_map_reduce_values(int t, oc_map_reduce op, const void *x, int64_t n, void *out);

/* Finishes m's reduction: res holds the result in the reduction's type (out_count values, or
 * one without out_ndim); divides a mean by the reduced count, then casts into out when res is
 * not out. */
void oc_map_reduce_finish(const oc_map_plan *m, void *res, void *out);

#endif
