/*
 * test_thread_stacks.c - the stacks of the library's threads (core/threads.h): with a default
 * stack smaller than OC_THREAD_STACK_MIN (as glibc sizes it from a small ulimit -s, here set
 * with pthread_setattr_default_np) every thread the library starts (oc_parallel_run's
 * workers, the pool's, a detached one) has OC_THREAD_STACK_MIN and runs a task that uses most
 * of it; with a larger default, that default is kept.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "core/threads.h"
#include "core/workers.h"
#include "harness.h"

/* Most of the stack a thread is promised: a task that touches this much crashes on a stack
 * of the default (PTHREAD_STACK_MIN here). */
#define TASK_STACK_USE ((size_t)(OC_THREAD_STACK_MIN / 2))

static atomic_size_t smallest = SIZE_MAX;

/* Records the stack size of the calling thread and writes TASK_STACK_USE bytes of it. */
static void use_stack(void)
{
    pthread_attr_t attr;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstacksize(&attr, &size);
        pthread_attr_destroy(&attr);
    }
    size_t seen = atomic_load(&smallest);
    while (size < seen && !atomic_compare_exchange_weak(&smallest, &seen, size)) {}
    volatile unsigned char buf[TASK_STACK_USE];
    memset((unsigned char *)buf, 1, sizeof buf);
    buf[0] = buf[sizeof buf - 1];
}

static oc_status task(void *arg, int64_t t, int worker)
{
    (void)arg, (void)t, (void)worker;
    use_stack();
    return OC_OK;
}

static void part(void *arg, int p, int parts)
{
    (void)arg, (void)p, (void)parts;
    use_stack();
}

static void *detached(void *arg)
{
    use_stack();
    atomic_store((atomic_int *)arg, 1);
    return NULL;
}

/* The default stack size of threads started without attributes set to `size`. */
static int set_default_stack(size_t size)
{
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return 0;
    int ok = pthread_attr_setstacksize(&attr, size) == 0 && pthread_setattr_default_np(&attr) == 0;
    pthread_attr_destroy(&attr);
    return ok;
}

static void test_small_default(oc_context *ctx)
{
    CHECK(set_default_stack((size_t)PTHREAD_STACK_MIN));
    CHECK_EQ_I64((int64_t)oc_thread_stack_size(), (int64_t)OC_THREAD_STACK_MIN);

    atomic_store(&smallest, SIZE_MAX);
    CHECK(oc_parallel_run(ctx, 2, 8, task, NULL, NULL, NULL) == OC_OK);
    CHECK_MSG(atomic_load(&smallest) >= OC_THREAD_STACK_MIN, "a worker of oc_parallel_run had %zu bytes of stack",
              (size_t)atomic_load(&smallest));

    oc_workers *w = NULL;
    CHECK(oc_workers_create(ctx, 2, &w) == OC_OK);
    if (w) {
        /* Four parts on two workers and the caller: the workers take some (the caller, whose
         * stack is the process's, may take any). */
        atomic_store(&smallest, SIZE_MAX);
        oc_workers_split(w, 4, part, NULL);
        oc_workers_free(w);
    }

    atomic_store(&smallest, SIZE_MAX);
    atomic_int done = 0;
    pthread_t thread;
    CHECK(oc_thread_start(&thread, 1, detached, &done) == 0);
    while (!atomic_load(&done)) sched_yield();
    CHECK_MSG(atomic_load(&smallest) >= OC_THREAD_STACK_MIN, "a detached thread had %zu bytes of stack",
              (size_t)atomic_load(&smallest));
}

static void test_larger_default_kept(void)
{
    const size_t larger = 4 * OC_THREAD_STACK_MIN;
    CHECK(set_default_stack(larger));
    CHECK_EQ_I64((int64_t)oc_thread_stack_size(), (int64_t)larger);
    pthread_t thread;
    atomic_int done = 0;
    atomic_store(&smallest, SIZE_MAX);
    CHECK(oc_thread_start(&thread, 0, detached, &done) == 0 && pthread_join(thread, NULL) == 0);
    CHECK_EQ_I64((int64_t)atomic_load(&smallest), (int64_t)larger);
}

int main(void)
{
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    test_small_default(ctx);
    test_larger_default_kept();
    oc_context_free(ctx);
    return oc_test_finish();
}
