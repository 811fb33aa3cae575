/*
 * mm_blas.c - the run-time BLAS of the CPU product (mm_blas.h). The library stays loaded for
 * the life of the process (dlclose would unload a threaded BLAS under its own threads).
 */
#include "matmul/cpu/mm_blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/threads.h"

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

static int try_load(const char *lib, oc_mm_blas *b, char *why, size_t why_size)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(why, why_size, "%s", e ? e : "cannot be loaded");
        return -1;
    }
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
    short_name(lib, b->name, sizeof b->name);
    return 0;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char key[256];
    int status;
    oc_mm_blas blas;
    char why[320];
} cache;
static int cached;

static int load(const char *env, oc_mm_blas *b, char *why, size_t why_size)
{
    memset(b, 0, sizeof *b);
    if (env && *env && strcmp(env, "none") != 0) {
        if (try_load(env, b, why, why_size) == 0) return 0;
        char cause[200];
        snprintf(cause, sizeof cause, "%.199s", why);
        snprintf(why, why_size, "OUTCORE_BLAS=%.100s: %s", env, cause);
        return -1;
    }
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "reference");
    if (env && strcmp(env, "none") == 0) {
        snprintf(b->note, sizeof b->note, "OUTCORE_BLAS=none: the reference loops run");
        return 0;
    }
    char ignored[256];
    for (size_t i = 0; i < sizeof search / sizeof search[0]; i++)
        if (try_load(search[i], b, ignored, sizeof ignored) == 0) return 0;
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
        cached = 1;
    }
    *b = cache.blas;
    int st = cache.status;
    snprintf(why, why_size, "%s", cache.why);
    pthread_mutex_unlock(&lock);
    return st;
}

/* The measurement of oc_mm_blas_gemm_rate: long enough for a BLAS's threads to be at work,
 * short beside a first job's other first-use measurements; at most three matrices of
 * RATE_EDGE_MAX² float64 (96 MiB). */
#define RATE_SECONDS 0.05
#define RATE_EDGE_MAX 2048

double oc_mm_blas_gemm_rate(const oc_mm_blas *b, int f32, int threads)
{
    if (!b->sgemm || !b->dgemm) return 0;
    const size_t es = f32 ? sizeof(float) : sizeof(double), cells = (size_t)RATE_EDGE_MAX * RATE_EDGE_MAX;
    void *a = calloc(cells, es), *x = calloc(cells, es), *c = calloc(cells, es);
    double rate = 0;
    if (a && x && c) {
        if (b->set_threads) b->set_threads(threads);
        for (int n = 256; n <= RATE_EDGE_MAX; n *= 2) {
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
        }
    }
    free(a);
    free(x);
    free(c);
    return rate;
}
