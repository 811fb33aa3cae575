/*
 * trace.c - OUTCORE_TRACE's phase times (trace.h).
 */
#include "core/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"

/* -1 until read: 0 unset, 1 set, 2 set to "tiles". */
static int level(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("OUTCORE_TRACE");
        on = !v ? 0 : strcmp(v, "tiles") == 0 ? 2 : 1;
    }
    return on;
}

int oc_tracing(void) { return level() > 0; }

int oc_tracing_tiles(void) { return level() == 2; }

void oc_trace_phase(double *t, const char *who, const char *phase)
{
    double now = oc_now();
    if (oc_tracing()) fprintf(stderr, "outcore %s: %-12s %10.6f s\n", who, phase, now - *t);
    *t = now;
}
