/*
 * test_pool_plan.c - the device pool's accounting and the tile planner, without a GPU.
 *
 * The pool takes its allocators as callbacks, so malloc stands in for cudaMalloc here and
 * every rule is checked on any machine: the budget, the message of a request that does not
 * fit, RESERVE mode's arena (splitting and merging), fault injection, the pinned budget.
 * The planner: resident plans when everything fits, streaming plans whose tile order covers
 * every I <= J tile once, the smallest-plan failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "malloc_ops.h"
#include "outcore.h"
#include "engine/tile_plan.h"
#include "mem/pool.h"

static void test_grow(oc_context *ctx)
{
    oc_pool *p = NULL;
    CHECK(oc_pool_create(ctx, &ops, 0, 1 << 20, OC_GPU_MEM_GROW, 1 << 20, &p) == OC_OK);
    void *a, *b, *c;
    CHECK(oc_pool_alloc(ctx, p, 400000, "a", &a) == OC_OK);
    CHECK(oc_pool_alloc(ctx, p, 400000, "b", &b) == OC_OK);
    CHECK(oc_pool_alloc(ctx, p, 400000, "a third buffer", &c) == OC_ERR_DEVICE_NO_MEMORY);
    const char *msg = oc_context_last_error(ctx);
    CHECK_MSG(strstr(msg, "a third buffer") && strstr(msg, "budget is 1.0 MiB") && strstr(msg, "in use") &&
                  strstr(msg, "raise --gpu-mem"),
              "message: %s", msg);
    oc_pool_stats st;
    oc_pool_get_stats(p, &st);
    CHECK_EQ_I64(st.allocations, 2);
    CHECK(st.current == st.peak && st.current >= 800000 && st.current <= st.budget);
    oc_pool_free(p, a);
    CHECK(oc_pool_alloc(ctx, p, 400000, "c", &c) == OC_OK);
    oc_pool_destroy(p);
    CHECK_EQ_I64(live, 0);
}

static void test_reserve(oc_context *ctx)
{
    oc_pool *p = NULL;
    CHECK(oc_pool_create(ctx, &ops, 0, 4096, OC_GPU_MEM_RESERVE, 4096, &p) == OC_OK);
    CHECK_EQ_I64(live, 4096); /* the arena, taken at once */
    void *x[16];
    for (int i = 0; i < 16; ++i) CHECK(oc_pool_alloc(ctx, p, 200, "slot", &x[i]) == OC_OK);
    CHECK(oc_pool_alloc(ctx, p, 1, "one more", &x[0]) == OC_ERR_DEVICE_NO_MEMORY);
    /* Free two neighbours: they merge and hold a 512-byte request. */
    oc_pool_free(p, x[4]);
    oc_pool_free(p, x[5]);
    void *y;
    CHECK(oc_pool_alloc(ctx, p, 512, "merged", &y) == OC_OK);
    CHECK(y == x[4]);
    oc_pool_destroy(p);
    CHECK_EQ_I64(live, 0);
}

static void test_faults(oc_context *ctx)
{
    setenv("OUTCORE_FAULT_DEVICE_ALLOC", "2", 1);
    setenv("OUTCORE_FAULT_PINNED_ALLOC", "1", 1);
    oc_pool *p = NULL;
    CHECK(oc_pool_create(ctx, &ops, 0, 1 << 20, OC_GPU_MEM_GROW, 1 << 20, &p) == OC_OK);
    void *a, *b;
    CHECK(oc_pool_alloc(ctx, p, 100, "first", &a) == OC_OK);
    CHECK(oc_pool_alloc(ctx, p, 100, "second", &b) == OC_ERR_DEVICE_NO_MEMORY);
    const char *msg = oc_context_last_error(ctx);
    /* Refused by the device below the budget: a larger budget cannot help. */
    CHECK_MSG(strstr(msg, "injected") && strstr(msg, "lower --gpu-mem") && !strstr(msg, "raise --gpu-mem"),
              "message: %s", msg);
    CHECK(oc_pool_alloc(ctx, p, 100, "third", &b) == OC_OK);
    CHECK(oc_pool_host_alloc(ctx, p, 100, "pinned", &b) == OC_ERR_NO_MEMORY);
    CHECK(oc_pool_host_alloc(ctx, p, 100, "pinned", &b) == OC_OK);
    CHECK(oc_pool_host_alloc(ctx, p, 1 << 20, "too much pinned", &b) == OC_ERR_NO_MEMORY);
    CHECK(strstr(oc_context_last_error(ctx), "--host-mem") != NULL);
    oc_pool_destroy(p);
    CHECK_EQ_I64(live, 0);
    unsetenv("OUTCORE_FAULT_DEVICE_ALLOC");
    unsetenv("OUTCORE_FAULT_PINNED_ALLOC");
}

/* A fault variable that is no whole number >= 0 refuses the pool, naming it, and allocates
 * nothing; never a prefix ("2x" as 2) nor text read as 0 (never). */
static void test_fault_values(oc_context *ctx)
{
    const char *vars[2] = {"OUTCORE_FAULT_DEVICE_ALLOC", "OUTCORE_FAULT_PINNED_ALLOC"};
    const char *bad[] = {"2x", "abc", "-1", "1e3", " 2", "99999999999999999999"};
    for (int v = 0; v < 2; ++v) {
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
            setenv(vars[v], bad[i], 1);
            oc_pool *p = NULL;
            CHECK_MSG(oc_pool_create(ctx, &ops, 0, 1 << 20, OC_GPU_MEM_RESERVE, 1 << 20, &p) == OC_ERR_INVALID_ARGUMENT,
                      "%s=%s", vars[v], bad[i]);
            CHECK(p == NULL);
            char want[96];
            snprintf(want, sizeof want, "%s=%s: expected a whole number >= 0", vars[v], bad[i]);
            CHECK_MSG(strcmp(oc_context_last_error(ctx), want) == 0, "message: %s", oc_context_last_error(ctx));
        }
        /* Empty is unset, 0 never. */
        const char *never[] = {"", "0"};
        for (int i = 0; i < 2; ++i) {
            setenv(vars[v], never[i], 1);
            oc_pool *p = NULL;
            void *a;
            CHECK(oc_pool_create(ctx, &ops, 0, 1 << 20, OC_GPU_MEM_GROW, 1 << 20, &p) == OC_OK);
            CHECK(oc_pool_alloc(ctx, p, 100, "first", &a) == OC_OK &&
                  oc_pool_host_alloc(ctx, p, 100, "pinned", &a) == OC_OK);
            oc_pool_destroy(p);
        }
        unsetenv(vars[v]);
    }
    CHECK_EQ_I64(live, 0);
}

/* A device allocator that refuses: for want of memory, or for another cause. */
static int refusal;
static int refusing_alloc(void *user, size_t bytes, void **out, char *why, size_t why_size)
{
    (void)user, (void)bytes, (void)out;
    snprintf(why, why_size, "%s", refusal == OC_MEM_OPS_NO_MEMORY ? "out of memory" : "an earlier error");
    return refusal;
}

static void test_device_refusals(oc_context *ctx)
{
    const oc_mem_ops refusing = {NULL, refusing_alloc, fake_free, fake_alloc, fake_free};
    oc_pool *p = NULL;
    CHECK(oc_pool_create(ctx, &refusing, 0, 1 << 20, OC_GPU_MEM_GROW, 1 << 20, &p) == OC_OK);
    void *a;
    refusal = OC_MEM_OPS_NO_MEMORY; /* below the budget: memory held elsewhere */
    CHECK(oc_pool_alloc(ctx, p, 100, "tile", &a) == OC_ERR_DEVICE_NO_MEMORY);
    const char *msg = oc_context_last_error(ctx);
    CHECK_MSG(strstr(msg, "lower --gpu-mem") && !strstr(msg, "raise --gpu-mem"), "message: %s", msg);
    refusal = 1; /* not for want of memory: no advice on the budget */
    CHECK(oc_pool_alloc(ctx, p, 100, "tile", &a) == OC_ERR_DEVICE);
    msg = oc_context_last_error(ctx);
    CHECK_MSG(strstr(msg, "an earlier error") && !strstr(msg, "--gpu-mem"), "message: %s", msg);
    oc_pool_destroy(p);
}

static void check_order(oc_context *ctx, const oc_tile_plan_input *in)
{
    oc_tile_plan plan;
    CHECK(oc_tile_plan_make(ctx, in, &plan) == OC_OK);
    CHECK(plan.device_bytes <= in->budget);
    CHECK(plan.tile % in->granularity == 0);
    int64_t *order = malloc((size_t)plan.ntiles * 2 * sizeof *order);
    char *seen = calloc((size_t)(plan.panels_a * plan.panels_b), 1);
    oc_tile_plan_order(&plan, in->symmetric, order);
    for (int64_t t = 0; t < plan.ntiles; ++t) {
        int64_t i = order[2 * t], j = order[2 * t + 1];
        CHECK(!in->symmetric || i <= j);
        CHECK(!seen[i * plan.panels_b + j]);
        seen[i * plan.panels_b + j] = 1;
    }
    int64_t expect = in->symmetric ? plan.panels_a * (plan.panels_a + 1) / 2 : plan.panels_a * plan.panels_b;
    CHECK_EQ_I64(plan.ntiles, expect);
    /* The panels in the order the tiles first need them: each once, by its first tile. */
    int64_t nkeys = 2 * (plan.panels_a > plan.panels_b ? plan.panels_a : plan.panels_b);
    int64_t *keys = malloc((size_t)nkeys * sizeof *keys), *first = malloc((size_t)nkeys * sizeof *first);
    for (int64_t k = 0; k < nkeys; ++k) first[k] = -1;
    for (int64_t t = 0; t < plan.ntiles; ++t) {
        int64_t ka = oc_tile_panel_key(0, order[2 * t]),
                kb = oc_tile_panel_key(in->symmetric ? 0 : 1, order[2 * t + 1]);
        if (first[ka] < 0) first[ka] = 2 * t;
        if (first[kb] < 0) first[kb] = 2 * t + 1;
    }
    int64_t n = oc_tile_order_first_need(order, plan.ntiles, in->symmetric, nkeys, keys);
    CHECK_EQ_I64(n, in->symmetric ? plan.panels_a : plan.panels_a + plan.panels_b);
    for (int64_t i = 0; i < n; ++i) {
        CHECK(first[keys[i]] >= 0);
        if (i > 0) CHECK(first[keys[i - 1]] < first[keys[i]]);
    }
    free(keys);
    free(first);
    free(order);
    free(seen);
}

static void test_plans(oc_context *ctx)
{
    /* 100000 x 200000 bits under 2 GiB, output discarded: A (2.5 GB) cannot stay resident. */
    oc_tile_plan_input ooc = {.n = 100000,
                              .p = 100000,
                              .row_bytes = 25024,
                              .elem_size = 4,
                              .symmetric = 1,
                              .keep_output = 0,
                              .budget = 2ll << 30,
                              .fixed_bytes = 400000,
                              .granularity = 256};
    oc_tile_plan plan;
    CHECK(oc_tile_plan_make(ctx, &ooc, &plan) == OC_OK);
    CHECK(!plan.resident);
    CHECK(plan.panel_loads < 2 * plan.panels_a); /* grouped order: far fewer than one upload per tile */
    check_order(ctx, &ooc);
    /* Everything fits: resident, each panel uploaded once. */
    oc_tile_plan_input small = {.n = 1000,
                                .p = 700,
                                .row_bytes = 640,
                                .elem_size = 4,
                                .symmetric = 0,
                                .keep_output = 1,
                                .budget = 1ll << 30,
                                .granularity = 256};
    CHECK(oc_tile_plan_make(ctx, &small, &plan) == OC_OK);
    CHECK(plan.resident);
    CHECK_EQ_I64(plan.panel_loads, plan.panels_a + plan.panels_b);
    check_order(ctx, &small);
    small.tile = 100; /* forced edges round up to the granularity */
    small.budget = 900 * 1024;
    CHECK(oc_tile_plan_make(ctx, &small, &plan) == OC_OK);
    CHECK_EQ_I64(plan.tile, 256);
    check_order(ctx, &small);
    /* Below the smallest plan. */
    small.budget = 300 * 1024;
    CHECK(oc_tile_plan_make(ctx, &small, &plan) == OC_ERR_DEVICE_NO_MEMORY);
    CHECK(strstr(oc_context_last_error(ctx), "smallest plan") != NULL);
    /* The same budget chosen by the caller is a bad argument, not a shortage. */
    small.budget_given = 1;
    CHECK(oc_tile_plan_make(ctx, &small, &plan) == OC_ERR_INVALID_ARGUMENT);
    small.budget_given = 0;

    /* Mirrored output slots (A·Aᵀ dense): taken when they fit, else the plan without them. */
    oc_tile_plan_input sym = {.n = 700,
                              .p = 700,
                              .row_bytes = 640,
                              .elem_size = 4,
                              .symmetric = 1,
                              .keep_output = 1,
                              .mirror_output = 1,
                              .budget = 64ll << 20,
                              .granularity = 256};
    CHECK(oc_tile_plan_make(ctx, &sym, &plan) == OC_OK);
    CHECK(plan.mirror_output);
    CHECK_EQ_I64(plan.out_bytes, 2 * plan.tile * plan.tile * 4);
    CHECK(plan.device_bytes <= sym.budget);
    sym.budget = 900 * 1024; /* two 256-row slots of 256 KiB fit, of 512 KiB do not */
    CHECK(oc_tile_plan_make(ctx, &sym, &plan) == OC_OK);
    CHECK(!plan.mirror_output);
    CHECK_EQ_I64(plan.tile, 256);
    CHECK_EQ_I64(plan.out_bytes, 256 * 256 * 4);
    CHECK(plan.device_bytes <= sym.budget);

    /* The kernel model: one CTA of 128 x 256 per SM on 132 SMs. Kernel-bound, tiles run
     * whole waves, so the planner's tile wastes no more kernel time than 4096-row tiles. */
    ooc.cta_rows = 128;
    ooc.cta_cols = 256;
    ooc.concurrent_ctas = 132;
    ooc.cta_seconds = 2.6e-4;
    oc_tile_plan forced;
    CHECK(oc_tile_plan_make(ctx, &ooc, &plan) == OC_OK);
    ooc.tile = 4096;
    CHECK(oc_tile_plan_make(ctx, &ooc, &forced) == OC_OK);
    CHECK(plan.kernel_seconds > 0 && plan.kernel_seconds <= forced.kernel_seconds);
    CHECK(plan.cost_seconds <= forced.cost_seconds && plan.cost_seconds >= plan.kernel_seconds);
    /* Overlapping tiles fill the last waves: no more kernel time, two output slots. */
    ooc.overlap_tiles = 1;
    oc_tile_plan overlapped;
    CHECK(oc_tile_plan_make(ctx, &ooc, &overlapped) == OC_OK);
    CHECK(overlapped.kernel_seconds <= forced.kernel_seconds);
    CHECK_EQ_I64(overlapped.out_slots, 2);
    CHECK(overlapped.device_bytes <= ooc.budget);
    ooc.tile = 0;
    check_order(ctx, &ooc);

    /* A selection that frees each slot after its tile: a third slot where every panel stays
     * resident beside it (4 panels of 160 KiB, slots of 256 KiB), else two. */
    oc_tile_plan_input sel = {.n = 1000,
                              .p = 1000,
                              .row_bytes = 640,
                              .elem_size = 4,
                              .symmetric = 1,
                              .tile = 256,
                              .budget = 64ll << 20,
                              .granularity = 256,
                              .overlap_tiles = 1,
                              .selection_frees = 1};
    CHECK(oc_tile_plan_make(ctx, &sel, &plan) == OC_OK);
    CHECK(plan.resident);
    CHECK_EQ_I64(plan.out_slots, 3);
    sel.budget = (4 * 160 + 2 * 256 + 100) * 1024; /* a third slot would leave a panel out */
    CHECK(oc_tile_plan_make(ctx, &sel, &plan) == OC_OK);
    CHECK(plan.resident);
    CHECK_EQ_I64(plan.out_slots, 2);
    CHECK(plan.device_bytes <= sel.budget);
}

int main(void)
{
    oc_context *ctx;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    test_grow(ctx);
    test_reserve(ctx);
    test_faults(ctx);
    test_fault_values(ctx);
    test_device_refusals(ctx);
    test_plans(ctx);
    oc_context_free(ctx);
    return oc_test_finish();
}
