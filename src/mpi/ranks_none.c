/*
 * ranks_none.c - the rank calls of outcore.h in a build without MPI (-DOUTCORE_MPI=OFF, or
 * none found): they say so. With MPI, src/mpi defines them and this file is empty.
 */
#ifndef OC_HAVE_MPI
#include "core/error.h"

static const char no_mpi[] = "this build of outcore has no MPI support (configure with an MPI installed, "
                             "-DOUTCORE_MPI=ON; docs/mpi.md)";

const char *oc_mpi_library(void) { return NULL; }

oc_status oc_mpi_init(int *rank, int *size)
{
    if (rank) *rank = 0;
    if (size) *size = 1;
    return OC_ERR_UNSUPPORTED;
}

void oc_mpi_finalize(void) {}

oc_status oc_mpi_agree(oc_context *ctx, oc_status status)
{
    if (status != OC_OK) return status;
    return oc_fail(ctx, OC_ERR_UNSUPPORTED, "%s", no_mpi);
}

oc_status oc_mpi_agree_same(oc_context *ctx, const void *bytes, size_t size, const char *what)
{
    (void)bytes, (void)size, (void)what;
    return oc_fail(ctx, OC_ERR_UNSUPPORTED, "%s", no_mpi);
}

void oc_mpi_node_share(oc_gram_options *opts) { (void)opts; }

oc_status oc_gram_ranks(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const oc_gram_options *opts,
                        const oc_output *out, oc_gram_stats *stats, char **ranks_json)
{
    if (ranks_json) *ranks_json = NULL;
    return oc_fail(ctx, OC_ERR_UNSUPPORTED, "%s", no_mpi);
}
#else
typedef int oc_ranks_none_unused; /* ISO C wants something in a translation unit */
#endif
