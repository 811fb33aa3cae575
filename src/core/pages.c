/*
 * pages.c - handing large private memory back to the kernel on several threads (pages.h).
 */
#include "core/pages.h"

#include <pthread.h>

#include "core/threads.h"

/* Below this a single madvise is as quick as starting threads; above it each thread takes at
 * least this much, and at most OC_DISCARD_THREADS run (bench/RESULTS.md, "The tail of a
 * job and ...": the page allocator's locks stop the gain there). */
#define OC_DISCARD_MIN_SLICE ((size_t)256 << 20)
#define OC_DISCARD_THREADS 16

typedef struct discard_slice {
    char *p;
    size_t n;
    pthread_t thread;
    int started;
} discard_slice;

static void *discard_slice_run(void *arg)
{
    discard_slice *s = arg;
    (void)madvise(s->p, s->n, MADV_DONTNEED); /* advice: on failure free() does it on one core */
    return NULL;
}

void oc_pages_discard_on(void *p, size_t n, int threads)
{
    const uintptr_t page = 4096;
    uintptr_t begin, end;
    oc_pages_inside(p, n, &begin, &end);
    if (end <= begin) return;
    if (threads < 1) threads = 1;
    if (threads > OC_DISCARD_THREADS) threads = OC_DISCARD_THREADS;
    size_t per = ((end - begin) / (size_t)threads + page - 1) & ~(size_t)(page - 1);
    discard_slice slice[OC_DISCARD_THREADS] = {{0}};
    int k = 0;
    for (uintptr_t at = begin; at < end; at += per, ++k) {
        slice[k].p = (char *)at;
        slice[k].n = end - at < per ? end - at : per;
    }
    /* Every slice but the last on a thread of its own; the last, and any whose thread did not
     * start, on the caller's. */
    for (int i = 0; i + 1 < k; ++i)
        slice[i].started = oc_thread_start(&slice[i].thread, 0, discard_slice_run, &slice[i]) == 0;
    for (int i = 0; i < k; ++i)
        if (!slice[i].started) discard_slice_run(&slice[i]);
    for (int i = 0; i < k; ++i)
        if (slice[i].started) pthread_join(slice[i].thread, NULL);
}

void oc_pages_discard(void *p, size_t n)
{
    size_t threads = (size_t)oc_threads_resolve(0);
    if (threads > n / OC_DISCARD_MIN_SLICE) threads = n / OC_DISCARD_MIN_SLICE;
    /* One thread: the caller's free does the same work. */
    if (threads >= 2) oc_pages_discard_on(p, n, (int)threads);
}
