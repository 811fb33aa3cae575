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
 *   making, opening, setting up and closing the parts: gram_parts.c, every part at once.
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
#include "cuda/gram_cuda.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/context.h"
#include "core/error.h"
#include "core/threads.h"
#include "cuda/engine_trace.h"
#include "cuda/gram_parts.h"
#include "exec/select.h"

static void *part_thread(void *arg)
{
    oc_part_slot *p = arg;
    if (oc_gram_parts_select_device(p) == OC_OK) p->st = oc_engine_worker_run(p->part.worker);
    return NULL;
}

/* Part 0 on this thread, the others on their own; the first failure aborts the queue. */
static void parts_run(oc_gram_parts *g)
{
    for (int d = 1; d < g->count; ++d) {
        oc_part_slot *p = &g->slot[d];
        p->started = pthread_create(&p->thread, NULL, part_thread, p) == 0;
        if (!p->started) {
            /* The others stop too: the job has failed. */
            p->st = oc_fail(p->part.ctx, OC_ERR_NO_MEMORY, "cannot start the thread of a device part");
            oc_scheduler_abort(g->queue, d);
        }
    }
    oc_part_slot *p0 = &g->slot[0];
    if (oc_gram_parts_select_device(p0) == OC_OK) p0->st = oc_engine_worker_run(p0->part.worker);
    for (int d = 1; d < g->count; ++d)
        if (g->slot[d].started) pthread_join(g->slot[d].thread, NULL);
}

/* Every part's top-k lists into the selection's (part 0 wrote there directly). */
static oc_status merge_topk(oc_context *ctx, oc_gram_parts *g)
{
    const uint64_t *lists[OC_MAX_LOGICAL_DEVICES];
    int count = 0;
    for (int d = 1; d < g->count; ++d)
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
    if (g->slot[0].stats.select_desc[0]) snprintf(s->select_desc, sizeof s->select_desc, "%s", g->slot[0].stats.select_desc);
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

static void *release_thread(void *arg)
{
    oc_gram_parts_release(arg);
    return NULL;
}

oc_status oc_cuda_gram(oc_gram_job *job)
{
    oc_context *ctx = job->ctx;
    oc_gram_parts g = {.job = job};
    double t = oc_now();
    oc_status st = oc_gram_parts_open(ctx, &g);
    oc_trace_phase(&t, "cuda", "open");
    if (st == OC_OK) st = oc_gram_parts_setup(ctx, &g);
    oc_trace_phase(&t, "cuda", "setup");
    if (st == OC_OK) {
        parts_run(&g);
        oc_trace_phase(&t, "cuda", "tiles");
        for (int d = 0; d < g.count; ++d) oc_gram_part_trace(&g.slot[d].part);
    }
    /* A failure in set-up is the part's (its context) or the job's (ctx). */
    oc_status failed = g.slot ? oc_gram_parts_status(ctx, &g) : OC_OK;
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
    else oc_gram_parts_release(&g);
    oc_gram_parts_free(&g);
    oc_trace_phase(&t, "cuda", "teardown");
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
