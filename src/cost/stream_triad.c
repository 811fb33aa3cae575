/*
 * stream_triad.c - host memory bandwidth for the cost model: the STREAM triad
 * a[i] = b[i] + s·c[i] on every core (McCalpin's STREAM, the figure design.md names as the
 * host's physical limit).
 *
 * Arrays of TRIAD_ELEMENTS doubles (64 MiB each): STREAM asks for four times the last-level
 * cache, which these exceed on all but the largest server caches; larger ones would cost a
 * user's first job more memory. Each thread first-touches the part it later runs over, so
 * on a NUMA machine its pages are local. Bytes are counted as STREAM counts them: 24 per
 * element (two reads, one write; the write-allocate read is not counted). Best of TRIAD_RUNS.
 */
#include <stdlib.h>

#include "core/threads.h"
#include "cost/cost.h"

#define TRIAD_ELEMENTS ((int64_t)8 << 20)
#define TRIAD_RUNS 5

typedef struct triad_arrays {
    double *a, *b, *c;
    int64_t per_task;
    int init;
} triad_arrays;

static oc_status triad_task(void *arg, int64_t task, int worker)
{
    (void)worker;
    triad_arrays *t = arg;
    int64_t begin = task * t->per_task, end = begin + t->per_task;
    if (end > TRIAD_ELEMENTS) end = TRIAD_ELEMENTS;
    double *restrict a = t->a;
    const double *restrict b = t->b, *restrict c = t->c;
    if (t->init) {
        for (int64_t i = begin; i < end; ++i) t->a[i] = 0.0, t->b[i] = 1.0, t->c[i] = 2.0;
        return OC_OK;
    }
    const double s = 3.0;
    for (int64_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
    return OC_OK;
}

double oc_cost_measure_triad(oc_context *ctx, int threads)
{
    if (threads < 1) threads = 1;
    triad_arrays t = {malloc(TRIAD_ELEMENTS * sizeof(double)), malloc(TRIAD_ELEMENTS * sizeof(double)),
                      malloc(TRIAD_ELEMENTS * sizeof(double)), (TRIAD_ELEMENTS + threads - 1) / threads, 1};
    double best = 0;
    if (!t.a || !t.b || !t.c) goto cleanup;
    if (oc_parallel_run(ctx, threads, threads, triad_task, &t, NULL, NULL, NULL) != OC_OK) goto cleanup;
    t.init = 0;
    for (int run = 0; run < TRIAD_RUNS; ++run) {
        double t0 = oc_now();
        if (oc_parallel_run(ctx, threads, threads, triad_task, &t, NULL, NULL, NULL) != OC_OK) goto cleanup;
        double seconds = oc_now() - t0;
        double rate = 24.0 * (double)TRIAD_ELEMENTS / seconds;
        if (rate > best) best = rate;
    }
cleanup:
    free(t.a);
    free(t.b);
    free(t.c);
    return best;
}
