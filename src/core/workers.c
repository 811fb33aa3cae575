/*
 * workers.c - the persistent pool (workers.h).
 *
 * State, all under `lock`:
 *   queue      a ring of posted tasks (head, count, capacity), grown by doubling;
 *   split      the current split: its function, the next part not yet taken, and the parts
 *              taken but not finished (`split_busy`); `split_parts == 0` when there is none;
 *   stop       set by oc_workers_free: workers leave once the queue is empty.
 * A worker takes, in this order: a part of the split, a queued task (unless task_limit
 * tasks already run: a worker that finishes one takes the next itself, so none is lost),
 * else it sleeps on `wake`. The splitter sleeps on `split_done` until split_busy falls to zero after it ran
 * out of parts to take itself. `split_gate` admits one splitter at a time.
 */
#include "core/workers.h"

#include <pthread.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/process/bus_signal.h"
#include "core/threads.h"

typedef struct posted {
    oc_work_fn fn;
    void *arg;
} posted;

struct oc_workers {
    pthread_mutex_t lock;
    pthread_cond_t wake, split_done;
    pthread_mutex_t split_gate;
    pthread_t *threads;
    int nthreads, thread_cap;
    posted *queue;
    int q_head, q_count, q_cap;
    oc_split_fn split_fn;
    void *split_arg;
    int split_parts, split_next, split_busy;
    int split_max;  /* parts that may run at once (0: any number) */
    int task_limit; /* posted tasks that may run at once (0: any number) */
    int tasks_running;
    int stop;
};

/* With the lock held: the next part of the split, or -1. */
static int take_part(oc_workers *w)
{
    if (w->split_next >= w->split_parts || (w->split_max > 0 && w->split_busy >= w->split_max)) return -1;
    w->split_busy++;
    return w->split_next++;
}

static void run_part(oc_workers *w, int part)
{
    oc_split_fn fn = w->split_fn;
    void *arg = w->split_arg;
    int parts = w->split_parts;
    pthread_mutex_unlock(&w->lock);
    fn(arg, part, parts);
    pthread_mutex_lock(&w->lock);
    --w->split_busy;
    /* The caller waits for the last part, or, at a cap, for a place. */
    if ((w->split_busy == 0 && w->split_next >= w->split_parts) || w->split_max > 0)
        pthread_cond_signal(&w->split_done);
}

static void *worker_main(void *p)
{
    oc_workers *w = p;
    oc_bus_signal_unblock(); /* started in whatever call first needed the pool: bus_signal.h */
    pthread_mutex_lock(&w->lock);
    for (;;) {
        int part = take_part(w);
        if (part >= 0) {
            run_part(w, part);
            continue;
        }
        if (w->q_count > 0 && (w->task_limit == 0 || w->tasks_running < w->task_limit)) {
            posted t = w->queue[w->q_head];
            w->q_head = (w->q_head + 1) % w->q_cap;
            w->q_count--;
            w->tasks_running++;
            pthread_mutex_unlock(&w->lock);
            t.fn(t.arg);
            pthread_mutex_lock(&w->lock);
            w->tasks_running--;
            continue;
        }
        if (w->stop) break;
        pthread_cond_wait(&w->wake, &w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

oc_status oc_workers_grow(oc_context *ctx, oc_workers *w, int threads)
{
    if (threads <= w->nthreads) return OC_OK;
    if (threads > w->thread_cap) {
        pthread_t *t = realloc(w->threads, (size_t)threads * sizeof *t);
        if (!t) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate %d worker thread records", threads);
        w->threads = t;
        w->thread_cap = threads;
    }
    while (w->nthreads < threads) {
        int rc = oc_thread_start(&w->threads[w->nthreads], 0, worker_main, w);
        if (rc != 0) {
            if (w->nthreads > 0) return OC_OK; /* fewer threads only make copies slower */
            /* The pool's threads work beside the job's calling thread: the job asked one more. */
            return oc_thread_start_failed(ctx, rc, "first worker thread", threads + 1);
        }
        w->nthreads++;
    }
    return OC_OK;
}

oc_status oc_workers_create(oc_context *ctx, int threads, oc_workers **out)
{
    oc_workers *w = calloc(1, sizeof *w);
    if (!w) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the worker pool");
    pthread_mutex_init(&w->lock, NULL);
    pthread_mutex_init(&w->split_gate, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->split_done, NULL);
    oc_status st = oc_workers_grow(ctx, w, threads < 1 ? 1 : threads);
    if (st != OC_OK) {
        oc_workers_free(w);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    *out = w;
    return OC_OK;
}

void oc_workers_free(oc_workers *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
    for (int i = 0; i < w->nthreads; ++i) pthread_join(w->threads[i], NULL);
    free(w->threads);
    free(w->queue);
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->split_done);
    pthread_mutex_destroy(&w->split_gate);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

int oc_workers_count(const oc_workers *w) { return w ? w->nthreads : 0; }

void oc_workers_limit_tasks(oc_workers *w, int limit)
{
    pthread_mutex_lock(&w->lock);
    w->task_limit = limit > 0 ? limit : 0;
    pthread_cond_broadcast(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

oc_status oc_workers_post(oc_context *ctx, oc_workers *w, oc_work_fn fn, void *arg)
{
    pthread_mutex_lock(&w->lock);
    if (w->q_count == w->q_cap) {
        int cap = w->q_cap ? 2 * w->q_cap : 64;
        posted *q = malloc((size_t)cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&w->lock);
            return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot grow the worker queue to %d tasks", cap);
        }
        for (int i = 0; i < w->q_count; ++i) q[i] = w->queue[(w->q_head + i) % w->q_cap];
        free(w->queue);
        w->queue = q;
        w->q_head = 0;
        w->q_cap = cap;
    }
    w->queue[(w->q_head + w->q_count) % w->q_cap] = (posted){fn, arg};
    w->q_count++;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    return OC_OK;
}

void oc_workers_split(oc_workers *w, int parts, oc_split_fn fn, void *arg)
{
    oc_workers_split_max(w, parts, 0, fn, arg);
}

void oc_workers_split_max(oc_workers *w, int parts, int threads, oc_split_fn fn, void *arg)
{
    if (parts <= 1 || threads == 1) {
        for (int part = 0; part < parts; ++part) fn(arg, part, parts);
        return;
    }
    pthread_mutex_lock(&w->split_gate);
    pthread_mutex_lock(&w->lock);
    w->split_fn = fn;
    w->split_arg = arg;
    w->split_parts = parts;
    w->split_next = 0;
    w->split_busy = 0;
    w->split_max = threads > 0 ? threads : 0;
    pthread_cond_broadcast(&w->wake);
    /* The caller takes parts too until none is left; at the cap it waits for a place (the
     * workers that hold the places keep taking parts, the others sleep). */
    for (;;) {
        int part = take_part(w);
        if (part >= 0) {
            run_part(w, part);
            continue;
        }
        if (w->split_next >= w->split_parts) break;
        pthread_cond_wait(&w->split_done, &w->lock); /* at the cap: a part ends soon */
    }
    while (w->split_busy > 0) pthread_cond_wait(&w->split_done, &w->lock);
    w->split_parts = w->split_next = w->split_max = 0;
    pthread_mutex_unlock(&w->lock);
    pthread_mutex_unlock(&w->split_gate);
}
