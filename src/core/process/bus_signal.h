/*
 * bus_signal.h - SIGBUS left deliverable while a call reads mapped files.
 *
 * A read of a mapped input cut since it was mapped raises SIGBUS, which the map guard
 * (io/map_guard.h) turns into a flag. A program may block signals on its threads (one thread
 * that waits for them with sigwait, the rest blocking all): a fault raised on a thread that
 * blocks SIGBUS ends the process whatever handler is installed. The library's calls that read
 * mapped files unblock SIGBUS on the calling thread for their duration, and the threads they
 * start inherit that mask; the caller's own mask is put back as the call returns. Threads the
 * library keeps between calls (a context's pool, which a call that reads no file may start)
 * unblock SIGBUS themselves as they start.
 */
#ifndef OC_CORE_BUS_SIGNAL_H
#define OC_CORE_BUS_SIGNAL_H

#include <signal.h>

#include "outcore.h"

typedef struct oc_bus_signal_scope {
    sigset_t saved; /* the thread's mask before */
    int changed;    /* SIGBUS was blocked and is unblocked until oc_bus_signal_close */
} oc_bus_signal_scope;

/* Unblocks SIGBUS on this thread, keeping its mask in *scope. */
void oc_bus_signal_open(oc_bus_signal_scope *scope);

/* Unblocks SIGBUS for good on this thread: one of the library's own. */
void oc_bus_signal_unblock(void);

/* Puts back the mask oc_bus_signal_open kept. */
void oc_bus_signal_close(const oc_bus_signal_scope *scope);

/* Returns the oc_status of the expression call, evaluated with SIGBUS deliverable. */
#define OC_RETURN_WITH_BUS_SIGNAL(call)          \
    do {                                         \
        oc_bus_signal_scope oc_bus_;             \
        oc_bus_signal_open(&oc_bus_);            \
        const oc_status oc_bus_status_ = (call); \
        oc_bus_signal_close(&oc_bus_);           \
        return oc_bus_status_;                   \
    } while (0)

#endif
