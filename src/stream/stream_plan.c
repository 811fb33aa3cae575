/* stream_plan.c - chunks, slots and staging of an oc_stream_run job (stream_plan.h). */
#include "stream/stream_plan.h"

#include "core/error.h"
#include "engine/engine_plan.h"

#define MAX_H2D_SLOT (8LL << 20)
#define MAX_D2H_SLOT (4LL << 20)
#define D2H_SPARE 4
#define PAGE 4096LL
#define ROW_ROUND 256
#define MIB(x) ((double)(x) / 1048576.0)

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Pinned slots: equal shares of a quarter of the host budget, as the engine cuts them. */
static void staging(const oc_stream_plan_input *in, oc_stream_plan *plan)
{
    plan->host_budget = in->host_budget > 0 ? in->host_budget : 4 * OC_ENGINE_DEFAULT_STAGING;
    plan->h2d_slots = in->up_row_bytes > 0 || in->side_bytes > 0 ? OC_STREAM_H2D_SLOTS : 0;
    plan->d2h_slots = in->down_row_bytes > 0 || in->result_bytes > 0 ? plan->sinks + D2H_SPARE : 0;
    int slots = plan->h2d_slots + plan->d2h_slots;
    int64_t share = slots ? plan->host_budget / 4 / slots : 0;
    share = share / PAGE * PAGE;
    if (share < PAGE) share = PAGE; /* the smallest slot; checked against the budget below */
    plan->h2d_slot_bytes = plan->h2d_slots ? min64(share, MAX_H2D_SLOT) : 0;
    plan->d2h_slot_bytes = plan->d2h_slots ? min64(share, MAX_D2H_SLOT) : 0;
    plan->pinned_bytes = plan->h2d_slots * plan->h2d_slot_bytes + plan->d2h_slots * plan->d2h_slot_bytes;
}

oc_status oc_stream_plan_make(oc_context *ctx, const oc_stream_plan_input *in, oc_stream_plan *plan)
{
    *plan = (oc_stream_plan){0};
    const char *dev = in->device_name ? in->device_name : "the device";
    oc_engine_plan_input ei = {.device_total = in->device_total,
                               .device_free = in->device_free,
                               .gpu_mem_bytes = in->gpu_mem_bytes,
                               .gpu_mem_fraction = in->gpu_mem_fraction,
                               .cores = in->cores,
                               .dense_output = in->down_row_bytes > 0 || in->result_bytes > 0,
                               .device_name = dev};
    oc_engine_plan ep;
    OC_CHECK(ctx, oc_engine_plan_device_budget(ctx, &ei, &ep));
    OC_CHECK(ctx, oc_engine_plan_threads(ctx, &ei, &ep));
    plan->device_budget = ep.device_budget;
    plan->device_budget_given = ep.device_budget_given;
    plan->sinks = ep.sinks, plan->copy_threads = ep.copy_threads, plan->workers = ep.workers;
    if (plan->sinks < 1 && (in->down_row_bytes > 0 || in->result_bytes > 0)) plan->sinks = 1;

    int k = in->in_flight > 0 ? in->in_flight : OC_STREAM_IN_FLIGHT;
    plan->in_flight = k;
    /* Every buffer the pool hands out is rounded up to OC_POOL_ALIGN (256) bytes. */
    int64_t side = 0;
    if (in->side_bytes) side = in->side_bytes + 256 * in->side_buffers;
    int64_t slack = 256 * in->chunked_buffers;
    int64_t left = plan->device_budget - side - k * slack;
    /* No chunked array (only the extent and whole arrays): rows cost no device memory. */
    int64_t fit = left <= 0 ? 0 : in->dev_row_bytes > 0 ? left / k / in->dev_row_bytes : in->extent;
    if (fit < 1)
        return oc_fail(ctx, OC_ERR_DEVICE_NO_MEMORY,
                       "stream: the smallest plan (%d chunks in flight of one row: %lld B each, side inputs %.1f MiB) "
                       "needs %.1f MiB but the device budget of %s is %.1f MiB%s",
                       k, (long long)in->dev_row_bytes, MIB(in->side_bytes),
                       MIB(side + k * (slack + in->dev_row_bytes)), dev, MIB(plan->device_budget),
                       plan->device_budget_given ? "; raise --gpu-mem" : "");
    int64_t rows;
    if (in->chunk_rows > 0) {
        if (in->chunk_rows > fit && in->chunk_rows < in->extent)
            return oc_fail(ctx, OC_ERR_DEVICE_NO_MEMORY,
                           "stream: chunks of %lld rows need %.1f MiB for %d in flight but the device budget of %s "
                           "leaves %.1f MiB beside the side inputs; at most %lld rows fit",
                           (long long)in->chunk_rows, MIB(k * (in->chunk_rows * in->dev_row_bytes + slack)), k, dev,
                           MIB(left + k * slack), (long long)fit);
        rows = min64(in->chunk_rows, in->extent);
        if (rows > fit)
            return oc_fail(ctx, OC_ERR_DEVICE_NO_MEMORY,
                           "stream: chunks of %lld rows do not fit the device budget of %s (%.1f MiB); at most %lld "
                           "rows fit",
                           (long long)rows, dev, MIB(plan->device_budget), (long long)fit);
    } else {
        rows = min64(fit, in->extent);
        int64_t moved = in->up_row_bytes + in->down_row_bytes;
        if (moved > 0) {
            int64_t by_transfer = OC_STREAM_CHUNK_TRANSFER / moved;
            if (by_transfer < 1) by_transfer = 1;
            rows = min64(rows, by_transfer);
            rows = min64(rows, (in->extent + k - 1) / k);
        } else {
            rows = min64(rows, OC_STREAM_MAX_ROWS);
        }
        if (rows > ROW_ROUND) rows = rows / ROW_ROUND * ROW_ROUND;
    }
    plan->chunk_rows = rows;
    plan->chunks = (in->extent + rows - 1) / rows;
    /* Fewer chunks than slots: the extra slots would only hold memory. */
    if (plan->chunks < plan->in_flight && in->in_flight <= 0)
        plan->in_flight = plan->chunks < 2 ? 1 : (int)plan->chunks;
    plan->device_bytes = side + plan->in_flight * (rows * in->dev_row_bytes + slack);
    staging(in, plan);
    if (plan->pinned_bytes > plan->host_budget)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "stream: the smallest staging (%d upload and %d download slots of one page: %.1f MiB) exceeds "
                       "the host budget of %.1f MiB; raise --host-mem",
                       plan->h2d_slots, plan->d2h_slots, MIB(plan->pinned_bytes), MIB(plan->host_budget));
    return OC_OK;
}
