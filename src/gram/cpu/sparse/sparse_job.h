/*
 * sparse_job.h - a sparse Gram job as its rows see it (the index, the kernel, what the output
 * takes) and a worker's buffers: the types that sparse_rows.h's row function and the static
 * inline steps it is made of (sparse_row_state.h, sparse_hub_walk.h, sparse_hub_sweep.h)
 * share.
 */
#ifndef OC_GRAM_CPU_SPARSE_SPARSE_JOB_H
#define OC_GRAM_CPU_SPARSE_SPARSE_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "gram/gram_job.h"
#include "gram/select/select_key.h"
#include "gram/cpu/kernels/kernel.h"
#include "gram/cpu/sparse/sparse_index.h"

typedef enum sparse_mode {
    SPARSE_TOPK = 0,  /* candidates only, completed lists */
    SPARSE_PAIRS = 1, /* candidates only; a count of 0 cannot pass */
    SPARSE_FULL = 2   /* every element: dense output, hamming, thresholds a count of 0 passes */
} sparse_mode;

typedef struct sparse_job {
    const oc_gram_job *job;
    const oc_sparse_index *ix;
    const oc_cpu_kernel *kernel;
    sparse_mode mode;
    oc_key_kind kind;
    oc_epilogue_kind epilogue;
    int convert;         /* full rows go through the epilogue (not int32 counts) */
    int64_t kept;        /* top-k: keys per row */
    uint64_t *keys;      /* top-k: n x kept (NULL: not a top-k job) */
    uint32_t min_key;    /* pairs: the smallest passing score key */
    int pairs_pass_none; /* pairs: no score key passes */
    int64_t piece_pairs; /* pairs: a worker hands its rows over once it holds this many */
    size_t elem;         /* bytes per result value */
} sparse_job;

/* A worker's buffers. acc is zero between rows. */
typedef struct sparse_worker {
    uint32_t *acc, *touched; /* p each */
    uint64_t *touched_hub;   /* p: with one hub word, each touched row's hub word */
    uint32_t *touched_pop;   /* p: and its popcount */
    uint64_t *heap;          /* kept */
    uint32_t *full;          /* p counts of a full row */
    void *out;               /* p converted values */
    /* the pairs of the row block in progress */
    uint32_t *pcols;
    unsigned char *pvals;
    int64_t pcount, pcap;
    uint32_t *row_pairs; /* per block row */
    uint64_t *sortbuf;   /* a row's pairs as col << 32 | score key */
    uint64_t *sortspare; /* p: the radix sort's other half */
    int64_t sortcap;
    double updates; /* counts added, for the statistics */
} sparse_worker;

#endif
