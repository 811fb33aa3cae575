/*
 * cli_ranks.h - `outcore gram` under MPI ranks (docs/mpi.md): whether a launcher started it
 * (from the environment alone: a process that no launcher started never initialises MPI),
 * its command line parsed on every rank with one message, and the ranks' agreements.
 */
#ifndef OC_TOOLS_CLI_RANKS_H
#define OC_TOOLS_CLI_RANKS_H

#include <stddef.h>

#include "outcore.h"

/* Nonzero when mpirun/mpiexec (Open MPI, MPICH, Intel MPI) or a PMIx launcher started this
 * process: *size and *rank from the launcher's variables (size 0 when it gives none), *var
 * the variable that told. */
int cli_launched_by_mpi(int *size, int *rank, const char **var);

/* parse(argc, argv, args), whose usage errors only rank 0 prints when a launcher started
 * several (each rank parses the same command line: one line, not one per rank). The other
 * ranks' errors are held in held (cap bytes, "" when none) for cli_usage_over_ranks, which
 * prints one that rank 0 did not have. Returns what parse returns. */
int cli_parse_off_rank0(int (*parse)(int argc, char **argv, void *args), int argc, char **argv, void *args, char *held,
                        size_t cap);

/* Under MPI ranks, after every rank parsed its command line (rc: -1, or the exit status of
 * its usage error): the ranks agree, so that none runs the job when one cannot. A usage
 * error that rank 0 had is the one rank 0 printed; one that only other ranks had (a wrapper
 * that adds an option on one rank, an output folder missing on one node) is printed by the
 * lowest of them, held, as "rank R of N: ...". -1 when every rank parsed, else the exit
 * status (every rank's, the lowest failing rank's). */
int cli_usage_over_ranks(int rc, const char *held, int rank, int size);
/* Collective, after cli_usage_over_ranks: every rank's command line (its arguments after the
 * program's name) must be rank 0's, or every rank stops with exit 2 and rank 0 prints one
 * line naming the lowest rank that differs. -1 when they agree, else the exit code. */
int cli_same_command_over_ranks(int argc, char **argv, int rank);

/* An agreement of the CLI's own under ranks (the checks of the files, the reading): a SIGINT
 * or SIGTERM caught since the handler was installed is this rank's cancel. (The job's
 * agreements, in oc_gram_ranks, see the context's cancel flag.) */
oc_status cli_agree_or_cancel(oc_context *ctx, oc_status st);

/* Under an MPI launcher: MPI started for `command`, or the reason it cannot be (-1 when it
 * started or no launcher ran this process, else the exit status). */
int cli_start_ranks(const char *command, int *ranked, int *rank, int *size);

#endif
