/*
 * pool.c - budgeted device buffers and pinned host staging for one job.
 *
 * Layout
 *
 *   GROW mode (default): each request is one allocation from the backend, made only while
 *   current + request <= budget.
 *
 *       budget |<------------------------------------------------------->|
 *              [ panel 0 ][ panel 1 ][ out slot 0 ][ out slot 1 ]  (free)
 *               each its own dev_alloc; the untaken rest stays with the card
 *
 *   RESERVE mode: the whole budget is taken at creation as one arena and requests are cut
 *   from it, first fit, in OC_POOL_ALIGN units; a freed segment merges with free neighbours.
 *
 *       arena  [used|used|  free  |used|        free              ]
 *               segs[] sorted by offset, covering the arena exactly
 *
 * Invariants: current <= budget at every moment; current is the sum of the sizes handed
 * out; in RESERVE mode the segments tile the arena with no gap and no two free segments are
 * adjacent; every buffer is freed by oc_pool_destroy if its owner did not free it.
 *
 * Reuse rule: the pool never hands one byte to two owners. Buffers are taken once per job
 * (panel slots, output slots, staging slots) and reused by their owner from tile to tile;
 * the owner orders each reuse in stream order with an event recorded after the last use
 * (see src/gram/cuda/gram_cuda.c). Nothing is allocated per tile, so the allocator never sits
 * on the critical path and a job that starts will not run out of memory half way.
 *
 * Why callbacks rather than CUDA calls: src/mem must not depend on src/cuda, and the CPU-only
 * build compiles this file too. With the allocation calls passed in, the accounting and the
 * fault injection are the same code on every build and are tested without a GPU.
 */
#include "mem/pool.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/error.h"

typedef struct pool_seg {
    void *ptr;
    size_t bytes;
    int used;
} pool_seg;

typedef struct seg_list {
    pool_seg *v;
    size_t n, cap;
} seg_list;

struct oc_pool {
    oc_mem_ops ops;
    int device;
    oc_gpu_mem_mode mode;
    void *arena;   /* RESERVE: the one device allocation */
    seg_list dev;  /* RESERVE: arena segments by offset; GROW: one entry per buffer */
    seg_list host; /* pinned buffers */
    oc_pool_stats st;
    long fault_dev_at; /* fail the Nth device request (0 = never) */
    long fault_host_at;
    long dev_requests;
    long host_requests;
};

#define MIB(x) ((double)(x) / (1024.0 * 1024.0))

static size_t align_up(size_t x) { return (x + OC_POOL_ALIGN - 1) / OC_POOL_ALIGN * OC_POOL_ALIGN; }

static int seg_insert(seg_list *l, size_t at, pool_seg s)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        pool_seg *v = realloc(l->v, cap * sizeof *v);
        if (!v) return 0;
        l->v = v;
        l->cap = cap;
    }
    memmove(l->v + at + 1, l->v + at, (l->n - at) * sizeof *l->v);
    l->v[at] = s;
    l->n++;
    return 1;
}

static void seg_remove(seg_list *l, size_t at)
{
    memmove(l->v + at, l->v + at + 1, (l->n - at - 1) * sizeof *l->v);
    l->n--;
}

static long seg_find(const seg_list *l, const void *ptr)
{
    for (size_t i = 0; i < l->n; ++i)
        if (l->v[i].ptr == ptr && l->v[i].used) return (long)i;
    return -1;
}

/* A request the pool cannot meet: past the budget (why NULL, or the reserved arena's
 * fragments), or refused by the device below the budget for want of memory (short: held by
 * other processes that the budget counted on, so a larger budget cannot help and a smaller
 * one can). */
static oc_status no_room(oc_context *ctx, const oc_pool *p, size_t bytes, const char *what, const char *why, int short_)
{
    size_t held = 0;
    for (size_t i = 0; i < p->dev.n; ++i) held += p->dev.v[i].used != 0;
    return oc_fail(ctx, OC_ERR_DEVICE_NO_MEMORY,
                   "cuda:%d: %s needs %.1f MiB but the device memory budget is %.1f MiB with %.1f MiB in use in "
                   "%zu buffers%s%s; %s",
                   p->device, what, MIB(bytes), MIB(p->st.budget), MIB(p->st.current), held, why ? ": " : "",
                   why ? why : "",
                   short_ ? "the device has less memory free than the budget: lower --gpu-mem, or free memory on "
                            "the device"
                          : "raise --gpu-mem or use smaller tiles");
}

oc_status oc_pool_create(oc_context *ctx, const oc_mem_ops *ops, int device, int64_t budget, oc_gpu_mem_mode mode,
                         int64_t host_budget, oc_pool **out)
{
    if (budget <= 0 || host_budget <= 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "cuda:%d: the memory budgets must be positive (device %lld, host %lld)", device,
                       (long long)budget, (long long)host_budget);
    /* The fault injection variables: a whole number >= 0, else the pool is refused. */
    static const char *const fault_vars[2] = {"OUTCORE_FAULT_DEVICE_ALLOC", "OUTCORE_FAULT_PINNED_ALLOC"};
    int64_t fault_at[2] = {0, 0};
    for (int i = 0; i < 2; ++i)
        if (oc_env_whole(fault_vars[i], 0, LONG_MAX, &fault_at[i]) < 0)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s=%s: expected a whole number >= 0", fault_vars[i],
                           getenv(fault_vars[i]));
    oc_pool *p = calloc(1, sizeof *p);
    if (!p) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the device pool descriptor");
    p->ops = *ops;
    p->device = device;
    p->mode = mode;
    p->st.budget = budget / OC_POOL_ALIGN * OC_POOL_ALIGN;
    p->st.host_budget = host_budget;
    p->fault_dev_at = (long)fault_at[0];
    p->fault_host_at = (long)fault_at[1];

    if (mode == OC_GPU_MEM_RESERVE) {
        char why[160] = "";
        size_t bytes = (size_t)p->st.budget;
        int fail = ++p->dev_requests == p->fault_dev_at;
        if (fail) snprintf(why, sizeof why, "injected failure of device allocation #%ld", p->dev_requests);
        if (!fail) fail = p->ops.dev_alloc(p->ops.user, bytes, &p->arena, why, sizeof why) != 0;
        if (fail) {
            free(p);
            return oc_fail(ctx, OC_ERR_DEVICE_NO_MEMORY,
                           "cuda:%d: --gpu-mem-mode reserve could not take the %.1f MiB budget: %s; lower --gpu-mem",
                           device, MIB(bytes), why);
        }
        p->st.reserved = (int64_t)bytes;
        if (!seg_insert(&p->dev, 0, (pool_seg){p->arena, bytes, 0})) {
            p->ops.dev_free(p->ops.user, p->arena, (size_t)p->st.reserved);
            free(p);
            return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the device pool's segment list");
        }
    }
    *out = p;
    return OC_OK;
}

void oc_pool_destroy(oc_pool *p)
{
    if (!p) return;
    if (p->mode == OC_GPU_MEM_RESERVE) {
        if (p->arena) p->ops.dev_free(p->ops.user, p->arena, (size_t)p->st.reserved);
    } else {
        for (size_t i = 0; i < p->dev.n; ++i) p->ops.dev_free(p->ops.user, p->dev.v[i].ptr, p->dev.v[i].bytes);
    }
    for (size_t i = 0; i < p->host.n; ++i) p->ops.host_free(p->ops.user, p->host.v[i].ptr, p->host.v[i].bytes);
    free(p->dev.v);
    free(p->host.v);
    free(p);
}

static void account(oc_pool *p, int64_t delta)
{
    p->st.current += delta;
    if (p->st.current > p->st.peak) p->st.peak = p->st.current;
}

oc_status oc_pool_alloc(oc_context *ctx, oc_pool *p, size_t bytes, const char *what, void **out)
{
    size_t need = align_up(bytes ? bytes : 1);
    if ((int64_t)need > p->st.budget - p->st.current) return no_room(ctx, p, need, what, NULL, 0);
    char why[160] = "";
    if (++p->dev_requests == p->fault_dev_at) {
        snprintf(why, sizeof why, "injected failure of device allocation #%ld", p->dev_requests);
        return no_room(ctx, p, need, what, why, 1);
    }

    if (p->mode == OC_GPU_MEM_RESERVE) {
        for (size_t i = 0; i < p->dev.n; ++i) {
            pool_seg *s = &p->dev.v[i];
            if (s->used || s->bytes < need) continue;
            if (s->bytes > need) {
                pool_seg rest = {(char *)s->ptr + need, s->bytes - need, 0};
                if (!seg_insert(&p->dev, i + 1, rest))
                    return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot grow the device pool's segment list");
                s = &p->dev.v[i]; /* seg_insert may have moved the array */
                s->bytes = need;
            }
            s->used = 1;
            account(p, (int64_t)need);
            p->st.allocations++;
            *out = s->ptr;
            return OC_OK;
        }
        return no_room(ctx, p, need, what, "the reserved arena is fragmented", 0);
    }

    void *ptr = NULL;
    const int failed = p->ops.dev_alloc(p->ops.user, need, &ptr, why, sizeof why);
    if (failed == OC_MEM_OPS_NO_MEMORY) return no_room(ctx, p, need, what, why, 1);
    if (failed) /* not for want of memory (an earlier error of the context, say): no budget helps */
        return oc_fail(ctx, OC_ERR_DEVICE, "cuda:%d: %s (%.1f MiB) could not be allocated: %s", p->device, what,
                       MIB(need), why);
    if (!seg_insert(&p->dev, p->dev.n, (pool_seg){ptr, need, 1})) {
        p->ops.dev_free(p->ops.user, ptr, need);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot grow the device pool's buffer list");
    }
    account(p, (int64_t)need);
    p->st.reserved += (int64_t)need;
    p->st.allocations++;
    *out = ptr;
    return OC_OK;
}

void oc_pool_free(oc_pool *p, void *ptr)
{
    if (!p || !ptr) return;
    long i = seg_find(&p->dev, ptr);
    if (i < 0) return;
    size_t bytes = p->dev.v[i].bytes;
    account(p, -(int64_t)bytes);
    if (p->mode != OC_GPU_MEM_RESERVE) {
        p->ops.dev_free(p->ops.user, ptr, bytes);
        p->st.reserved -= (int64_t)bytes;
        seg_remove(&p->dev, (size_t)i);
        return;
    }
    p->dev.v[i].used = 0;
    /* Merge with the free neighbours so the arena never holds two adjacent free segments. */
    if ((size_t)i + 1 < p->dev.n && !p->dev.v[i + 1].used) {
        p->dev.v[i].bytes += p->dev.v[i + 1].bytes;
        seg_remove(&p->dev, (size_t)i + 1);
    }
    if (i > 0 && !p->dev.v[i - 1].used) {
        p->dev.v[i - 1].bytes += p->dev.v[i].bytes;
        seg_remove(&p->dev, (size_t)i);
    }
}

oc_status oc_pool_host_alloc(oc_context *ctx, oc_pool *p, size_t bytes, const char *what, void **out)
{
    char why[160] = "";
    if ((int64_t)bytes > p->st.host_budget - p->st.host_current)
        return oc_fail(ctx, OC_ERR_NO_MEMORY,
                       "%s needs %.1f MiB of pinned host memory but the staging budget is %.1f MiB with %.1f MiB in "
                       "use; raise --host-mem",
                       what, MIB(bytes), MIB(p->st.host_budget), MIB(p->st.host_current));
    void *ptr = NULL;
    int fail = ++p->host_requests == p->fault_host_at;
    if (fail) snprintf(why, sizeof why, "injected failure of pinned allocation #%ld", p->host_requests);
    if (!fail) fail = p->ops.host_alloc(p->ops.user, bytes, &ptr, why, sizeof why) != 0;
    if (fail)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot allocate %.1f MiB of pinned host memory: %s", what,
                       MIB(bytes), why);
    if (!seg_insert(&p->host, p->host.n, (pool_seg){ptr, bytes, 1})) {
        p->ops.host_free(p->ops.user, ptr, bytes);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot grow the pinned buffer list");
    }
    p->st.host_current += (int64_t)bytes;
    if (p->st.host_current > p->st.host_peak) p->st.host_peak = p->st.host_current;
    *out = ptr;
    return OC_OK;
}

void oc_pool_host_free(oc_pool *p, void *ptr)
{
    if (!p || !ptr) return;
    long i = seg_find(&p->host, ptr);
    if (i < 0) return;
    p->st.host_current -= (int64_t)p->host.v[i].bytes;
    p->ops.host_free(p->ops.user, ptr, p->host.v[i].bytes);
    seg_remove(&p->host, (size_t)i);
}

void oc_pool_get_stats(const oc_pool *p, oc_pool_stats *out) { *out = p->st; }

int64_t oc_pool_available(const oc_pool *p) { return p->st.budget - p->st.current; }
