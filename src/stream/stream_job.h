/*
 * stream_job.h - a validated oc_stream_run call as the backend receives it, and the layout of
 * one chunk of an array.
 *
 * Every array is seen as [outer][extent][inner]: outer = the product of the dimensions before
 * the chunked axis, inner = the bytes of the dimensions after it. A chunk of `rows` rows of the
 * extent lives on the device as one C-order buffer [outer][rows][inner]; on the host it is
 * `outer` runs of rows*inner bytes, extent*inner bytes apart (one run when axis is 0). Side
 * inputs and results are one run of their whole size (outer = 1, extent = 1, inner = all).
 * oc_stream_gather and oc_stream_scatter copy any byte range of the device layout from or to
 * the host, so that a chunk crosses the pinned ring in slot-sized pieces wherever the runs
 * break.
 */
#ifndef OC_STREAM_STREAM_JOB_H
#define OC_STREAM_STREAM_JOB_H

#include <stdint.h>

#include "outcore.h"

typedef struct oc_stream_job_array {
    oc_stream_array a;    /* the caller's description */
    int chunked;          /* every role but SIDE and RESULT */
    int upload, download; /* crosses host -> device per chunk (or once: SIDE) / device -> host */
    int64_t outer, extent, inner_bytes;
    int64_t row_bytes;   /* device bytes per row of the extent: outer * inner_bytes */
    int64_t total_bytes; /* the whole array */
} oc_stream_job_array;

typedef struct oc_stream_job {
    oc_context *ctx;
    const oc_stream_spec *spec;
    oc_stream_options opts; /* the caller's, or the defaults */
    oc_stream_job_array *arrays;
    int narrays;
    int64_t extent;       /* the chunk extent shared by the chunked arrays */
    int64_t up_row_bytes; /* per row of the extent: uploaded, downloaded, on the device */
    int64_t down_row_bytes;
    int64_t dev_row_bytes;
    int64_t side_bytes; /* side inputs and results: whole arrays on the device */
    int64_t side_buffers;
    int64_t result_bytes;    /* of which results, downloaded once at the end */
    int64_t chunked_buffers; /* chunked arrays (device buffers per chunk in flight) */
    oc_stream_stats *stats;  /* NULL or the caller's */
} oc_stream_job;

/* Checks spec and fills job (job->arrays malloc'ed: oc_stream_job_release). One-line
 * OC_ERR_INVALID_ARGUMENT naming the array and the problem. */
oc_status oc_stream_job_make(oc_context *ctx, const oc_stream_spec *spec, const oc_stream_options *opts,
                             oc_stream_job *job);
void oc_stream_job_release(oc_stream_job *job);

/* Bytes [off, off + len) of the device layout of rows [start, start + rows) of a, copied
 * from a's host memory into dst / from src into a's host memory. */
void oc_stream_gather(const oc_stream_job_array *a, int64_t start, int64_t rows, int64_t off, int64_t len, void *dst);
void oc_stream_scatter(const oc_stream_job_array *a, int64_t start, int64_t rows, int64_t off, int64_t len,
                       const void *src);

/* A backend of stream: runs the job's chunks through the caller's kernels. */
typedef struct oc_stream_backend {
    const char *name;
    oc_status (*run)(oc_stream_job *job);
} oc_stream_backend;

#ifdef OC_HAVE_CUDA
/* The CUDA backend (stream/cuda/stream_run.c), the only one: user kernels are CUDA kernels. */
extern const oc_stream_backend oc_stream_backend_cuda;
#endif

#endif
