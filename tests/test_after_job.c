/*
 * test_after_job.c - work a job leaves running when it returns (core/process/after_job.h), without a
 * GPU. Checked: the work runs; oc_after_job_wait returns only after all of it, from any
 * number of threads at once; a wait on the work's own thread returns at once (its work
 * frees contexts, whose free waits); oc_context_free waits for it; work held by a job
 * (oc_after_job_hold) starts at its last go, and a wait counts it, starting it first on the
 * holding thread.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "harness.h"
#include "core/process/after_job.h"

static atomic_int done;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Sleeps, waits (on its own thread: must not block), frees a context (which waits too),
 * then counts itself done. */
static void slow_release(void *arg)
{
    sleep_ms((long)(intptr_t)arg);
    oc_after_job_wait();
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) == OC_OK) oc_context_free(ctx);
    atomic_fetch_add(&done, 1);
}

static void *waiter(void *arg)
{
    oc_after_job_wait();
    *(int *)arg = atomic_load(&done);
    return NULL;
}

static void check_wait_sees_all(void)
{
    atomic_store(&done, 0);
    oc_after_job(slow_release, (void *)(intptr_t)60);
    oc_after_job(slow_release, (void *)(intptr_t)20);
    /* Three threads wait at once; each must see both done. */
    pthread_t th[3];
    int seen[3] = {-1, -1, -1};
    for (int i = 0; i < 3; ++i) CHECK(pthread_create(&th[i], NULL, waiter, &seen[i]) == 0);
    oc_after_job_wait();
    CHECK_EQ_I64(atomic_load(&done), 2);
    for (int i = 0; i < 3; ++i) {
        pthread_join(th[i], NULL);
        CHECK_EQ_I64(seen[i], 2);
    }
    oc_after_job_wait(); /* nothing left: returns at once */
}

static void check_context_free_waits(void)
{
    atomic_store(&done, 0);
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    oc_after_job(slow_release, (void *)(intptr_t)40);
    oc_context_free(ctx);
    CHECK_EQ_I64(atomic_load(&done), 1);
}

static void count_done(void *arg)
{
    (void)arg;
    atomic_fetch_add(&done, 1);
}

/* Held work starts at the last go, not before; a wait on the holding thread starts it. */
static void check_hold(void)
{
    atomic_store(&done, 0);
    oc_after_job_hold();
    oc_after_job_hold();
    oc_after_job(count_done, NULL);
    oc_after_job(count_done, NULL);
    sleep_ms(30);
    CHECK_EQ_I64(atomic_load(&done), 0);
    oc_after_job_go();
    sleep_ms(30);
    CHECK_EQ_I64(atomic_load(&done), 0); /* still held by the outer pair */
    /* Another thread's wait counts held work as running: it waits for the go. */
    pthread_t th;
    int seen = -1;
    CHECK(pthread_create(&th, NULL, waiter, &seen) == 0);
    sleep_ms(30);
    oc_after_job_go();
    pthread_join(th, NULL);
    CHECK_EQ_I64(seen, 2);
    atomic_store(&done, 0);
    oc_after_job_hold();
    oc_after_job(count_done, NULL);
    oc_after_job_wait(); /* on the holding thread: starts it, then waits */
    CHECK_EQ_I64(atomic_load(&done), 1);
    oc_after_job_go(); /* nothing left to start */
    oc_after_job_wait();
    CHECK_EQ_I64(atomic_load(&done), 1);
}

int main(void)
{
    check_wait_sees_all();
    check_context_free_waits();
    check_hold();
    return oc_test_finish();
}
