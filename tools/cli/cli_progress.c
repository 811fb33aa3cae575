/*
 * cli_progress.c - a job's time as the CLI shows it (cli_progress.h): the progress bar on
 * stderr, the clock, OUTCORE_TRACE's phases.
 */
#include "cli/cli_progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_signal.h"

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_trace_phase(double *t, const char *phase)
{
    static int on = -1;
    if (on < 0) on = getenv("OUTCORE_TRACE") != NULL;
    double now = cli_now();
    if (on) fprintf(stderr, "outcore cli: %-12s %8.4f s\n", phase, now - *t);
    *t = now;
}

void cli_progress_init(cli_progress *p, const char *label, double work, int enabled)
{
    p->work = work;
    p->start = cli_now();
    p->last_draw = 0;
    p->drawn = 0;
    p->label = label;
    p->unit = "bit-MAC";
    /* A bar is for people: only on a terminal, and never when asked to be quiet. */
    p->enabled = enabled && isatty(STDERR_FILENO);
}

void cli_progress_update(void *user, double done, double total)
{
    cli_progress *p = user;
    cli_cancel_if_requested();
    if (!p->enabled || total <= 0) return;
    double now = cli_now(), elapsed = now - p->start;
    if (elapsed < 1.0 || (p->drawn && now - p->last_draw < 0.1)) return;
    double frac = done / total;
    if (frac > 1) frac = 1;
    char bar[31];
    int fill = (int)(frac * 30);
    for (int k = 0; k < 30; ++k) bar[k] = k < fill ? '#' : '.';
    bar[30] = '\0';
    double eta = frac > 0 ? elapsed * (1 - frac) / frac : 0;
    /* The rate of the work, or without its size of what done counts (the unit names it). */
    char rate[32] = "";
    cli_si(p->work > 0 ? frac * p->work / elapsed : done / elapsed, rate, sizeof rate);
    fprintf(stderr, "\r%s [%s] %5.1f%%  %s%s/s  ETA %.0fs   ", p->label, bar, 100 * frac, rate, p->unit, eta);
    fflush(stderr);
    p->last_draw = now;
    p->drawn = 1;
}

void cli_progress_finish(cli_progress *p)
{
    if (p->drawn) fputs("\r\033[K", stderr);
    p->drawn = 0;
}
