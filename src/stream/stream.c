/*
 * stream.c - oc_stream_run: checks the call (stream_job.c) and hands it to the CUDA backend
 * (stream/cuda/stream_run.c), the only one that runs user kernels.
 */
#include <stddef.h>
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "core/abi/struct_version.h"
#include "core/threads.h"
#include "stream/stream_job.h"

oc_status oc_stream_run(oc_context *ctx, const oc_stream_spec *spec, const oc_stream_options *opts,
                        oc_stream_stats *stats)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    oc_context_begin_job(ctx);
    /* Version 1 of the stats ends before bytes_direct (docs/abi.md): the job fills a whole
     * struct and only the caller's version's fields are copied back. */
    const size_t v1 = OC_STRUCT_VERSION_SIZE(oc_stream_stats, bytes_direct);
    if (stats && stats->struct_size != sizeof(oc_stream_stats) && stats->struct_size != v1)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: stats.struct_size must be sizeof(oc_stream_stats)");
    double t0 = oc_now();
    oc_stream_job job;
    oc_stream_stats all = {.struct_size = sizeof all};
    oc_status st = oc_stream_job_make(ctx, spec, opts, &job);
    if (st == OC_OK) {
        job.stats = stats ? &all : NULL;
#ifdef OC_HAVE_CUDA
        st = oc_stream_backend_cuda.run(&job);
#else
        st = oc_fail(ctx, OC_ERR_UNSUPPORTED, "stream: user kernels need the CUDA backend, and this build has none");
#endif
    }
    oc_stream_job_release(&job);
    /* The caller's stats are written only for a job that ran (outcore.h: out-parameters). */
    if (st == OC_OK && stats) {
        all.seconds = oc_now() - t0;
        memcpy((char *)stats + sizeof all.struct_size, (char *)&all + sizeof all.struct_size,
               stats->struct_size - sizeof all.struct_size);
    }
    return st == OC_OK ? OC_OK : oc_trace_at(ctx, st, __FILE__, __LINE__);
}
