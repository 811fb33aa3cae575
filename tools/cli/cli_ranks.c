/* cli_ranks.c - the CLI under MPI ranks (cli_ranks.h): the launcher, the command line
 * parsed on every rank, the ranks' agreements. */
#include "cli/cli_ranks.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_signal.h"

/* The launchers' variables: size first, then the rank that goes with it. Open MPI sets
 * OMPI_COMM_WORLD_*, MPICH's and Intel MPI's Hydra PMI_*, PMIx launchers (Open MPI 5, srun
 * --mpi=pmix) PMIX_RANK without a size. */
static const struct {
    const char *size, *rank;
} launchers[] = {
    {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
    {"PMI_SIZE", "PMI_RANK"},
    {"PMIX_SIZE", "PMIX_RANK"},
};

int cli_launched_by_mpi(int *size, int *rank, const char **var)
{
    for (size_t k = 0; k < sizeof launchers / sizeof launchers[0]; ++k) {
        const char *s = getenv(launchers[k].size), *r = getenv(launchers[k].rank);
        if (!s && !r) continue;
        *size = s ? atoi(s) : 0;
        *rank = r ? atoi(r) : 0;
        *var = s ? launchers[k].size : launchers[k].rank;
        return 1;
    }
    return 0;
}

int cli_parse_off_rank0(int (*parse)(int argc, char **argv, void *args), int argc, char **argv, void *args, char *held,
                        size_t cap)
{
    int size = 0, rank = 0, saved = -1;
    const char *var = NULL;
    FILE *hold = NULL;
    held[0] = '\0';
    if (cli_launched_by_mpi(&size, &rank, &var) && rank != 0) {
        fflush(stderr);
        hold = tmpfile();
        int to = hold ? fileno(hold) : open("/dev/null", O_WRONLY);
        saved = to >= 0 ? dup(STDERR_FILENO) : -1;
        if (saved >= 0) dup2(to, STDERR_FILENO);
        if (!hold && to >= 0) close(to);
    }
    int rc = parse(argc, argv, args);
    if (saved >= 0) {
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
    }
    if (hold) {
        rewind(hold);
        held[fread(held, 1, cap - 1, hold)] = '\0';
        fclose(hold);
    }
    return rc;
}

int cli_usage_over_ranks(int rc, const char *held, int rank, int size)
{
    oc_context *ctx = NULL;
    (void)oc_context_create(&ctx); /* without one the agreement still agrees */
    oc_status mine = rc < 0 ? OC_OK : rc == OC_EXIT_USAGE ? OC_ERR_INVALID_ARGUMENT : OC_ERR_IO;
    oc_status st = oc_mpi_agree(ctx, mine);
    int first = -1, of = 0;
    /* The agreement's message names the lowest failing rank ("rank R of N: ", outcore.h). */
    if (st != OC_OK && rank != 0 && sscanf(oc_context_last_error(ctx), "rank %d of %d:", &first, &of) == 2 &&
        first == rank && held[0]) {
        const char *text = strncmp(held, "outcore: ", 9) == 0 ? held + 9 : held;
        size_t len = strlen(text);
        fprintf(stderr, "outcore: rank %d of %d: %s%s", rank, size, text, len && text[len - 1] == '\n' ? "" : "\n");
        fflush(stderr);
    }
    oc_context_free(ctx);
    return st == OC_OK ? -1 : cli_exit_code(st);
}

int cli_same_command_over_ranks(int argc, char **argv, int rank)
{
    /* The arguments after the program's name, each with its NUL: "-o x" and "-ox" differ. */
    size_t at = 0;
    for (int k = 1; k < argc; ++k) at += strlen(argv[k]) + 1;
    char *line = malloc(at ? at : 1);
    at = 0;
    for (int k = 1; line && k < argc; ++k) {
        const size_t len = strlen(argv[k]) + 1;
        memcpy(line + at, argv[k], len);
        at += len;
    }
    oc_context *ctx = NULL;
    (void)oc_context_create(&ctx);
    const oc_status st = oc_mpi_agree_same(ctx, line ? line : "", line ? at : 0, "command line");
    if (st != OC_OK && rank == 0) {
        fprintf(stderr, "outcore: %s\n", oc_context_last_error(ctx));
        fflush(stderr);
    }
    free(line);
    oc_context_free(ctx);
    return st == OC_OK ? -1 : cli_exit_code(st);
}

oc_status cli_agree_or_cancel(oc_context *ctx, oc_status st)
{
    return oc_mpi_agree(ctx, st == OC_OK && cli_cancel_requested() ? OC_ERR_CANCELLED : st);
}

int cli_start_ranks(const char *command, int *ranked, int *rank, int *size)
{
    int env_size = 0, env_rank = 0;
    const char *var = NULL;
    *ranked = 0;
    if (!cli_launched_by_mpi(&env_size, &env_rank, &var)) return -1;
    if (!oc_mpi_library()) {
        /* One rank alone is an ordinary run; several would each write the whole output. */
        if (env_size <= 1) return -1;
        if (env_rank != 0) return OC_EXIT_USAGE;
        return cli_usage_error("%s: started by an MPI launcher with %d ranks (%s), but this outcore was built "
                               "without MPI: rebuild with an MPI installed (docs/mpi.md), or run one process",
                               command, env_size, var);
    }
    if (oc_mpi_init(rank, size) != OC_OK) {
        fprintf(stderr, "outcore: %s set, but MPI_Init_thread failed\n", var);
        return OC_EXIT_FAILURE;
    }
    *ranked = 1;
    return -1;
}
