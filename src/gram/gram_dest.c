/*
 * gram_dest.c - where a Gram job's results go (gram_dest.h).
 */
#include "gram/gram_dest.h"

#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/error.h"
#include "core/threads.h"

static oc_status emit_to_callback(oc_context *ctx, void *user, const int64_t *rows, const int64_t *cols,
                                  const void *values, int64_t count)
{
    const oc_output *out = ((oc_gram_dest *)user)->out;
    if (out->pairs(out->pairs_user, rows, cols, values, count) != 0)
        return oc_fail(ctx, OC_ERR_CANCELLED, "the pairs callback asked to stop");
    return OC_OK;
}

static oc_status emit_to_file(oc_context *ctx, void *user, const int64_t *rows, const int64_t *cols, const void *values,
                              int64_t count)
{
    oc_gram_dest *dest = user;
    OC_CHECK(ctx, oc_pairs_out_append(ctx, dest->pairs_file, rows, cols, values, count));
    return dest->resume ? oc_resume_pairs(ctx, dest->resume, rows, cols, values, count) : OC_OK;
}

/* A resumable job: the temporary name of its top-k or threshold file, on record (a later
 * run removes it), and the way back to the file for the pairs an earlier run delivered. */
oc_status oc_gram_dest_resume_setup(oc_context *ctx, oc_gram_dest *dest, oc_resume *r)
{
    dest->resume = r;
    if (!r) return OC_OK;
    if (dest->pairs_file) {
        oc_resume_set_emit(r, emit_to_file, dest);
        return oc_resume_record_temp(ctx, r, oc_pairs_out_temp_path(dest->pairs_file), NULL);
    }
    if (dest->topk_file) return oc_resume_record_temp(ctx, r, oc_topk_out_temp_path(dest->topk_file), NULL);
    return OC_OK;
}

/* The dense output file: created, or for a resumed job the temporary file its journal names,
 * reopened with the tiles done so far. */
oc_status oc_gram_dest_dense_open(oc_context *ctx, const oc_gram_job *job, const oc_output *out, oc_resume *r,
                                  oc_npy_out **npy, void **data)
{
    const char *temp = r ? oc_resume_dense_temp(r) : NULL;
    if (temp) OC_CHECK(ctx, oc_npy_out_reopen(ctx, out->path, temp, (int)job->dtype, job->n, job->p, npy, data));
    else OC_CHECK(ctx, oc_npy_out_create(ctx, out->path, (int)job->dtype, job->n, job->p, npy, data));
    return r ? oc_resume_record_temp(ctx, r, oc_npy_out_temp_path(*npy), *npy) : OC_OK;
}

/* Checks the output against the selection options and opens what must be opened before the
 * job (a file's temporary name), then creates the selection state. */
oc_status oc_gram_dest_select_setup(oc_context *ctx, const oc_gram_options *o, const oc_output *out, oc_gram_job *job,
                                    oc_gram_dest *dest, oc_select **sel)
{
    int topk = o->topk > 0;
    oc_select_config cfg = {.mode = topk ? OC_SELECT_TOPK : OC_SELECT_PAIRS,
                            .n = job->n,
                            .p = job->p,
                            .symmetric = job->symmetric,
                            .metric = job->metric,
                            .dtype = job->dtype,
                            .k = o->topk,
                            .threshold = o->threshold,
                            .use_min_score = o->use_min_score,
                            .min_score = o->min_score,
                            .emit_user = dest};
    int64_t buffer = 0; /* tests force spilling with a small value */
    const int buffer_set = oc_env_whole("OUTCORE_PAIRS_BUFFER", INT64_MIN, INT64_MAX, &buffer);
    if (buffer_set < 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "OUTCORE_PAIRS_BUFFER=%s: expected a whole number of bytes",
                       getenv("OUTCORE_PAIRS_BUFFER"));
    cfg.host_budget = job->host_budget;
    if (buffer_set) cfg.buffer_bytes = buffer;
    /* Pairs wait in memory for at most a quarter of the host budget before they spill. */
    else if (job->host_budget / 4 < OC_SELECT_BUFFER_DEFAULT)
        cfg.buffer_bytes = job->host_budget / 4 > 0 ? job->host_budget / 4 : 1;
    dest->out = out;
    switch (out->kind) {
    case OC_OUTPUT_TOPK:
        if (!topk) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "output kind TOPK needs opts.topk > 0");
        if (!out->indices && !out->scores)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "top-k output: indices and scores are both NULL");
        break;
    case OC_OUTPUT_PAIRS:
        if (topk) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "output kind PAIRS is for threshold jobs, not top-k");
        if (!out->pairs) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "pairs output: the callback is NULL");
        cfg.emit = emit_to_callback;
        break;
    case OC_OUTPUT_FILE:
        if (topk) OC_CHECK(ctx, oc_topk_out_create(ctx, out->path, &dest->topk_file));
        else {
            OC_CHECK(ctx, oc_pairs_out_create(ctx, out->path, job->dtype, job->n, job->p, &dest->pairs_file));
            cfg.emit = emit_to_file;
        }
        break;
    case OC_OUTPUT_DISCARD:
        break;
    default:
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "%s results go to OC_OUTPUT_%s, a file or OC_OUTPUT_DISCARD, not "
                       "output kind %d",
                       topk ? "top-k" : "threshold", topk ? "TOPK" : "PAIRS", (int)out->kind);
    }
    return oc_select_create(ctx, &cfg, sel);
}

/* The selection's lists as the top-k writer asks for them, a block of rows at a time. */
typedef struct topk_rows_of {
    oc_context *ctx;
    oc_select *sel;
} topk_rows_of;

static oc_status topk_rows(void *user, int64_t first, int64_t rows, int64_t *indices, void *scores)
{
    const topk_rows_of *t = user;
    return oc_select_topk_rows(t->ctx, t->sel, first, rows, indices, scores);
}

/* After the backend: the top-k lists into the caller's arrays or the file; the last pairs out
 * and the file renamed into place. */
oc_status oc_gram_dest_select_commit(oc_context *ctx, const oc_gram_job *job, oc_gram_dest *dest, oc_select *sel)
{
    if (oc_select_get_mode(sel) == OC_SELECT_PAIRS) {
        OC_CHECK(ctx, oc_select_pairs_finish(ctx, sel));
        job->stats->pairs = oc_select_pairs_count(sel);
        if (dest->pairs_file) {
            oc_pairs_out *w = dest->pairs_file;
            dest->pairs_file = NULL;
            OC_CHECK(ctx, oc_pairs_out_commit(ctx, w));
        }
        return OC_OK;
    }
    const oc_output *out = dest->out;
    if (out->kind == OC_OUTPUT_TOPK)
        return oc_select_topk_result(ctx, sel, oc_threads_resolve(job->opts->threads), out->indices, out->scores);
    if (!dest->topk_file) return OC_OK;
    /* Written from blocks of rows of the lists: n x k arrays beside them would take about
     * twice their memory again, past the host budget. */
    oc_topk_out *w = dest->topk_file;
    dest->topk_file = NULL;
    topk_rows_of rows = {ctx, sel};
    return oc_topk_out_commit_rows(ctx, w, job->n, job->opts->topk, job->dtype, topk_rows, &rows);
}
