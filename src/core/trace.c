/*
 * trace.c - OUTCORE_TRACE's phase times (trace.h).
 */
#include "core/trace.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"

/* -1 until read: 0 unset, 1 set, 2 set to "tiles". Atomic: jobs on several threads ask at
 * once; each reads the same environment, so whichever store lands is the same value. */
static int level(void)
{
    static atomic_int on = -1;
    int v = atomic_load_explicit(&on, memory_order_relaxed);
    if (v < 0) {
        const char *e = getenv("OUTCORE_TRACE");
        v = !e ? 0 : strcmp(e, "tiles") == 0 ? 2 : 1;
        atomic_store_explicit(&on, v, memory_order_relaxed);
    }
    return v;
}

int oc_tracing(void) { return level() > 0; }

int oc_tracing_tiles(void) { return level() == 2; }

void oc_trace_phase(double *t, const char *who, const char *phase)
{
    double now = oc_now();
    if (oc_tracing()) fprintf(stderr, "outcore %s: %-12s %10.6f s\n", who, phase, now - *t);
    *t = now;
}
