/*
 * cli_signal.h - SIGINT, SIGTERM and SIGHUP cancel the job: the handlers, and the checks of a
 * signal caught between two jobs.
 */
#ifndef OC_TOOLS_CLI_SIGNAL_H
#define OC_TOOLS_CLI_SIGNAL_H

#include "outcore.h"

/* Installs SIGINT/SIGTERM/SIGHUP handlers that cancel the job running on ctx; NULL restores the
 * default actions (before ctx is freed: under mpirun a SIGTERM can come at any time). A job's
 * start clears the context's cancel flag (oc_context_cancel), so a signal caught between two
 * calls (after an input's read, before the job) would be lost: the commands check
 * cli_cancel_requested before each job (cli_cancelled_before_job), and cli_progress_update
 * cancels the job again at its first report when a signal came in the instant before it
 * started. */
void cli_cancel_on_signal(oc_context *ctx);
/* Nonzero once such a handler caught a signal (since cli_cancel_on_signal installed it): under
 * MPI ranks the CLI's own agreements before the job count it as a cancel. */
int cli_cancel_requested(void);
/* Before a job: OC_EXIT_CANCELLED, having said "cancelled" on stderr, when such a handler
 * caught a signal; else -1 (start the job). */
int cli_cancelled_before_job(void);
/* Cancels the job on the handlers' context again when such a handler caught a signal: the
 * progress bar's every report (cli_progress_update). */
void cli_cancel_if_requested(void);

#endif
