/*
 * tile_plan.h - how a Gram job is cut into tiles that fit a device memory budget.
 *
 * Device agnostic: the CUDA pipeline asks for a plan and follows it; tests check plans
 * without a GPU. The output is cut into tiles of T x T; row panel I holds rows [I*T, I*T+T)
 * of A (column panels of B likewise) and tile (I, J) needs panels I and J on the device.
 * Panels live in a fixed number of device slots; when all panels fit they are uploaded
 * once, otherwise the tile order keeps a group of A panels resident while the panels of B
 * stream past it, so each streamed panel serves `group` tiles per upload.
 */
#ifndef OC_ENGINE_TILE_PLAN_H
#define OC_ENGINE_TILE_PLAN_H

#include <stdint.h>

#include "outcore.h"

/* The transfer rates plans are ranked by (tile_plan.c says why these). */
#define OC_PLAN_H2D_RATE 20e9
#define OC_PLAN_D2H_RATE 25e9

typedef struct oc_tile_plan_input {
    int64_t n, p;           /* rows of A and of B */
    int64_t row_bytes;      /* bytes of one packed row on the device */
    int64_t elem_size;      /* bytes of one result element */
    int symmetric;          /* A·Aᵀ: only tiles with I <= J, one set of panels */
    int keep_output;        /* 0: output discarded on the device (one output slot suffices) */
    int mirror_output;      /* want output slots that also hold the tile's mirror (A·Aᵀ) */
    int64_t budget;         /* device bytes available to the plan */
    int budget_given;       /* the caller set the budget (--gpu-mem SIZE): too small is its error */
    int64_t fixed_bytes;    /* device bytes the job needs besides panels and output slots */
    int64_t out_edge_bytes; /* bytes each output slot holds per row of its tile besides the tile
                              * (per-row state of a selection that runs in the kernel) */
    int64_t tile;           /* forced tile edge (0 = choose); rounded up to granularity */
    int64_t granularity;    /* tile edges are multiples of this (the kernel's CTA tile) */
    /* The kernel, for the kernel time of each plan (cta_rows == 0: transfers alone rank the
     * plans). A tile runs ceil(CTAs / concurrent_ctas) waves of cta_seconds each, or, when
     * consecutive tiles overlap on two streams, the fraction of a wave its CTAs fill. */
    int64_t cta_rows, cta_cols; /* output block of one CTA */
    int concurrent_ctas;        /* CTAs resident on the device at once */
    double cta_seconds;         /* one CTA over a whole row (all K) */
    int overlap_tiles;          /* the next tile's CTAs fill the last wave of the previous one */
    int selection_frees;        /* a selection that runs after each tile frees its output slot */
} oc_tile_plan_input;

typedef struct oc_tile_plan {
    int64_t tile;               /* T */
    int64_t panels_a, panels_b; /* panels of A and of B (panels_b == panels_a when symmetric) */
    int resident;               /* every panel stays on the device: each is uploaded once */
    int panel_slots;            /* device panel buffers */
    int out_slots;              /* device output tile buffers */
    int64_t panel_bytes;        /* one slot: T rows */
    int64_t out_bytes;          /* one output slot: T x T elements, twice that with mirror_output,
                              * and T * out_edge_bytes */
    int mirror_output;          /* the output slots hold mirrors (asked for, and it fit the budget) */
    int64_t device_bytes;       /* everything the plan allocates, fixed_bytes included */
    int group;                  /* A panels kept resident together while B panels stream */
    int64_t ntiles;
    int64_t panel_loads;   /* uploads the tile order causes with panel_slots slots (LRU) */
    double kernel_seconds; /* the kernel model's estimate for every tile (0 without one) */
    double cost_seconds;   /* the estimate the plan was chosen by */
} oc_tile_plan;

/* Chooses the plan with the least estimated job time that fits the budget (tile_plan.c
 * says how it is estimated); with mirror_output, a plan with mirrored output slots when any
 * fits, else one without (the mirror is then left to the host). OC_ERR_DEVICE_NO_MEMORY
 * when even the smallest plan (tile = granularity, two panel slots, one output slot) does
 * not fit: the message names its size and the budget. */
oc_status oc_tile_plan_make(oc_context *ctx, const oc_tile_plan_input *in, oc_tile_plan *plan);

/* The tile order of a plan: plan->ntiles pairs (I, J) into order[2 * t], order[2 * t + 1]. */
void oc_tile_plan_order(const oc_tile_plan *plan, int symmetric, int64_t *order);

/* Panel key of side (0 = A, 1 = B) and index: A·Aᵀ uses side 0 for both. */
static inline int64_t oc_tile_panel_key(int side, int64_t index) { return 2 * index + side; }

/* The panel keys of the first `ntiles` tiles of `order` in the order they are first needed
 * (tile by tile, a tile's A panel before its B panel) into keys (room for 2 x the larger
 * panel count); returns how many, or -1 when memory is short. For uploads that run ahead
 * of the tiles: a panel goes up before the first tile that needs it. */
int64_t oc_tile_order_first_need(const int64_t *order, int64_t ntiles, int symmetric, int64_t nkeys, int64_t *keys);

/* Rows of panel `index` when the matrix has `rows` rows. */
static inline int64_t oc_tile_panel_rows(const oc_tile_plan *plan, int64_t rows, int64_t index)
{
    int64_t r = rows - index * plan->tile;
    return r < plan->tile ? r : plan->tile;
}

/* The panel cache both the planner (to count uploads) and the pipeline (to place panels)
 * use, so the plan's figures are what the run does: `slots` device slots, least recently
 * used eviction, never evicting the other panel of the tile being placed. */
typedef struct oc_panel_cache {
    int slots;
    int64_t *slot_key;  /* key held by each slot, -1 when empty */
    int64_t *slot_used; /* last use (a counter) of each slot */
    int *key_slot;      /* slot holding each key, -1 when none */
    int64_t nkeys;
    int64_t clock;
} oc_panel_cache;

oc_status oc_panel_cache_init(oc_context *ctx, oc_panel_cache *c, int slots, int64_t nkeys);
void oc_panel_cache_free(oc_panel_cache *c);

/* The slot for `key`; *load is set when the panel must be uploaded into it (the slot's
 * previous panel, if any, is evicted). `keep` is a key that must stay (-1 for none). */
int oc_panel_cache_place(oc_panel_cache *c, int64_t key, int64_t keep, int *load);

#endif
