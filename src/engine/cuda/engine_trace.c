/*
 * engine_trace.c - OUTCORE_TRACE's kernel events and GPU busy spans (engine_trace.h).
 */
#include "engine/cuda/engine_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"
#include "engine/cuda/cuda_check.h"

struct oc_engine_trace {
    int64_t ntiles;
    cudaEvent_t begin;
    cudaEvent_t *ev;         /* 2 per tile: before and after its kernels */
    unsigned char *recorded; /* per tile: its events were recorded (a worker of several runs some) */
};

oc_status oc_engine_trace_open(oc_context *ctx, int64_t ntiles, oc_engine_trace **out)
{
    oc_engine_trace *tr = calloc(1, sizeof *tr);
    if (tr) tr->ev = calloc((size_t)(2 * ntiles), sizeof *tr->ev);
    if (tr) tr->recorded = calloc((size_t)(ntiles > 0 ? ntiles : 1), 1);
    if (!tr || !tr->ev || !tr->recorded) {
        if (tr) free(tr->ev), free(tr->recorded);
        free(tr);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the trace's kernel events");
    }
    tr->ntiles = ntiles;
    *out = tr;
    for (int64_t i = 0; i < 2 * ntiles; ++i) CUDA_CHECK(ctx, cudaEventCreate(&tr->ev[i]));
    CUDA_CHECK(ctx, cudaEventCreate(&tr->begin));
    return OC_OK;
}

oc_status oc_engine_trace_begin(oc_context *ctx, oc_engine_trace *tr, cudaStream_t stream)
{
    CUDA_CHECK(ctx, cudaEventRecord(tr->begin, stream));
    return OC_OK;
}

oc_status oc_engine_trace_tile_begin(oc_context *ctx, oc_engine_trace *tr, int64_t t, cudaStream_t stream)
{
    CUDA_CHECK(ctx, cudaEventRecord(tr->ev[2 * t], stream));
    return OC_OK;
}

oc_status oc_engine_trace_tile_end(oc_context *ctx, oc_engine_trace *tr, int64_t t, cudaStream_t stream)
{
    CUDA_CHECK(ctx, cudaEventRecord(tr->ev[2 * t + 1], stream));
    tr->recorded[t] = 1;
    return OC_OK;
}

double oc_engine_trace_kernel_seconds(const oc_engine_trace *tr)
{
    double kernels = 0;
    for (int64_t i = 0; i < tr->ntiles; ++i) {
        float ms = 0;
        if (tr->recorded[i] && cudaEventElapsedTime(&ms, tr->ev[2 * i], tr->ev[2 * i + 1]) == cudaSuccess)
            kernels += ms / 1e3;
    }
    (void)cudaGetLastError();
    return kernels;
}

typedef struct busy_span {
    double start, end;
    int64_t tile;
} busy_span;

static int by_start(const void *a, const void *b)
{
    double x = ((const busy_span *)a)->start, y = ((const busy_span *)b)->start;
    return x < y ? -1 : x > y;
}

void oc_engine_trace_busy(const oc_engine_trace *tr)
{
    int64_t n = tr->ntiles;
    busy_span *sp = malloc((size_t)(n > 0 ? n : 1) * sizeof *sp);
    if (!sp) return;
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i) {
        float a = 0, b = 0;
        if (!tr->recorded[i] || cudaEventElapsedTime(&a, tr->begin, tr->ev[2 * i]) != cudaSuccess ||
            cudaEventElapsedTime(&b, tr->begin, tr->ev[2 * i + 1]) != cudaSuccess)
            continue;
        sp[m++] = (busy_span){a / 1e3, b / 1e3, i};
    }
    (void)cudaGetLastError();
    if (m == 0) {
        free(sp);
        return;
    }
    qsort(sp, (size_t)m, sizeof *sp, by_start);
    if (oc_tracing_tiles()) /* each tile's kernels: start, end, length */
        for (int64_t i = 0; i < m; ++i)
            fprintf(stderr, "outcore cuda: tile %lld %.3f-%.3f ms %.3f\n", (long long)sp[i].tile, 1e3 * sp[i].start,
                    1e3 * sp[i].end, 1e3 * (sp[i].end - sp[i].start));
    enum { TOP = 5 };
    busy_span gap[TOP] = {{0, 0, -1}, {0, 0, -1}, {0, 0, -1}, {0, 0, -1}, {0, 0, -1}};
    double busy = 0, idle = 0, cur0 = sp[0].start, cur1 = sp[0].end, last = sp[0].end;
    for (int64_t i = 1; i <= m; ++i) {
        if (i < m && sp[i].start <= cur1) {
            if (sp[i].end > cur1) cur1 = sp[i].end;
            continue;
        }
        busy += cur1 - cur0;
        if (cur1 > last) last = cur1;
        if (i == m) break;
        double g = sp[i].start - cur1;
        idle += g;
        for (int k = 0; k < TOP; ++k)
            if (g > gap[k].end - gap[k].start) {
                memmove(&gap[k + 1], &gap[k], (TOP - 1 - k) * sizeof *gap);
                gap[k] = (busy_span){cur1, sp[i].start, sp[i].tile};
                break;
            }
        cur0 = sp[i].start, cur1 = sp[i].end;
    }
    fprintf(stderr,
            "outcore cuda: GPU busy %.4f s of the span %.4f-%.4f s after the tiles phase began (idle inside %.4f s); "
            "longest gaps (ms before tile):",
            busy, sp[0].start, last, idle);
    for (int k = 0; k < TOP && gap[k].tile >= 0; ++k)
        fprintf(stderr, " %.2f@%lld", 1e3 * (gap[k].end - gap[k].start), (long long)gap[k].tile);
    fprintf(stderr, "\n");
    free(sp);
}

void oc_engine_trace_close(oc_engine_trace *tr)
{
    if (!tr) return;
    for (int64_t i = 0; i < 2 * tr->ntiles; ++i)
        if (tr->ev[i]) (void)cudaEventDestroy(tr->ev[i]);
    if (tr->begin) (void)cudaEventDestroy(tr->begin);
    free(tr->ev);
    free(tr->recorded);
    free(tr);
}
