/*
 * stream.c - oc_stream_run: checks the call (stream_job.c) and hands it to the CUDA backend
 * (cuda/stream_run.c), the only one that runs user kernels.
 */
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "core/threads.h"
#include "exec/stream_job.h"

oc_status oc_stream_run(oc_context *ctx, const oc_stream_spec *spec, const oc_stream_options *opts,
                        oc_stream_stats *stats)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    oc_context_begin_job(ctx);
    if (stats && stats->struct_size != sizeof(oc_stream_stats))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "stream: stats.struct_size must be sizeof(oc_stream_stats)");
    double t0 = oc_now();
    oc_stream_job job;
    oc_status st = oc_stream_job_make(ctx, spec, opts, &job);
    if (st == OC_OK) {
        if (stats) {
            size_t size = stats->struct_size;
            memset(stats, 0, sizeof *stats);
            stats->struct_size = size;
        }
        job.stats = stats;
#ifdef OC_HAVE_CUDA
        st = oc_cuda_stream_run(&job);
#else
        st = oc_fail(ctx, OC_ERR_UNSUPPORTED, "stream: user kernels need the CUDA backend, and this build has none");
#endif
    }
    oc_stream_job_release(&job);
    if (stats && st == OC_OK) stats->seconds = oc_now() - t0;
    return st == OC_OK ? OC_OK : oc_trace_at(ctx, st, __FILE__, __LINE__);
}
