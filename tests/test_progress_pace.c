/*
 * test_progress_pace.c - progress callbacks come about ten times a second, paced from when
 * the previous call returned, and a slow callback does not hold the job up: a map reduction
 * and an element-wise map, a CPU product of small tiles, and CPU Gram jobs that run their
 * tiles in groups (threshold pairs, dense and sparse). Each job runs with a callback that
 * returns at once and one that sleeps: the calls stay near ten a second of the time the job
 * spends outside its callback (a callback made after every piece of work is called far more
 * often), a bound read off the run itself, so that a loaded or instrumented machine does not
 * fail it; a slow callback is called less often still, so that it takes about a tenth of the
 * calling thread's time at most (the CPU product's calling thread does the work); and where the job's workers go on during the callback, the slow run takes not many
 * times as long as the quick one. A callback called far too often, or long
 * after the job should have ended, cancels its job, so that a failure is quick.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct pace_log {
    oc_context *ctx;
    double sleep_s, start;
    double in_callback; /* seconds spent in the callback */
    int calls;
} pace_log;

/* At most this many calls in `outside` seconds of the job outside its callback: one each
 * tenth of a second, and a few more (the first and the last). */
static int calls_allowed(double outside) { return (int)(10 * outside) + 3; }

/* At most this many seconds in the callback: a report is due nine times as long after the
 * previous one returned as that one took (so a ninth of the time outside it), but for the
 * final report and the one before it, which may come back to back. */
static double callback_allowed(double outside, double sleep_s) { return outside / 9 + 2 * sleep_s + 0.05; }

/* Seconds after which a job is cancelled: each takes a second or two when paced. */
#define GIVE_UP_S 30

static void slow_progress(void *user, double done, double total)
{
    (void)done, (void)total;
    pace_log *log = user;
    const double entered = now();
    log->calls++;
    if (log->sleep_s > 0) {
        const struct timespec ts = {0, (long)(log->sleep_s * 1e9)};
        nanosleep(&ts, NULL);
    }
    log->in_callback += now() - entered;
    const double elapsed = now() - log->start;
    if (log->calls > calls_allowed(elapsed - log->in_callback) + 10 || elapsed > GIVE_UP_S) oc_context_cancel(log->ctx);
}

/* A job run under a callback that sleeps sleep_s seconds. */
typedef oc_status (*job_fn)(oc_context *ctx, void *arg, oc_progress_fn fn, void *user);

/* Runs job with a quick and a slow (sleep_s) callback and checks the calls against the time
 * each run spent outside its callback; for a job whose workers go on while the calling thread
 * is in the callback (`beside`: not the CPU product, whose calling thread does the work), also
 * that the slow run takes not many times as long. */
static void check_job(oc_context *ctx, const char *what, job_fn job, void *arg, double sleep_s, int beside)
{
    double took[2];
    for (int slow = 0; slow < 2; slow++) {
        pace_log log = {.ctx = ctx, .sleep_s = slow ? sleep_s : 0, .start = now()};
        const oc_status st = job(ctx, arg, slow_progress, &log);
        const double seconds = now() - log.start, outside = seconds - log.in_callback;
        took[slow] = seconds;
        CHECK_MSG(st == OC_OK, "%s, callback of %.2f s: %s", what, log.sleep_s, oc_context_last_error(ctx));
        CHECK_MSG(log.calls >= 1, "%s: no progress report", what);
        CHECK_MSG(log.calls <= calls_allowed(outside),
                  "%s, callback of %.2f s: %d calls in %.2f s, %.2f s of them outside the callback", what, log.sleep_s,
                  log.calls, seconds, outside);
        CHECK_MSG(log.in_callback <= callback_allowed(outside, log.sleep_s),
                  "%s, callback of %.2f s: %.2f s in %d calls of it, %.2f s outside it", what, log.sleep_s,
                  log.in_callback, log.calls, outside);
    }
    if (beside)
        CHECK_MSG(took[1] < 3 * took[0] + 1, "%s: %.2f s with a callback of %.2f s, %.2f s with a quick one", what,
                  took[1], sleep_s, took[0]);
}

/* ---------------------------------------------------------------- map */

enum { MAP_N = 3000000 };

typedef struct map_case {
    const double *x;
    double *out;
    oc_map_reduce reduce;
} map_case;

static oc_status run_map(oc_context *ctx, void *arg, oc_progress_fn fn, void *user)
{
    map_case *c = arg;
    const int64_t shape[1] = {MAP_N};
    oc_map_array in = OC_MAP_ARRAY_INIT;
    in.name = "x";
    in.data = c->x;
    in.ndim = 1;
    in.shape = shape;
    oc_map_options o = OC_MAP_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    o.threads = 2;
    o.reduce = c->reduce;
    o.progress = fn;
    o.progress_user = user;
    oc_map *m = NULL;
    oc_status st = oc_map_create(ctx, "sin(x)*cos(x)+sqrt(x)+tanh(x)", &in, 1, NULL, 0, &o, &m);
    if (st == OC_OK) st = oc_map_run(ctx, m, NULL, c->out, NULL);
    oc_map_free(m);
    return st;
}

/* A reduction's threads take its tasks as they come free: the calling thread, in a slow
 * callback, no longer holds its share of the tasks (the sum ran 100 times as long); the sum
 * is the same bits whichever thread took which task. */
static void check_map(oc_context *ctx)
{
    double *x = malloc(sizeof *x * MAP_N), *out = malloc(sizeof *out * MAP_N);
    CHECK(x && out);
    if (!x || !out) goto done;
    for (int64_t i = 0; i < MAP_N; i++) x[i] = (double)i / MAP_N;
    map_case c = {.x = x, .out = out, .reduce = OC_MAP_REDUCE_SUM};
    pace_log quiet = {.ctx = ctx};
    CHECK(run_map(ctx, &c, NULL, &quiet) == OC_OK);
    const double sum = out[0];
    check_job(ctx, "map sum", run_map, &c, 0.2, 1);
    CHECK_MSG(memcmp(&sum, out, sizeof sum) == 0, "map sum: %.17g, then %.17g", sum, out[0]);
    c.reduce = OC_MAP_REDUCE_NONE;
    check_job(ctx, "element-wise map", run_map, &c, 0.2, 1);
    CHECK(fabs(out[MAP_N / 2] - (sin(0.5) * cos(0.5) + sqrt(0.5) + tanh(0.5))) < 1e-12);
done:
    free(x);
    free(out);
}

/* ---------------------------------------------------------------- matmul */

enum { MM_N = 2500 };

typedef struct mm_case {
    double *a, *c;
} mm_case;

static oc_status run_matmul(oc_context *ctx, void *arg, oc_progress_fn fn, void *user)
{
    mm_case *mc = arg;
    oc_matmul_array A = OC_MATMUL_ARRAY_INIT, C = OC_MATMUL_ARRAY_INIT;
    A.data = mc->a;
    A.rows = A.cols = MM_N;
    C.data = mc->c;
    C.rows = C.cols = MM_N;
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.gram = 1;
    o.backend = OC_BACKEND_CPU;
    o.threads = 2;
    o.tile = 128;
    o.progress = fn;
    o.progress_user = user;
    return oc_matmul(ctx, &A, NULL, &C, &o, NULL);
}

/* A CPU product of small tiles reported after every K panel and band: hundreds of calls a
 * second, each one waited for by the thread that runs the product. The calling thread runs
 * the product, so a callback's own time adds to the job's, a tenth of it at most: 50 ms. */
static void check_matmul(oc_context *ctx)
{
    mm_case mc = {malloc(sizeof(double) * MM_N * MM_N), malloc(sizeof(double) * MM_N * MM_N)};
    CHECK(mc.a && mc.c);
    if (mc.a && mc.c) {
        for (int64_t i = 0; i < (int64_t)MM_N * MM_N; i++) mc.a[i] = (double)(i % 7) * 0.125;
        check_job(ctx, "matmul", run_matmul, &mc, 0.05, 0);
    }
    free(mc.a);
    free(mc.c);
}

/* ---------------------------------------------------------------- gram */

typedef struct gram_case {
    oc_matrix *a;
    oc_algorithm algorithm;
    const char *path;
} gram_case;

static oc_status run_gram(oc_context *ctx, void *arg, oc_progress_fn fn, void *user)
{
    gram_case *g = arg;
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    o.threads = 2;
    o.algorithm = g->algorithm;
    o.use_threshold = 1;
    o.threshold = 200;
    o.progress = fn;
    o.progress_user = user;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_FILE;
    out.path = g->path;
    return oc_gram(ctx, g->a, NULL, &o, &out, NULL);
}

/* Threshold pairs run the tiles in groups, delivered in order between them: each group's
 * run reported as it ended, whether due or not, and the job waited for that report. */
static void check_gram(oc_context *ctx)
{
    enum { N = 6000, M = 2000 };
    unsigned char *d = malloc((size_t)N * M);
    CHECK(d != NULL);
    if (!d) return;
    uint64_t seed = 11;
    for (int64_t i = 0; i < (int64_t)N * M; i++) d[i] = (oc_test_rand(&seed) & 3) == 0;
    gram_case g = {.algorithm = OC_ALGORITHM_DENSE, .path = oc_test_tmp_path("pairs.npz")};
    CHECK(oc_matrix_from_dense(ctx, d, N, M, M, &g.a) == OC_OK);
    if (g.a) check_job(ctx, "gram threshold (dense)", run_gram, &g, 0.2, 1);
    oc_matrix_free(g.a);
    g.a = NULL;
    /* sparse rows: one in 50 */
    for (int64_t i = 0; i < (int64_t)N * M; i++) d[i] = oc_test_rand(&seed) % 50 == 0;
    g.algorithm = OC_ALGORITHM_SPARSE;
    g.path = oc_test_tmp_path("sparse_pairs.npz");
    CHECK(oc_matrix_from_dense(ctx, d, N, M, M, &g.a) == OC_OK);
    if (g.a) check_job(ctx, "gram threshold (sparse)", run_gram, &g, 0.2, 1);
    oc_matrix_free(g.a);
    free(d);
}

int main(void)
{
    if (!oc_test_tmp_create("oc_progress_pace")) return 1;
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    check_map(ctx);
    check_matmul(ctx);
    check_gram(ctx);
    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
