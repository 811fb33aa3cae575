/*
 * tile_plan.c - the tile planner and the panel cache (see tile_plan.h).
 *
 * Cost model used to rank the plans that fit. Uploads, kernels and downloads run on their
 * own streams and overlap, so a plan costs its slowest stage, plus what nothing overlaps:
 * the first panel's upload before the first kernel, the last tile's download after the
 * last, and about 30 microseconds of issue and synchronisation work per tile. Uploads of
 * panels count at a conservative 20 GB/s (staged pinned copies), output tiles at 25 GB/s.
 * The kernels compute the same pairs under every plan, but not in the same time: a tile
 * runs whole waves of CTAs, and the last wave of a small tile leaves SMs idle (smaller
 * tiles kept the kernels further below the one-tile rate: bench/RESULTS.md). With the
 * kernel model given, each tile costs its waves, or only the fraction of a wave its CTAs
 * fill when the next tile's CTAs take the idle SMs (two compute streams).
 */
#include "engine/tile_plan.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MAX_TILE 16384
#define H2D_RATE OC_PLAN_H2D_RATE
#define D2H_RATE OC_PLAN_D2H_RATE
#define TILE_OVERHEAD 30e-6

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

oc_status oc_panel_cache_init(oc_context *ctx, oc_panel_cache *c, int slots, int64_t nkeys)
{
    memset(c, 0, sizeof *c);
    c->slots = slots;
    c->nkeys = nkeys;
    c->slot_key = malloc((size_t)slots * sizeof *c->slot_key);
    c->slot_used = calloc((size_t)slots, sizeof *c->slot_used);
    c->key_slot = malloc((size_t)nkeys * sizeof *c->key_slot);
    if (!c->slot_key || !c->slot_used || !c->key_slot) {
        oc_panel_cache_free(c);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the panel cache (%d slots, %lld panels)", slots,
                       (long long)nkeys);
    }
    for (int s = 0; s < slots; ++s) c->slot_key[s] = -1;
    for (int64_t k = 0; k < nkeys; ++k) c->key_slot[k] = -1;
    return OC_OK;
}

void oc_panel_cache_free(oc_panel_cache *c)
{
    free(c->slot_key);
    free(c->slot_used);
    free(c->key_slot);
    memset(c, 0, sizeof *c);
}

int oc_panel_cache_place(oc_panel_cache *c, int64_t key, int64_t keep, int *load)
{
    int s = c->key_slot[key];
    *load = 0;
    if (s < 0) {
        /* An empty slot first, else the least recently used one that is not `keep`. */
        int64_t best = INT64_MAX;
        for (int i = 0; i < c->slots; ++i) {
            if (c->slot_key[i] == keep && keep >= 0) continue;
            int64_t age = c->slot_key[i] < 0 ? -1 : c->slot_used[i];
            if (age < best) {
                best = age;
                s = i;
            }
        }
        if (c->slot_key[s] >= 0) c->key_slot[c->slot_key[s]] = -1;
        c->slot_key[s] = key;
        c->key_slot[key] = s;
        *load = 1;
    }
    c->slot_used[s] = ++c->clock;
    return s;
}

/* Groups of A panels in turn. The panels of B stream past a group in alternating
 * directions, so that the last B panels a group used are the first the next group needs
 * while they are still in their slots; for A·Aᵀ the group first computes its own triangle
 * (each A panel as it arrives, with the group's panels before it), then streams the panels
 * after the group from the last down, so the two that stay resident are the next group's
 * first two and its triangle starts on tiles that need no upload. */
void oc_tile_plan_order(const oc_tile_plan *plan, int symmetric, int64_t *order)
{
    int64_t t = 0;
    for (int64_t g0 = 0, g = 0; g0 < plan->panels_a; g0 += plan->group, ++g) {
        int64_t g1 = g0 + plan->group < plan->panels_a ? g0 + plan->group : plan->panels_a;
        if (symmetric) {
            for (int64_t j = g0; j < g1; ++j)
                for (int64_t i = g0; i <= j; ++i) {
                    order[2 * t] = i;
                    order[2 * t + 1] = j;
                    t++;
                }
            for (int64_t j = plan->panels_b - 1; j >= g1; --j)
                for (int64_t i = g0; i < g1; ++i) {
                    order[2 * t] = i;
                    order[2 * t + 1] = j;
                    t++;
                }
            continue;
        }
        for (int64_t s = 0; s < plan->panels_b; ++s) {
            int64_t j = g % 2 ? plan->panels_b - 1 - s : s;
            for (int64_t i = g0; i < g1; ++i) {
                order[2 * t] = i;
                order[2 * t + 1] = j;
                t++;
            }
        }
    }
}

int64_t oc_tile_order_first_need(const int64_t *order, int64_t ntiles, int symmetric, int64_t nkeys, int64_t *keys)
{
    unsigned char *seen = calloc((size_t)(nkeys > 0 ? nkeys : 1), 1);
    if (!seen) return -1;
    int64_t n = 0;
    for (int64_t t = 0; t < ntiles; ++t) {
        const int64_t k[2] = {oc_tile_panel_key(0, order[2 * t]),
                              oc_tile_panel_key(symmetric ? 0 : 1, order[2 * t + 1])};
        for (int i = 0; i < 2; ++i)
            if (k[i] < nkeys && !seen[k[i]]) seen[k[i]] = 1, keys[n++] = k[i];
    }
    free(seen);
    return n;
}

/* Uploads the tile order causes with the plan's slots (what the pipeline will do). */
static oc_status count_loads(oc_context *ctx, oc_tile_plan *plan, int symmetric)
{
    if (plan->resident) {
        plan->panel_loads = symmetric ? plan->panels_a : plan->panels_a + plan->panels_b;
        return OC_OK;
    }
    int64_t *order = malloc((size_t)plan->ntiles * 2 * sizeof *order);
    if (!order)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the tile order (%lld tiles)", (long long)plan->ntiles);
    oc_panel_cache cache;
    int64_t maxp = plan->panels_a > plan->panels_b ? plan->panels_a : plan->panels_b;
    oc_status st = oc_panel_cache_init(ctx, &cache, plan->panel_slots, 2 * maxp);
    if (st != OC_OK) {
        free(order);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    oc_tile_plan_order(plan, symmetric, order);
    int64_t loads = 0;
    for (int64_t t = 0; t < plan->ntiles; ++t) {
        int64_t ka = oc_tile_panel_key(0, order[2 * t]), kb = oc_tile_panel_key(symmetric ? 0 : 1, order[2 * t + 1]);
        int load;
        oc_panel_cache_place(&cache, ka, kb, &load);
        loads += load;
        if (kb != ka) {
            oc_panel_cache_place(&cache, kb, ka, &load);
            loads += load;
        }
    }
    plan->panel_loads = loads;
    oc_panel_cache_free(&cache);
    free(order);
    return OC_OK;
}

/* Fills a plan for tile edge T, or returns 0 when it does not fit the budget. */
static int plan_for_tile(const oc_tile_plan_input *in, int64_t T, int mirror, oc_tile_plan *pl)
{
    memset(pl, 0, sizeof *pl);
    pl->tile = T;
    pl->panels_a = ceil_div(in->n, T);
    pl->panels_b = in->symmetric ? pl->panels_a : ceil_div(in->p, T);
    pl->panel_bytes = T * in->row_bytes;
    pl->mirror_output = mirror;
    pl->out_bytes = T * T * in->elem_size * (mirror ? 2 : 1) + T * in->out_edge_bytes;
    /* Two output slots let the kernel fill one while the other drains to the host, or two
     * overlapping kernels write each their own. */
    pl->out_slots = in->keep_output || in->overlap_tiles ? 2 : 1;
    int64_t total_panels = in->symmetric ? pl->panels_a : pl->panels_a + pl->panels_b;
    /* A third slot when a selection after each tile frees its slot, where the panels stay
     * resident beside it: tile t + 2 then need not wait for tile t's selection. */
    if (in->selection_frees && pl->out_slots == 2 &&
        in->budget - in->fixed_bytes - 3 * pl->out_bytes >= total_panels * pl->panel_bytes)
        pl->out_slots = 3;
    int64_t room = in->budget - in->fixed_bytes - pl->out_slots * pl->out_bytes;
    if (room < 0) return 0;
    int64_t fit = room / pl->panel_bytes;
    int64_t need_min = total_panels == 1 ? 1 : 2;
    if (fit < need_min) return 0;
    pl->resident = fit >= total_panels;
    pl->panel_slots = (int)(pl->resident ? total_panels : (fit < INT32_MAX ? fit : INT32_MAX));
    /* Streaming keeps two slots for the passing B panels (one computes, one loads). */
    pl->group = pl->resident ? (int)pl->panels_a : (pl->panel_slots >= 3 ? pl->panel_slots - 2 : 1);
    if (pl->group > pl->panels_a) pl->group = (int)pl->panels_a;
    pl->ntiles = in->symmetric ? pl->panels_a * (pl->panels_a + 1) / 2 : pl->panels_a * pl->panels_b;
    pl->device_bytes = in->fixed_bytes + pl->out_slots * pl->out_bytes + pl->panel_slots * pl->panel_bytes;
    return 1;
}

/* CTAs of a tile with `rows` x `cols` that compute: for a diagonal tile of A·Aᵀ only the
 * blocks reaching the upper triangle (the kernels skip the others at once). */
static int64_t tile_ctas(const oc_tile_plan_input *in, int64_t rows, int64_t cols, int upper_only)
{
    int64_t grid_m = ceil_div(rows, in->cta_rows), grid_n = ceil_div(cols, in->cta_cols), ctas = 0;
    if (!upper_only) return grid_m * grid_n;
    for (int64_t i = 0; i < grid_m; ++i) {
        int64_t first = i * in->cta_rows / in->cta_cols;
        ctas += grid_n > first ? grid_n - first : 0;
    }
    return ctas;
}

static double tile_kernel_seconds(const oc_tile_plan_input *in, int64_t ctas)
{
    double waves = (double)ctas / in->concurrent_ctas;
    if (!in->overlap_tiles) waves = (double)ceil_div(ctas, in->concurrent_ctas);
    return waves * in->cta_seconds;
}

/* The kernel time of every tile of the plan: tiles differ only by their panels' rows and
 * by being on the diagonal, so each kind is counted rather than each tile visited. */
static double plan_kernel_seconds(const oc_tile_plan_input *in, const oc_tile_plan *pl)
{
    if (in->cta_rows <= 0 || in->cta_cols <= 0 || in->concurrent_ctas <= 0) return 0;
    int64_t T = pl->tile, last_a = in->n - (pl->panels_a - 1) * T, last_b = in->p - (pl->panels_b - 1) * T;
    int64_t full_a = pl->panels_a - 1, full_b = pl->panels_b - 1;
    double s = 0;
    if (in->symmetric) {
        /* Off-diagonal: full x full, full x last; diagonal: full ones and the last. */
        s += (double)(full_a * (full_a - 1) / 2) * tile_kernel_seconds(in, tile_ctas(in, T, T, 0));
        s += (double)full_a * tile_kernel_seconds(in, tile_ctas(in, T, last_a, 0));
        s += (double)full_a * tile_kernel_seconds(in, tile_ctas(in, T, T, 1));
        s += tile_kernel_seconds(in, tile_ctas(in, last_a, last_a, 1));
    } else {
        s += (double)(full_a * full_b) * tile_kernel_seconds(in, tile_ctas(in, T, T, 0));
        s += (double)full_a * tile_kernel_seconds(in, tile_ctas(in, T, last_b, 0));
        s += (double)full_b * tile_kernel_seconds(in, tile_ctas(in, last_a, T, 0));
        s += tile_kernel_seconds(in, tile_ctas(in, last_a, last_b, 0));
    }
    return s;
}

static double plan_cost(const oc_tile_plan_input *in, oc_tile_plan *pl)
{
    double h2d = (double)pl->panel_loads * (double)pl->panel_bytes / H2D_RATE;
    /* Every result element leaves the device once, whatever the tiles: for A·Aᵀ the upper
     * triangle only when the host makes the mirrors. */
    double elems = (double)in->n * (double)in->p * (in->symmetric && !pl->mirror_output ? 0.5 : 1.0);
    double d2h = in->keep_output ? elems * (double)in->elem_size / D2H_RATE : 0;
    pl->kernel_seconds = plan_kernel_seconds(in, pl);
    double slowest = h2d > d2h ? h2d : d2h;
    if (pl->kernel_seconds > slowest) slowest = pl->kernel_seconds;
    double cost = slowest + (double)pl->panel_bytes / H2D_RATE + (double)pl->ntiles * TILE_OVERHEAD;
    if (in->keep_output) cost += (double)pl->out_bytes / D2H_RATE;
    pl->cost_seconds = cost;
    return cost;
}

oc_status oc_tile_plan_make(oc_context *ctx, const oc_tile_plan_input *in, oc_tile_plan *plan)
{
    static const int64_t edges[] = {16384, 12288, 8192, 6144, 4096, 3072, 2048, 1536, 1024, 768, 512, 256};
    int64_t g = in->granularity;
    int64_t largest = ceil_div(in->n > in->p ? in->n : in->p, g) * g;
    int64_t first = in->tile > 0 ? ceil_div(in->tile, g) * g : (largest < MAX_TILE ? largest : MAX_TILE);
    int found = 0;
    double best_cost = 0;
    /* Candidate edges: the forced one; else one tile over everything when that is small
     * enough, then the table's edges below it. */
    int64_t cand[1 + sizeof edges / sizeof edges[0]];
    int ncand = 0;
    cand[ncand++] = first;
    if (in->tile <= 0)
        for (size_t i = 0; i < sizeof edges / sizeof edges[0]; ++i)
            if (edges[i] < first && edges[i] % g == 0) cand[ncand++] = edges[i];
    /* Mirrored output slots first: they cost device memory but spare the host a transposed
     * scatter of half the result, which is slower than everything else the job does. */
    for (int mirror = in->mirror_output != 0; mirror >= 0 && !found; --mirror) {
        for (int c = 0; c < ncand; ++c) {
            oc_tile_plan pl;
            if (!plan_for_tile(in, cand[c], mirror, &pl)) continue;
            OC_CHECK(ctx, count_loads(ctx, &pl, in->symmetric));
            double cost = plan_cost(in, &pl);
            if (!found || cost < best_cost) {
                *plan = pl;
                best_cost = cost;
                found = 1;
            }
        }
    }
    if (found) return OC_OK;

    int64_t T = in->tile > 0 ? first : g;
    int64_t total_panels = in->symmetric ? ceil_div(in->n, T) : ceil_div(in->n, T) + ceil_div(in->p, T);
    int64_t out_bytes = T * T * in->elem_size + T * in->out_edge_bytes;
    int64_t need =
        in->fixed_bytes + (in->keep_output ? 2 : 1) * out_bytes + (total_panels == 1 ? 1 : 2) * T * in->row_bytes;
    /* A budget the caller chose is a bad argument when nothing fits it; a budget taken from
     * the memory free on the device is a resource shortage. */
    return oc_fail(
        ctx, in->budget_given ? OC_ERR_INVALID_ARGUMENT : OC_ERR_DEVICE_NO_MEMORY,
        "the smallest plan (tiles of %lld rows: %s panels of %.1f MiB, output slots of %.1f MiB) needs %.1f MiB "
        "of device memory but the budget is %.1f MiB; raise --gpu-mem",
        (long long)T, total_panels == 1 ? "one" : "two", (double)(T * in->row_bytes) / 1048576.0,
        (double)out_bytes / 1048576.0, (double)need / 1048576.0, (double)in->budget / 1048576.0);
}
