/*
 * gram_parts.c - the parts of a Gram job on several logical devices (gram_parts.h): made,
 * opened and planned every part at once (a thread per part, part 0's on the caller's
 * thread), joined by the shared order, queue and panel exchange, each set up on its own
 * thread, and released every part at once, after the job.
 */
#include "gram/cuda/gram_parts.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/process/after_job.h"
#include "core/context.h"
#include "core/error.h"
#include "core/threads.h"
#include "core/trace.h"
#include "core/workers.h"
#include "gram/cuda/gram_select.cuh"
#include "gram/cuda/gram_window.h"
#include "gram/gram_resume.h"
#include "gram/select/select.h"

/* OUTCORE_FAULT_DEVICE=d:k: logical device d fails at its k-th tile (tests). */
static int64_t fault_tile(int device)
{
    const char *v = getenv("OUTCORE_FAULT_DEVICE");
    int d;
    long long k;
    if (!v || sscanf(v, "%d:%lld", &d, &k) != 2 || d != device || k < 1) return 0;
    return k;
}

static oc_status parts_create(oc_context *ctx, oc_gram_parts *g)
{
    oc_gram_job *job = g->job;
    /* A job made without oc_gram's checks: the options' one device and budget. */
    if (job->devices.count == 0) OC_CHECK(ctx, oc_device_list_parse(ctx, job->opts, -1, &job->devices));
    g->count = job->devices.count;
    /* The top-k lists stay on the host for the whole job, and every part that keeps its
     * lists on the device brings them back into a copy of its own to be merged (the parts
     * past the first, and the first of a resumed job: oc_gram_parts_setup_part): the parts'
     * staging shares what they leave of the budget. */
    int64_t held = job->select ? oc_select_lists_bytes(job->select) : 0;
    const int64_t copies = job->select && oc_cuda_select_topk_on_device(job) ? g->count - 1 + (job->resume != NULL) : 0;
    if (copies > 0) held += copies * job->n * oc_select_kept(job->select) * 8;
    if (job->host_budget > 0 && held >= job->host_budget)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "host memory budget %lld bytes is too small for the top-k lists of %lld rows on %d devices: "
                       "they take %lld bytes (the job's and %lld copies merged into them at the end); raise "
                       "--host-mem past that, lower --topk or use fewer devices",
                       (long long)job->host_budget, (long long)job->n, g->count, (long long)held, (long long)copies);
    int64_t part_budget = job->host_budget > 0 ? (job->host_budget - held) / g->count : 0; /* 0: the default */
    if (job->host_budget > 0 && part_budget < 1) part_budget = 1;
    g->slot = calloc((size_t)g->count, sizeof *g->slot);
    if (!g->slot) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate %d device parts", g->count);
    for (int d = 0; d < g->count; ++d) {
        oc_part_slot *p = &g->slot[d];
        p->job = *job;
        p->stats.struct_size = sizeof p->stats;
        p->job.stats = &p->stats;
        if (d > 0) {
            if (oc_context_create(&p->own_ctx) != OC_OK)
                return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot create the context of logical device %d", d);
            p->job.ctx = p->own_ctx;
            oc_cuda_share_pinned_cache(p->own_ctx, ctx);
        }
        p->part =
            (oc_gram_part){.job = &p->job, .ctx = p->job.ctx, .ldev = &job->devices.dev[d], .host_budget = part_budget};
        oc_logical_device_name(p->part.ldev, p->name, sizeof p->name);
    }
    return OC_OK;
}

/* Runs fn on every part at once: parts 1..N-1 on threads of their own, part 0 on the
 * caller's thread; each part's outcome in its st. Opening, setting up and closing a part
 * touch only its own context, device and allocations, so the devices' driver calls (context
 * creation, stream and event creation, cudaMalloc of the pool, pinned rings, their frees)
 * overlap instead of being paid in turn (opened one after the other, four devices took
 * several times one device's time: bench/RESULTS.md, "Several GPUs"). */
typedef void (*part_fn)(oc_part_slot *p, void *arg);

typedef struct part_call {
    part_fn fn;
    oc_part_slot *p;
    void *arg;
} part_call;

static void *part_call_thread(void *arg)
{
    part_call *c = arg;
    c->fn(c->p, c->arg);
    return NULL;
}

static void parts_each(oc_gram_parts *g, part_fn fn, void *arg)
{
    part_call call[OC_MAX_LOGICAL_DEVICES];
    pthread_t thread[OC_MAX_LOGICAL_DEVICES];
    int started[OC_MAX_LOGICAL_DEVICES] = {0};
    for (int d = 1; d < g->count; ++d) {
        call[d] = (part_call){fn, &g->slot[d], arg};
        started[d] = oc_thread_start(&thread[d], 0, part_call_thread, &call[d]) == 0;
        if (!started[d]) fn(&g->slot[d], arg); /* no thread: in turn, as before */
    }
    if (g->count > 0) fn(&g->slot[0], arg);
    for (int d = 1; d < g->count; ++d)
        if (started[d]) pthread_join(thread[d], NULL);
}

oc_status oc_gram_parts_select_device(oc_part_slot *p)
{
    if (cudaSetDevice(p->part.ldev->physical) == cudaSuccess) return OC_OK;
    return p->st = oc_fail(p->part.ctx, OC_ERR_DEVICE, "cannot select CUDA device %d", p->part.ldev->physical);
}

static void part_open(oc_part_slot *p, void *arg)
{
    (void)arg;
    p->st = oc_gram_part_open(&p->part);
}

static void part_replan(oc_part_slot *p, void *arg)
{
    const int64_t tile = *(const int64_t *)arg;
    if (p->part.plan.tiles.tile == tile) return;
    p->part.force_tile = tile;
    if (oc_gram_parts_select_device(p) == OC_OK) p->st = oc_gram_part_replan(&p->part);
}

/* The first part that failed, or OC_OK. */
static oc_status parts_first_failure(const oc_gram_parts *g)
{
    for (int d = 0; d < g->count; ++d)
        if (g->slot[d].st != OC_OK) return g->slot[d].st;
    return OC_OK;
}

/* Every part's plan, all with one tile edge (the smallest any part chose), so that the
 * tiles, the selection's row blocks and the queue are the same for all. */
static oc_status parts_plan(oc_gram_parts *g)
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
 * part it is given to uploads it, the others copy it from that device
 * (engine/cuda/panel_exchange.h; four GPUs staging all of A each were bound by the host's memory
 * bandwidth, bench/RESULTS.md). Needs every pair of the physical devices to reach each
 * other's memory (peer access, which oc_cuda_warm_up may have enabled already);
 * OUTCORE_PANEL_EXCHANGE=0 turns it off (docs/environment.md). */
static int exchange_wanted(const oc_gram_parts *g)
{
    if (!oc_panel_exchange_wanted()) return 0;
    for (int d = 0; d < g->count; ++d)
        if (!g->slot[d].part.plan.tiles.resident) return 0;
    return 1;
}

/* Whether every pair of the parts' devices reaches each other's memory, enabling the access
 * the first time it is asked (the same for the exchange and the shared floors). */
static int parts_peers(oc_gram_parts *g)
{
    if (g->peers == 0) {
        int physical[OC_MAX_LOGICAL_DEVICES];
        for (int d = 0; d < g->count; ++d) physical[d] = g->slot[d].part.ldev->physical;
        double t = oc_now();
        g->peers = oc_panel_exchange_peers(physical, g->count) ? 1 : -1;
        oc_trace_phase(&t, "cuda", "peer access");
    }
    return g->peers > 0;
}

static oc_status share_panels(oc_context *ctx, oc_gram_parts *g)
{
    if (!exchange_wanted(g)) return OC_OK;
    int ok = parts_peers(g);
    if (oc_gram_parts_select_device(&g->slot[0]) != OC_OK) return g->slot[0].st;
    if (!ok) return OC_OK;
    const oc_tile_plan *tp = &g->slot[0].part.plan.tiles;
    int64_t panels = tp->panels_a > tp->panels_b ? tp->panels_a : tp->panels_b;
    /* With tiles split on K, the window's panels cross as slices, each under a key of its own. */
    const int64_t slices = g->window ? g->window->win.slices : 0, keys = 2 * panels * (1 + slices);
    OC_CHECK(ctx, oc_panel_exchange_create(ctx, keys, &g->exchange));
    /* Each panel is given to one part, which uploads it ahead of the tiles; dealt in the
     * order the tiles first need them, so every part uploads from the start. */
    int64_t *need = malloc((size_t)(2 * panels) * sizeof *need), *sliced = malloc((size_t)keys * sizeof *sliced);
    int64_t n =
        need && sliced ? oc_tile_order_first_need(g->order, tp->ntiles, g->job->symmetric, 2 * panels, need) : -1;
    if (n >= 0 && g->window) n = oc_gram_window_need(g->window, need, n, sliced);
    oc_status st = n < 0 ? oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the panels' need order")
                         : oc_panel_exchange_assign(ctx, g->exchange, g->window ? sliced : need, n, g->count);
    free(need);
    free(sliced);
    return st;
}

/* Several parts selecting top-k on their devices share their floors (select_floors.cuh):
 * each then prunes with the best any has reached, as one device would. Needs every part's
 * device to read every other's memory (the same GPU, or peer access). */
static oc_status share_floors(oc_gram_parts *g)
{
    if (g->count < 2 || !g->job->select || oc_cuda_select_fixed_bytes(g->job) == 0) return OC_OK;
    int ok = parts_peers(g);
    if (oc_gram_parts_select_device(&g->slot[0]) != OC_OK) return g->slot[0].st;
    if (ok) g->floors = oc_cuda_floors_create(g->count); /* NULL when memory is short: each prunes alone */
    return OC_OK;
}

/* The selection's start, then (several parts) the shared order and queue, from the first
 * part's plan (every part has the same tiles).
 * Groups follow its column panels (resident: the order walks the columns, so a new panel
 * is needed only when a column begins) or its groups of A panels (streaming), the panels a
 * worker keeps while it stays on them. Keyed by the row panel, a resident plan's groups
 * were single tiles, and a worker that stayed on its row ran down it ahead of the order,
 * needing a new panel per tile: one device uploaded much of A while the others waited for
 * its panels (bench/RESULTS.md). */
oc_status oc_gram_parts_share(oc_context *ctx, oc_gram_parts *g)
{
    oc_gram_job *job = g->job;
    const oc_engine_plan *plan = &g->slot[0].part.plan;
    const oc_tile_plan *tp = &plan->tiles;
    /* Before any part starts: a part that is set up selects while the others still are. */
    OC_CHECK(ctx, oc_cuda_select_begin(ctx, job, tp->tile, g->count));
    if (job->resume) {
        /* Host top-k on several devices merges their tiles into the host's lists at once,
         * with no point where every device's tiles so far are in them. */
        if (g->count > 1 && job->select && oc_select_get_mode(job->select) == OC_SELECT_TOPK &&
            !oc_cuda_select_topk_on_device(job))
            return oc_fail(ctx, OC_ERR_UNSUPPORTED,
                           "resume: a top-k job with k above the device's %d selects on the host and cannot be "
                           "resumed on several devices (%d logical devices); run it on one device",
                           OC_CUDA_SELECT_MAX_K, g->count);
        /* Once, after the selection began and before the parts' uploads, which pass by the
         * panels of tiles done: restores the top-k lists into the selection's, or marks the
         * row blocks a threshold job delivered. */
        OC_CHECK(ctx, oc_resume_begin(ctx, job->resume, job, tp->tile));
    }
    if (g->count == 1) return OC_OK;
    /* The parts' copy threads, here before the parts set up at once: started beside the
     * devices' allocations (whose driver calls hold the process's address space) they were
     * slow to start, and each part's first upload waited for them (bench/RESULTS.md). */
    for (int d = 0; d < g->count; ++d) {
        oc_workers *threads;
        OC_CHECK(ctx, oc_context_workers(g->slot[d].part.ctx, g->slot[d].part.plan.workers, &threads));
    }
    g->order = oc_engine_plan_order(plan, job->symmetric, oc_gram_part_seeds_first(&g->slot[0].part));
    int64_t *keys = malloc((size_t)(tp->ntiles ? tp->ntiles : 1) * sizeof *keys);
    if (!g->order || !keys) {
        free(keys);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the tile order (%lld tiles)", (long long)tp->ntiles);
    }
    /* The window's tiles (split on K, dealt round the parts) lead the order; the queue holds
     * the rest. */
    oc_status st = OC_OK;
    if (exchange_wanted(g) && parts_peers(g)) {
        const oc_gram_part *parts[OC_MAX_LOGICAL_DEVICES];
        for (int d = 0; d < g->count; ++d) parts[d] = &g->slot[d].part;
        st = oc_gram_window_plan(ctx, parts, g->count, job->symmetric, g->order, &g->window);
    }
    const int64_t head = g->window ? g->window->win.tiles : 0;
    for (int64_t t = head; st == OC_OK && t < tp->ntiles; ++t)
        keys[t - head] = tp->resident ? g->order[2 * t + 1] : g->order[2 * t] / tp->group;
    if (st == OC_OK) st = oc_scheduler_create(ctx, keys, tp->ntiles - head, g->count, 0, &g->queue);
    free(keys);
    OC_CHECK(ctx, st);
    OC_CHECK(ctx, share_floors(g));
    return share_panels(ctx, g);
}

/* Part d's worker and selection, then its place in the shared order, queue and exchange.
 * Each part sets itself up on the thread that runs its tiles, so a device whose set-up is
 * done starts on the queue while the others still allocate (their pinned rings, device
 * memory mapped to the peers, bench/RESULTS.md). */
oc_status oc_gram_parts_setup_part(oc_gram_parts *g, int d)
{
    oc_part_slot *p = &g->slot[d];
    oc_gram_job *job = g->job;
    double t = oc_now();
    char who[48];
    snprintf(who, sizeof who, "%s setup", p->name);
    oc_cuda_select_share share = {.index = d, .count = g->count, .floors = g->floors};
    /* Lists kept on the device come back to the host once, to be merged (host top-k,
     * past the device's k, selects into the shared lists directly); a resumed job's
     * selection holds the restored lists, and device 0's are merged into them too. */
    if ((d > 0 || job->resume) && job->select && oc_cuda_select_topk_on_device(job)) {
        size_t bytes = (size_t)(job->n * oc_select_kept(job->select)) * 8;
        p->topk_keys = calloc(bytes ? bytes : 1, 1);
        if (!p->topk_keys)
            p->st = oc_fail(p->part.ctx, OC_ERR_NO_MEMORY, "cannot allocate the top-k lists of device part %d", d);
        share.topk_keys = p->topk_keys;
    }
    /* The worker knows its place in the queue and exchange before its set-up, which starts
     * its share of the panel uploads (engine.h). */
    if (p->st == OC_OK && g->queue) oc_engine_worker_share(p->part.worker, g->order, g->queue, d);
    if (p->st == OC_OK && g->exchange) oc_engine_worker_exchange(p->part.worker, g->exchange);
    if (p->st == OC_OK && g->exchange && g->window) oc_engine_worker_window(p->part.worker, &g->window->win);
    if (p->st == OC_OK) p->st = oc_gram_part_setup(&p->part, g->count > 1 || p->topk_keys ? &share : NULL, d == 0);
    if (p->st == OC_OK) {
        oc_engine_worker_fail_at(p->part.worker, fault_tile(d));
    } else if (g->queue) {
        oc_scheduler_abort(g->queue, d);          /* the others stop after their current tile */
        oc_engine_worker_give_up(p->part.worker); /* and wait for none of its panels */
    }
    oc_trace_phase(&t, who, "all");
    return p->st;
}

oc_status oc_gram_parts_open(oc_context *ctx, oc_gram_parts *g)
{
    oc_status st = parts_create(ctx, g);
    return st == OC_OK ? parts_plan(g) : st;
}

/* The first part that failed: the one that aborted the queue, else the lowest. */
oc_status oc_gram_parts_status(oc_context *ctx, oc_gram_parts *g)
{
    int first = g->queue ? oc_scheduler_aborted(g->queue) : -1;
    if (first < 0 || g->slot[first].st == OC_OK)
        for (int d = 0; d < g->count && first < 0; ++d)
            if (g->slot[d].st != OC_OK) first = d;
    if (first < 0) return OC_OK;
    oc_part_slot *p = &g->slot[first];
    if (g->count == 1) return p->st; /* the message is on the caller's context already */
    char message[OC_MESSAGE_MAX];
    snprintf(message, sizeof message, "%s", oc_context_last_error(p->part.ctx));
    /* A cancelled job says so as one device would. */
    if (p->st == OC_ERR_CANCELLED) return oc_fail(ctx, p->st, "%s", message);
    return oc_fail(ctx, p->st, "%s: %s", p->name, message);
}

/* One part's close, timed for OUTCORE_TRACE. */
static void part_close(oc_part_slot *p, void *arg)
{
    (void)arg;
    double t = oc_now();
    oc_gram_part_close(&p->part);
    oc_trace_phase(&t, "cuda", p->name[0] ? p->name : "a part"); /* each part's close */
}

void oc_gram_parts_quiesce(oc_gram_parts *g)
{
    int current = -1; /* the caller's thread keeps its current device (part 0's, as it ran) */
    if (cudaGetDevice(&current) != cudaSuccess) (void)cudaGetLastError();
    for (int d = 0; g->slot && d < g->count; ++d) oc_engine_worker_quiesce(g->slot[d].part.worker);
    if (current >= 0 && cudaSetDevice(current) != cudaSuccess) (void)cudaGetLastError();
}

void oc_gram_parts_account(oc_gram_parts *g)
{
    oc_gram_stats *s = g->job->stats;
    for (int d = 0; g->slot && d < g->count; ++d) {
        const oc_cuda_device *dev = g->slot[d].part.dev;
        if (!dev || !dev->pool) continue;
        oc_pool_stats pool;
        oc_pool_get_stats(dev->pool, &pool);
        s->devices[d].budget_bytes = pool.budget;
        s->devices[d].peak_bytes = pool.peak;
        s->dev_budget_bytes += pool.budget;
        s->dev_peak_bytes += pool.peak;
        s->dev_current_bytes += pool.current;
        s->dev_allocations += pool.allocations;
    }
}

void oc_gram_parts_release(oc_gram_parts *g)
{
    oc_panel_exchange_free(g->exchange); /* its events may still be pending: they go when done */
    if (g->slot) parts_each(g, part_close, NULL);
    for (int d = 0; g->slot && d < g->count; ++d) {
        free(g->slot[d].topk_keys);
        oc_context_free(g->slot[d].own_ctx);
    }
    free(g->slot);
    free(g->order);
    oc_scheduler_free(g->queue);
    oc_cuda_floors_free(g->floors);
    oc_gram_window_free(g->window);
    *g = (oc_gram_parts){.job = g->job};
}

static void release_after_job(void *arg)
{
    oc_gram_parts *g = arg;
    double t = oc_now();
    oc_gram_parts_release(g);
    oc_trace_phase(&t, "cuda", "release after the job");
    free(g);
}

/* The part threads and the merge are done, the statistics read: nothing of the job is
 * needed past this point but what the release frees. The parts refer to the job only
 * through their own copies (the slots), so the caller may free the job meanwhile. */
void oc_gram_parts_release_later(oc_gram_parts *g)
{
    oc_gram_parts *later = malloc(sizeof *later);
    if (!later) {
        oc_gram_parts_release(g);
        return;
    }
    *later = *g;
    later->job = NULL;
    *g = (oc_gram_parts){.job = g->job};
    oc_after_job(release_after_job, later);
}

void oc_gram_parts_close(oc_gram_parts *g)
{
    oc_gram_parts_account(g);
    oc_gram_parts_release(g);
}
