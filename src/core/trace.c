/*
 * trace.c - OUTCORE_TRACE's phase times (trace.h).
 */
#include "core/trace.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/threads.h"

int oc_tracing(void)
{
    static int on = -1;
    if (on < 0) on = getenv("OUTCORE_TRACE") != NULL;
    return on;
}

void oc_trace_phase(double *t, const char *who, const char *phase)
{
    double now = oc_now();
    if (oc_tracing()) fprintf(stderr, "outcore %s: %-12s %8.4f s\n", who, phase, now - *t);
    *t = now;
}
