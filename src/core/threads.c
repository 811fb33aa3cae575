#include "core/threads.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/process/bus_signal.h"

double oc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

oc_progress_pace oc_progress_pace_start(oc_progress_fn fn, void *user)
{
    return (oc_progress_pace){.fn = fn, .user = user, .returned = oc_now()};
}

double oc_progress_until_due(const oc_progress_pace *p)
{
    return p->returned + (p->wait > OC_PROGRESS_INTERVAL ? p->wait : OC_PROGRESS_INTERVAL) - oc_now();
}

int oc_progress_due(const oc_progress_pace *p) { return p->fn && oc_progress_until_due(p) <= 0; }

int oc_progress_report(oc_progress_pace *p, double done, double total, int last)
{
    if (!p->fn || (!last && !oc_progress_due(p))) return 0;
    const double called = oc_now();
    p->fn(p->user, done, total);
    p->returned = oc_now();
    p->wait = OC_PROGRESS_SLOW_FACTOR * (p->returned - called);
    return 1;
}

int oc_cpu_cores(void)
{
#ifdef __linux__
    /* The CPUs this process may run on: taskset, cpusets and batch schedulers (Slurm's
     * bindings) narrow them, and a thread per online CPU would oversubscribe what is left. A
     * machine past CPU_SETSIZE CPUs fails the call and falls through. */
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

oc_status oc_thread_start_failed(oc_context *ctx, int rc, const char *what, int threads)
{
    if (rc != EAGAIN) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot start the %s: %s", what, strerror(rc));
    return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot start the %s: %s (the limit of processes and threads, ulimit -u)%s",
                   what, strerror(rc), threads > 1 ? "; give fewer threads (--threads)" : "");
}

size_t oc_thread_stack_size(void)
{
    size_t size = 0;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) == 0) {
        if (pthread_attr_getstacksize(&attr, &size) != 0) size = 0;
        pthread_attr_destroy(&attr);
    }
    if (size < OC_THREAD_STACK_MIN) size = OC_THREAD_STACK_MIN;
    if (size < (size_t)PTHREAD_STACK_MIN) size = (size_t)PTHREAD_STACK_MIN;
    return size;
}

int oc_thread_start(pthread_t *thread, int detached, void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc != 0) return rc;
    rc = pthread_attr_setstacksize(&attr, oc_thread_stack_size());
    if (rc == 0 && detached) rc = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (rc == 0) rc = pthread_create(thread, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc;
}

int oc_threads_resolve(int requested) { return requested > 0 ? requested : oc_cpu_cores(); }

typedef struct run_state {
    oc_task_fn fn;
    void *arg;
    int64_t ntasks;
    const int64_t *weights;
    atomic_llong next;
    atomic_llong done_weight;
    atomic_int stop;
    atomic_int failure; /* first failing status */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int running;
} run_state;

typedef struct worker_arg {
    run_state *state;
    int index;
} worker_arg;

static void *worker_main(void *p)
{
    worker_arg *w = p;
    oc_bus_signal_unblock(); /* the library's own thread: bus_signal.h */
    run_state *s = w->state;
    while (!atomic_load(&s->stop)) {
        int64_t t = atomic_fetch_add(&s->next, 1);
        if (t >= s->ntasks) break;
        oc_status st = s->fn(s->arg, t, w->index);
        if (st != OC_OK) {
            oc_first_failure(&s->failure, st);
            atomic_store(&s->stop, 1);
            break;
        }
        atomic_fetch_add(&s->done_weight, s->weights ? s->weights[t] : 1);
    }
    pthread_mutex_lock(&s->lock);
    s->running--;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

oc_status oc_parallel_run(oc_context *ctx, int threads, int64_t ntasks, oc_task_fn fn, void *arg,
                          const int64_t *task_weights, oc_progress_pace *progress)
{
    if (ntasks <= 0) return OC_OK;
    if (threads < 1) threads = 1;
    if (threads > ntasks) threads = (int)ntasks;
    int64_t total_weight = 0;
    for (int64_t t = 0; t < ntasks; ++t) total_weight += task_weights ? task_weights[t] : 1;

    run_state s = {.fn = fn, .arg = arg, .ntasks = ntasks, .weights = task_weights, .running = 0};
    atomic_init(&s.next, 0);
    atomic_init(&s.done_weight, 0);
    atomic_init(&s.stop, 0);
    atomic_init(&s.failure, OC_OK);
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.wake, NULL);

    pthread_t *tids = calloc((size_t)threads, sizeof *tids);
    worker_arg *args = calloc((size_t)threads, sizeof *args);
    oc_status st = OC_OK;
    int started = 0;
    if (!tids || !args) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate %d worker thread records", threads);
        goto cleanup;
    }
    for (; started < threads; ++started) {
        args[started] = (worker_arg){&s, started};
        pthread_mutex_lock(&s.lock);
        s.running++;
        pthread_mutex_unlock(&s.lock);
        int rc = oc_thread_start(&tids[started], 0, worker_main, &args[started]);
        if (rc != 0) {
            pthread_mutex_lock(&s.lock);
            s.running--;
            pthread_mutex_unlock(&s.lock);
            atomic_store(&s.stop, 1);
            char what[64];
            snprintf(what, sizeof what, "worker thread %d of %d", started + 1, threads);
            st = oc_thread_start_failed(ctx, rc, what, threads);
            break;
        }
    }

    /* Wait for the workers, reporting progress and watching the cancel flag meanwhile. A
     * report is made when due, while the workers run: none as the run ends, when the caller
     * of a job that runs its tasks in several runs would keep the next run waiting for it. */
    pthread_mutex_lock(&s.lock);
    while (s.running > 0) {
        /* until the next report is due, at most the cancel check's interval */
        double wait = OC_PROGRESS_INTERVAL;
        if (progress && progress->fn && oc_progress_until_due(progress) < wait) wait = oc_progress_until_due(progress);
        int rc = ETIMEDOUT;
        if (wait > 0) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += (long)(wait * 1e9);
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec += until.tv_nsec / 1000000000L;
                until.tv_nsec %= 1000000000L;
            }
            rc = pthread_cond_timedwait(&s.wake, &s.lock, &until);
        }
        if (rc == ETIMEDOUT || rc == 0) {
            pthread_mutex_unlock(&s.lock);
            if (progress) oc_progress_report(progress, (double)atomic_load(&s.done_weight), (double)total_weight, 0);
            /* After the report: a progress callback may itself cancel the job. */
            if (oc_cancelled(ctx)) atomic_store(&s.stop, 1);
            pthread_mutex_lock(&s.lock);
        }
    }
    pthread_mutex_unlock(&s.lock);

cleanup:
    for (int i = 0; i < started; ++i) pthread_join(tids[i], NULL);
    free(tids);
    free(args);
    pthread_cond_destroy(&s.wake);
    pthread_mutex_destroy(&s.lock);
    if (st != OC_OK) return st;
    if (atomic_load(&s.failure) != OC_OK)
        return oc_trace_at(ctx, (oc_status)atomic_load(&s.failure), __FILE__, __LINE__);
    if (oc_cancelled(ctx)) return oc_fail(ctx, OC_ERR_CANCELLED, "cancelled");
    return OC_OK;
}
