/*
 * gram_files.c - a Gram job over files, checked before the files are read
 * (oc_gram_check_files): the shapes their headers declare (A and B of the same columns), and
 * the dense output they imply.
 */
#include "outcore.h"

#include "core/error.h"
#include "gram/gram_compat.h"
#include "gram/gram_job.h"
#include "io/io.h"
#include "io/journal.h"

oc_status oc_gram_check_files(oc_context *ctx, const char *a, const char *b, const oc_read_options *read,
                              const oc_gram_options *opts, const oc_output *out)
{
    if (!a || !opts || !out)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_gram_check_files: a, opts and out must not be NULL");
    /* Every version of the options (gram_compat.h), as oc_gram takes them; the output has one. */
    oc_gram_options current;
    if (!(opts = oc_gram_options_current(opts, &current)))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "oc_gram_options.struct_size is no version's: start from OC_GRAM_OPTIONS_INIT");
    if (out->struct_size != sizeof(oc_output))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "oc_output.struct_size is %zu, expected %zu: start from OC_OUTPUT_INIT", out->struct_size,
                       sizeof(oc_output));
    if (out->kind == OC_OUTPUT_FILE && !out->path) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "output path is NULL");
    int64_t n, p, cols, b_cols;
    OC_CHECK(ctx, oc_matrix_peek(ctx, a, read, &n, &cols));
    if (b) OC_CHECK(ctx, oc_matrix_peek(ctx, b, read, &p, &b_cols));
    else p = n, b_cols = cols;
    /* oc_gram's first check on the matrices, when both headers declare their columns (a text
     * input's are known once read: -1). */
    if (cols >= 0 && b_cols >= 0 && cols != b_cols) return oc_gram_columns_differ(ctx, a, cols, b, b_cols);
    /* Only a dense file is sized from the shape up front; a result in memory is the caller's
     * array, and top-k and threshold files grow with what the job selects. */
    if (out->kind != OC_OUTPUT_FILE || opts->topk > 0 || opts->use_threshold || n < 0 || p < 0) return OC_OK;
    oc_dtype dtype = oc_gram_result_dtype(opts->metric, opts->dtype);
    if (dtype == OC_DTYPE_DEFAULT) return OC_OK; /* oc_gram names the bad combination */
    /* A resumed job's temporary file holds its blocks already: its writer counts them. A
     * resumable job with no journal yet starts afresh, and is checked as any other. */
    const int resumed = opts->resume && oc_journal_present(out->path);
    OC_CHECK(ctx, oc_npy_out_check_fits(ctx, out->path, (int)dtype, n, p, !resumed));
    return OC_OK;
}
