/*
 * map_cpu.h - what the element-wise driver (map_cpu.c) and the reductions (map_cpu_reduce.c)
 * share: the job's threads, cancellation, progress and first error.
 */
#ifndef OC_MAP_CPU_MAP_CPU_H
#define OC_MAP_CPU_MAP_CPU_H

#include <pthread.h>
#include <stdatomic.h>
#include "core/threads.h"
#include "core/workers.h"
#include "map/cpu/map_cpu_eval.h"

typedef struct oc_map_cpu_job {
    oc_context *ctx;
    const oc_map_plan *m;
    oc_workers *workers;
    int threads;
    pthread_t caller;  /* progress is reported from the calling thread only */
    atomic_llong done; /* elements evaluated, for progress */
    oc_progress_pace pace;
    atomic_int failed; /* 1: out of memory, 2: negative integer power, 3: cancelled,
                                * 4: an input file shrank (mapped_file.h) */
    int release;       /* the inputs exceed the host budget: drop pages once read */
} oc_map_cpu_job;

/* Drops the pages of the file inputs' elements [begin, end) (and of out's, when not NULL and
 * the output is a file) from the process's mapping once they are read: they stay in the page
 * cache, but a job over inputs larger than --host-mem holds only what it is reading. The range
 * is rounded outward to 2 MiB of the address (map_cpu.c says why), so pages that it shares
 * with a neighbouring range, another thread's, which may still be reading or writing there,
 * are dropped too: that thread's next access faults them back from the page cache, with the
 * same contents. */
void oc_map_cpu_release(const oc_map_plan *m, unsigned char *out, int64_t begin, int64_t end);

/* The same for a sweep that has read (or written) [begin, end) and goes on from end (begin: the
 * previous call's end, or where the sweep started): the end is rounded down instead, so that
 * the pages the sweep is still reading stay mapped. A last oc_map_cpu_release from the last
 * call's end drops the rest. */
void oc_map_cpu_release_behind(const oc_map_plan *m, unsigned char *out, int64_t begin, int64_t end);

/* Counts n more elements done; on the calling thread, reports progress about ten times a
 * second. Returns nonzero when the job must stop (cancel, an input file that shrank, or another
 * part failed). */
int oc_map_cpu_tick(oc_map_cpu_job *job, int64_t n);

/* Runs the reduction of job->m into out (map_cpu_reduce.c). */
oc_status oc_map_cpu_reduce(oc_map_cpu_job *job, void *out);

#endif
