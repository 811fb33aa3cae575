/*
 * test_fork_locks.c - fork() while another thread is inside the library (core/process/fork_locks.h).
 * Checked: a registered lock held by another thread at the fork is free in the child (the
 * fork waits for its holder); work left running after a job in the parent is not waited for
 * in the child, whose only thread is the forking one; and children forked while two threads
 * run products without pause each run a product of their own to the end (the child once
 * found the cost model's lock taken for ever, and its first product waited on it).
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "matmul_array.h"
#include "core/process/after_job.h"
#include "core/process/fork_locks.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The child's exit status, -1 when it did not exit by itself (a signal: the alarm). */
static int child_status(pid_t pid)
{
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static atomic_int holding;
static double letting_go; /* now() just before the holder unlocks; read after the join */

static void *hold_a_while(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&held);
    atomic_store(&holding, 1);
    sleep_ms(200);
    letting_go = now();
    pthread_mutex_unlock(&held);
    return NULL;
}

static void test_a_held_lock_is_free_in_the_child(void)
{
    oc_fork_lock_register(&held, OC_FORK_RANK_CUDA, NULL);
    CHECK(oc_fork_locks_count() > 1 && oc_fork_locks_count() < oc_fork_locks_max());
    pthread_t t;
    CHECK(pthread_create(&t, NULL, hold_a_while, NULL) == 0);
    while (!atomic_load(&holding)) sleep_ms(1);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10);
        _exit(pthread_mutex_trylock(&held) == 0 ? 0 : 1);
    }
    const double forked = now();
    CHECK(pid > 0);
    CHECK_MSG(child_status(pid) == 0, "the child found the lock taken");
    pthread_join(t, NULL);
    CHECK_MSG(forked >= letting_go, "fork returned %.3f s before the holder let go", letting_go - forked);
}

static void slow_work(void *arg)
{
    (void)arg;
    sleep_ms(1500);
}

static void test_work_after_a_job_is_the_parents(void)
{
    oc_after_job(slow_work, NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(10);
        const double t0 = now();
        oc_after_job_wait(); /* the parent's thread is not here: nothing to wait for */
        _exit(now() - t0 < 1.0 ? 0 : 1);
    }
    CHECK(pid > 0);
    CHECK_MSG(child_status(pid) == 0, "the child waited for the parent's work");
    oc_after_job_wait();
}

/* The busy threads' products are large enough that OpenBLAS runs them on its thread server, so
 * forks meet its calls in flight; a child's is small, run on its own thread. */
enum { BUSY_N = 512, CHILD_N = 48 };
static atomic_int stop;

/* One float32 product: C = A·B of N x N, checked against the loops at some elements (every sum
 * is of small whole numbers, exact in float32 in any order). */
static int one_product(oc_context *ctx, int N)
{
    float *a = malloc(sizeof(float) * N * N), *b = malloc(sizeof(float) * N * N), *c = malloc(sizeof(float) * N * N);
    int ok = a && b && c;
    for (int i = 0; ok && i < N * N; ++i) a[i] = (float)(i % 7), b[i] = (float)(i % 5) - 2.0f;
    oc_matmul_array A = mem(OC_MATMUL_FLOAT32, a, N, N), B = mem(OC_MATMUL_FLOAT32, b, N, N);
    oc_matmul_array C = mem(OC_MATMUL_FLOAT32, c, N, N);
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.threads = 2;
    o.backend = OC_BACKEND_CPU; /* CUDA does not survive a fork: the CPU's locks are the test's */
    ok = ok && oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_OK;
    for (int i = 0; ok && i < N; i += 37)
        for (int j = 0; ok && j < N; j += 41) {
            float s = 0;
            for (int k = 0; k < N; ++k) s += a[i * N + k] * b[k * N + j];
            ok = c[i * N + j] == s;
        }
    free(a);
    free(b);
    free(c);
    return ok;
}

static void *products(void *arg)
{
    (void)arg;
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return NULL;
    while (!atomic_load(&stop)) one_product(ctx, BUSY_N);
    oc_context_free(ctx);
    return NULL;
}

static void test_children_of_a_busy_process_run_products(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; ++i) CHECK(pthread_create(&t[i], NULL, products, NULL) == 0);
    int ran = 0, forks = 60;
    for (int i = 0; i < forks; ++i) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(20); /* a child that waits on a lock nobody holds ends here, by the signal */
            oc_context *ctx = NULL;
            int ok = oc_context_create(&ctx) == OC_OK && one_product(ctx, CHILD_N);
            _exit(ok ? 0 : 1);
        }
        if (pid > 0) ran += child_status(pid) == 0;
        sleep_ms(3);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; ++i) pthread_join(t[i], NULL);
    CHECK_MSG(ran == forks, "%d of %d children ran their product", ran, forks);
}

int main(void)
{
    signal(SIGALRM, SIG_DFL);
    alarm(240); /* a fork that waits for ever fails the test (killed), not the whole run's time */
    test_a_held_lock_is_free_in_the_child();
    test_work_after_a_job_is_the_parents();
    test_children_of_a_busy_process_run_products();
    return oc_test_finish();
}
