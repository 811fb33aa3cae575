/*
 * gram_dest.h - where a Gram job's results go (oc_gram, gram.c): a top-k or threshold
 * selection into the caller's arrays, a pairs callback, a file or nowhere, and the dense
 * .npy file; each checked against the options and opened before the job (a file under its
 * temporary name), and committed after it.
 */
#ifndef OC_GRAM_GRAM_DEST_H
#define OC_GRAM_GRAM_DEST_H

#include "outcore.h"
#include "gram/gram_job.h"
#include "gram/gram_resume.h"
#include "gram/select/select.h"
#include "io/io.h"
#include "io/formats/select_out.h"

/* Where a job's selection goes: caller arrays, a callback, a file, or nowhere (discard). */
typedef struct oc_gram_dest {
    const oc_output *out;
    oc_topk_out *topk_file;
    oc_pairs_out *pairs_file;
    oc_resume *resume; /* a resumable job journals the pairs it writes */
} oc_gram_dest;

/* Checks out against the selection options, opens what must be opened before the job (a
 * file's temporary name) into *dest, then creates the selection state *sel. */
oc_status oc_gram_dest_select_setup(oc_context *ctx, const oc_gram_options *o, const oc_output *out, oc_gram_job *job,
                                    oc_gram_dest *dest, oc_select **sel);
/* A resumable job (r not NULL): its selection file's temporary name on record, and the way
 * back to the file for the pairs an earlier run delivered. */
oc_status oc_gram_dest_resume_setup(oc_context *ctx, oc_gram_dest *dest, oc_resume *r);
/* The dense output file: created, or for a resumed job reopened from its journal's
 * temporary file; *data is its mapped elements. */
oc_status oc_gram_dest_dense_open(oc_context *ctx, const oc_gram_job *job, const oc_output *out, oc_resume *r,
                                  oc_npy_out **npy, void **data);
/* After the backend: the top-k lists into the caller's arrays or the file, or the last pairs
 * out and the file renamed into place. */
oc_status oc_gram_dest_select_commit(oc_context *ctx, const oc_gram_job *job, oc_gram_dest *dest, oc_select *sel);

#endif
