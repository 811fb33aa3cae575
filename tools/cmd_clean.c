/* cmd_clean.c - `outcore clean OUT`: removes what interrupted jobs left beside an output
 * (oc_output_clean): temporaries of processes no longer running, and the resume journal with
 * its snapshot. Uses outcore.h only. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "commands.h"
#include "outcore.h"

static const char clean_usage[] =
    "usage: outcore clean OUT [OUT...]\n"
    "\n"
    "Removes what interrupted jobs left beside each output OUT: its temporary files\n"
    "(OUT.tmp-PID-RANDOM) whose process no longer runs, and its resume journal\n"
    "(OUT.outcore-journal, with its top-k snapshot), unless a running job holds it. OUT itself\n"
    "is never touched. Prints each file it removed, or that there was nothing to remove.\n"
    "A later job on OUT removes stale temporaries by itself; clean is for the journal of a\n"
    "job that will not be resumed, and for the disk space meanwhile.\n";

static void print_removed(void *user, const char *path, int64_t bytes)
{
    (void)user;
    char size[32];
    printf("removed %s (%s)\n", path, cli_bytes((double)bytes, size, sizeof size));
}

int oc_cmd_clean(int argc, char **argv)
{
    /* The outputs, moved to argv's front; after "--" every argument is one (cli_args). */
    int outputs = 0;
    cli_args args = CLI_ARGS_INIT(argc, argv), *cl = &args;
    for (const char *arg; (arg = cli_next(cl)) != NULL;) {
        if (cli_positional(cl)) {
            argv[1 + outputs++] = argv[cl->i];
        } else if (cli_flag(cl, "--help|-h")) {
            fputs(clean_usage, stdout);
            return OC_EXIT_OK;
        } else {
            return cli_unknown_option(cl, 1);
        }
    }
    if (outputs == 0) return cli_usage_error("clean: no output given: outcore clean OUT");
    oc_context *ctx = NULL;
    oc_status st = oc_context_create(&ctx);
    if (st != OC_OK) return cli_status_error(NULL, st);
    /* Every output is cleaned, past one that fails; the exit status is the first failure's. */
    int code = OC_EXIT_OK;
    for (int i = 1; i <= outputs; i++) {
        int64_t removed = 0;
        st = oc_output_clean(ctx, argv[i], print_removed, NULL, &removed);
        if (st != OC_OK) {
            const int failed = cli_status_error(ctx, st);
            if (code == OC_EXIT_OK) code = failed;
        } else if (removed == 0) {
            printf("%s: nothing to remove\n", argv[i]);
        }
    }
    oc_context_free(ctx);
    return code;
}
