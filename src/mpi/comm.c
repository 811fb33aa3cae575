/*
 * comm.c - MPI start and end, the status agreement every phase of a rank job ends with,
 * and the helpers of comm.h.
 *
 * The agreement is how one rank's failure becomes every rank's: each phase of
 * oc_gram_ranks (set-up, compute, delivery, commit) ends with oc_mpi_agree, and no rank
 * starts a phase's communication before the previous agreement, so a failing rank never
 * leaves another blocked in a send or receive it will not match.
 */
#include "mpi/comm.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/hash.h"

static int we_initialised;

const char *oc_mpi_library(void)
{
    static char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (!version[0]) {
        MPI_Get_library_version(version, &len);
        version[strcspn(version, "\n")] = '\0';
        char *comma = strchr(version, ',');
        if (comma) *comma = '\0';
    }
    return version;
}

int oc_mpi_ready(void)
{
    int init = 0, fini = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fini);
    return init && !fini;
}

int oc_mpi_rank(void)
{
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int oc_mpi_size(void)
{
    int s = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &s);
    return s;
}

oc_status oc_mpi_init(int *rank, int *size)
{
    int init = 0;
    MPI_Initialized(&init);
    if (!init) {
        int provided = 0;
        /* Funneled: only the thread that called oc_gram_ranks makes MPI calls; the
         * backends' workers never do. */
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return OC_ERR_IO;
        we_initialised = 1;
        /* Errors come back as codes (turned into statuses), not as aborts. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    }
    if (rank) *rank = oc_mpi_rank();
    if (size) *size = oc_mpi_size();
    return OC_OK;
}

void oc_mpi_finalize(void)
{
    /* No rank leaves before every rank got here: the launcher ends the whole job as soon as
     * one rank exits with a failure, which could kill rank 0 before it printed the job's
     * error or removed its temporary file (MPI_Finalize is not guaranteed to synchronise). */
    if (we_initialised && oc_mpi_ready()) {
        fflush(stdout);
        fflush(stderr);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
    }
    we_initialised = 0;
}

oc_status oc_mpi_fail(oc_context *ctx, int err, const char *what)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(err, text, &len);
    return oc_fail(ctx, OC_ERR_IO, "%s: %s", what, text);
}

void oc_mpi_bcast_string(char *buf, int cap, int root)
{
    buf[cap - 1] = '\0';
    MPI_Bcast(buf, cap, MPI_CHAR, root, MPI_COMM_WORLD);
}

oc_status oc_mpi_agree(oc_context *ctx, oc_status status)
{
    if (!oc_mpi_ready())
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_mpi_agree: MPI is not initialised (oc_mpi_init)");
    const int rank = oc_mpi_rank(), size = oc_mpi_size();
    int mine[2] = {status != OC_OK ? rank : size, status != OC_OK}, all[2] = {0, 0};
    MPI_Allreduce(&mine[0], &all[0], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine[1], &all[1], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    const int first = all[0], failed = all[1];
    if (failed == 0) return OC_OK;
    struct {
        int status;
        char message[1024];
    } what = {0};
    if (rank == first) {
        what.status = (int)status;
        const char *m = oc_context_last_error(ctx);
        snprintf(what.message, sizeof what.message, "%s", m && *m ? m : oc_status_string(status));
    }
    MPI_Bcast(&what.status, 1, MPI_INT, first, MPI_COMM_WORLD);
    oc_mpi_bcast_string(what.message, (int)sizeof what.message, first);
    /* Every rank failing (the same bad input, read by each) is one problem, not rank 0's; so
     * is a cancel (mpirun passes a SIGINT or SIGTERM on to every rank), whichever rank
     * noticed it first. */
    if (failed == size || what.status == OC_ERR_CANCELLED)
        return oc_fail(ctx, (oc_status)what.status, "%s", what.message);
    return oc_fail(ctx, (oc_status)what.status, "rank %d of %d: %s", first, size, what.message);
}

oc_status oc_mpi_agree_same(oc_context *ctx, const void *bytes, size_t size, const char *what)
{
    if (!oc_mpi_ready())
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_mpi_agree_same: MPI is not initialised (oc_mpi_init)");
    uint64_t hash = oc_fnv1a(OC_FNV1A_SEED, bytes, size) ^ size;
    uint64_t first = hash;
    MPI_Bcast(&first, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    oc_status st = OC_OK;
    if (hash != first)
        st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                     "its %s differs from rank 0's: every rank must be given the same job (docs/mpi.md)",
                     what ? what : "job");
    return oc_mpi_agree(ctx, st);
}

#define PIECE (1 << 30)

oc_status oc_mpi_send_bytes(oc_context *ctx, const void *buf, int64_t bytes, int dest, int tag)
{
    const char *p = buf;
    for (int64_t done = 0; done < bytes;) {
        int count = bytes - done < PIECE ? (int)(bytes - done) : PIECE;
        int err = MPI_Send(p + done, count, MPI_BYTE, dest, tag, MPI_COMM_WORLD);
        if (err != MPI_SUCCESS) return oc_mpi_fail(ctx, err, "MPI_Send");
        done += count;
    }
    return OC_OK;
}

oc_status oc_mpi_recv_bytes(oc_context *ctx, void *buf, int64_t bytes, int source, int tag)
{
    char *p = buf;
    for (int64_t done = 0; done < bytes;) {
        int count = bytes - done < PIECE ? (int)(bytes - done) : PIECE;
        int err = MPI_Recv(p + done, count, MPI_BYTE, source, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS) return oc_mpi_fail(ctx, err, "MPI_Recv");
        done += count;
    }
    return OC_OK;
}
