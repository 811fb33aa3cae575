/* context.h - the opaque oc_context: last error, trace, cancel flag. */
#ifndef OC_CORE_CONTEXT_H
#define OC_CORE_CONTEXT_H

#include <stdatomic.h>
#include "outcore.h"
#include "core/fault.h"
#include "core/workers.h"

#define OC_MESSAGE_MAX 1024
#define OC_TRACE_MAX 2048

struct oc_context {
    oc_status status;
    char message[OC_MESSAGE_MAX];
    char trace[OC_TRACE_MAX];
    atomic_int cancel;
    /* Set by a job whose backend keeps resources between jobs (pinned staging): freeing the
     * context frees them. core/ holds only the pointer, so it includes no backend. */
    void (*release_cached)(void);
    oc_fault_plan faults; /* write-side fault injection for tests (fault.h) */
    /* The threads that stage copies and run sinks for the context's jobs (workers.h):
     * started by the first job that needs them, grown by later ones, joined by
     * oc_context_free. */
    oc_workers *workers;
};

/* Clears the error and the cancel flag and starts the fault plan's counts: called at the
 * start of each job. */
void oc_context_begin_job(oc_context *ctx);

/* The context's worker pool with at least `threads` workers, started or grown now. */
oc_status oc_context_workers(oc_context *ctx, int threads, oc_workers **out);

#endif
