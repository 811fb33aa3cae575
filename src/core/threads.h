/*
 * threads.h - a parallel-for over independent tasks on pthreads.
 *
 * oc_parallel_run starts `threads` workers that take task indices from one atomic counter
 * (dynamic scheduling: tiles near the diagonal are cheaper than others). The calling thread
 * does no task: it wakes about ten times a second to report progress and to check the
 * context's cancel flag, so both reach the user from the thread that called the library,
 * and a slow progress callback holds no worker up.
 *
 * oc_progress_pace: every job's progress reports, about ten times a second.
 */
#ifndef OC_CORE_THREADS_H
#define OC_CORE_THREADS_H

#include <pthread.h>
#include <stdint.h>
#include "outcore.h"
#ifndef __cplusplus /* C11 atomics; the CUDA benchmarks (C++) include this header for the rest */
#include <stdatomic.h>
#endif

/* Seconds from the end of one progress report to the start of the next, at least. */
#define OC_PROGRESS_INTERVAL 0.1
/* ...and at least this many times as long as the previous report took, so that a slow callback
 * takes at most a tenth of the calling thread's time (1 in 1 + 9). */
#define OC_PROGRESS_SLOW_FACTOR 9

/* A job's progress reports (oc_progress_fn: about ten times a second), paced from when the
 * previous report returned, not from when it started: a callback that takes the interval or
 * longer then still leaves the job the interval to run between two reports, where pacing from
 * its start called it again as soon as it returned, after every piece of work. One pace
 * serves a job's whole run, across the pieces it runs one after the other. A callback slower
 * than a ninth of the interval moves the next report further off (OC_PROGRESS_SLOW_FACTOR
 * times its own duration): the calling thread works on between reports in some jobs (the CPU
 * product, a GPU job's loop), and a fixed interval let a 0.2 s callback take two thirds of it. */
typedef struct oc_progress_pace {
    oc_progress_fn fn; /* NULL: nothing is reported */
    void *user;
    double returned; /* oc_now() when the last report returned, or when the pace started */
    double wait;     /* seconds from `returned` to the next report: 0 means OC_PROGRESS_INTERVAL */
} oc_progress_pace;

/* A pace for fn(user, ...) (fn may be NULL), started now. */
oc_progress_pace oc_progress_pace_start(oc_progress_fn fn, void *user);

/* Seconds until the next report is due (<= 0: due now, if fn is set). */
double oc_progress_until_due(const oc_progress_pace *p);

/* Whether a report is due: fn is set and OC_PROGRESS_INTERVAL (or OC_PROGRESS_SLOW_FACTOR
 * times the last report's duration, when longer) has passed since the last report returned. */
int oc_progress_due(const oc_progress_pace *p);

/* Reports done of total when due, or whenever fn is set with `last` (the job's final report,
 * done == total); returns whether it called fn. A callback may cancel the job: the caller
 * checks the context after a report. */
int oc_progress_report(oc_progress_pace *p, double done, double total, int last);

/* Runs fn(arg, task, worker) for task in [0, ntasks) on `threads` workers (worker in
 * [0, threads)). A task returns OC_OK or a failure status, which stops the run after the
 * tasks in flight; the first failure is returned. Tasks run concurrently and must not write the
 * context: a task that can fail keeps its message in its own job state, under its own
 * lock, and the caller records it. Cancellation returns OC_ERR_CANCELLED. task_weights
 * (may be NULL) weigh tasks for progress: done and total of the run's tasks' weights,
 * reported through progress (may be NULL) when due while the workers run, never as the run
 * ends. The job's final report (oc_progress_report with `last`) is its caller's, and a job
 * that runs its tasks in several runs reports through one pace across them. */
typedef oc_status (*oc_task_fn)(void *arg, int64_t task, int worker);

oc_status oc_parallel_run(oc_context *ctx, int threads, int64_t ntasks, oc_task_fn fn, void *arg,
                          const int64_t *task_weights, oc_progress_pace *progress);

#ifndef __cplusplus
/* Records st in *first unless a failure is there already: of the parts of one piece of work
 * run on several threads, the first to fail is the one reported. OC_OK records nothing. */
static inline void oc_first_failure(atomic_int *first, oc_status st)
{
    int ok = OC_OK;
    if (st != OC_OK) atomic_compare_exchange_strong(first, &ok, (int)st);
}
#endif

/* The stack every thread the library starts has at least. glibc gives a thread the stack limit
 * (ulimit -s) by default, and a limit of 32 KiB then ends a job in a segmentation fault on its
 * first worker. The deepest thread of the library's own (a CPU tile with its epilogue, a sink
 * writing its rows, a failure formatting its message) was measured at 13 KiB over the CLI
 * tests' jobs; this leaves room for far deeper ones, and for a sanitizer's larger frames. */
#define OC_THREAD_STACK_MIN ((size_t)256 << 10)

/* The stack size a thread of the library's starts with: the default (pthread_attr_getstacksize
 * of a default attribute: the stack limit under glibc) when that is at least
 * OC_THREAD_STACK_MIN, else OC_THREAD_STACK_MIN, never below PTHREAD_STACK_MIN. */
size_t oc_thread_stack_size(void);

/* Every thread the library starts starts here: pthread_create of fn(arg) with a stack of
 * oc_thread_stack_size() bytes, detached when `detached` (else the caller joins it). Returns
 * pthread_create's status (0: started). */
int oc_thread_start(pthread_t *thread, int detached, void *(*fn)(void *), void *arg);

/* Fails ctx for a thread pthread_create would not start (its error rc), named by what ("worker
 * thread 2 of 4"): an exhausted limit of threads (EAGAIN) is named as ulimit -u, with fewer
 * threads as the way out when the job asked for more than one. */
oc_status oc_thread_start_failed(oc_context *ctx, int rc, const char *what, int threads);

/* The number of worker threads a job uses for a requested count (0 = all cores). */
int oc_threads_resolve(int requested);

/* Monotonic seconds. */
double oc_now(void);

#endif
