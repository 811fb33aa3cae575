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
 *
 * The first-use measurement (quick) takes arrays of half the last-level cache each, at least
 * QUICK_ELEMENTS and at most TRIAD_ELEMENTS, and fewer runs: the three still exceed the cache,
 * and most of a short triad's time is its arrays' first touch.
 */
#include <stdlib.h>
#include <unistd.h>

#include "core/threads.h"
#include "cost/cost.h"

#define TRIAD_ELEMENTS ((int64_t)8 << 20)
#define TRIAD_RUNS 5
#define QUICK_ELEMENTS ((int64_t)2 << 20)
#define QUICK_RUNS 3

enum triad_pass { TRIAD_RUN, TRIAD_INIT, TRIAD_TOUCH };

typedef struct triad_arrays {
    double *a, *b, *c;
    int64_t elements, per_task;
    enum triad_pass pass;
} triad_arrays;

static oc_status triad_task(void *arg, int64_t task, int worker)
{
    (void)worker;
    triad_arrays *t = arg;
    int64_t begin = task * t->per_task, end = begin + t->per_task;
    if (end > t->elements) end = t->elements;
    double *restrict a = t->a;
    const double *restrict b = t->b, *restrict c = t->c;
    if (t->pass == TRIAD_TOUCH) { /* one store a page: the fault alone */
        for (int64_t i = begin; i < end; i += 4096 / (int64_t)sizeof(double)) t->b[i] = 0.0;
        return OC_OK;
    }
    if (t->pass == TRIAD_INIT) {
        for (int64_t i = begin; i < end; ++i) t->a[i] = 0.0, t->b[i] = 1.0, t->c[i] = 2.0;
        return OC_OK;
    }
    const double s = 3.0;
    for (int64_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
    return OC_OK;
}

/* The elements of each array: TRIAD_ELEMENTS, or for the quick measurement half the
 * last-level cache's bytes (where the C library says) within [QUICK_ELEMENTS, TRIAD_ELEMENTS]. */
static int64_t triad_elements(int quick)
{
    if (!quick) return TRIAD_ELEMENTS;
    int64_t n = QUICK_ELEMENTS;
#ifdef _SC_LEVEL3_CACHE_SIZE
    const long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc > 0 && llc / 2 / (long)sizeof(double) > n) n = llc / 2 / (long)sizeof(double);
#endif
    return n < TRIAD_ELEMENTS ? n : TRIAD_ELEMENTS;
}

int64_t oc_cost_triad_bytes(int quick) { return 3 * triad_elements(quick) * (int64_t)sizeof(double); }

double oc_cost_measure_triad(oc_context *ctx, int threads, int quick, double *first_touch, double *first_touch_all)
{
    if (threads < 1) threads = 1;
    const int64_t n = triad_elements(quick);
    const size_t bytes = (size_t)n * sizeof(double);
    triad_arrays t = {malloc(bytes), malloc(bytes), malloc(bytes), n, (n + threads - 1) / threads, TRIAD_TOUCH};
    double best = 0;
    if (first_touch) *first_touch = 0;
    if (first_touch_all) *first_touch_all = 0;
    if (!t.a || !t.b || !t.c) goto cleanup;
    /* One thread faults the first array's fresh pages in, then every thread the second's at
     * once: what a new output file's pages cost, reserved on one thread and faulted into the
     * job's mappings by its threads (cost.c, the pages' term). */
    if (first_touch) {
        const double touch0 = oc_now();
        for (size_t i = 0; i < bytes / sizeof(double); i += 4096 / sizeof(double)) t.a[i] = 0.0;
        *first_touch = (double)bytes / (oc_now() - touch0);
    }
    const double touch_all0 = oc_now();
    if (oc_parallel_run(ctx, threads, threads, triad_task, &t, NULL, NULL) != OC_OK) goto cleanup;
    if (first_touch_all) *first_touch_all = (double)bytes / (oc_now() - touch_all0);
    t.pass = TRIAD_INIT;
    if (oc_parallel_run(ctx, threads, threads, triad_task, &t, NULL, NULL) != OC_OK) goto cleanup;
    t.pass = TRIAD_RUN;
    for (int run = 0; run < (quick ? QUICK_RUNS : TRIAD_RUNS); ++run) {
        double t0 = oc_now();
        if (oc_parallel_run(ctx, threads, threads, triad_task, &t, NULL, NULL) != OC_OK) goto cleanup;
        double seconds = oc_now() - t0;
        double rate = 24.0 * (double)n / seconds;
        if (rate > best) best = rate;
    }
cleanup:
    free(t.a);
    free(t.b);
    free(t.c);
    return best;
}
