/*
 * scheduler.c - the tile group queue (scheduler.h).
 *
 * Layout: groups[g] = {first tile, count, key} in order; claimed[g] marks a group handed
 * out. Two cursors make pulls cheap: `lowest` is the first group that may be unclaimed (every
 * group before it is claimed); per key, key_next[k] is the position in key_groups (the groups
 * of each key in order, CSR by key rank) of the first of that key's groups that may be
 * unclaimed. A pull advances the cursors past claimed groups, so all pulls of a job cost
 * O(groups) in all.
 */
#include "engine/scheduler.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef struct sched_group {
    int64_t first, count;
    int64_t key_rank; /* index of its key among the distinct keys, in order of first use */
} sched_group;

struct oc_scheduler {
    pthread_mutex_t lock;
    int workers;
    int64_t ngroups, nkeys;
    sched_group *groups;
    unsigned char *claimed;
    int64_t lowest;
    int64_t *key_start; /* nkeys + 1: key_groups[key_start[k] .. key_start[k + 1]) are key k's groups */
    int64_t *key_groups;
    int64_t *key_next; /* per key: its first group in key_groups that may be unclaimed */
    int64_t *last_key; /* per worker: key rank of its last group, -1 none */
    int64_t *done;     /* per worker: tiles completed */
    int aborted_by;    /* -1 */
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Ranks of the keys: each tile's key replaced by the index of its value among the sorted
 * distinct keys. */
static oc_status rank_keys(oc_context *ctx, const int64_t *keys, int64_t n, int64_t *ranks, int64_t *nkeys)
{
    int64_t *sorted = malloc((size_t)(n ? n : 1) * sizeof *sorted);
    if (!sorted) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the scheduler's key table");
    memcpy(sorted, keys, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_i64);
    int64_t u = 0;
    for (int64_t i = 0; i < n; ++i)
        if (u == 0 || sorted[u - 1] != sorted[i]) sorted[u++] = sorted[i];
    for (int64_t t = 0; t < n; ++t) {
        int64_t lo = 0, hi = u - 1;
        while (lo < hi) {
            int64_t mid = (lo + hi) / 2;
            if (sorted[mid] < keys[t]) lo = mid + 1;
            else hi = mid;
        }
        ranks[t] = lo;
    }
    free(sorted);
    *nkeys = u;
    return OC_OK;
}

/* Groups of at most max_group tiles; `tail` > 0: also at most 1/tail of the tiles left from
 * the group's first on (at least one), so that the last groups shrink to single tiles. */
static oc_status build_groups(oc_context *ctx, oc_scheduler *s, const int64_t *ranks, int64_t n, int64_t max_group,
                              int64_t tail)
{
    s->groups = malloc((size_t)(n ? n : 1) * sizeof *s->groups);
    if (!s->groups) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the scheduler's groups");
    for (int64_t t = 0; t < n;) {
        int64_t end = t + 1, most = max_group;
        if (tail > 0 && (n - t) / tail < most) most = (n - t) / tail > 1 ? (n - t) / tail : 1;
        while (end < n && end - t < most && ranks[end] == ranks[t]) ++end;
        s->groups[s->ngroups++] = (sched_group){t, end - t, ranks[t]};
        t = end;
    }
    s->claimed = calloc((size_t)(s->ngroups ? s->ngroups : 1), 1);
    s->key_start = calloc((size_t)s->nkeys + 1, sizeof *s->key_start);
    s->key_groups = malloc((size_t)(s->ngroups ? s->ngroups : 1) * sizeof *s->key_groups);
    s->key_next = calloc((size_t)(s->nkeys ? s->nkeys : 1), sizeof *s->key_next);
    if (!s->claimed || !s->key_start || !s->key_groups || !s->key_next)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the scheduler's key index");
    for (int64_t g = 0; g < s->ngroups; ++g) s->key_start[s->groups[g].key_rank + 1]++;
    for (int64_t k = 0; k < s->nkeys; ++k) s->key_start[k + 1] += s->key_start[k];
    for (int64_t k = 0; k < s->nkeys; ++k) s->key_next[k] = s->key_start[k];
    for (int64_t g = 0; g < s->ngroups; ++g) s->key_groups[s->key_next[s->groups[g].key_rank]++] = g;
    for (int64_t k = 0; k < s->nkeys; ++k) s->key_next[k] = s->key_start[k];
    return OC_OK;
}

oc_status oc_scheduler_create(oc_context *ctx, const int64_t *keys, int64_t ntiles, int workers, int64_t max_group,
                              oc_scheduler **out)
{
    if (workers < 1 || ntiles < 0)
        return oc_fail(ctx, OC_ERR_INTERNAL, "scheduler: %d workers over %lld tiles", workers, (long long)ntiles);
    oc_scheduler *s = calloc(1, sizeof *s);
    int64_t *ranks = malloc((size_t)(ntiles ? ntiles : 1) * sizeof *ranks);
    oc_status st = OC_OK;
    if (!s || !ranks) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the tile scheduler");
        goto cleanup;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->workers = workers;
    s->aborted_by = -1;
    s->last_key = malloc((size_t)workers * sizeof *s->last_key);
    s->done = calloc((size_t)workers, sizeof *s->done);
    if (!s->last_key || !s->done) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the tile scheduler");
        goto cleanup;
    }
    for (int w = 0; w < workers; ++w) s->last_key[w] = -1;
    /* Several groups per worker, and the last ones shrinking to single tiles (each at most a
     * (2 x workers)-th of what is left), so that the workers finish within about a tile of
     * each other: groups of up to an eighth of a worker's share left the last tiles of
     * several devices far apart (bench/RESULTS.md). A single worker walks the order in one
     * group. */
    int64_t tail = 0;
    if (max_group <= 0) {
        max_group = workers == 1 ? (ntiles ? ntiles : 1) : (ntiles + 8LL * workers - 1) / (8LL * workers);
        tail = workers == 1 ? 0 : 2LL * workers;
    }
    if (max_group < 1) max_group = 1;
    OC_CHECK_GOTO(ctx, st, rank_keys(ctx, keys, ntiles, ranks, &s->nkeys), cleanup);
    OC_CHECK_GOTO(ctx, st, build_groups(ctx, s, ranks, ntiles, max_group, tail), cleanup);

cleanup:
    free(ranks);
    if (st != OC_OK) {
        oc_scheduler_free(s);
        return st;
    }
    *out = s;
    return OC_OK;
}

void oc_scheduler_free(oc_scheduler *s)
{
    if (!s) return;
    if (s->last_key) pthread_mutex_destroy(&s->lock);
    free(s->groups);
    free(s->claimed);
    free(s->key_start);
    free(s->key_groups);
    free(s->key_next);
    free(s->last_key);
    free(s->done);
    free(s);
}

/* The first unclaimed group of key k, or -1. */
static int64_t first_of_key(oc_scheduler *s, int64_t k)
{
    while (s->key_next[k] < s->key_start[k + 1] && s->claimed[s->key_groups[s->key_next[k]]]) s->key_next[k]++;
    return s->key_next[k] < s->key_start[k + 1] ? s->key_groups[s->key_next[k]] : -1;
}

int oc_scheduler_next(oc_scheduler *s, int worker, int64_t *first, int64_t *count)
{
    pthread_mutex_lock(&s->lock);
    int64_t g = -1;
    if (s->aborted_by < 0) {
        /* A single worker takes the order as planned; with several, a worker stays on the
         * panel it holds while that panel has groups left. */
        if (s->workers > 1 && s->last_key[worker] >= 0) g = first_of_key(s, s->last_key[worker]);
        if (g < 0) {
            while (s->lowest < s->ngroups && s->claimed[s->lowest]) s->lowest++;
            if (s->lowest < s->ngroups) g = s->lowest;
        }
    }
    if (g >= 0) {
        s->claimed[g] = 1;
        s->last_key[worker] = s->groups[g].key_rank;
        *first = s->groups[g].first;
        *count = s->groups[g].count;
    }
    pthread_mutex_unlock(&s->lock);
    return g >= 0;
}

void oc_scheduler_complete(oc_scheduler *s, int worker, int64_t tiles)
{
    pthread_mutex_lock(&s->lock);
    s->done[worker] += tiles;
    pthread_mutex_unlock(&s->lock);
}

void oc_scheduler_abort(oc_scheduler *s, int worker)
{
    pthread_mutex_lock(&s->lock);
    if (s->aborted_by < 0) s->aborted_by = worker;
    pthread_mutex_unlock(&s->lock);
}

int oc_scheduler_aborted(oc_scheduler *s)
{
    pthread_mutex_lock(&s->lock);
    int w = s->aborted_by;
    pthread_mutex_unlock(&s->lock);
    return w;
}

int64_t oc_scheduler_done(oc_scheduler *s, int worker)
{
    pthread_mutex_lock(&s->lock);
    int64_t n = 0;
    for (int w = 0; w < s->workers; ++w)
        if (worker < 0 || w == worker) n += s->done[w];
    pthread_mutex_unlock(&s->lock);
    return n;
}

int64_t oc_scheduler_groups(const oc_scheduler *s) { return s->ngroups; }
