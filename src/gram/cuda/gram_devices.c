/*
 * gram_devices.c - a Gram job over the job's logical devices (engine/device_spec.h): one part
 * (gram_part.h: worker, plan, selection) per logical device, all pulling tile groups from
 * one queue (engine/scheduler.h), sharing the destination.
 *
 *   caller's thread: open + plan every part (one tile edge for all) -> the shared order,
 *                    queue and panel exchange -> start a thread per part 1..N-1 -> set up
 *                    and run part 0 itself (it reports progress and delivers threshold
 *                    pairs: outcore.h promises both on the caller's thread) -> join ->
 *                    statistics -> merge the top-k lists -> return, the parts released
 *                    after the job (core/process/after_job.h)
 *   part threads:    cudaSetDevice, the part's set-up, then the worker's tile loop over the
 *                    groups it pulls
 *   making, opening, setting up and releasing the parts: gram_parts.c.
 *
 * The first failure of a part is copied to the caller's context, prefixed with the logical
 * device's name (oc_gram_parts_status). Results do not depend on which part computed which
 * tile (scheduler.h says why).
 *
 * A device that fails mid-job ends the job: its worker aborts the queue, the other parts
 * stop after their current tile, and the job fails with one line naming the device (its
 * tiles are not redone elsewhere: a device that failed once is likely to fail again, and a
 * half-written threshold or top-k state on it cannot be trusted). docs/architecture.md.
 */
#include "gram/cuda/gram_cuda.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "core/threads.h"
#include "engine/cuda/engine_trace.h"
#include "gram/cuda/gram_parts.h"
#include "gram/select/select.h"

typedef struct part_run {
    oc_gram_parts *g;
    int d;
} part_run;

/* One part: its device, its set-up, its tiles. */
static void run_part(oc_gram_parts *g, int d)
{
    oc_part_slot *p = &g->slot[d];
    if (oc_gram_parts_select_device(p) != OC_OK) {
        if (g->queue) oc_scheduler_abort(g->queue, d);
        return;
    }
    if (oc_gram_parts_setup_part(g, d) == OC_OK) p->st = oc_engine_worker_run(p->part.worker);
}

static void *part_thread(void *arg)
{
    part_run *r = arg;
    run_part(r->g, r->d);
    return NULL;
}

/* Part 0 on this thread, the others on their own; the first failure aborts the queue. */
static void parts_run(oc_gram_parts *g)
{
    part_run run[OC_MAX_LOGICAL_DEVICES];
    for (int d = 1; d < g->count; ++d) {
        oc_part_slot *p = &g->slot[d];
        run[d] = (part_run){g, d};
        p->started = oc_thread_start(&p->thread, 0, part_thread, &run[d]) == 0;
        if (!p->started) {
            /* The others stop too: the job has failed. */
            p->st = oc_fail(p->part.ctx, OC_ERR_NO_MEMORY, "cannot start the thread of a device part");
            oc_scheduler_abort(g->queue, d);
        }
    }
    run_part(g, 0);
    for (int d = 1; d < g->count; ++d)
        if (g->slot[d].started) pthread_join(g->slot[d].thread, NULL);
}

/* Every part's top-k lists into the selection's (part 0 wrote there directly, unless the job
 * resumed: the selection holds the restored lists then, and some of a part's tiles, which the
 * merge keeps once). */
static oc_status merge_topk(oc_context *ctx, oc_gram_parts *g)
{
    const uint64_t *lists[OC_MAX_LOGICAL_DEVICES];
    int count = 0;
    for (int d = 0; d < g->count; ++d)
        if (g->slot[d].topk_keys) lists[count++] = g->slot[d].topk_keys;
    return oc_select_topk_merge(ctx, g->job->select, lists, count, oc_threads_resolve(g->job->opts->threads));
}

static void parts_stats(oc_gram_parts *g)
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
    if (g->slot[0].stats.select_desc[0])
        snprintf(s->select_desc, sizeof s->select_desc, "%s", g->slot[0].stats.select_desc);
    s->device_count = g->count;
    for (int d = 0; d < g->count; ++d) {
        oc_part_slot *p = &g->slot[d];
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

oc_status oc_cuda_gram(oc_gram_job *job)
{
    oc_context *ctx = job->ctx;
    oc_gram_parts g = {.job = job};
    double t = oc_now();
    const double t_open = t;
    oc_status st = oc_gram_parts_open(ctx, &g);
    oc_trace_phase(&t, "cuda", "open");
    if (st == OC_OK) st = oc_gram_parts_share(ctx, &g);
    oc_trace_phase(&t, "cuda", "setup");
    job->stats->phases.setup += t - t_open; /* the rest until the teardown is the tiles' (gram.c) */
    if (st == OC_OK) {
        parts_run(&g);
        oc_trace_phase(&t, "cuda", "set-up and tiles");
        for (int d = 0; d < g.count; ++d) oc_gram_part_trace(&g.slot[d].part);
    }
    /* Nothing of the job may still write into its memory once it returns, whatever failed. */
    oc_gram_parts_quiesce(&g);
    /* A failure in set-up is the part's (its context) or the job's (ctx). */
    oc_status failed = g.slot ? oc_gram_parts_status(ctx, &g) : OC_OK;
    if (st == OC_OK) st = failed;
    else if (failed != OC_OK) st = failed;
    if (g.slot) {
        parts_stats(&g);
        oc_gram_parts_account(&g);
    }
    if (st == OC_OK) st = merge_topk(ctx, &g);
    if (st == OC_OK && g.count > 1 && job->opts->progress)
        job->opts->progress(job->opts->progress_user, (double)g.slot[0].part.plan.tiles.ntiles,
                            (double)g.slot[0].part.plan.tiles.ntiles);
    if (g.count > 1) oc_trace_phase(&t, "cuda", "lists merge");
    /* The devices are released after the job returns: freeing memory that the panel
     * exchange mapped on the other devices takes a noticeable time per device
     * (bench/RESULTS.md), which the caller's next steps need not wait for. */
    const double t_teardown = oc_now();
    oc_gram_parts_release_later(&g);
    oc_trace_phase(&t, "cuda", "teardown");
    job->stats->phases.teardown += t - t_teardown;
    return st;
}

oc_status oc_cuda_gram_plan(oc_gram_job *job, int json, char **out)
{
    oc_context *ctx = job->ctx;
    oc_gram_parts g = {.job = job};
    oc_status st = oc_gram_parts_open(ctx, &g);
    if (st != OC_OK) {
        oc_status failed = g.slot ? oc_gram_parts_status(ctx, &g) : OC_OK;
        oc_gram_parts_close(&g);
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
    oc_gram_parts_close(&g);
    if (st != OC_OK) {
        free(all);
        return st;
    }
    *out = all;
    return OC_OK;
}
