/*
 * test_engine.c - the engine's parts that need no GPU: the worker pool (posted tasks and
 * splits), the pinned staging ring (acquire order, waiting for releases and for the device
 * callback, failures), the engine plan (budgets, staging, threads, order, messages), and
 * when a fused top-k tile's buckets can overflow (the CUDA pipeline launches the dense
 * fallback only then).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"
#include "malloc_ops.h"
#include "outcore.h"
#include "core/context.h"
#include "core/threads.h"
#include "core/workers.h"
#include "engine/engine_plan.h"
#include "gram/cuda/gram_tile.h"
#include "mem/pool.h"
#include "mem/staging.h"

/* ---------------------------------------------------------------- worker pool */
typedef struct counter {
    atomic_int hits;
    atomic_int order_ok;
    atomic_int last;
} counter;

static void bump(void *arg) { atomic_fetch_add(&((counter *)arg)->hits, 1); }

typedef struct split_check {
    atomic_int seen[64];
    atomic_int parts_mismatch;
    int parts;
} split_check;

static void mark_part(void *arg, int part, int parts)
{
    split_check *s = arg;
    if (parts != s->parts) atomic_fetch_add(&s->parts_mismatch, 1);
    atomic_fetch_add(&s->seen[part], 1);
}

/* A part that stays a while and records how many parts ran at once. */
typedef struct overlap_check {
    split_check marks;
    atomic_int running, most;
} overlap_check;

static void overlap_part(void *arg, int part, int parts)
{
    overlap_check *o = arg;
    int now = atomic_fetch_add(&o->running, 1) + 1;
    for (int most = atomic_load(&o->most); now > most && !atomic_compare_exchange_weak(&o->most, &most, now);) {}
    usleep(2000);
    mark_part(&o->marks, part, parts);
    atomic_fetch_sub(&o->running, 1);
}

/* A posted task that holds its worker until released: splits must not wait behind it. */
typedef struct blocker {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open, started, finished;
} blocker;

static void block_until_open(void *arg)
{
    blocker *b = arg;
    pthread_mutex_lock(&b->lock);
    b->started++;
    pthread_cond_broadcast(&b->cond);
    while (!b->open) pthread_cond_wait(&b->cond, &b->lock);
    b->finished++;
    pthread_cond_broadcast(&b->cond);
    pthread_mutex_unlock(&b->lock);
}

static void test_workers(oc_context *ctx)
{
    oc_workers *w = NULL;
    CHECK(oc_context_workers(ctx, 3, &w) == OC_OK);
    CHECK_EQ_I64(oc_workers_count(w), 3);
    oc_workers *again = NULL;
    CHECK(oc_context_workers(ctx, 5, &again) == OC_OK);
    CHECK(again == w);
    CHECK_EQ_I64(oc_workers_count(w), 5);

    /* Splits: every part exactly once, for part counts below, at and above the workers. */
    for (int parts = 1; parts <= 40; parts += 3) {
        split_check s = {.parts = parts};
        oc_workers_split(w, parts, mark_part, &s);
        int ok = atomic_load(&s.parts_mismatch) == 0;
        for (int i = 0; i < parts; ++i) ok &= atomic_load(&s.seen[i]) == 1;
        CHECK_MSG(ok, "split into %d parts: a part ran twice, never, or saw another count", parts);
    }

    /* A cap on the parts at once: a job asked for fewer threads than the pool has keeps to
     * them, and every part still runs once. */
    for (int cap = 1; cap <= 3; ++cap) {
        overlap_check o = {.marks = {.parts = 24}};
        oc_workers_split_max(w, 24, cap, overlap_part, &o);
        int ok = atomic_load(&o.marks.parts_mismatch) == 0;
        for (int i = 0; i < 24; ++i) ok &= atomic_load(&o.marks.seen[i]) == 1;
        CHECK_MSG(ok, "split of 24 parts at most %d at once: a part ran twice or never", cap);
        CHECK_MSG(atomic_load(&o.most) <= cap, "split capped at %d ran %d parts at once", cap, atomic_load(&o.most));
    }

    /* Every worker blocked by a posted task: a split still completes, on the caller. */
    blocker b = {.open = 0};
    pthread_mutex_init(&b.lock, NULL);
    pthread_cond_init(&b.cond, NULL);
    for (int i = 0; i < 5; ++i) CHECK(oc_workers_post(ctx, w, block_until_open, &b) == OC_OK);
    pthread_mutex_lock(&b.lock);
    while (b.started < 5) pthread_cond_wait(&b.cond, &b.lock);
    pthread_mutex_unlock(&b.lock);
    split_check s = {.parts = 8};
    oc_workers_split(w, 8, mark_part, &s);
    int ok = 1;
    for (int i = 0; i < 8; ++i) ok &= atomic_load(&s.seen[i]) == 1;
    CHECK_MSG(ok, "a split with every worker busy did not run each part once");

    /* Posted tasks queue past the queue's first capacity while the workers are held. */
    counter c;
    atomic_init(&c.hits, 0);
    for (int i = 0; i < 1000; ++i) CHECK(oc_workers_post(ctx, w, bump, &c) == OC_OK);
    pthread_mutex_lock(&b.lock);
    b.open = 1;
    pthread_cond_broadcast(&b.cond);
    pthread_mutex_unlock(&b.lock);
    for (int spin = 0; spin < 20000 && atomic_load(&c.hits) < 1000; ++spin) usleep(100);
    CHECK_EQ_I64(atomic_load(&c.hits), 1000);
    /* Every blocker has left before the next part closes the gate again. */
    pthread_mutex_lock(&b.lock);
    while (b.finished < 5) pthread_cond_wait(&b.cond, &b.lock);
    pthread_mutex_unlock(&b.lock);

    /* A task limit keeps workers free: 2 of 5 blocking tasks run, a split uses the others. */
    b.open = 0;
    b.started = b.finished = 0;
    oc_workers_limit_tasks(w, 2);
    for (int i = 0; i < 5; ++i) CHECK(oc_workers_post(ctx, w, block_until_open, &b) == OC_OK);
    pthread_mutex_lock(&b.lock);
    while (b.started < 2) pthread_cond_wait(&b.cond, &b.lock);
    pthread_mutex_unlock(&b.lock);
    usleep(20000);
    pthread_mutex_lock(&b.lock);
    CHECK_EQ_I64(b.started, 2);
    pthread_mutex_unlock(&b.lock);
    split_check s2 = {.parts = 6};
    oc_workers_split(w, 6, mark_part, &s2);
    ok = 1;
    for (int i = 0; i < 6; ++i) ok &= atomic_load(&s2.seen[i]) == 1;
    CHECK(ok);
    pthread_mutex_lock(&b.lock);
    b.open = 1;
    pthread_cond_broadcast(&b.cond);
    while (b.finished < 5) pthread_cond_wait(&b.cond, &b.lock);
    pthread_mutex_unlock(&b.lock);
    oc_workers_limit_tasks(w, 0);

    pthread_cond_destroy(&b.cond);
    pthread_mutex_destroy(&b.lock);
    /* The pool goes with the context (checked under ASan: no thread or block leaks). */
}

/* ---------------------------------------------------------------- staging ring */

typedef struct device_log {
    int waits[8];
    int fail_slot;
} device_log;

static int fake_wait(void *user, int slot, char *why, size_t why_size)
{
    device_log *d = user;
    d->waits[slot]++;
    if (slot == d->fail_slot) {
        snprintf(why, why_size, "event of slot %d failed", slot);
        return 1;
    }
    return 0;
}

typedef struct releaser {
    oc_staging_ring *ring;
    int slot;
    int fail;
    double released_at; /* oc_now() just before the release */
    pid_t waiter;       /* nonzero: first wait until this thread sleeps (blocked in its acquire) */
    double blocked_at;  /* oc_now() once it was seen asleep */
} releaser;

/* Whether thread tid of this process sleeps (state S in /proc/self/task/TID/stat). */
static int asleep(pid_t tid)
{
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = '\0';
    const char *close = strrchr(text, ')');
    return close && close[1] == ' ' && close[2] == 'S';
}

static void *release_later(void *arg)
{
    releaser *r = arg;
    if (r->waiter) {
        const double give_up = oc_now() + 10;
        while (!asleep(r->waiter) && oc_now() < give_up) usleep(200);
        r->blocked_at = oc_now();
    }
    usleep(20000);
    if (r->fail) oc_staging_fail(r->ring, OC_ERR_DEVICE, "sink of slot %d failed", r->slot);
    r->released_at = oc_now();
    oc_staging_release(r->ring, r->slot);
    return NULL;
}

static void test_staging(oc_context *ctx)
{
    oc_pool *pool = NULL;
    CHECK(oc_pool_create(ctx, &ops, 0, 1 << 20, OC_GPU_MEM_GROW, 1 << 20, &pool) == OC_OK);
    CHECK_EQ_I64(oc_staging_bytes(3, 5000), 3 * 8192);

    /* Too little pinned budget: the pool's message names the ring. */
    oc_staging_ring *big = NULL;
    CHECK(oc_staging_create(ctx, pool, 4, 1 << 20, (size_t)oc_staging_bytes(4, 1 << 20), "the test ring", NULL, &big) ==
          OC_ERR_NO_MEMORY);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "the test ring"), "message: %s", oc_context_last_error(ctx));

    device_log dev = {.fail_slot = -1};
    oc_staging_ops so = {.user = &dev, .wait_reusable = fake_wait};
    oc_staging_ring *r = NULL;
    CHECK(oc_staging_create(ctx, pool, 3, 5000, (size_t)oc_staging_bytes(3, 5000) + 4096, "ring", &so, &r) == OC_OK);
    CHECK_EQ_I64(oc_staging_slots(r), 3);
    CHECK((uintptr_t)(oc_staging_slot(r, 1) - oc_staging_slot(r, 0)) == 8192);

    /* Upload pattern: acquire, release at once; slots go in turn and each acquire waits for
     * its slot's device callback. */
    int seq[6];
    for (int i = 0; i < 6; ++i) {
        CHECK(oc_staging_acquire(ctx, r, &seq[i], NULL) == OC_OK);
        memset(oc_staging_slot(r, seq[i]), i, 5000);
        oc_staging_release(r, seq[i]);
    }
    CHECK(seq[0] == 0 && seq[1] == 1 && seq[2] == 2 && seq[3] == 0 && seq[4] == 1 && seq[5] == 2);
    CHECK(dev.waits[0] == 2 && dev.waits[1] == 2 && dev.waits[2] == 2);

    /* Download pattern: all held, the next acquire blocks until another thread releases. */
    int held[3];
    for (int i = 0; i < 3; ++i) CHECK(oc_staging_acquire(ctx, r, &held[i], NULL) == OC_OK);
    pthread_t th;
    /* The releaser lets go 20 ms after it has seen this thread asleep in the acquire. */
    releaser rel = {r, held[1], 0, 0, (pid_t)syscall(SYS_gettid), 0};
    pthread_create(&th, NULL, release_later, &rel);
    int got = -1;
    double waited = 0;
    const double entered = oc_now();
    CHECK(oc_staging_acquire(ctx, r, &got, &waited) == OC_OK);
    const double returned = oc_now();
    pthread_join(th, NULL);
    CHECK_EQ_I64(got, held[1]);
    /* The wait counted is the time blocked: at least from when it was seen asleep to the
     * release (20 ms and more), at most the call. */
    CHECK(rel.released_at - rel.blocked_at >= 0.02);
    CHECK_MSG(waited >= rel.released_at - rel.blocked_at && waited <= returned - entered + 1e-4,
              "waited %.4f s; asleep %.4f s before the release; returned %.4f s after the call", waited,
              rel.released_at - rel.blocked_at, returned - entered);
    oc_staging_release(r, held[0]);
    oc_staging_release(r, held[2]);
    oc_staging_release(r, got);
    CHECK(oc_staging_drain(ctx, r) == OC_OK);

    /* A failing device callback fails the acquire and leaves the slot free. */
    int s0, s1 = -1;
    CHECK(oc_staging_acquire(ctx, r, &s0, NULL) == OC_OK);
    dev.fail_slot = (s0 + 1) % 3;
    oc_status st = oc_staging_acquire(ctx, r, &s1, NULL);
    CHECK(st == OC_ERR_DEVICE);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "event of slot"), "message: %s", oc_context_last_error(ctx));
    oc_staging_release(r, s0);
    CHECK(oc_staging_drain(ctx, r) == OC_OK);
    dev.fail_slot = -1;

    /* A holder's failure reaches the waiting acquirer and the drain, with its message. */
    for (int i = 0; i < 3; ++i) CHECK(oc_staging_acquire(ctx, r, &held[i], NULL) == OC_OK);
    rel = (releaser){r, held[0], 1, 0, 0, 0};
    pthread_create(&th, NULL, release_later, &rel);
    st = oc_staging_acquire(ctx, r, &got, NULL);
    pthread_join(th, NULL);
    CHECK(st == OC_ERR_DEVICE);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "sink of slot"), "message: %s", oc_context_last_error(ctx));
    CHECK(oc_staging_failed(r));
    oc_staging_release(r, held[1]);
    oc_staging_release(r, held[2]);
    CHECK(oc_staging_drain(ctx, r) == OC_ERR_DEVICE);

    oc_staging_free(r);
    oc_pool_destroy(pool);
    CHECK_EQ_I64(live, 0);
}

/* ---------------------------------------------------------------- engine plan */
static oc_engine_plan_input plan_input(int64_t n, int dense, int64_t gpu_mem, int cores)
{
    oc_engine_plan_input in = {.tiles = {.n = n,
                                         .p = n,
                                         .row_bytes = 25000 + 4,
                                         .elem_size = 4,
                                         .symmetric = 1,
                                         .keep_output = dense,
                                         .mirror_output = dense,
                                         .granularity = 256,
                                         .cta_rows = 128,
                                         .cta_cols = 256,
                                         .concurrent_ctas = 132,
                                         .cta_seconds = 1e-4,
                                         .overlap_tiles = 1},
                               .device_total = 80LL << 30,
                               .device_free = 79LL << 30,
                               .gpu_mem_bytes = gpu_mem,
                               .gpu_mem_fraction = 0.9,
                               .host_budget = 0,
                               .cores = cores,
                               .row_bytes = 25000,
                               .elem_size = 4,
                               .dense_output = dense,
                               .device_name = "cuda:0 (test)"};
    return in;
}

static void test_plan(oc_context *ctx)
{
    oc_engine_plan plan;
    /* Dense on 16 cores: 14 sinks, 8 copy threads, one pool of 21; 18 download slots. */
    oc_engine_plan_input in = plan_input(100000, 1, 2LL << 30, 16);
    CHECK(oc_engine_plan_make(ctx, &in, &plan) == OC_OK);
    CHECK_EQ_I64(plan.device_budget, 2LL << 30);
    CHECK(plan.device_budget_given);
    CHECK(plan.tiles.device_bytes <= plan.device_budget);
    CHECK_EQ_I64(plan.sinks, 14);
    CHECK_EQ_I64(plan.copy_threads, 8);
    CHECK_EQ_I64(plan.workers, 21);
    CHECK_EQ_I64(plan.d2h_slots, 18);
    CHECK_EQ_I64(plan.h2d_slots, 2);
    CHECK(plan.h2d_slot_bytes % in.row_bytes == 0 && plan.h2d_slot_bytes <= (8 << 20));
    CHECK(plan.d2h_slot_bytes % (plan.tiles.tile * 4) == 0 && plan.d2h_slot_bytes <= (4 << 20));
    CHECK(plan.pinned_bytes <= plan.host_budget);
    CHECK(!strcmp(plan.bound, "kernels") || !strcmp(plan.bound, "uploads") || !strcmp(plan.bound, "output"));
    CHECK(plan.download_seconds > 0);

    /* The order covers each upper tile exactly once, seeded or not. */
    for (int seeded = 0; seeded <= 1; ++seeded) {
        in = plan_input(3000, 0, 0, 4);
        CHECK(oc_engine_plan_make(ctx, &in, &plan) == OC_OK);
        int64_t *order = oc_engine_plan_order(&plan, 1, seeded);
        int64_t P = plan.tiles.panels_a, seen_ok = 1;
        char *seen = calloc((size_t)(P * P), 1);
        for (int64_t t = 0; order && t < plan.tiles.ntiles; ++t) {
            int64_t I = order[2 * t], J = order[2 * t + 1];
            if (I > J || J >= P || seen[I * P + J]++) seen_ok = 0;
        }
        CHECK(order && seen_ok && plan.tiles.ntiles == P * (P + 1) / 2);
        free(seen);
        free(order);
    }

    /* Without dense output: no sinks, copy threads as many as sinks would be. */
    in = plan_input(50000, 0, 0, 8);
    CHECK(oc_engine_plan_make(ctx, &in, &plan) == OC_OK);
    CHECK(plan.sinks == 0 && plan.d2h_slots == 0 && plan.copy_threads == 6 && plan.workers == 5);
    CHECK(!plan.device_budget_given && plan.device_budget <= (79LL << 30) - OC_ENGINE_HEADROOM);

    /* Forced thread counts, and out-of-range ones named by their variable. */
    in.force_copy_threads = 3;
    in.force_sinks = 2;
    in.dense_output = 1;
    CHECK(oc_engine_plan_make(ctx, &in, &plan) == OC_OK);
    CHECK(plan.copy_threads == 3 && plan.sinks == 2 && plan.workers == 4);
    in.force_sinks = 1000;
    CHECK(oc_engine_plan_make(ctx, &in, &plan) == OC_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "OUTCORE_CUDA_SINKS"), "message: %s", oc_context_last_error(ctx));
    in.force_sinks = -1; /* set, but not a whole number from 1 up ("0", "x", "-3") */
    CHECK(oc_engine_plan_make(ctx, &in, &plan) == OC_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "OUTCORE_CUDA_SINKS"), "message: %s", oc_context_last_error(ctx));
    in.force_sinks = 0, in.force_copy_threads = -1;
    CHECK(oc_engine_plan_make(ctx, &in, &plan) == OC_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "OUTCORE_CUDA_COPY_THREADS"), "message: %s",
              oc_context_last_error(ctx));

    /* Budgets: more than the device, and too little for the smallest plan. */
    in = plan_input(50000, 1, 100LL << 30, 8);
    CHECK(oc_engine_plan_make(ctx, &in, &plan) == OC_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "exceeds what cuda:0 (test) can give"), "message: %s",
              oc_context_last_error(ctx));
    in = plan_input(50000, 1, 1 << 20, 8);
    CHECK(oc_engine_plan_make(ctx, &in, &plan) == OC_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "the smallest plan") && strstr(oc_context_last_error(ctx), "needs"),
              "message: %s", oc_context_last_error(ctx));
    in = plan_input(50000, 1, 0, 8);
    in.device_free = 100 << 20;
    CHECK(oc_engine_plan_make(ctx, &in, &plan) == OC_ERR_DEVICE_NO_MEMORY);

    /* A host budget too small for one row per slot. */
    in = plan_input(50000, 1, 1LL << 30, 8);
    in.host_budget = 100000;
    CHECK(oc_engine_plan_make(ctx, &in, &plan) == OC_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "--host-mem"), "message: %s", oc_context_last_error(ctx));

    /* Rendering: text names every part; JSON carries the figures. */
    in = plan_input(20000, 1, 1LL << 30, 8);
    CHECK(oc_engine_plan_make(ctx, &in, &plan) == OC_OK);
    char *text = NULL;
    CHECK(oc_engine_plan_render(ctx, &plan, "cuda:0 test", 0, &text) == OC_OK);
    CHECK_MSG(text && strstr(text, "tiles") && strstr(text, "device") && strstr(text, "host") &&
                  strstr(text, "threads") && strstr(text, "bound by"),
              "text: %s", text ? text : "(null)");
    free(text);
    CHECK(oc_engine_plan_render(ctx, &plan, "cuda:0 test", 1, &text) == OC_OK);
    char want[64];
    snprintf(want, sizeof want, "\"tile\": %lld,", (long long)plan.tiles.tile);
    CHECK_MSG(text && text[0] == '{' && strstr(text, want) && strstr(text, "\"sinks\": 6"), "json: %s",
              text ? text : "");
    free(text);
}

/* ---------------------------------------------------------------- fused top-k buckets */
static void test_bucket_bound(void)
{
    /* A·Aᵀ tile of 6144: 24 CTA blocks along a row, 48 down a column; k = 10 adds at most
     * 480 keys to a column's bucket. */
    CHECK(!oc_gram_topk_may_overflow(6144, 6144, 1, 10, 512));
    CHECK(!oc_gram_topk_may_overflow(6144, 6144, 1, 10, 480));
    CHECK(oc_gram_topk_may_overflow(6144, 6144, 1, 10, 479));
    CHECK(oc_gram_topk_may_overflow(6144, 6144, 1, 11, 512));
    /* A·Bᵀ: only the rows' buckets, 24 blocks along a row. */
    CHECK(!oc_gram_topk_may_overflow(6144, 6144, 0, 21, 512));
    CHECK(oc_gram_topk_may_overflow(6144, 6144, 0, 22, 512));
    /* Edge tiles: a partial block counts as a block. */
    CHECK(!oc_gram_topk_may_overflow(129, 257, 1, 256, 512));
    CHECK(oc_gram_topk_may_overflow(257, 257, 1, 171, 512));
    /* The test switch of one-entry buckets: any tile with k >= 1 may overflow... */
    CHECK(oc_gram_topk_may_overflow(200, 300, 0, 1, 1));
    /* ...except one block's line with k = 1. */
    CHECK(!oc_gram_topk_may_overflow(100, 200, 1, 1, 1));
}

int main(void)
{
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    test_workers(ctx);
    test_staging(ctx);
    test_plan(ctx);
    test_bucket_bound();
    oc_context_free(ctx);
    return oc_test_finish();
}
