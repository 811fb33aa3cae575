/*
 * after_job.c - work a job leaves running when it returns (after_job.h): detached threads
 * counted under one lock, waited for through a condition variable, so that any number of
 * threads may wait at once.
 */
#include "core/process/after_job.h"

#include <pthread.h>
#include <stdlib.h>

#include "core/process/fork_locks.h"
#include "core/threads.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t finished = PTHREAD_COND_INITIALIZER;
static int running;
static _Thread_local int on_after_job_thread;
/* oc_after_job_hold: this thread's calls wait in `held` (already counted in `running`)
 * until its last oc_after_job_go. */
static _Thread_local int hold_depth;
static _Thread_local struct after_job_call *held;
static pthread_once_t at_exit_once = PTHREAD_ONCE_INIT;

typedef struct after_job_call {
    void (*fn)(void *arg);
    void *arg;
    struct after_job_call *next; /* held calls */
} after_job_call;

/* In a forked child only the forking thread runs: the calls on other threads are not there to
 * count themselves done, and their waiters not there to wake. This thread's held calls are. */
static void forget_other_threads(void)
{
    running = 0;
    for (const after_job_call *c = held; c; c = c->next) ++running;
    pthread_cond_init(&finished, NULL);
}
OC_FORK_LOCK(lock, OC_FORK_RANK_AFTER_JOB, forget_other_threads)

/* Runs a counted call (and frees it), then counts it done. */
static void run_call(after_job_call *p)
{
    after_job_call call = *p;
    free(p);
    call.fn(call.arg);
    pthread_mutex_lock(&lock);
    --running;
    pthread_cond_broadcast(&finished);
    pthread_mutex_unlock(&lock);
}

static void *after_job_thread(void *p)
{
    on_after_job_thread = 1;
    run_call(p);
    return NULL;
}

/* The process's exit waits too: registered after the CUDA runtime's own exit handler (the
 * runtime starts before any job), so it runs before the runtime goes away. */
static void register_at_exit(void) { (void)atexit(oc_after_job_wait); }

/* Starts a counted call on a thread of its own, or runs it here when none can start. */
static void start(after_job_call *call)
{
    pthread_t thread;
    if (oc_thread_start(&thread, 1, after_job_thread, call) != 0) run_call(call);
}

void oc_after_job(void (*fn)(void *arg), void *arg)
{
    pthread_once(&at_exit_once, register_at_exit);
    after_job_call *call = malloc(sizeof *call);
    if (!call) {
        fn(arg);
        return;
    }
    *call = (after_job_call){fn, arg, NULL};
    pthread_mutex_lock(&lock);
    ++running;
    pthread_mutex_unlock(&lock);
    if (hold_depth > 0) {
        call->next = held;
        held = call;
        return;
    }
    start(call);
}

/* Starts this thread's held calls. */
static void start_held(void)
{
    while (held) {
        after_job_call *call = held;
        held = call->next;
        start(call);
    }
}

void oc_after_job_hold(void) { ++hold_depth; }

void oc_after_job_go(void)
{
    if (hold_depth > 0 && --hold_depth == 0) start_held();
}

void oc_after_job_wait(void)
{
    if (on_after_job_thread) return;
    start_held(); /* this thread's own held calls would never end otherwise */
    pthread_mutex_lock(&lock);
    while (running > 0) pthread_cond_wait(&finished, &lock);
    pthread_mutex_unlock(&lock);
}
