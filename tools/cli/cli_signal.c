/*
 * cli_signal.c - a signal cancels the job (cli_signal.h): the handlers of SIGINT, SIGTERM and
 * SIGHUP, and the checks of a signal caught between two jobs.
 */
#include "cli/cli_signal.h"

#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "cli/cli.h"

static oc_context *signal_ctx;

/* Set by the handler, read by any thread (a worker waiting on gen's planted pairs): an
 * atomic, lock-free int, which C11 allows a handler to store to. */
static atomic_int signal_seen;

static void on_signal(int sig)
{
    atomic_store(&signal_seen, sig);
    if (signal_ctx) oc_context_cancel(signal_ctx);
}

int cli_cancel_requested(void) { return atomic_load(&signal_seen) != 0; }

void cli_cancel_if_requested(void)
{
    if (signal_ctx && cli_cancel_requested()) oc_context_cancel(signal_ctx);
}

int cli_cancelled_before_job(void)
{
    if (!cli_cancel_requested()) return -1;
    cli_message("%s", oc_status_string(OC_ERR_CANCELLED));
    return OC_EXIT_CANCELLED;
}

void cli_cancel_on_signal(oc_context *ctx)
{
    signal_ctx = ctx;
    if (ctx) atomic_store(&signal_seen, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ctx ? on_signal : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* the terminal closed, an ssh session dropped */
}
