/*
 * comm.h - what the rank layer shares: the world's rank and size, status agreement, large
 * messages, and MPI errors as statuses. Only src/mpi includes mpi.h.
 */
#ifndef OC_MPI_COMM_H
#define OC_MPI_COMM_H

#include <stdint.h>

#include <mpi.h>

#include "outcore.h"

/* This process's rank and the number of ranks of MPI_COMM_WORLD (after oc_mpi_init). */
int oc_mpi_rank(void);
int oc_mpi_size(void);
/* Nonzero once oc_mpi_init ran (or MPI was initialised by the caller). */
int oc_mpi_ready(void);

/* Records an MPI error code on ctx as OC_ERR_IO, "what: <MPI's string>". */
oc_status oc_mpi_fail(oc_context *ctx, int err, const char *what);

/* Point-to-point of any size (MPI counts are int: sent in pieces of at most 1 GiB). Both
 * sides must name the same byte count. */
oc_status oc_mpi_send_bytes(oc_context *ctx, const void *buf, int64_t bytes, int dest, int tag);
oc_status oc_mpi_recv_bytes(oc_context *ctx, void *buf, int64_t bytes, int source, int tag);

/* Broadcasts a string of at most cap - 1 bytes from root into buf (cap bytes) on every rank. */
void oc_mpi_bcast_string(char *buf, int cap, int root);

#endif
