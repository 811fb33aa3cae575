/*
 * gram_job.h - one Gram job as the backends see it.
 *
 * gram/gram.c validates the public arguments, resolves defaults, prepares the destination
 * and fills this struct; a backend computes tiles and hands each finished tile to the
 * destination (dense sink or selection) that the job names.
 */
#ifndef OC_GRAM_GRAM_JOB_H
#define OC_GRAM_GRAM_JOB_H

#include <stdint.h>
#include "outcore.h"
#include "matrix/matrix.h"
#include "engine/device_spec.h"
#include "engine/sink.h"

struct oc_select;
struct oc_sparse_plan;
struct oc_resume;

typedef struct oc_gram_job {
    oc_context *ctx;
    const oc_matrix *a;
    const oc_matrix *b; /* == a when symmetric */
    int symmetric;      /* A·Aᵀ: compute tiles with J >= I only */
    int64_t n, p, m;    /* C is n x p; m columns */
    oc_metric metric;
    oc_dtype dtype;       /* resolved: INT32, UINT16 or FLOAT32 */
    const int64_t *pop_a; /* row popcounts of a, n of them; NULL for counts (unused) and
                               * for a backend that counts them itself (own_popcounts) */
    const int64_t *pop_b; /* of b, p of them (== pop_a when symmetric); NULL likewise */
    const oc_gram_options *opts;
    int64_t host_budget;                 /* bytes: opts->host_mem_bytes resolved (mem/host_budget.h) */
    oc_dense_sink *dense;                /* dense destination, or NULL when the result is discarded */
    struct oc_select *select;            /* top-k or threshold destination (select.h), else NULL */
    oc_gram_stats *stats;                /* never NULL inside the library; the backend fills its fields */
    const struct oc_sparse_plan *sparse; /* the hub split for the sparse backend (gram_choice.h) */
    struct oc_resume *resume;            /* a resumable job's journal (gram_resume.h), else NULL */
    oc_device_list devices;              /* CUDA: the logical devices and their budgets (device_spec.h) */
    const char *out_path;                /* the output file (a FILE output), else NULL: its fixed costs */
} oc_gram_job;

/* The error of inputs of different column counts (gram.c): where one count is the other's
 * bytes of numpy.packbits rows, it says that one input is packed and the other is not. */
oc_status oc_gram_columns_differ(oc_context *ctx, const char *a, int64_t a_cols, const char *b, int64_t b_cols);
/* K past the result's p columns (the rows of b_name) is refused: it would only add padding,
 * and n x K of it can be far larger than the inputs. OC_OK when topk <= p. */
oc_status oc_gram_check_topk(oc_context *ctx, int64_t topk, int64_t p, const char *b_name);
/* The result's dtype for metric and the asked dtype (oc_gram_result_dtype) into *result; a
 * dtype that does not hold the metric is refused, naming the dtypes each metric takes. */
oc_status oc_gram_check_dtype(oc_context *ctx, oc_metric metric, oc_dtype dtype, oc_dtype *result);
/* OC_OK when neither input's rows come from a source that changed since it was opened
 * (oc_matrix_check_source: a .npy left in its file and rewritten at another size); else the
 * change's message, OC_ERR_INPUT (ctx NULL: the status alone). gram.c asks it of the caller's
 * inputs once the backend has read its last row, before anything is committed, and each
 * checkpoint of a resumable job before it records a tile (gram_resume.c), on any backend. */
oc_status oc_gram_inputs_unchanged(oc_context *ctx, const oc_matrix *a, const oc_matrix *b);

#endif
