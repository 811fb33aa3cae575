/*
 * fault.h - the write-side fault plan of a context: which call of each kind of system call
 * fails in the current job, and how.
 *
 * Every writer reaches the file system through src/io/sysio.c, which asks the plan before
 * each call. A plan entry "k:mode" makes the k-th call of its kind in the job fail (ENOSPC
 * or EIO) or, for writes, transfer only half of what was asked (a short write, which the
 * writers must retry). Calls are counted per job from 1: oc_context_begin_job resets the
 * counts and reads the variables below once, so a test can run one job per k.
 *
 *   OUTCORE_FAULT_OPEN=spec       open/mkstemp of outputs, side and spill files
 *   OUTCORE_FAULT_WRITE=spec      write, pwrite, copy_file_range
 *   OUTCORE_FAULT_TRUNCATE=spec   ftruncate, fallocate
 *   OUTCORE_FAULT_MMAP=spec       mmap of an output for writing
 *   OUTCORE_FAULT_FSYNC=spec      fsync and msync of a written output (where a deferred
 *                                 write-back error shows)
 *   OUTCORE_FAULT_CLOSE=spec      close of a written output (where NFS reports one)
 *   OUTCORE_FAULT_RENAME=spec     rename of a finished output into place
 *   OUTCORE_FAULT_FLUSH_FOLDER=spec  fsync of the folder after that rename (best effort: a
 *                                 failure there leaves the job done)
 *   OUTCORE_FAULT_SHRINK=spec     mapping of an input file: the mapped input reads as though
 *                                 the file had been cut to half its size after it was opened
 *                                 (the file itself is not touched; any mode does it)
 *   OUTCORE_FAULT_SWEEP=spec      creation of an output's temporary: the new file is removed
 *                                 before its lock is taken, as another host's sweep of stale
 *                                 temporaries can remove it (any mode does it)
 *
 *   spec = entry[,entry...]   entry = k[:enospc|:eio|:short]   (default eio; short: writes)
 *
 * e.g. OUTCORE_FAULT_WRITE=3:short,4:enospc is a write cut short and then a full disk. A
 * variable that does not parse arms nothing. Tests in C arm a context with oc_fault_arm (context.h),
 * which lasts until disarmed; a variable that is set overrides it for its kind.
 *
 * core/ only holds the plan: the counting is a few atomics, so writers on several threads
 * (the spill file of threshold pairs) share one count per kind.
 */
#ifndef OC_CORE_FAULT_H
#define OC_CORE_FAULT_H

#include <stdatomic.h>

#include "outcore.h"

typedef enum oc_fault_call {
    OC_FAULT_OPEN,
    OC_FAULT_WRITE,
    OC_FAULT_TRUNCATE,
    OC_FAULT_MMAP,
    OC_FAULT_FSYNC,
    OC_FAULT_CLOSE,
    OC_FAULT_RENAME,
    OC_FAULT_FLUSH_FOLDER,
    OC_FAULT_SHRINK,
    OC_FAULT_SWEEP,
    OC_FAULT_CALLS
} oc_fault_call;

typedef enum oc_fault_mode { OC_FAULT_NONE, OC_FAULT_ENOSPC, OC_FAULT_EIO, OC_FAULT_SHORT } oc_fault_mode;

#define OC_FAULT_ENTRIES 4 /* entries per kind: enough for "short, then full" sequences */

typedef struct oc_fault_entry {
    long at; /* 1-based call number; 0 = unused */
    oc_fault_mode mode;
} oc_fault_entry;

typedef struct oc_fault_plan {
    oc_fault_entry armed[OC_FAULT_CALLS][OC_FAULT_ENTRIES]; /* by oc_fault_arm, kept across jobs */
    oc_fault_entry job[OC_FAULT_CALLS][OC_FAULT_ENTRIES];   /* in force for this job */
    atomic_long calls[OC_FAULT_CALLS];                      /* made in this job */
    atomic_int active;                                      /* any entry in job[] */
} oc_fault_plan;

/* Arms the plan for one kind of call from a spec as above (NULL or "" disarms it) from the
 * next job on; a context's plan is armed through oc_fault_arm (context.h). Returns 0,
 * arming nothing, when spec does not parse or call is not a kind. */
int oc_fault_plan_arm(oc_fault_plan *plan, oc_fault_call call, const char *spec);

/* Starts a job: counts from zero, entries from the variables or else from oc_fault_arm. */
void oc_fault_plan_begin_job(oc_fault_plan *plan);

/* Counts one call of `call` and returns how it must fail (OC_FAULT_NONE: it must not). */
oc_fault_mode oc_fault_plan_next(oc_fault_plan *plan, oc_fault_call call);

/* The variable that arms `call` ("OUTCORE_FAULT_WRITE"), for messages and tests. */
const char *oc_fault_variable(oc_fault_call call);

#endif
