/*
 * mm_blas.c - the run-time BLAS of the CPU product (mm_blas.h). The library stays loaded for
 * the life of the process (dlclose would unload a threaded BLAS under its own threads).
 */
#include "matmul/cpu/mm_blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/threads.h"
#include "io/sysio.h"
#include "core/process/fork_locks.h"

static const char *const search[] = {"libopenblas.so.0", "libcblas.so.3", "libblas.so.3", "libmkl_rt.so"};

/* "openblas" of ".../libopenblas.so.0". */
static void short_name(const char *lib, char *out, size_t size)
{
    const char *base = strrchr(lib, '/');
    base = base ? base + 1 : lib;
    if (strncmp(base, "lib", 3) == 0) base += 3;
    size_t n = strcspn(base, ".");
    if (n >= size) n = size - 1;
    memcpy(out, base, n);
    out[n] = '\0';
}

/* The address space a thread started with default attributes takes: its stack (the soft stack
 * limit, as glibc sizes it) and its guard page. */
static int64_t thread_stack_bytes(void)
{
    size_t stack = 0, guard = 0;
    pthread_attr_t attr;
    if (pthread_getattr_default_np(&attr) == 0) {
        pthread_attr_getstacksize(&attr, &stack);
        pthread_attr_getguardsize(&attr, &guard);
        pthread_attr_destroy(&attr);
    }
    return (int64_t)(stack ? stack : (size_t)8 << 20) + (int64_t)(guard ? guard : 4096);
}

/* Whether `bytes` more of address space can be mapped now (a reservation that takes no
 * memory, released at once). */
static int address_space_room(int64_t bytes)
{
    void *p = mmap(NULL, (size_t)bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return 0;
    munmap(p, (size_t)bytes);
    return 1;
}

/* OpenBLAS's buffer for each thread of a call (BUFFER_SIZE on x86-64 and a page, as its
 * allocation asks), and room for the rest of what a call maps. */
#define OPENBLAS_THREAD_BUFFER ((int64_t)134221824)
#define BLAS_OTHER_MAPPINGS ((int64_t)32 << 20)

/* Room for what the library and its start-up take beside the threads' stacks. */
#define BLAS_LOAD_MAPPINGS ((int64_t)64 << 20)

/* The processors OpenBLAS counts: those of the machine this process may run on. */
static long usable_processors(void)
{
    long n = sysconf(_SC_NPROCESSORS_CONF);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0 && CPU_COUNT(&set) < n) n = CPU_COUNT(&set);
    return n > 0 ? n : 1;
}

static void *no_work(void *arg) { return arg; }

/* Whether n more threads can start now (each started and joined at once): OpenBLAS, when
 * one of its threads cannot start (ulimit -u), raises SIGINT and then waits for it for ever.
 * 0, or the error of the first that could not. */
static int threads_can_start(long n)
{
    pthread_t t[64];
    int err = 0;
    for (long done = 0; done < n && !err;) {
        long batch = n - done < 64 ? n - done : 64, started = 0;
        /* Default attributes, not oc_thread_start: these stand for the threads OpenBLAS starts
         * with the defaults, and run nothing. */
        while (started < batch && !(err = pthread_create(&t[started], NULL, no_work, NULL))) started++;
        for (long i = 0; i < started; i++) pthread_join(t[i], NULL);
        done += started;
    }
    return err;
}

/* A threaded OpenBLAS starts its threads as it loads, one fewer than the processors or than
 * OPENBLAS_NUM_THREADS (GOTO_NUM_THREADS, OMP_NUM_THREADS) says, whichever is fewer, and each
 * maps its stack and its buffer; one it cannot start or give a buffer under an address space
 * limit is waited for at its first threaded call, or at exit, for ever. So under a limit
 * without room for them, or where they cannot start (ulimit -u), no library is loaded (the
 * CLI sets OPENBLAS_NUM_THREADS to its --threads when none is set). A library named by path
 * is looked for first: one that is not there is refused as such. 0, or -1 with why. */
static int load_threads_room(const char *lib, char *why, size_t why_size)
{
    const int64_t limit = oc_address_space_limit();
    struct stat sb;
    if (strchr(lib, '/') && stat(lib, &sb) != 0) return 0;
    const char *vars[] = {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS"};
    const char *named = NULL;
    long threads = usable_processors();
    for (size_t i = 0; i < sizeof vars / sizeof vars[0] && !named; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 0) {
            named = vars[i];
            if (atoi(v) < threads) threads = atoi(v);
        }
    }
    if (threads <= 1) return 0;
    /* Loaded already (by the program, as numpy may): its threads started then. */
    void *loaded = dlopen(lib, RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
    if (loaded) {
        dlclose(loaded);
        return 0;
    }
    const int64_t each = thread_stack_bytes() + OPENBLAS_THREAD_BUFFER;
    if (limit < 0 || address_space_room((threads - 1) * each + BLAS_LOAD_MAPPINGS)) {
        /* Room for them (or no limit): the threads themselves must start (ulimit -u). */
        const int err = threads_can_start(threads - 1);
        if (!err) return 0;
        snprintf(why, why_size,
                 "cannot start the %ld thread%s a threaded BLAS starts as it loads: %s (ulimit -u); give fewer "
                 "threads (--threads, or %s before it loads)",
                 threads - 1, threads - 1 == 1 ? "" : "s", strerror(err), named ? named : "OPENBLAS_NUM_THREADS");
        return -1;
    }
    snprintf(why, why_size,
             "the address space limit (ulimit -v, %lld bytes) leaves no room for the %ld thread%s a threaded BLAS "
             "starts as it loads (%lld MiB of stack and buffer each); give fewer threads (--threads, or %s before "
             "it loads), or raise ulimit -v",
             (long long)limit, threads - 1, threads - 1 == 1 ? "" : "s", (long long)(each >> 20),
             named ? named : "OPENBLAS_NUM_THREADS");
    return -1;
}

/* Calls into the BLAS, shared, taken for writing across fork(). A fork that meets a call in
 * flight leaves the child OpenBLAS's thread server locked for ever, and OpenBLAS's own
 * handler before a fork (it stops its threads) hangs when a call starts meanwhile. So the
 * handlers are registered once a BLAS is loaded, after the library's own: the handler before
 * a fork runs in the reverse order, ours first, and waits for the calls in flight. Writers
 * first, so that threads calling one after the other cannot hold a fork off. (Not the ranked
 * locks of core/process/fork_locks.h: those are registered at load, before any BLAS.) */
#ifdef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
#define CALLS_LOCK_INIT PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
#else
#define CALLS_LOCK_INIT PTHREAD_RWLOCK_INITIALIZER
#endif
static pthread_rwlock_t calls_lock = CALLS_LOCK_INIT;
static pthread_once_t calls_fork_once = PTHREAD_ONCE_INIT;

static void calls_before_fork(void) { pthread_rwlock_wrlock(&calls_lock); }
static void calls_after_fork_parent(void) { pthread_rwlock_unlock(&calls_lock); }
/* The parent's waiting callers stay in the lock's state: the child's only thread makes it anew. */
static void calls_after_fork_child(void) { calls_lock = (pthread_rwlock_t)CALLS_LOCK_INIT; }
static void calls_fork_handlers(void)
{
    (void)pthread_atfork(calls_before_fork, calls_after_fork_parent, calls_after_fork_child);
}

void oc_mm_blas_call_begin(void) { pthread_rwlock_rdlock(&calls_lock); }
void oc_mm_blas_call_end(void) { pthread_rwlock_unlock(&calls_lock); }

static int try_load(const char *lib, oc_mm_blas *b, char *why, size_t why_size)
{
    if (load_threads_room(lib, why, why_size) != 0) return -2;
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, why_size, "%s", e ? e : "cannot be loaded");
        return -1;
    }
    /* The first BLAS loaded registers the calls' fork handlers after its own (above); one
     * loaded later under another OUTCORE_BLAS keeps its handlers outside ours. */
    pthread_once(&calls_fork_once, calls_fork_handlers);
    memset(b, 0, sizeof *b);
    *(void **)&b->sgemm = dlsym(h, "cblas_sgemm");
    *(void **)&b->dgemm = dlsym(h, "cblas_dgemm");
    if (!b->sgemm || !b->dgemm) {
        snprintf(why, why_size, "%s has no cblas_sgemm and cblas_dgemm", lib);
        b->sgemm = NULL;
        b->dgemm = NULL;
        return -1;
    }
    *(void **)&b->ssyrk = dlsym(h, "cblas_ssyrk");
    *(void **)&b->dsyrk = dlsym(h, "cblas_dsyrk");
    if (!b->ssyrk || !b->dsyrk) b->ssyrk = NULL, b->dsyrk = NULL;
    *(void **)&b->set_threads = dlsym(h, "openblas_set_num_threads");
    if (!b->set_threads) *(void **)&b->set_threads = dlsym(h, "MKL_Set_Num_Threads");
    snprintf(b->library, sizeof b->library, "%s", lib);
    /* OpenBLAS under any file name (libblas.so.3 is often it). */
    if (dlsym(h, "openblas_get_config")) snprintf(b->name, sizeof b->name, "openblas");
    else short_name(lib, b->name, sizeof b->name);
    return 0;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
OC_FORK_LOCK(lock, OC_FORK_RANK_BLAS, NULL)

static struct {
    char key[256];
    int status;
    oc_mm_blas blas;
    char why[512];
} cache;
static int cached;

static int load(const char *env, oc_mm_blas *b, char *why, size_t why_size)
{
    memset(b, 0, sizeof *b);
    if (env && *env && strcmp(env, "none") != 0) {
        const int st = try_load(env, b, why, why_size);
        if (st == 0) return 0;
        char cause[sizeof cache.why];
        snprintf(cause, sizeof cause, "%s", why);
        snprintf(why, why_size, "OUTCORE_BLAS=%.100s: %.390s", env, cause);
        return st;
    }
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "reference");
    if (env && strcmp(env, "none") == 0) {
        snprintf(b->note, sizeof b->note, "OUTCORE_BLAS=none: the reference loops run");
        return 0;
    }
    char ignored[sizeof cache.why];
    for (size_t i = 0; i < sizeof search / sizeof search[0]; i++) {
        const int st = try_load(search[i], b, ignored, sizeof ignored);
        if (st == 0) return 0;
        if (st == -2) {
            snprintf(why, why_size, "%s: %.440s", search[i], ignored);
            return -2;
        }
    }
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "reference");
    snprintf(b->note, sizeof b->note,
             "no BLAS found (tried libopenblas.so.0, libcblas.so.3, libblas.so.3, libmkl_rt.so): the reference loops "
             "run, many times slower; install OpenBLAS (apt-get install libopenblas0) or name a library with "
             "OUTCORE_BLAS=/path/to/libblas.so");
    return 0;
}

int oc_mm_blas_load(oc_mm_blas *b, char *why, size_t why_size)
{
    const char *env = getenv("OUTCORE_BLAS");
    const char *key = env ? env : "";
    pthread_mutex_lock(&lock);
    if (!cached || strcmp(cache.key, key) != 0) {
        snprintf(cache.key, sizeof cache.key, "%s", key);
        cache.why[0] = '\0';
        cache.status = load(env, &cache.blas, cache.why, sizeof cache.why);
        cached = cache.status != -2; /* the room may be there at the next try */
    }
    *b = cache.blas;
    int st = cache.status;
    snprintf(why, why_size, "%s", cache.why);
    pthread_mutex_unlock(&lock);
    return st;
}

static atomic_int threads_ready; /* threads whose OpenBLAS buffers a returned call left */

/* What a call on `threads` threads maps past what `ready` threads' calls left in place: a
 * buffer for each thread past those, the stack of each thread the BLAS starts for it (the
 * calling thread is the first), and room for the rest. */
static int64_t call_bytes(int threads, int ready)
{
    const int started = ready > 1 ? ready : 1;
    return (int64_t)(threads - ready) * OPENBLAS_THREAD_BUFFER +
           (threads > started ? (int64_t)(threads - started) * thread_stack_bytes() : 0) + BLAS_OTHER_MAPPINGS;
}

int oc_mm_blas_room(const oc_mm_blas *b, int threads, char *why, size_t why_size)
{
    const int64_t limit = oc_address_space_limit();
    const int ready = atomic_load(&threads_ready);
    if (!b->sgemm || strcmp(b->name, "openblas") != 0 || threads <= ready) return 0;
    if (limit < 0 || address_space_room(call_bytes(threads, ready))) {
        /* Room for them (or no limit): the threads past those that ran a call already must
         * start (ulimit -u). */
        const int err = threads_can_start(threads - (ready > 1 ? ready : 1));
        if (!err) return 0;
        snprintf(why, why_size, "cannot start the threads %s needs for %d threads: %s (ulimit -u); give --threads %d",
                 b->name, threads, strerror(err), ready > 1 ? ready : 1);
        return -1;
    }
    int fits = threads - 1;
    while (fits > ready && !address_space_room(call_bytes(fits, ready))) fits--;
    char fewer[48] = "";
    if (fits > 0 && (fits > ready || ready > 0)) snprintf(fewer, sizeof fewer, ", or give --threads %d", fits);
    snprintf(why, why_size,
             "the address space limit (ulimit -v, %lld bytes) leaves no room for %s's buffers on %d threads "
             "(%lld MiB each, and %lld MiB of stack for each thread past the first, beside what the job maps); "
             "raise ulimit -v%s",
             (long long)limit, b->name, threads, (long long)(OPENBLAS_THREAD_BUFFER >> 20),
             (long long)(thread_stack_bytes() >> 20), fewer);
    return -1;
}

void oc_mm_blas_ran(const oc_mm_blas *b, int threads)
{
    if (!b->sgemm) return;
    int ready = atomic_load(&threads_ready);
    while (threads > ready && !atomic_compare_exchange_weak(&threads_ready, &ready, threads)) {}
}

/* The measurement of oc_mm_blas_gemm_rate: long enough for a BLAS's threads to be at work,
 * short beside a first job's other first-use measurements; at most three matrices of
 * RATE_EDGE_MAX² float64 (96 MiB). */
#define RATE_SECONDS 0.05
#define RATE_EDGE_MAX 2048

double oc_mm_blas_gemm_rate(const oc_mm_blas *b, int f32, int threads, int64_t room)
{
    char why[320];
    if (!b->sgemm || !b->dgemm || oc_mm_blas_room(b, threads, why, sizeof why) != 0) return 0;
    const size_t es = f32 ? sizeof(float) : sizeof(double);
    int edge = RATE_EDGE_MAX; /* the largest edge whose three matrices fit the room */
    while (room > 0 && edge >= 256 && 3 * (int64_t)edge * edge * (int64_t)es > room) edge /= 2;
    if (edge < 256) return 0;
    const size_t cells = (size_t)edge * edge;
    void *a = calloc(cells, es), *x = calloc(cells, es), *c = calloc(cells, es);
    double rate = 0;
    if (a && x && c) {
        oc_mm_blas_call_begin();
        if (b->set_threads) b->set_threads(threads);
        for (int n = 256; n <= edge; n *= 2) {
            double seconds = 0;
            for (int call = 0; call < 2; ++call) { /* the first untimed: threads and pages */
                const double t0 = oc_now();
                if (f32)
                    b->sgemm(OC_CBLAS_ROW_MAJOR, OC_CBLAS_NO_TRANS, OC_CBLAS_NO_TRANS, n, n, n, 1.0f, a, n, x, n, 0.0f,
                             c, n);
                else
                    b->dgemm(OC_CBLAS_ROW_MAJOR, OC_CBLAS_NO_TRANS, OC_CBLAS_NO_TRANS, n, n, n, 1.0, a, n, x, n, 0.0, c,
                             n);
                seconds = oc_now() - t0;
            }
            if (seconds > 0) rate = 2.0 * n * (double)n * n / seconds;
            if (seconds >= RATE_SECONDS) break;
            /* The room stopped the doubling short of a product long enough to time. */
            if (n * 2 > edge && edge < RATE_EDGE_MAX) rate = 0;
        }
        oc_mm_blas_call_end();
    }
    if (rate > 0) oc_mm_blas_ran(b, threads);
    free(a);
    free(x);
    free(c);
    return rate;
}
