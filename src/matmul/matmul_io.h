/*
 * matmul_io.h - the job layer's side of the callbacks of matmul_job.h: read_panel and
 * panel_memory over the operands (matmul_panels.c), write_tile and tile_memory into the
 * result (matmul_dest.c).
 */
#ifndef OC_MATMUL_MATMUL_IO_H
#define OC_MATMUL_MATMUL_IO_H

#include <pthread.h>
#include <stdint.h>

#include "outcore.h"
#include "io/io.h"
#include "matmul/matmul_job.h"
#include "matmul/matmul_source.h"

/* Where the result goes: a .npy being written through its mapping, or caller memory. */
typedef struct oc_mm_dest {
    oc_npy_out *npy;     /* NULL for memory */
    unsigned char *data; /* element (0, 0) */
    int64_t ld;          /* elements between rows */
    size_t elem;
    int64_t rows, cols;
} oc_mm_dest;

typedef struct oc_mm_resume oc_mm_resume; /* matmul_resume.h */

typedef struct oc_mm_io {
    const oc_mm_source *src[2]; /* the operands of op(A) and op(B) (the same source for A·Aᵀ) */
    int transpose[2];           /* op(X) = Xᵀ */
    oc_mm_dest dest;
    int dest_gpu;         /* dest is GPU memory */
    oc_mm_resume *resume; /* a resumable job's journal, else NULL */
    pthread_mutex_t lock; /* the first failure's message goes to the context once */
    int failed;
    int64_t bytes_read; /* updated atomically */
} oc_mm_io;

/* Sets job->read_panel, job->write_tile and job->io = io (io's fields set by the caller). */
void oc_mm_io_bind(oc_matmul_job *job, oc_mm_io *io);

/* Records a callback's failure on the job's context, the first one only (callbacks run on
 * several threads). Returns status. */
oc_status oc_mm_io_fail(const oc_matmul_job *job, oc_status status, const char *message);

/* The result into c: a .npy created under a temporary name (its path checked, and not any
 * of the inputs; of numpy's shape, m x n less the dimension of a vector operand: b NULL is
 * A·Aᵀ), or, with reopen, the temporary file `reopen` of a resumed job; or caller memory of
 * dtype and shape m x n. OC_ERR_INPUT naming the problem. */
oc_status oc_mm_dest_open(oc_context *ctx, const oc_matmul_array *c, oc_matmul_dtype dtype, int64_t m, int64_t n,
                          const oc_mm_source *a, const oc_mm_source *b, const char *reopen, oc_mm_dest *d);
/* Renames a .npy into place (memory: nothing to do); abort removes it; keep leaves the
 * temporary file for a resumed run. */
oc_status oc_mm_dest_commit(oc_context *ctx, oc_mm_dest *d);
void oc_mm_dest_abort(oc_mm_dest *d);
void oc_mm_dest_keep(oc_mm_dest *d);

oc_status oc_mm_read_panel(const oc_matmul_job *job, oc_mm_operand which, int64_t row0, int64_t rows, int64_t col0,
                           int64_t cols, void *dst);
oc_status oc_mm_write_tile(const oc_matmul_job *job, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                           const void *tile, int64_t ld);
/* matmul_job.h's panel_memory, transposed_memory, stored_memory, tile_memory and tile_ready
 * over the operands and the result. */
const void *oc_mm_panel_memory(const oc_matmul_job *job, oc_mm_operand which, int64_t row0, int64_t col0, int64_t *ld);
const void *oc_mm_transposed_memory(const oc_matmul_job *job, oc_mm_operand which, int64_t row0, int64_t col0,
                                    int64_t *ld);
const void *oc_mm_stored_memory(const oc_matmul_job *job, oc_mm_operand which, int64_t *ld, int *transposed);
void *oc_mm_tile_memory(const oc_matmul_job *job, int64_t row0, int64_t col0, int64_t *ld);
oc_status oc_mm_tile_ready(const oc_matmul_job *job, int64_t row0, int64_t rows);

#endif
