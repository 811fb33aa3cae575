/* stream_job.c - checking an oc_stream_run call, and the chunk layout (stream_job.h). */
#include "stream/stream_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static const char *role_name(oc_stream_role r)
{
    switch (r) {
    case OC_STREAM_INPUT:
        return "input";
    case OC_STREAM_OUTPUT:
        return "output";
    case OC_STREAM_INOUT:
        return "inout";
    case OC_STREAM_SIDE:
        return "side input";
    case OC_STREAM_SCRATCH:
        return "scratch";
    case OC_STREAM_RESULT:
        return "result";
    }
    return "?";
}

/* Products that overflow int64 are refused before any size is used. */
static int mul_ok(int64_t a, int64_t b, int64_t *out) { return !__builtin_mul_overflow(a, b, out); }

static oc_status check_array(oc_context *ctx, int k, const oc_stream_array *a, oc_stream_job_array *ja)
{
    char name[80];
    snprintf(name, sizeof name, "%s%s%s", a->name ? "array '" : "array ", a->name ? a->name : "", a->name ? "'" : "");
    if (!a->name) snprintf(name, sizeof name, "array %d", k);
    if (a->role < OC_STREAM_INPUT || a->role > OC_STREAM_RESULT)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: %s: unknown role %d", name, (int)a->role);
    if (a->elem_size <= 0 || a->elem_size > 64)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: %s: element size %d (expected 1 to 64 bytes)", name,
                       a->elem_size);
    if (a->ndim < 1 || a->ndim > OC_STREAM_MAX_DIMS)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: %s: %d dimensions (expected 1 to %d)", name, a->ndim,
                       OC_STREAM_MAX_DIMS);
    ja->a = *a;
    ja->chunked = a->role != OC_STREAM_SIDE && a->role != OC_STREAM_RESULT;
    ja->upload = a->role == OC_STREAM_INPUT || a->role == OC_STREAM_INOUT || a->role == OC_STREAM_SIDE ||
                 a->role == OC_STREAM_RESULT;
    ja->download = a->role == OC_STREAM_OUTPUT || a->role == OC_STREAM_INOUT || a->role == OC_STREAM_RESULT;
    if (ja->chunked && (a->axis < 0 || a->axis >= a->ndim))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: %s: chunk axis %d outside its %d dimensions", name,
                       a->axis, a->ndim);
    if (a->role == OC_STREAM_SCRATCH ? a->host != NULL : a->host == NULL)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: %s (%s) %s", name, role_name(a->role),
                       a->role == OC_STREAM_SCRATCH ? "lives on the device only: its host pointer must be NULL"
                                                    : "has no host memory");
    int64_t outer = 1, inner = a->elem_size;
    for (int d = 0; d < a->ndim; ++d) {
        if (a->shape[d] <= 0)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: %s: dimension %d is %lld (expected > 0)", name, d,
                           (long long)a->shape[d]);
        int before = ja->chunked && d < a->axis;
        int after = !ja->chunked || d > a->axis;
        if ((before && !mul_ok(outer, a->shape[d], &outer)) || (after && !mul_ok(inner, a->shape[d], &inner)))
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: %s: its size overflows 64 bits", name);
    }
    ja->outer = outer;
    ja->extent = ja->chunked ? a->shape[a->axis] : 1;
    ja->inner_bytes = inner;
    if (!mul_ok(outer, inner, &ja->row_bytes) || !mul_ok(ja->row_bytes, ja->extent, &ja->total_bytes))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: %s: its size overflows 64 bits", name);
    return OC_OK;
}

oc_status oc_stream_job_make(oc_context *ctx, const oc_stream_spec *spec, const oc_stream_options *opts,
                             oc_stream_job *job)
{
    memset(job, 0, sizeof *job);
    job->ctx = ctx;
    /* Version 1 of each struct is the only one (docs/abi.md): any other size is an error. */
    if (!spec || spec->struct_size != sizeof(oc_stream_spec) || spec->array_struct_size != sizeof(oc_stream_array))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "stream: the spec is missing or was not made from OC_STREAM_SPEC_INIT");
    if (opts && opts->struct_size != sizeof(oc_stream_options))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: the options were not made from OC_STREAM_OPTIONS_INIT");
    if (!spec->launch) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: no launch callback");
    if (spec->narrays < 1 || spec->narrays > 1024 || !spec->arrays)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: %d arrays (expected 1 to 1024)", spec->narrays);
    oc_stream_options defaults = OC_STREAM_OPTIONS_INIT;
    job->opts = opts ? *opts : defaults;
    if (job->opts.in_flight != 0 && (job->opts.in_flight < 2 || job->opts.in_flight > 8))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: %d chunks in flight (expected 2 to 8, or 0: the planner)",
                       job->opts.in_flight);
    if (job->opts.chunk_rows < 0 || job->opts.gpu_mem_bytes < 0 || job->opts.host_mem_bytes < 0 ||
        !(job->opts.gpu_mem_fraction > 0 && job->opts.gpu_mem_fraction <= 1))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: negative sizes or a memory fraction outside (0, 1]");
    job->spec = spec;
    job->narrays = spec->narrays;
    job->arrays = calloc((size_t)spec->narrays, sizeof *job->arrays);
    if (!job->arrays) return oc_fail(ctx, OC_ERR_NO_MEMORY, "stream: out of memory");
    int first = -1;
    for (int k = 0; k < spec->narrays; ++k) {
        oc_stream_job_array *ja = &job->arrays[k];
        OC_CHECK(ctx, check_array(ctx, k, &spec->arrays[k], ja));
        /* Each array's bytes fit 64 bits (check_array); their sums must too. */
        const int64_t add = ja->chunked ? ja->row_bytes : ja->total_bytes;
        int64_t sum = 0;
        if (__builtin_add_overflow(ja->chunked ? job->dev_row_bytes : job->side_bytes, add, &sum))
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "stream: the arrays' sizes together overflow 64-bit sizes at '%s'",
                           ja->a.name ? ja->a.name : "?");
        if (!ja->chunked) {
            job->side_bytes += ja->total_bytes;
            job->side_buffers++;
            if (ja->download) job->result_bytes += ja->total_bytes;
            continue;
        }
        if (first < 0) first = k, job->extent = ja->extent;
        else if (ja->extent != job->extent)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "stream: '%s' has %lld rows along its chunk axis %d but '%s' has %lld: chunked arrays must "
                           "agree",
                           ja->a.name ? ja->a.name : "?", (long long)ja->extent, ja->a.axis,
                           job->arrays[first].a.name ? job->arrays[first].a.name : "?", (long long)job->extent);
        job->chunked_buffers++;
        job->dev_row_bytes += ja->row_bytes;
        if (ja->upload) job->up_row_bytes += ja->row_bytes;
        if (ja->download) job->down_row_bytes += ja->row_bytes;
    }
    if (spec->extent < 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: extent %lld (expected >= 0)", (long long)spec->extent);
    if (first < 0 && spec->extent == 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "stream: no chunked array (inputs, outputs or scratch) and no extent: nothing says how to cut "
                       "the job");
    if (first >= 0 && spec->extent > 0 && spec->extent != job->extent)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "stream: the spec's extent %lld differs from the %lld rows of '%s'", (long long)spec->extent,
                       (long long)job->extent, job->arrays[first].a.name ? job->arrays[first].a.name : "?");
    if (first < 0) job->extent = spec->extent;
    return OC_OK;
}

void oc_stream_job_release(oc_stream_job *job)
{
    free(job->arrays);
    job->arrays = NULL;
}

/* The host address of byte `off` of the device layout of rows [start, start+rows), and how
 * many bytes from there are contiguous on the host (the rest of the run). */
static unsigned char *host_at(const oc_stream_job_array *a, int64_t start, int64_t rows, int64_t off, int64_t *run)
{
    int64_t chunk_run = rows * a->inner_bytes; /* one outer index's bytes in the chunk */
    int64_t o = off / chunk_run, in_run = off % chunk_run;
    *run = chunk_run - in_run;
    return (unsigned char *)a->a.host + o * a->extent * a->inner_bytes + start * a->inner_bytes + in_run;
}

void oc_stream_gather(const oc_stream_job_array *a, int64_t start, int64_t rows, int64_t off, int64_t len, void *dst)
{
    unsigned char *d = dst;
    while (len > 0) {
        int64_t run;
        const unsigned char *s = host_at(a, start, rows, off, &run);
        int64_t n = run < len ? run : len;
        memcpy(d, s, (size_t)n);
        d += n, off += n, len -= n;
    }
}

void oc_stream_scatter(const oc_stream_job_array *a, int64_t start, int64_t rows, int64_t off, int64_t len,
                       const void *src)
{
    const unsigned char *s = src;
    while (len > 0) {
        int64_t run;
        unsigned char *d = host_at(a, start, rows, off, &run);
        int64_t n = run < len ? run : len;
        memcpy(d, s, (size_t)n);
        s += n, off += n, len -= n;
    }
}
