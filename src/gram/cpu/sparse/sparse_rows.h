/*
 * sparse_rows.h - one row of the sparse Gram path: its counts against every B row, and what
 * the job's output takes of them (src/gram/cpu/sparse/sparse_rows.c; the job is run by gram_sparse.c).
 *
 * Row i of A meets the B rows in three ways:
 *   1. scatter: for each non-hub column of row i, +1 into acc[j] for every B row j in the
 *      column's list (the first touch of j goes to the touched list);
 *   2. touched rows: count = acc[j] + popcount(hub_a[i] & hub_b[j]); j is marked done;
 *   3. hub sweep (row i has h hub bits): the B hub rows not done, count = the hub words'
 *      popcount alone (so at most h), found through lists that end where the best score
 *      left in them cannot beat the row's floor (top-k) or the threshold: the prefix and
 *      size filters of all-pairs similarity search (Bayardo et al., WWW 2007). With one hub
 *      word, per hub and per hub pair, each entry carrying its row's hub word and popcount
 *      (sparse_hub_walk.h); with more, per hub or by popcount groups (sparse_hub_sweep.h).
 * With one hub word, step 1 also takes each touched row's hub word and popcount from the
 * list entry that touches it first, so step 2 reads nothing of the row itself.
 * Pairs with a count of 0 are never candidates. Their score is the same for every column
 * (0, or 1 for two empty rows under jaccard), so top-k lists are completed with them in
 * column order afterwards, and a threshold that a count of 0 passes goes the full-row way:
 * every element of the row is made (1 and 2 over all of B), through the dense path's
 * epilogue, so the bytes are the dense path's by construction.
 */
#ifndef OC_GRAM_CPU_SPARSE_SPARSE_ROWS_H
#define OC_GRAM_CPU_SPARSE_SPARSE_ROWS_H

#include <stdint.h>
#include "gram/gram_job.h"
#include "gram/select/select_key.h"
#include "gram/cpu/gram_cpu.h"
#include "core/isa.h"
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

/* Processes row i into w (top-k: its list in sj->keys; pairs: appended to w's block
 * buffers; full: also the dense sink). Returns 0, or -1 when a buffer could not grow. */
int oc_sparse_row(const sparse_job *sj, sparse_worker *w, int64_t i);

#endif
