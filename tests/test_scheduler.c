/*
 * test_scheduler.c - the tile group queue of several devices (engine/scheduler.h), without a
 * GPU: simulated workers on threads, of different speeds, pull groups and "compute" tiles.
 * Checked: every tile is done exactly once whatever the speeds, a faster worker does more,
 * a single worker walks the order as planned, workers stay on their panel while it has
 * groups left, and an abort stops every worker.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "engine/scheduler.h"

/* Holds the other workers back until one has taken its first group (simulate's `first`). */
typedef struct start_gate {
    pthread_mutex_t lock;
    pthread_cond_t opened;
    int open;
} start_gate;

typedef struct sim_worker {
    oc_scheduler *s;
    start_gate *gate; /* NULL: starts at once */
    int opens_gate;   /* nonzero: opens gate once its first group is taken; others wait for it */
    int id;
    long nanos_per_tile; /* its speed */
    int fail_at;         /* > 0: fails on its fail_at-th tile */
    int *hits;           /* per tile: how many workers computed it (atomic adds) */
    int *owner;          /* per tile: the worker that computed it */
    int64_t tiles;
    int switches; /* groups taken whose key differs from its previous group's */
    const int64_t *keys;
} sim_worker;

static void *sim_run(void *arg)
{
    sim_worker *w = arg;
    int64_t first, count, last_key = -1;
    if (w->gate && !w->opens_gate) {
        pthread_mutex_lock(&w->gate->lock);
        while (!w->gate->open) pthread_cond_wait(&w->gate->opened, &w->gate->lock);
        pthread_mutex_unlock(&w->gate->lock);
    }
    for (int taken = 0; oc_scheduler_next(w->s, w->id, &first, &count); ++taken) {
        if (w->gate && w->opens_gate && taken == 0) {
            pthread_mutex_lock(&w->gate->lock);
            w->gate->open = 1;
            pthread_cond_broadcast(&w->gate->opened);
            pthread_mutex_unlock(&w->gate->lock);
        }
        if (last_key >= 0 && w->keys[first] != last_key) w->switches++;
        last_key = w->keys[first];
        for (int64_t t = first; t < first + count; ++t) {
            if (w->fail_at > 0 && w->tiles + 1 == w->fail_at) {
                oc_scheduler_abort(w->s, w->id);
                return NULL;
            }
            struct timespec ts = {0, w->nanos_per_tile};
            nanosleep(&ts, NULL);
            __atomic_add_fetch(&w->hits[t], 1, __ATOMIC_RELAXED);
            w->owner[t] = w->id;
            w->tiles++;
        }
        oc_scheduler_complete(w->s, w->id, count);
    }
    return NULL;
}

/* Runs `workers` simulated workers over an order of n tiles with keys; returns the tiles
 * each did in done[]. first >= 0: that worker takes its first group before the others start
 * (so a test does not hang on which thread the machine runs first). */
static void simulate(const int64_t *keys, int64_t n, int workers, const long *speed, const int *fail_at, int *hits,
                     int *owner, sim_worker *sw, int first)
{
    start_gate gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    oc_scheduler *s = NULL;
    CHECK(oc_scheduler_create(ctx, keys, n, workers, 0, &s) == OC_OK);
    memset(hits, 0, (size_t)n * sizeof *hits);
    pthread_t th[8];
    for (int w = 0; w < workers; ++w) {
        sw[w] = (sim_worker){.s = s,
                             .gate = first >= 0 ? &gate : NULL,
                             .opens_gate = w == first,
                             .id = w,
                             .nanos_per_tile = speed[w],
                             .fail_at = fail_at ? fail_at[w] : 0,
                             .hits = hits,
                             .owner = owner,
                             .keys = keys};
        pthread_create(&th[w], NULL, sim_run, &sw[w]);
    }
    for (int w = 0; w < workers; ++w) pthread_join(th[w], NULL);
    int64_t total = 0;
    for (int w = 0; w < workers; ++w) total += sw[w].tiles;
    if (!fail_at) CHECK_EQ_I64(oc_scheduler_done(s, -1), total);
    oc_scheduler_free(s);
    oc_context_free(ctx);
}

/* The keys of a symmetric resident order over P panels: tile (I, J), J >= I, keyed by I. */
static int64_t symmetric_keys(int64_t P, int64_t *keys)
{
    int64_t n = 0;
    for (int64_t I = 0; I < P; ++I)
        for (int64_t J = I; J < P; ++J) keys[n++] = I;
    return n;
}

static void check_exactly_once_and_balance(void)
{
    int64_t keys[40 * 41 / 2];
    int64_t n = symmetric_keys(40, keys);
    int hits[sizeof keys / sizeof keys[0]], owner[sizeof keys / sizeof keys[0]];
    sim_worker sw[4];
    /* Worker 0 waits for nothing, the others a millisecond per tile. */
    const long speed[4] = {0, 1000000, 1000000, 1000000};
    simulate(keys, n, 4, speed, NULL, hits, owner, sw, -1);
    for (int64_t t = 0; t < n; ++t) CHECK_MSG(hits[t] == 1, "tile %lld done %d times", (long long)t, hits[t]);
    int64_t total = 0;
    for (int w = 0; w < 4; ++w) total += sw[w].tiles;
    CHECK_EQ_I64(total, n);
    /* The fast worker pulls more than any slow one (dynamic balance); by far, not by a
     * timing margin: it would have to be descheduled for most of the job to lose. */
    for (int w = 1; w < 4; ++w)
        CHECK_MSG(sw[0].tiles > sw[w].tiles, "fast worker %lld tiles, worker %d %lld", (long long)sw[0].tiles, w,
                  (long long)sw[w].tiles);
}

static void check_single_worker_keeps_order(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    /* A key that comes back later in the order (a seeded order does this): one worker must
     * still take the order as it is. */
    const int64_t keys[] = {0, 0, 1, 0, 2, 2, 1, 3};
    oc_scheduler *s = NULL;
    CHECK(oc_scheduler_create(ctx, keys, 8, 1, 0, &s) == OC_OK);
    int64_t first, count, next = 0;
    while (oc_scheduler_next(s, 0, &first, &count)) {
        CHECK_EQ_I64(first, next);
        next = first + count;
    }
    CHECK_EQ_I64(next, 8);
    oc_scheduler_free(s);
    oc_context_free(ctx);
}

static void check_affinity(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    /* Groups of 2 tiles: panel 0 has 3 groups, panel 1 has 3, panel 2 has 1. */
    const int64_t keys[] = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2};
    oc_scheduler *s = NULL;
    CHECK(oc_scheduler_create(ctx, keys, 14, 2, 2, &s) == OC_OK);
    CHECK_EQ_I64(oc_scheduler_groups(s), 7);
    int64_t f, c;
    CHECK(oc_scheduler_next(s, 0, &f, &c) && f == 0 && c == 2); /* worker 0: panel 0 */
    CHECK(oc_scheduler_next(s, 1, &f, &c) && f == 2);           /* worker 1: the lowest, panel 0 too */
    CHECK(oc_scheduler_next(s, 0, &f, &c) && f == 4);           /* worker 0 stays on panel 0 */
    CHECK(oc_scheduler_next(s, 1, &f, &c) && f == 6);           /* panel 0 is taken: the lowest, panel 1 */
    CHECK(oc_scheduler_next(s, 0, &f, &c) && f == 8);           /* worker 0: the lowest */
    CHECK(oc_scheduler_next(s, 1, &f, &c) && f == 10);          /* worker 1 stays on panel 1 */
    CHECK(oc_scheduler_next(s, 1, &f, &c) && f == 12 && c == 2);
    CHECK(!oc_scheduler_next(s, 0, &f, &c));
    CHECK(!oc_scheduler_next(s, 1, &f, &c));
    oc_scheduler_free(s);

    /* Simulated: with many tiles per panel, workers rarely change panels. */
    int64_t many[8 * 64];
    for (int i = 0; i < 8 * 64; ++i) many[i] = i / 64;
    int hits[8 * 64], owner[8 * 64];
    sim_worker sw[2];
    const long speed[2] = {10000, 10000};
    simulate(many, 8 * 64, 2, speed, NULL, hits, owner, sw, -1);
    for (int t = 0; t < 8 * 64; ++t) CHECK(hits[t] == 1);
    /* 8 panels in 32 groups of 16: a worker changes panel at most once per panel it visits
     * plus once per panel the other one finished first. */
    CHECK_MSG(sw[0].switches + sw[1].switches <= 16, "switches %d + %d", sw[0].switches, sw[1].switches);
    oc_context_free(ctx);
}

/* Chosen group sizes: full groups first, then each at most a (2 x workers)-th of the tiles
 * left, down to single tiles at the end; every tile in exactly one group, in order. */
static void check_groups_shrink_at_the_end(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    enum { N = 561, W = 4 };
    int64_t keys[N] = {0}; /* one key: the groups come out in order */
    oc_scheduler *s = NULL;
    CHECK(oc_scheduler_create(ctx, keys, N, W, 0, &s) == OC_OK);
    const int64_t base = (N + 8 * W - 1) / (8 * W);
    int64_t f, c, next = 0, last = 0, groups = 0, w = 0;
    while (oc_scheduler_next(s, (int)(w++ % W), &f, &c)) {
        CHECK_EQ_I64(f, next);
        int64_t cap = (N - f) / (2 * W) < base ? (N - f) / (2 * W) : base;
        CHECK_MSG(c >= 1 && c <= (cap > 1 ? cap : 1), "group at %lld has %lld tiles (cap %lld)", (long long)f,
                  (long long)c, (long long)cap);
        if (groups == 0) CHECK_EQ_I64(c, base);
        next = f + c, last = c, ++groups;
    }
    CHECK_EQ_I64(next, N);
    CHECK_EQ_I64(last, 1);
    CHECK_EQ_I64(groups, oc_scheduler_groups(s));
    oc_scheduler_free(s);
    /* One worker: the whole order in one group, as planned. */
    CHECK(oc_scheduler_create(ctx, keys, N, 1, 0, &s) == OC_OK);
    CHECK_EQ_I64(oc_scheduler_groups(s), 1);
    oc_scheduler_free(s);
    oc_context_free(ctx);
}

static void check_abort(void)
{
    int64_t keys[30 * 31 / 2];
    int64_t n = symmetric_keys(30, keys);
    int hits[sizeof keys / sizeof keys[0]], owner[sizeof keys / sizeof keys[0]];
    sim_worker sw[3];
    const long speed[3] = {20000, 20000, 20000};
    const int fail_at[3] = {0, 7, 0};
    /* Worker 1 takes the first group (of 20 tiles) before the others start, whatever the
     * machine runs first, and fails on its seventh tile. */
    simulate(keys, n, 3, speed, fail_at, hits, owner, sw, 1);
    int64_t done = 0;
    for (int64_t t = 0; t < n; ++t) {
        CHECK(hits[t] <= 1);
        done += hits[t];
    }
    /* The job stopped early: the others finish only the groups they already held. */
    CHECK_EQ_I64(sw[1].tiles, 6);
    CHECK_MSG(done < n, "%lld of %lld tiles done after an abort", (long long)done, (long long)n);

    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    oc_scheduler *s = NULL;
    CHECK(oc_scheduler_create(ctx, keys, n, 2, 0, &s) == OC_OK);
    CHECK_EQ_I64(oc_scheduler_aborted(s), -1);
    oc_scheduler_abort(s, 1);
    oc_scheduler_abort(s, 0); /* the first abort is kept */
    CHECK_EQ_I64(oc_scheduler_aborted(s), 1);
    int64_t f, c;
    CHECK(!oc_scheduler_next(s, 0, &f, &c));
    oc_scheduler_free(s);
    oc_scheduler_free(NULL);
    oc_context_free(ctx);
}

int main(void)
{
    check_exactly_once_and_balance();
    check_single_worker_keeps_order();
    check_affinity();
    check_groups_shrink_at_the_end();
    check_abort();
    return oc_test_finish();
}
