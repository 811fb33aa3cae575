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
#include "gram/cpu/gram_cpu.h"
#include "core/isa.h"
#include "gram/cpu/sparse/sparse_job.h"

/* Processes row i into w (top-k: its list in sj->keys; pairs: appended to w's block
 * buffers; full: also the dense sink). Returns 0, or -1 when a buffer could not grow. */
int oc_sparse_row(const sparse_job *sj, sparse_worker *w, int64_t i);

#endif
