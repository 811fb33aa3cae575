/*
 * cli_ranks.h - how `outcore gram` knows that an MPI launcher started it (docs/mpi.md).
 * Uses the environment only: a process that no launcher started never initialises MPI.
 */
#ifndef OC_TOOLS_CLI_RANKS_H
#define OC_TOOLS_CLI_RANKS_H

/* Nonzero when mpirun/mpiexec (Open MPI, MPICH, Intel MPI) or a PMIx launcher started this
 * process: *size and *rank from the launcher's variables (size 0 when it gives none), *var
 * the variable that told. */
int cli_launched_by_mpi(int *size, int *rank, const char **var);

#endif
