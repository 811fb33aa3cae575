/*
 * engine_plan.c - budgets, staging and threads of a streamed job (engine_plan.h).
 */
#include "engine/engine_plan.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/text_buf.h"

/* Upload slots of 8 MiB keep the link busy (a copy outlasts its issue many times) and take a
 * quarter of the pinning of 32 MiB ones, which a process's first job pays before its first
 * upload. */
#define MAX_H2D_SLOT (8LL << 20)
/* Download slots are many (one per sink and four more), so each stays small: a job that finds
 * no cached staging pins them all before its first download. */
#define MAX_D2H_SLOT (4LL << 20)
#define MAX_SINKS 16
#define MAX_COPY_THREADS 8
#define H2D_SLOTS 2 /* one fills while the other uploads */
#define D2H_SPARE 4 /* download slots besides one per sink: the copy engine's queue */

#define MIB(x) ((double)(x) / 1048576.0)

static int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

oc_status oc_engine_plan_device_budget(oc_context *ctx, const oc_engine_plan_input *in, oc_engine_plan *plan)
{
    const char *dev = in->device_name ? in->device_name : "the device";
    if (in->gpu_mem_bytes > 0) {
        if (in->gpu_mem_bytes > in->device_total - OC_ENGINE_HEADROOM)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "--gpu-mem %.1f MiB exceeds what %s can give: %.1f MiB in all, less %lld MiB kept for the "
                           "CUDA context and libraries",
                           MIB(in->gpu_mem_bytes), dev, MIB(in->device_total), OC_ENGINE_HEADROOM >> 20);
        plan->device_budget = in->gpu_mem_bytes;
        plan->device_budget_given = 1;
        return OC_OK;
    }
    /* The default never takes the whole card: a fraction of what is free, less headroom. */
    int64_t b = (int64_t)(in->gpu_mem_fraction * (double)in->device_free), avail = in->device_free - OC_ENGINE_HEADROOM;
    plan->device_budget = b < avail ? b : avail;
    if (plan->device_budget <= 0)
        return oc_fail(ctx, OC_ERR_DEVICE_NO_MEMORY, "%s has only %.1f MiB free: nothing left for a budget", dev,
                       MIB(in->device_free));
    return OC_OK;
}

/* Row copies scale with cores (a core copies about a fifth of the pinned link rate), so
 * sinks take all cores but the driving thread's and one for the system; uploads take half
 * the cores (at most 8) beside the sinks, and as many as sinks would when the result stays
 * on the device (bench/RESULTS.md has the measurements behind these counts). */
oc_status oc_engine_plan_threads(oc_context *ctx, const oc_engine_plan_input *in, oc_engine_plan *plan)
{
    int cores = in->cores > 0 ? in->cores : 1;
    int sinks = clamp(cores - 2, 1, MAX_SINKS);
    int copy = in->dense_output ? clamp(cores / 2, 1, MAX_COPY_THREADS) : sinks;
    if (in->force_sinks) {
        if (in->force_sinks < 0 || in->force_sinks > 4 * MAX_SINKS)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "OUTCORE_CUDA_SINKS: expected a whole number from 1 to %d",
                           4 * MAX_SINKS);
        sinks = in->force_sinks;
    }
    if (in->force_copy_threads) {
        if (in->force_copy_threads < 0 || in->force_copy_threads > 4 * MAX_SINKS)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "OUTCORE_CUDA_COPY_THREADS: expected a whole number from 1 to %d", 4 * MAX_SINKS);
        copy = in->force_copy_threads;
    }
    plan->sinks = in->dense_output ? sinks : 0;
    plan->copy_threads = copy;
    /* Sinks and copies run at the same time (uploads of the next panels between tiles whose
     * results are being delivered): the pool holds both, and the sinks' tasks are capped at
     * their count so that copy threads are always free (workers.h). */
    plan->workers = plan->sinks + copy - 1;
    if (plan->workers < 1) plan->workers = 1;
    return OC_OK;
}

/* Slots of at most an equal share of the host budget each, cut to whole rows. */
static void staging(const oc_engine_plan_input *in, oc_engine_plan *plan)
{
    const oc_tile_plan *tp = &plan->tiles;
    plan->host_budget = in->host_budget > 0 ? in->host_budget : OC_ENGINE_DEFAULT_STAGING;
    plan->h2d_slots = H2D_SLOTS;
    plan->d2h_slots = in->dense_output ? plan->sinks + D2H_SPARE : 0;
    /* Staging takes at most a quarter of the host budget: the selection's pinned buffers (a
     * threshold job pins its pairs) and the host side of the job need the rest. Shares are
     * whole pages, as slots are laid out. */
    int64_t share = plan->host_budget / 4 / (plan->h2d_slots + plan->d2h_slots);
    if (share > MAX_H2D_SLOT) share = MAX_H2D_SLOT;
    if (share > 4096) share = share / 4096 * 4096;
    int64_t panel = tp->panel_bytes;
    plan->h2d_slot_bytes = share < panel ? share / in->row_bytes * in->row_bytes : panel;
    if (plan->h2d_slot_bytes < in->row_bytes) plan->h2d_slot_bytes = in->row_bytes;
    plan->d2h_slot_bytes = 0;
    if (in->dense_output) {
        int64_t out_row = tp->tile * in->elem_size, d2h_share = share < MAX_D2H_SLOT ? share : MAX_D2H_SLOT;
        plan->d2h_slot_bytes = d2h_share < tp->out_bytes ? d2h_share / out_row * out_row : tp->out_bytes;
        if (plan->d2h_slot_bytes < out_row) plan->d2h_slot_bytes = out_row;
    }
    int64_t page = 4096;
    plan->pinned_bytes = plan->h2d_slots * ((plan->h2d_slot_bytes + page - 1) / page * page) +
                         plan->d2h_slots * ((plan->d2h_slot_bytes + page - 1) / page * page);
}

static void estimates(const oc_engine_plan_input *in, oc_engine_plan *plan)
{
    const oc_tile_plan *tp = &plan->tiles;
    const oc_tile_plan_input *ti = &in->tiles;
    plan->upload_seconds = (double)tp->panel_loads * (double)tp->panel_bytes / OC_PLAN_H2D_RATE;
    double elems = (double)ti->n * (double)ti->p * (ti->symmetric && !tp->mirror_output ? 0.5 : 1.0);
    plan->download_seconds = in->dense_output ? elems * (double)in->elem_size / OC_PLAN_D2H_RATE : 0;
    plan->bound = "kernels";
    double top = tp->kernel_seconds;
    if (plan->upload_seconds > top) plan->bound = "uploads", top = plan->upload_seconds;
    if (plan->download_seconds > top) plan->bound = "output";
}

oc_status oc_engine_plan_make(oc_context *ctx, const oc_engine_plan_input *in, oc_engine_plan *plan)
{
    *plan = (oc_engine_plan){0};
    OC_CHECK(ctx, oc_engine_plan_device_budget(ctx, in, plan));
    oc_tile_plan_input ti = in->tiles;
    ti.budget = plan->device_budget;
    ti.budget_given = plan->device_budget_given;
    OC_CHECK(ctx, oc_tile_plan_make(ctx, &ti, &plan->tiles));
    OC_CHECK(ctx, oc_engine_plan_threads(ctx, in, plan));
    staging(in, plan);
    if (plan->pinned_bytes > plan->host_budget)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "the smallest staging (%d upload and %d download slots of one row each: %.1f MiB) exceeds the "
                       "host budget of %.1f MiB; raise --host-mem",
                       plan->h2d_slots, plan->d2h_slots, MIB(plan->pinned_bytes), MIB(plan->host_budget));
    estimates(in, plan);
    return OC_OK;
}

/* Diagonal tiles seed their panel's top-k lists, so each comes one column before the first
 * tile that needs its floors and no tile waits for the selection of the tile just before
 * it; except (0,1), which comes before D2: while panel 2 is still being uploaded the GPU
 * then has (0,1) to run instead of nothing:
 *   D0, D1, (0,1), D2, D3, (0,2), (1,2), D4, (0,3), (1,3), (2,3), ... */
static void seeded_order(int64_t panels, int64_t *order)
{
    int64_t t = 0;
    for (int64_t d = 0; d < panels && d < 3; ++d) {
        order[2 * t] = order[2 * t + 1] = d, t++;
        if (d == 1) order[2 * t] = 0, order[2 * t + 1] = 1, t++;
    }
    for (int64_t j = 2; j < panels; ++j) {
        if (j + 1 < panels) order[2 * t] = order[2 * t + 1] = j + 1, t++;
        for (int64_t i = 0; i < j; ++i) order[2 * t] = i, order[2 * t + 1] = j, t++;
    }
}

int64_t *oc_engine_plan_order(const oc_engine_plan *plan, int symmetric, int seeded)
{
    const oc_tile_plan *tp = &plan->tiles;
    int64_t *order = malloc((size_t)tp->ntiles * 2 * sizeof *order);
    if (!order) return NULL;
    if (seeded && symmetric && tp->resident) seeded_order(tp->panels_a, order);
    else oc_tile_plan_order(tp, symmetric, order);
    return order;
}

oc_status oc_engine_plan_render(oc_context *ctx, const oc_engine_plan *plan, const char *where, int json, char **out)
{
    const oc_tile_plan *tp = &plan->tiles;
    oc_text t = {0};
    if (json) {
        oc_text_printf(&t, "{\"where\": ");
        oc_text_json_string(&t, where);
        oc_text_printf(
            &t,
            ", \"tile\": %lld, \"tiles\": %lld, \"panels_a\": %lld, \"panels_b\": %lld, \"resident\": %s, "
            "\"group\": %d, \"panel_slots\": %d, \"panel_bytes\": %lld, \"out_slots\": %d, \"out_bytes\": %lld, "
            "\"mirror_on_device\": %s, \"panel_loads\": %lld, \"device_budget\": %lld, "
            "\"device_budget_given\": %s, \"device_bytes\": %lld, \"host_budget\": %lld, \"pinned_bytes\": %lld, "
            "\"h2d_slots\": %d, \"h2d_slot_bytes\": %lld, \"d2h_slots\": %d, \"d2h_slot_bytes\": %lld, "
            "\"sinks\": %d, \"copy_threads\": %d, \"workers\": %d, \"kernel_seconds\": %.6g, "
            "\"upload_seconds\": %.6g, \"output_seconds\": %.6g, \"bound\": \"%s\"}\n",
            (long long)tp->tile, (long long)tp->ntiles, (long long)tp->panels_a, (long long)tp->panels_b,
            tp->resident ? "true" : "false", tp->group, tp->panel_slots, (long long)tp->panel_bytes, tp->out_slots,
            (long long)tp->out_bytes, tp->mirror_output ? "true" : "false", (long long)tp->panel_loads,
            (long long)plan->device_budget, plan->device_budget_given ? "true" : "false", (long long)tp->device_bytes,
            (long long)plan->host_budget, (long long)plan->pinned_bytes, plan->h2d_slots,
            (long long)plan->h2d_slot_bytes, plan->d2h_slots, (long long)plan->d2h_slot_bytes, plan->sinks,
            plan->copy_threads, plan->workers, tp->kernel_seconds, plan->upload_seconds, plan->download_seconds,
            plan->bound);
        return oc_text_finish(ctx, &t, out);
    }
    oc_text_printf(&t, "plan for ");
    oc_text_shown(&t, where);
    oc_text_printf(&t, "\n");
    oc_text_printf(&t, "  tiles    %lld x %lld rows: %lld tiles over %lld x %lld panels, %s\n", (long long)tp->tile,
                   (long long)tp->tile, (long long)tp->ntiles, (long long)tp->panels_a, (long long)tp->panels_b,
                   tp->resident ? "every panel resident (each uploaded once)"
                                : "panels streamed past resident groups of A panels");
    if (!tp->resident)
        oc_text_printf(&t, "           groups of %d A panels, %lld panel uploads in all\n", tp->group,
                       (long long)tp->panel_loads);
    oc_text_printf(&t,
                   "  device   budget %.1f MiB (%s): %d panel slots of %.1f MiB, %d output slots of %.1f MiB%s; "
                   "%.1f MiB planned\n",
                   MIB(plan->device_budget),
                   plan->device_budget_given ? "--gpu-mem" : "share of free memory less headroom", tp->panel_slots,
                   MIB(tp->panel_bytes), tp->out_slots, MIB(tp->out_bytes),
                   tp->mirror_output ? " (mirrors made on the device)" : "", MIB(tp->device_bytes));
    oc_text_printf(&t, "  host     budget %.1f MiB: pinned %d upload slots of %.2f MiB", MIB(plan->host_budget),
                   plan->h2d_slots, MIB(plan->h2d_slot_bytes));
    if (plan->d2h_slots)
        oc_text_printf(&t, ", %d download slots of %.2f MiB", plan->d2h_slots, MIB(plan->d2h_slot_bytes));
    oc_text_printf(&t, "; %.1f MiB pinned\n", MIB(plan->pinned_bytes));
    oc_text_printf(&t, "  threads  %d sinks, %d copy threads, one pool of %d workers and the driving thread\n",
                   plan->sinks, plan->copy_threads, plan->workers);
    oc_text_printf(&t, "  estimate kernels %.3f s, uploads %.3f s, output %.3f s: bound by %s\n", tp->kernel_seconds,
                   plan->upload_seconds, plan->download_seconds, plan->bound);
    return oc_text_finish(ctx, &t, out);
}
