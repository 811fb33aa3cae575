/*
 * backend.h - the Gram backend vtable. gram.c reaches the backends only through these tables,
 * so it includes neither gram/cpu/ nor gram/cuda/; each backend defines its table.
 */
#ifndef OC_GRAM_BACKEND_H
#define OC_GRAM_BACKEND_H

#include "gram/gram_job.h"

/* Raised when the table's layout changes. What a backend keeps between jobs (pinned
 * staging) belongs to the context (core/context.h) and is freed without the table. */
#define OC_BACKEND_ABI 2

typedef struct oc_backend_vtbl {
    int abi;          /* OC_BACKEND_ABI */
    const char *name; /* "cpu", "cuda" */
    /* Nonzero when the backend can run a job on device `device` now (cheap; no messages). */
    int (*usable)(int device);
    /* Computes the job; fills the backend fields of job->stats. */
    oc_status (*gram)(oc_gram_job *job);
    /* Nonzero when the backend counts the rows' popcounts itself (the GPU, from the panels
     * it uploads): oc_gram then leaves job.pop_a and pop_b NULL. */
    int own_popcounts;
    /* The plan the job would run under, as text or JSON (--plan), without running it. */
    oc_status (*plan)(oc_gram_job *job, int json, char **out);
} oc_backend_vtbl;

extern const oc_backend_vtbl oc_backend_cpu;
/* The CPU's sparse algorithm (src/gram/cpu/sparse/gram_sparse.c): needs job->sparse, the plan of
 * gram/gram_choice.h. */
extern const oc_backend_vtbl oc_backend_cpu_sparse;
#ifdef OC_HAVE_CUDA
extern const oc_backend_vtbl oc_backend_cuda;
#endif

#endif
