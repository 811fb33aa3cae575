/*
 * gram_resume_job.c - what identifies a resumable job (gram_resume_parts.h): the lines of its
 * journal's header. A resumed run builds them again and compares them with the journal's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/text_buf.h"
#include "gram/gram_resume_parts.h"
#include "io/crc32.h"
#include "io/io.h"
#include "io/journal.h"
#include "io/journal_start.h"

/* What identifies an input: its shape and the CRC of all its rows' bits (any matrix, also
 * one from memory; a file-backed input samples 64 rows, its file's CRC covering the rest),
 * and for one read from a file its size, modification time and the CRC-32 of the whole file:
 * an input edited in place, even with its size and time put back, is another job's. Its path
 * is written too, for the messages, but not compared (io/journal.h, oc_journal_open): the
 * same file spelled otherwise is the same input. */
static oc_status describe_input(oc_context *ctx, oc_text *t, const char *tag, const oc_matrix *m)
{
    oc_text_printf(t, "%s.shape %lld %lld\n", tag, (long long)m->rows, (long long)m->cols);
    struct stat sb;
    const int from_file = m->has_source && stat(m->name, &sb) == 0 && S_ISREG(sb.st_mode) &&
                          (uint64_t)sb.st_dev == m->source_dev && (uint64_t)sb.st_ino == m->source_ino;
    if (from_file) {
        OC_CHECK(ctx, oc_journal_describe_file(ctx, t, tag, m->name, &sb));
    }
    uint64_t *row = aligned_alloc(64, (size_t)m->words_per_row * 8);
    if (!row) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate a row of %s", m->name);
    uint32_t crc = 0;
    const int64_t samples = from_file ? (m->rows < 64 ? m->rows : 64) : m->rows;
    oc_status st = OC_OK;
    for (int64_t k = 0; k < samples && st == OC_OK; ++k) {
        st = oc_matrix_load_rows(ctx, m, samples > 1 ? k * (m->rows - 1) / (samples - 1) : 0, 1, row);
        crc = oc_crc32_update(crc, row, (size_t)m->words_per_row * 8);
    }
    free(row);
    oc_text_printf(t, "%s.rows_crc %08x\n", tag, (unsigned)crc);
    return st;
}

/* The header: everything that changes the output's bytes. Not the backend, threads, tile or
 * budgets, which do not (a job may resume on another machine or backend). The "output" line
 * is not compared either: the journal lies beside the output, whatever its spelling. */
oc_status oc_resume_describe_job(oc_context *ctx, const oc_gram_job *job, const oc_output *out, char **text)
{
    const oc_gram_options *o = job->opts;
    char ext[16];
    oc_text t = {0};
    oc_text_printf(&t, "output %s\nformat %s\nproduct %s\nmetric %s\ndtype %s\n", out->path,
                   oc_path_extension(out->path, ext, sizeof ext), job->symmetric ? "A.At" : "A.Bt",
                   oc_metric_name(job->metric), oc_dtype_name(job->dtype));
    if (o->topk > 0) oc_text_printf(&t, "topk %lld\n", (long long)o->topk);
    else if (o->use_threshold) oc_text_printf(&t, "threshold %.17g\n", o->threshold);
    else oc_text_printf(&t, "dense\n");
    oc_status st = describe_input(ctx, &t, "a", job->a);
    if (st == OC_OK && !job->symmetric) st = describe_input(ctx, &t, "b", job->b);
    if (st != OC_OK) {
        free(t.data);
        return st;
    }
    return oc_text_finish(ctx, &t, text);
}
