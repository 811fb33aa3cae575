/*
 * gram_devices.c - a Gram job over the job's logical devices (exec/device_spec.h): one part
 * (gram_part.h: worker, plan, selection) per logical device, all pulling tile groups from
 * one queue (exec/scheduler.h), sharing the destination.
 *
 *   caller's thread: open + plan every part (one tile edge for all) -> set up every part
 *                    -> start a thread per part 1..N-1 -> run part 0 itself (it reports
 *                    progress and delivers threshold pairs: outcore.h promises both on the
 *                    caller's thread) -> join -> merge the top-k lists -> statistics -> close
 *   part threads:    cudaSetDevice, then the worker's tile loop over the groups it pulls
 *   opening, setting up and closing run on every part at once (parts_each), part 0's on
 *   the caller's thread.
 *
 * Each part other than the first runs on a context of its own (its error message, its pool
 * of sink and copy threads, its pinned staging), so parts never write one context at once;
 * the first failure is copied to the caller's context, prefixed with the logical device's
 * name. Results do not depend on which part computed which tile (scheduler.h says why).
 *
 * A device that fails mid-job ends the job: its worker aborts the queue, the other parts
 * stop after their current tile, and the job fails with one line naming the device (its
 * tiles are not redone elsewhere: a device that failed once is likely to fail again, and a
 * half-written threshold or top-k state on it cannot be trusted). docs/architecture.md.
 */
#include "cuda/gram_cuda.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "core/threads.h"
#include "cuda/engine_trace.h"
#include "cuda/gram_part.h"
#include "cuda/panel_exchange.h"
#include "exec/select.h"

typedef struct part_slot {
    oc_gram_part part;
    oc_gram_job job;           /* the job as this part sees it: its context and statistics */
    oc_gram_stats stats;
    oc_context *own_ctx;       /* parts 1..N-1 */
    uint64_t *topk_keys;       /* parts 1..N-1 with device top-k lists: the lists, to merge */
    pthread_t thread;
    int started;
    int had_pool;
    oc_status st;
    oc_pool_stats pool;
} part_slot;

typedef struct gram_devices {
    oc_gram_job *job;
    int count;
    part_slot *slot;
    int64_t *order;            /* several parts: the shared tile order */
    oc_scheduler *queue;
    oc_panel_exchange *exchange; /* several parts, every panel resident: panels cross once */
} gram_devices;

/* OUTCORE_FAULT_DEVICE=d:k: logical device d fails at its k-th tile (tests). */
static int64_t fault_tile(int device)
{
    const char *v = getenv("OUTCORE_FAULT_DEVICE");
    int d;
    long long k;
    if (!v || sscanf(v, "%d:%lld", &d, &k) != 2 || d != device || k < 1) return 0;
    return k;
}

static oc_status parts_create(oc_context *ctx, gram_devices *g)
{
    oc_gram_job *job = g->job;
    /* A job made without oc_gram's checks: the options' one device and budget. */
    if (job->devices.count == 0) OC_CHECK(oc_device_list_parse(ctx, job->opts, -1, &job->devices));
    g->count = job->devices.count;
    g->slot = calloc((size_t)g->count, sizeof *g->slot);
    if (!g->slot) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate %d device parts", g->count);
    for (int d = 0; d < g->count; ++d) {
        part_slot *p = &g->slot[d];
        p->job = *job;
        p->stats.struct_size = sizeof p->stats;
        p->job.stats = &p->stats;
        if (d > 0) {
            if (oc_context_create(&p->own_ctx) != OC_OK)
                return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot create the context of logical device %d", d);
            p->job.ctx = p->own_ctx;
        }
        p->part = (oc_gram_part){.job = &p->job, .ctx = p->job.ctx,
                                 .ldev = &job->devices.dev[d],
                                 .host_budget = job->host_budget / g->count};
    }
    return OC_OK;
}

/* Runs fn on every part at once: parts 1..N-1 on threads of their own, part 0 on the
 * caller's thread; each part's outcome in its st. Opening, setting up and closing a part
 * touch only its own context, device and allocations, so the devices' driver calls (context
 * creation, stream and event creation, cudaMalloc of the pool, pinned rings, their frees)
 * overlap instead of being paid in turn (four H200s one after the other took 0.46-0.49 s to
 * open against 0.13 s for one: bench/RESULTS.md, "Several GPUs"). */
typedef void (*part_fn)(part_slot *p, void *arg);

typedef struct part_call {
    part_fn fn;
    part_slot *p;
    void *arg;
} part_call;

static void *part_call_thread(void *arg)
{
    part_call *c = arg;
    c->fn(c->p, c->arg);
    return NULL;
}

static void parts_each(gram_devices *g, part_fn fn, void *arg)
{
    part_call call[OC_MAX_LOGICAL_DEVICES];
    pthread_t thread[OC_MAX_LOGICAL_DEVICES];
    int started[OC_MAX_LOGICAL_DEVICES] = {0};
    for (int d = 1; d < g->count; ++d) {
        call[d] = (part_call){fn, &g->slot[d], arg};
        started[d] = pthread_create(&thread[d], NULL, part_call_thread, &call[d]) == 0;
        if (!started[d]) fn(&g->slot[d], arg); /* no thread: in turn, as before */
    }
    if (g->count > 0) fn(&g->slot[0], arg);
    for (int d = 1; d < g->count; ++d)
        if (started[d]) pthread_join(thread[d], NULL);
}

static oc_status select_device(part_slot *p)
{
    if (cudaSetDevice(p->part.ldev->physical) == cudaSuccess) return OC_OK;
    return p->st = oc_fail(p->part.ctx, OC_ERR_DEVICE, "cannot select CUDA device %d", p->part.ldev->physical);
}

static void part_open(part_slot *p, void *arg)
{
    (void)arg;
    p->st = oc_gram_part_open(&p->part);
}

static void part_replan(part_slot *p, void *arg)
{
    const int64_t tile = *(const int64_t *)arg;
    if (p->part.plan.tiles.tile == tile) return;
    p->part.force_tile = tile;
    if (select_device(p) == OC_OK) p->st = oc_gram_part_replan(&p->part);
}

/* The first part that failed, or OC_OK. */
static oc_status parts_first_failure(const gram_devices *g)
{
    for (int d = 0; d < g->count; ++d)
        if (g->slot[d].st != OC_OK) return g->slot[d].st;
    return OC_OK;
}

/* Every part's plan, all with one tile edge (the smallest any part chose), so that the
 * tiles, the selection's row blocks and the queue are the same for all. */
static oc_status parts_plan(gram_devices *g)
{
    parts_each(g, part_open, NULL);
    oc_status st = parts_first_failure(g);
    if (st != OC_OK) return st;
    int64_t tile = 0;
    for (int d = 0; d < g->count; ++d) {
        int64_t t = g->slot[d].part.plan.tiles.tile;
        if (tile == 0 || t < tile) tile = t;
    }
    for (int d = 0; d < g->count; ++d) part_replan(&g->slot[d], &tile);
    return parts_first_failure(g);
}

/* Several parts that keep every panel resident take each panel from the host once: the
 * first part that needs it uploads it, the others copy it from that device
 * (cuda/panel_exchange.h; four GPUs staging all of A each were bound by the host's memory
 * bandwidth, bench/RESULTS.md). Needs every pair of the physical devices to reach each
 * other's memory; OUTCORE_PANEL_EXCHANGE=0 turns it off (docs/environment.md). */
static oc_status share_panels(oc_context *ctx, gram_devices *g)
{
    const char *v = getenv("OUTCORE_PANEL_EXCHANGE");
    if (v && strcmp(v, "0") == 0) return OC_OK;
    int physical[OC_MAX_LOGICAL_DEVICES];
    for (int d = 0; d < g->count; ++d) {
        if (!g->slot[d].part.plan.tiles.resident) return OC_OK;
        physical[d] = g->slot[d].part.ldev->physical;
    }
    int ok = oc_panel_exchange_peers(physical, g->count);
    if (select_device(&g->slot[0]) != OC_OK) return g->slot[0].st;
    if (!ok) return OC_OK;
    const oc_tile_plan *tp = &g->slot[0].part.plan.tiles;
    int64_t panels = tp->panels_a > tp->panels_b ? tp->panels_a : tp->panels_b;
    OC_CHECK(oc_panel_exchange_create(ctx, 2 * panels, &g->exchange));
    for (int d = 0; d < g->count; ++d) oc_engine_worker_exchange(g->slot[d].part.worker, g->exchange);
    return OC_OK;
}

/* One part's worker and selection. */
static void part_setup(part_slot *p, void *arg)
{
    gram_devices *g = arg;
    oc_gram_job *job = g->job;
    const int d = (int)(p - g->slot);
    oc_cuda_select_share share = {.index = d, .count = g->count};
    /* Lists kept on the device come back to the host once, to be merged (host top-k,
     * past the device's k, selects into the shared lists directly). */
    if (d > 0 && job->select && oc_cuda_select_fixed_bytes(job) > 0) {
        size_t bytes = (size_t)(job->n * oc_select_kept(job->select)) * 8;
        p->topk_keys = calloc(bytes ? bytes : 1, 1);
        if (!p->topk_keys) {
            p->st = oc_fail(p->part.ctx, OC_ERR_NO_MEMORY, "cannot allocate the top-k lists of device part %d", d);
            return;
        }
        share.topk_keys = p->topk_keys;
    }
    if (select_device(p) != OC_OK) return;
    p->st = oc_gram_part_setup(&p->part, g->count > 1 ? &share : NULL, d == 0);
    if (p->st == OC_OK) oc_engine_worker_fail_at(p->part.worker, fault_tile(d));
}

/* Worker set-up on every part, then (several parts) the shared order and queue. */
static oc_status parts_setup(oc_context *ctx, gram_devices *g)
{
    oc_gram_job *job = g->job;
    parts_each(g, part_setup, g);
    OC_CHECK(parts_first_failure(g));
    if (g->count == 1) return OC_OK;
    /* The first part's order: groups follow its column panels (resident: the order walks
     * the columns, so a new panel is needed only when a column begins) or its groups of A
     * panels (streaming), the panels a worker keeps while it stays on them. Keyed by the row
     * panel, a resident plan's groups were single tiles, and a worker that stayed on its row
     * ran down it ahead of the order, needing a new panel per tile: on four H200s one device
     * uploaded half of A while the others waited for its panels (bench/RESULTS.md). */
    const oc_engine_plan *plan = &g->slot[0].part.plan;
    const oc_tile_plan *tp = &plan->tiles;
    int seeded = g->slot[0].part.select && oc_cuda_select_seeds_first(g->slot[0].part.select);
    g->order = oc_engine_plan_order(plan, job->symmetric, seeded);
    int64_t *keys = malloc((size_t)(tp->ntiles ? tp->ntiles : 1) * sizeof *keys);
    if (!g->order || !keys) {
        free(keys);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the tile order (%lld tiles)", (long long)tp->ntiles);
    }
    for (int64_t t = 0; t < tp->ntiles; ++t) keys[t] = tp->resident ? g->order[2 * t + 1] : g->order[2 * t] / tp->group;
    oc_status st = oc_scheduler_create(ctx, keys, tp->ntiles, g->count, 0, &g->queue);
    free(keys);
    OC_CHECK(st);
    for (int d = 0; d < g->count; ++d) oc_engine_worker_share(g->slot[d].part.worker, g->order, g->queue, d);
    return share_panels(ctx, g);
}

static void *part_thread(void *arg)
{
    part_slot *p = arg;
    if (select_device(p) == OC_OK) p->st = oc_engine_worker_run(p->part.worker);
    return NULL;
}

/* Part 0 on this thread, the others on their own; the first failure aborts the queue. */
static void parts_run(gram_devices *g)
{
    for (int d = 1; d < g->count; ++d) {
        part_slot *p = &g->slot[d];
        p->started = pthread_create(&p->thread, NULL, part_thread, p) == 0;
        if (!p->started) {
            /* The others stop too: the job has failed. */
            p->st = oc_fail(p->part.ctx, OC_ERR_NO_MEMORY, "cannot start the thread of a device part");
            oc_scheduler_abort(g->queue, d);
        }
    }
    part_slot *p0 = &g->slot[0];
    if (select_device(p0) == OC_OK) p0->st = oc_engine_worker_run(p0->part.worker);
    for (int d = 1; d < g->count; ++d)
        if (g->slot[d].started) pthread_join(g->slot[d].thread, NULL);
}

/* The status of the job: the first part that failed (the one that aborted the queue, else
 * the lowest), its message on the caller's context naming the logical device. */
static oc_status parts_status(oc_context *ctx, gram_devices *g)
{
    int first = g->queue ? oc_scheduler_aborted(g->queue) : -1;
    if (first < 0 || g->slot[first].st == OC_OK)
        for (int d = 0; d < g->count && first < 0; ++d)
            if (g->slot[d].st != OC_OK) first = d;
    if (first < 0) return OC_OK;
    part_slot *p = &g->slot[first];
    if (g->count == 1) return p->st; /* the message is on the caller's context already */
    char name[32], message[OC_MESSAGE_MAX];
    oc_logical_device_name(p->part.ldev, name, sizeof name);
    snprintf(message, sizeof message, "%s", oc_context_last_error(p->part.ctx));
    /* A cancelled job says so as one device would. */
    if (p->st == OC_ERR_CANCELLED) return oc_fail(ctx, p->st, "%s", message);
    return oc_fail(ctx, p->st, "%s: %s", name, message);
}

/* Every part's top-k lists into the selection's (part 0 wrote there directly). */
static oc_status merge_topk(oc_context *ctx, gram_devices *g)
{
    const uint64_t *lists[OC_MAX_LOGICAL_DEVICES];
    int count = 0;
    for (int d = 1; d < g->count; ++d)
        if (g->slot[d].topk_keys) lists[count++] = g->slot[d].topk_keys;
    return oc_select_topk_merge(ctx, g->job->select, lists, count, oc_threads_resolve(g->job->opts->threads));
}

static void parts_stats(gram_devices *g)
{
    oc_gram_stats *s = g->job->stats;
    const oc_gram_part *first = &g->slot[0].part;
    s->backend = OC_BACKEND_CUDA;
    if (first->dev) {
        char name[32];
        oc_logical_device_name(first->ldev, name, sizeof name);
        if (g->count > 1)
            snprintf(s->backend_desc, sizeof s->backend_desc, "%d devices: %s %.40s %s ...", g->count, name,
                     first->dev->name, oc_gram_part_kernel_desc(first));
        else
            snprintf(s->backend_desc, sizeof s->backend_desc, "cuda:%d %.48s %s", first->dev->index, first->dev->name,
                     oc_gram_part_kernel_desc(first));
    }
    if (g->slot[0].stats.select_desc[0]) snprintf(s->select_desc, sizeof s->select_desc, "%s", g->slot[0].stats.select_desc);
    s->device_count = g->count;
    for (int d = 0; d < g->count; ++d) {
        part_slot *p = &g->slot[d];
        oc_device_stats *x = &s->devices[d];
        oc_logical_device_name(p->part.ldev, x->name, sizeof x->name);
        x->bytes_d2h = p->stats.bytes_d2h; /* the selection's own downloads */
        if (p->part.worker) {
            const oc_engine_counts *c = oc_engine_worker_counts(p->part.worker);
            s->bit_macs_computed += c->bit_macs;
            x->tiles = c->tiles;
            x->bytes_h2d = c->bytes_h2d;
            x->bytes_d2h += c->bytes_d2h;
            x->busy_seconds = c->run_seconds;
        }
        s->tiles += x->tiles;
        s->bytes_h2d += x->bytes_h2d;
        s->bytes_d2h += x->bytes_d2h;
    }
}

static void part_close(part_slot *p, void *arg)
{
    (void)arg;
    double t = oc_now();
    char name[32] = "a part";
    if (p->part.ldev) oc_logical_device_name(p->part.ldev, name, sizeof name);
    p->had_pool = p->part.dev && p->part.dev->pool;
    oc_gram_part_close(&p->part, &p->pool);
    oc_trace_phase(&t, "cuda", name); /* each part's close */
}

/* Every part's device work undone: streams, events, device memory, staging. */
static void parts_release(gram_devices *g)
{
    oc_panel_exchange_free(g->exchange); /* its events may still be pending: they go when done */
    g->exchange = NULL;
    if (g->slot) parts_each(g, part_close, NULL);
}

static void *release_thread(void *arg)
{
    parts_release(arg);
    return NULL;
}

/* After parts_release: the pools' figures into the statistics, then the host side. */
static void parts_free(gram_devices *g)
{
    oc_gram_stats *s = g->job->stats;
    for (int d = 0; g->slot && d < g->count; ++d) {
        part_slot *p = &g->slot[d];
        if (p->had_pool) {
            s->devices[d].budget_bytes = p->pool.budget;
            s->devices[d].peak_bytes = p->pool.peak;
            s->dev_budget_bytes += p->pool.budget;
            s->dev_peak_bytes += p->pool.peak;
            s->dev_current_bytes += p->pool.current;
            s->dev_allocations += p->pool.allocations;
        }
        free(p->topk_keys);
        oc_context_free(p->own_ctx);
    }
    free(g->slot);
    free(g->order);
    oc_scheduler_free(g->queue);
}

static void parts_close(gram_devices *g)
{
    parts_release(g);
    parts_free(g);
}

oc_status oc_cuda_gram(oc_gram_job *job)
{
    oc_context *ctx = job->ctx;
    gram_devices g = {.job = job};
    double t = oc_now();
    oc_status st = parts_create(ctx, &g);
    if (st == OC_OK) st = parts_plan(&g);
    oc_trace_phase(&t, "cuda", "open");
    if (st == OC_OK) st = parts_setup(ctx, &g);
    oc_trace_phase(&t, "cuda", "setup");
    if (st == OC_OK) {
        parts_run(&g);
        oc_trace_phase(&t, "cuda", "tiles");
        for (int d = 0; d < g.count; ++d) oc_gram_part_trace(&g.slot[d].part);
    }
    /* A failure in set-up is the part's (its context) or the job's (ctx). */
    oc_status failed = g.slot ? parts_status(ctx, &g) : OC_OK;
    if (st == OC_OK) st = failed;
    else if (failed != OC_OK) st = failed;
    if (g.slot) parts_stats(&g);
    /* The devices are released on a thread while the top-k lists merge here: freeing memory
     * that the panel exchange mapped on the other devices took about 0.12 s per device on
     * four H200s, beside 0.02 s for one (bench/RESULTS.md). */
    pthread_t releaser;
    const int releasing = g.count > 1 && pthread_create(&releaser, NULL, release_thread, &g) == 0;
    if (st == OC_OK) st = merge_topk(ctx, &g);
    if (st == OC_OK && g.count > 1 && job->opts->progress)
        job->opts->progress(job->opts->progress_user, (double)g.slot[0].part.plan.tiles.ntiles,
                            (double)g.slot[0].part.plan.tiles.ntiles);
    if (g.count > 1) oc_trace_phase(&t, "cuda", "lists merge");
    if (releasing) pthread_join(releaser, NULL);
    else parts_release(&g);
    parts_free(&g);
    oc_trace_phase(&t, "cuda", "teardown");
    return st;
}

oc_status oc_cuda_gram_plan(oc_gram_job *job, int json, char **out)
{
    oc_context *ctx = job->ctx;
    gram_devices g = {.job = job};
    oc_status st = parts_create(ctx, &g);
    if (st == OC_OK) st = parts_plan(&g);
    if (st != OC_OK) {
        oc_status failed = g.slot ? parts_status(ctx, &g) : OC_OK;
        parts_close(&g);
        return failed != OC_OK ? failed : st;
    }
    /* One plan per logical device: text one after the other; JSON the first device's plan
     * object, or {"devices": [...]} for several. */
    size_t len = 0;
    char *all = NULL;
    for (int d = 0; d < g.count && st == OC_OK; ++d) {
        const oc_gram_part *p = &g.slot[d].part;
        char where[400], name[32], *text = NULL;
        oc_logical_device_name(p->ldev, name, sizeof name);
        snprintf(where, sizeof where, "%s %s (%d SMs, %.1f GiB free), %s kernel", name, p->dev->name, p->dev->sm_count,
                 (double)p->dev->free_mem_at_open / (1 << 30), oc_gram_part_kernel_desc(p));
        st = oc_engine_plan_render(ctx, &p->plan, where, json, &text);
        if (st != OC_OK) break;
        size_t n = strlen(text);
        char *grown = realloc(all, len + n + 32);
        if (!grown) {
            free(text);
            st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the plan text");
            break;
        }
        all = grown;
        if (json && g.count > 1) {
            while (n > 0 && text[n - 1] == '\n') --n; /* the objects go into one array */
            len += (size_t)sprintf(all + len, "%s", d == 0 ? "{\"devices\": [" : ", ");
        }
        memcpy(all + len, text, n);
        len += n;
        if (json && g.count > 1 && d == g.count - 1) len += (size_t)sprintf(all + len, "]}\n");
        all[len] = '\0';
        free(text);
    }
    parts_close(&g);
    if (st != OC_OK) {
        free(all);
        return st;
    }
    *out = all;
    return OC_OK;
}
