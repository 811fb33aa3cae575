/*
 * cli_progress.h - a job's time as the CLI shows it: the progress bar on stderr, the clock,
 * OUTCORE_TRACE's phases.
 */
#ifndef OC_TOOLS_CLI_PROGRESS_H
#define OC_TOOLS_CLI_PROGRESS_H

/* The progress bar: pass as oc_gram_options.progress with a cli_progress as user data. It
 * draws on stderr (a terminal only) once the job has run about a second, and cancels the job
 * when a signal was caught (cli_cancel_on_signal), -q or not. */
typedef struct cli_progress {
    double start;
    double last_draw;
    int drawn;
    int enabled;
    const char *label;
    double work;      /* bit-MACs the whole job represents (n·p·m), for the rate; 0: the rate is
                       * of what the job's progress counts (done) */
    const char *unit; /* of the rate: "bit-MAC" unless set after init ("B" for bytes) */
} cli_progress;
void cli_progress_init(cli_progress *p, const char *label, double work, int enabled);
void cli_progress_update(void *user, double done, double total);
void cli_progress_finish(cli_progress *p);

double cli_now(void);
/* OUTCORE_TRACE (docs/environment.md): prints "outcore cli: <phase> <seconds since *t>" to
 * stderr and sets *t to now; with the variable unset only the clock is read. */
void cli_trace_phase(double *t, const char *phase);

#endif
