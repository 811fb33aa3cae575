/*
 * test_pinned_cache.c - the pinned staging a context keeps between jobs, without a GPU.
 *
 * The cache takes its pin and unpin calls as callbacks, so malloc and free stand in for
 * cudaHostAlloc and cudaFreeHost and every rule of mem/pinned_cache.c is checked here: the
 * fit, reuse of an exact size, unpinning everything idle before pinning anew, the bound on
 * idle blocks, release leaving the blocks a job holds, a failed pin; and the ownership: a
 * context frees its cache with itself, and oc_release_cached_memory reaches every live one.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "outcore.h"
#include "core/context.h"
#include "mem/pinned_cache.h"

static int64_t live; /* bytes pinned and not unpinned */
static int pins, unpins;
static int fail_next; /* the next pin fails */

static int fake_pin(void *user, size_t bytes, void **out, char *why, size_t why_size)
{
    (void)user;
    if (fail_next) {
        fail_next = 0;
        snprintf(why, why_size, "no pinned memory left");
        return 1;
    }
    *out = malloc(bytes);
    if (!*out) return 1;
    live += (int64_t)bytes;
    pins++;
    return 0;
}

static void fake_unpin(void *user, void *ptr, size_t bytes)
{
    (void)user;
    free(ptr);
    live -= (int64_t)bytes;
    unpins++;
}

static const oc_pinned_ops ops = {NULL, fake_pin, fake_unpin};

static void counts_reset(void) { pins = unpins = 0; }

/* A job's two rings come back as they went; the next job of the same sizes pins nothing. */
static void test_reuse(void)
{
    oc_pinned_cache *c = oc_pinned_cache_create(&ops);
    CHECK(c != NULL);
    char why[64];
    void *up, *down, *up2, *down2;
    CHECK_EQ_I64(oc_pinned_cache_fit(c, 1000, 5000), 1000); /* nothing idle: the need */
    CHECK(oc_pinned_cache_take(c, 1000, &up, why, sizeof why) == 0);
    CHECK(oc_pinned_cache_take(c, 3000, &down, why, sizeof why) == 0);
    CHECK_EQ_I64(pins, 2);
    CHECK_EQ_I64(oc_pinned_cache_idle_bytes(c), 0);
    oc_pinned_cache_give(c, up, 1000);
    oc_pinned_cache_give(c, down, 3000);
    CHECK_EQ_I64(oc_pinned_cache_idle_bytes(c), 4000);
    CHECK_EQ_I64(live, 4000); /* idle blocks stay pinned */

    counts_reset();
    CHECK(oc_pinned_cache_take(c, 1000, &up2, why, sizeof why) == 0);
    CHECK(oc_pinned_cache_take(c, 3000, &down2, why, sizeof why) == 0);
    CHECK(up2 == up && down2 == down);
    CHECK_EQ_I64(pins, 0);
    CHECK_EQ_I64(oc_pinned_cache_idle_bytes(c), 0);
    oc_pinned_cache_give(c, up2, 1000);
    oc_pinned_cache_give(c, down2, 3000);
    oc_pinned_cache_free(c);
    CHECK_EQ_I64(live, 0);
}

/* fit: the smallest idle block in [need, limit], else the need itself. */
static void test_fit(void)
{
    oc_pinned_cache *c = oc_pinned_cache_create(&ops);
    char why[64];
    size_t sizes[3] = {2000, 8000, 4000};
    void *p[3];
    for (int i = 0; i < 3; ++i) CHECK(oc_pinned_cache_take(c, sizes[i], &p[i], why, sizeof why) == 0);
    for (int i = 0; i < 3; ++i) oc_pinned_cache_give(c, p[i], sizes[i]);
    CHECK_EQ_I64(oc_pinned_cache_fit(c, 1000, 100000), 2000);
    CHECK_EQ_I64(oc_pinned_cache_fit(c, 2001, 100000), 4000);
    CHECK_EQ_I64(oc_pinned_cache_fit(c, 2001, 3999), 2001);   /* 4000 passes the limit */
    CHECK_EQ_I64(oc_pinned_cache_fit(c, 9000, 100000), 9000); /* none covers the need */
    CHECK_EQ_I64(oc_pinned_cache_fit(c, 4000, 4000), 4000);
    oc_pinned_cache_free(c);
    CHECK_EQ_I64(live, 0);
}

/* A size no idle block has unpins every idle block first: idle staging never sits beside
 * staging pinned for a job that could not use it. */
static void test_miss_unpins_idle(void)
{
    oc_pinned_cache *c = oc_pinned_cache_create(&ops);
    char why[64];
    void *a, *b, *held, *d;
    CHECK(oc_pinned_cache_take(c, 1000, &a, why, sizeof why) == 0);
    CHECK(oc_pinned_cache_take(c, 2000, &b, why, sizeof why) == 0);
    CHECK(oc_pinned_cache_take(c, 500, &held, why, sizeof why) == 0); /* a running job's */
    oc_pinned_cache_give(c, a, 1000);
    oc_pinned_cache_give(c, b, 2000);
    counts_reset();
    CHECK(oc_pinned_cache_take(c, 1500, &d, why, sizeof why) == 0);
    CHECK_EQ_I64(unpins, 2);
    CHECK_EQ_I64(pins, 1);
    CHECK_EQ_I64(oc_pinned_cache_idle_bytes(c), 0);
    CHECK_EQ_I64(live, 1500 + 500);
    oc_pinned_cache_give(c, d, 1500);
    oc_pinned_cache_give(c, held, 500);
    oc_pinned_cache_free(c);
    CHECK_EQ_I64(live, 0);
}

/* At most OC_PINNED_CACHE_KEEP idle blocks: the oldest makes room. */
static void test_keep_bound(void)
{
    oc_pinned_cache *c = oc_pinned_cache_create(&ops);
    char why[64];
    enum { N = OC_PINNED_CACHE_KEEP + 2 };
    void *p[N];
    for (int i = 0; i < N; ++i) CHECK(oc_pinned_cache_take(c, (size_t)(100 * (i + 1)), &p[i], why, sizeof why) == 0);
    counts_reset();
    int64_t kept = 0;
    for (int i = 0; i < N; ++i) {
        oc_pinned_cache_give(c, p[i], (size_t)(100 * (i + 1)));
        if (i >= N - OC_PINNED_CACHE_KEEP) kept += 100 * (i + 1);
    }
    CHECK_EQ_I64(unpins, N - OC_PINNED_CACHE_KEEP);
    CHECK_EQ_I64(oc_pinned_cache_idle_bytes(c), kept); /* the newest ones */
    CHECK_EQ_I64(live, kept);
    /* The oldest kept block (the smallest) is still there to be taken. */
    size_t oldest = (size_t)(100 * (N - OC_PINNED_CACHE_KEEP + 1));
    CHECK_EQ_I64(oc_pinned_cache_fit(c, 1, 100000), oldest);
    oc_pinned_cache_free(c);
    CHECK_EQ_I64(live, 0);
}

/* release unpins what is idle and leaves what a job holds; a failed pin reports its reason. */
static void test_release_and_failure(void)
{
    oc_pinned_cache *c = oc_pinned_cache_create(&ops);
    char why[64] = "";
    void *a, *held, *x = NULL;
    CHECK(oc_pinned_cache_take(c, 1000, &a, why, sizeof why) == 0);
    CHECK(oc_pinned_cache_take(c, 700, &held, why, sizeof why) == 0);
    oc_pinned_cache_give(c, a, 1000);
    oc_pinned_cache_release(c);
    CHECK_EQ_I64(oc_pinned_cache_idle_bytes(c), 0);
    CHECK_EQ_I64(live, 700);
    memset(held, 1, 700); /* still the job's to use */
    fail_next = 1;
    CHECK(oc_pinned_cache_take(c, 4000, &x, why, sizeof why) != 0);
    CHECK_MSG(strcmp(why, "no pinned memory left") == 0, "why: %s", why);
    oc_pinned_cache_give(c, held, 700);
    CHECK_EQ_I64(oc_pinned_cache_idle_bytes(c), 700);
    oc_pinned_cache_free(c);
    CHECK_EQ_I64(live, 0);
}

static int freed_caches;

static void count_free(struct oc_pinned_cache *cache)
{
    freed_caches++;
    oc_pinned_cache_free(cache);
}

/* A cache given to a context with one idle block of `bytes`. */
static void adopt_with_idle(oc_context *ctx, size_t bytes)
{
    oc_pinned_cache *c = oc_pinned_cache_create(&ops);
    char why[64];
    void *p = NULL;
    const int taken = c && oc_pinned_cache_take(c, bytes, &p, why, sizeof why) == 0;
    CHECK(taken);
    if (taken) oc_pinned_cache_give(c, p, bytes);
    if (c) oc_context_adopt_pinned_cache(ctx, c, count_free);
}

/* The context owns its cache: the public calls release it, oc_context_free frees it, and
 * oc_release_cached_memory reaches every live context (and no freed one). */
static void test_context_owns_cache(void)
{
    oc_context *a = NULL, *b = NULL, *c = NULL;
    CHECK(oc_context_create(&a) == OC_OK && oc_context_create(&b) == OC_OK && oc_context_create(&c) == OC_OK);
    CHECK_EQ_I64(oc_context_cached_memory_bytes(a), 0);
    oc_context_release_cached_memory(a); /* no cache yet: nothing to do */
    oc_context_release_cached_memory(NULL);
    adopt_with_idle(a, 1000);
    adopt_with_idle(b, 2000);
    adopt_with_idle(c, 4000);
    CHECK_EQ_I64(oc_context_cached_memory_bytes(a), 1000);
    CHECK_EQ_I64(oc_context_cached_memory_bytes(b), 2000);

    oc_context_release_cached_memory(a);
    CHECK_EQ_I64(oc_context_cached_memory_bytes(a), 0);
    CHECK_EQ_I64(oc_context_cached_memory_bytes(b), 2000);
    CHECK_EQ_I64(live, 6000);

    freed_caches = 0;
    oc_context_free(b); /* frees its cache and its idle block */
    CHECK_EQ_I64(freed_caches, 1);
    CHECK_EQ_I64(live, 4000);
    oc_release_cached_memory();
    CHECK_EQ_I64(oc_context_cached_memory_bytes(c), 0);
    CHECK_EQ_I64(live, 0);
    oc_context_free(a);
    oc_context_free(c);
    CHECK_EQ_I64(freed_caches, 3);
    oc_release_cached_memory(); /* no live context left with a cache */
}

int main(void)
{
    test_reuse();
    test_fit();
    test_miss_unpins_idle();
    test_keep_bound();
    test_release_and_failure();
    test_context_owns_cache();
    return oc_test_finish();
}
