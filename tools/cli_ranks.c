/* cli_ranks.c - launcher detection for the rank layer (cli_ranks.h). */
#include "cli_ranks.h"

#include <stdlib.h>

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
