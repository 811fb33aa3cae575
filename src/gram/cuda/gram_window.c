/*
 * gram_window.c - the tiles of a several-device Gram job that run split on K (gram_window.h).
 */
#include "gram/cuda/gram_window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/trace.h"
#include "engine/tile_plan.h"
#include "mem/pool.h"

/* OUTCORE_CUDA_SPLIT_K: "0" never; "W:S" the first W panels in S slices, whatever the device
 * count; unset or empty: the defaults. */
static oc_status read_setting(oc_context *ctx, int *off, int64_t *panels, int *slices)
{
    const char *v = getenv("OUTCORE_CUDA_SPLIT_K");
    *off = 0, *panels = 0, *slices = 0;
    if (!v || !*v) return OC_OK;
    if (strcmp(v, "0") == 0) {
        *off = 1;
        return OC_OK;
    }
    long long w;
    int s;
    char end;
    if (sscanf(v, "%lld:%d%c", &w, &s, &end) != 2 || w < 2 || s < 2 || s > OC_ENGINE_MAX_SLICES)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "OUTCORE_CUDA_SPLIT_K=%s: expected 0, or PANELS:SLICES (at least 2 panels, 2 to %d slices)", v,
                       OC_ENGINE_MAX_SLICES);
    *panels = w, *slices = s;
    return OC_OK;
}

/* Tiles of the order whose two panels are both in the window. */
static int64_t window_tiles(const oc_tile_plan *tp, int symmetric, const int64_t *order, const unsigned char *sliced)
{
    const int side_b = symmetric ? 0 : 1;
    int64_t n = 0;
    for (int64_t t = 0; t < tp->ntiles; ++t)
        n += sliced[oc_tile_panel_key(0, order[2 * t])] && sliced[oc_tile_panel_key(side_b, order[2 * t + 1])];
    return n;
}

/* Whether every part's window counts fit what its plan leaves of its budget. */
static int window_fits(const oc_gram_part *const *parts, int count, int64_t tiles)
{
    const int64_t T = parts[0]->plan.tiles.tile;
    const int64_t each = (T * T * 4 + OC_POOL_ALIGN - 1) / OC_POOL_ALIGN * OC_POOL_ALIGN;
    const int64_t most = (tiles + count - 1) / count;
    for (int d = 0; d < count; ++d) {
        const oc_engine_plan *plan = &parts[d]->plan;
        /* A margin for the pool's rounding and the selection's allocations past the plan. */
        const int64_t left = plan->device_budget - plan->tiles.device_bytes - (64 << 20);
        if (most * each > left) return 0;
    }
    return 1;
}

oc_status oc_gram_window_plan(oc_context *ctx, const oc_gram_part *const *parts, int count, int symmetric,
                              int64_t *order, oc_gram_window **out)
{
    *out = NULL;
    int off;
    int64_t want;
    int slices;
    OC_CHECK(ctx, read_setting(ctx, &off, &want, &slices));
    if (off || count < 2) return OC_OK;
    for (int d = 0; d < count; ++d)
        if (!parts[d]->plan.tiles.resident || !oc_gram_part_splits_k(parts[d])) return OC_OK;
    const oc_tile_plan *tp = &parts[0]->plan.tiles;
    const int64_t words = parts[0]->words, kblocks = (words + 15) / 16; /* the kernel's 1024-bit K blocks */
    if (slices == 0) slices = OC_GRAM_WINDOW_SLICES;
    if (slices > kblocks) slices = (int)kblocks;
    if (slices < 2) return OC_OK;

    const int64_t nkeys = 2 * (tp->panels_a > tp->panels_b ? tp->panels_a : tp->panels_b);
    oc_gram_window *w = calloc(1, sizeof *w);
    int64_t *need = malloc((size_t)nkeys * sizeof *need),
            *reordered = malloc((size_t)(2 * (tp->ntiles ? tp->ntiles : 1)) * 8);
    if (w) w->sliced = calloc((size_t)nkeys, 1);
    int64_t n = need ? oc_tile_order_first_need(order, tp->ntiles, symmetric, nkeys, need) : -1;
    if (!w || !w->sliced || !reordered || n < 0) {
        free(need), free(reordered);
        oc_gram_window_free(w);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the window of tiles split on K");
    }
    /* gram_window.h says how many by default. */
    int64_t panels = want;
    if (panels == 0) {
        panels = ((int64_t)OC_GRAM_WINDOW_PANELS_PER_DEVICE * count * OC_GRAM_WINDOW_TILE + tp->tile - 1) / tp->tile;
        if (panels > (3 * n + 3) / 4) panels = (3 * n + 3) / 4;
    }
    if (panels > n) panels = n;
    int64_t tiles = 0;
    for (; panels >= 2; --panels) {
        memset(w->sliced, 0, (size_t)nkeys);
        for (int64_t i = 0; i < panels; ++i) w->sliced[need[i]] = 1;
        tiles = window_tiles(tp, symmetric, order, w->sliced);
        if (window_fits(parts, count, tiles)) break;
    }
    free(need);
    if (panels < 2 || tiles == 0) {
        free(reordered);
        oc_gram_window_free(w);
        return OC_OK;
    }
    /* The window's tiles first, each part of the order keeping its order. */
    const int side_b = symmetric ? 0 : 1;
    int64_t head = 0, tail = tiles;
    for (int64_t t = 0; t < tp->ntiles; ++t) {
        const int64_t I = order[2 * t], J = order[2 * t + 1];
        const int in = w->sliced[oc_tile_panel_key(0, I)] && w->sliced[oc_tile_panel_key(side_b, J)];
        int64_t *at = reordered + 2 * (in ? head++ : tail++);
        at[0] = I, at[1] = J;
    }
    memcpy(order, reordered, (size_t)(2 * tp->ntiles) * 8);
    free(reordered);
    w->panels = panels;
    w->win = (oc_engine_window){.slices = slices, .keys = nkeys, .sliced = w->sliced, .tiles = tiles, .devices = count};
    for (int s = 0; s <= slices; ++s) w->win.bounds[s] = s == slices ? words : kblocks * s / slices * 16;
    if (oc_tracing())
        fprintf(stderr,
                "outcore cuda: the first %lld panels in %d slices of K: %lld tiles split, %.2f GB of counts a device\n",
                (long long)panels, slices, (long long)tiles,
                (double)((tiles + count - 1) / count) * (double)(tp->tile * tp->tile * 4) / 1e9);
    *out = w;
    return OC_OK;
}

int64_t oc_gram_window_need(const oc_gram_window *w, const int64_t *need, int64_t n, int64_t *out)
{
    int64_t k = 0;
    for (int s = 0; s < w->win.slices; ++s)
        for (int64_t i = 0; i < n; ++i)
            if (w->sliced[need[i]]) out[k++] = oc_engine_window_key(&w->win, need[i], s);
    for (int64_t i = 0; i < n; ++i)
        if (!w->sliced[need[i]]) out[k++] = need[i];
    return k;
}

void oc_gram_window_free(oc_gram_window *w)
{
    if (!w) return;
    free(w->sliced);
    free(w);
}
