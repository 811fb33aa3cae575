/*
 * test_matmul_cpu_plan.c - the CPU product's plan and the backend choice, without products: the
 * tiles and K panels under host budgets, what the plan uses where it lies, and --backend
 * auto's prediction (test_matmul.c runs the products).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "matmul/cpu/mm_cpu.h"
#include "matmul/matmul_choice.h"

/* --backend auto: a 2000-cube product stays on the CPU, a 50000-cube one goes to a GPU. */
static void test_choice(void)
{
    oc_mm_cost_input in = {.m = 2000,
                           .n = 2000,
                           .k = 2000,
                           .in_type = OC_MM_FLOAT32,
                           .in_bytes = 2 * 2000.0 * 2000 * 4,
                           .out_bytes = 2000.0 * 2000 * 4,
                           .cpu_blas = 1,
                           .cpu_cores = 16,
                           .gpu_cc = 90,
                           .gpu_startup = 0.3,
                           .h2d = 12e9,
                           .d2h = 12e9};
    oc_mm_prediction p;
    oc_mm_predict(&in, &p);
    CHECK_MSG(!p.gpu, "2000: %s", p.reason);
    in.m = in.n = in.k = 50000;
    in.in_bytes = 2 * 50000.0 * 50000 * 4;
    in.out_bytes = 50000.0 * 50000 * 4;
    oc_mm_predict(&in, &p);
    CHECK_MSG(p.gpu, "50000: %s", p.reason);
    /* The result's file is written either way: both predictions take its seconds, the choice
     * stays, and the reason says so. */
    const double cpu50 = p.cpu_seconds, gpu50 = p.gpu_seconds;
    in.file_seconds = 3.0;
    oc_mm_predict(&in, &p);
    CHECK_MSG(p.gpu && fabs(p.cpu_seconds - cpu50 - 3.0) < 1e-9 && fabs(p.gpu_seconds - gpu50 - 3.0) < 1e-9 &&
                  strstr(p.reason, "the result's file 3 s"),
              "%s", p.reason);
    in.file_seconds = 0;
    in.gpu_cc = 0;
    oc_mm_predict(&in, &p);
    CHECK(!p.gpu && strstr(p.reason, "no GPU") != NULL);
    /* A product the CPU ends before a cold GPU could start: the driver is not asked. */
    CHECK(!oc_mm_cpu_before_gpu_start(&in, &p));
    in.m = in.n = in.k = 2000;
    CHECK_MSG(oc_mm_cpu_before_gpu_start(&in, &p) && !p.gpu && strstr(p.reason, "not asked"), "%s", p.reason);
    CHECK(p.cpu_seconds < in.gpu_startup);
    in.file_seconds = 10.0; /* a large result file: the GPU would write it too, so still not asked */
    CHECK_MSG(oc_mm_cpu_before_gpu_start(&in, &p) && strstr(p.reason, "the result's file 10 s"), "%s", p.reason);
    in.file_seconds = 0;
    in.gpu_warm = 1; /* a GPU this process has started already: asked */
    CHECK(!oc_mm_cpu_before_gpu_start(&in, &p));
    /* A measured rate of a core replaces the default, times the cores. */
    in.cpu_core_rate = 1e9;
    oc_mm_predict(&in, &p);
    CHECK_MSG(fabs(p.cpu_seconds - 2.0 * 2000 * 2000 * 2000 / (1e9 * 16)) < 1e-9 && strstr(p.reason, "measured"), "%s",
              p.reason);
    in.cpu_blas = 0; /* the reference loops: their default, whatever was measured of a BLAS */
    oc_mm_predict(&in, &p);
    CHECK(strstr(p.reason, "default rate") && strstr(p.reason, "reference loops"));
}

/* 12288³ float64 under a host budget of 256 MiB, on one thread: the plans' example. */
static oc_matmul_job cube_job(oc_context *ctx)
{
    return (oc_matmul_job){.ctx = ctx,
                           .m = 12288,
                           .n = 12288,
                           .k = 12288,
                           .in_type = OC_MM_FLOAT64,
                           .out_type = OC_MM_FLOAT64,
                           .host_mem_bytes = 256 << 20,
                           .threads = 1};
}

/* What the CPU plan uses where it lies: the job's panel_memory for A and B, tile_place_ld
 * for C (test stand-ins: every panel "in memory", rows ld apart). */
static int64_t stand_in_ld;
static const void *stand_in_panel(const oc_matmul_job *job, oc_mm_operand which, int64_t row0, int64_t col0,
                                  int64_t *ld)
{
    (void)job, (void)which, (void)row0, (void)col0;
    *ld = stand_in_ld;
    return &stand_in_ld;
}

/* With a BLAS, operands in memory take none of the budget and a result in the caller's
 * memory (accumulated there) none either: everything in place is one tile and one K panel; C
 * alone in place leaves the budget to the panels and allows tiles past 4096 (12288³ float64
 * under 256 MiB: 4 of 6144, against 9 of 4096 through an accumulator). A tile accumulated in
 * the output file's mapping holds its pages as an accumulator would: the same 9 tiles.
 * Strides past CBLAS's ints, A·Aᵀ (mirrored) and an int32 result (through a float64
 * accumulator) are not in place. */
static void test_cpu_plan_in_place(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    oc_matmul_job job = cube_job(ctx);
    job.panel_memory = stand_in_panel;
    job.tile_place_ld = 12288;
    stand_in_ld = 12288;
    oc_mm_cpu_plan p;
    CHECK(oc_mm_cpu_plan_make(&job, &p) == OC_OK);
    if (!p.blas.sgemm) { /* the reference loops read and write through their buffers */
        CHECK(!p.in_place[0] && !p.in_place[1] && !p.in_place[2]);
        oc_context_free(ctx);
        return;
    }
    CHECK(p.in_place[0] && p.in_place[1] && p.in_place[2]);
    CHECK_MSG(p.tiles == 1 && p.panels == 1 && p.need_bytes == 0, "%lld tiles, %lld panels, %lld bytes",
              (long long)p.tiles, (long long)p.panels, (long long)p.need_bytes);
    job.panel_memory = NULL; /* A and B read in panels, C accumulated in place */
    CHECK(oc_mm_cpu_plan_make(&job, &p) == OC_OK);
    CHECK(!p.in_place[0] && !p.in_place[1] && p.in_place[2] && p.need_bytes <= job.host_mem_bytes);
    CHECK_MSG(p.tm == 6144 && p.tn == 6144 && p.tiles == 4, "%lld x %lld tiles, %lld of them", (long long)p.tm,
              (long long)p.tn, (long long)p.tiles);
    job.tile_place_mapped = 1; /* the output's mapping: its tile counts */
    CHECK(oc_mm_cpu_plan_make(&job, &p) == OC_OK && p.in_place[2] && p.need_bytes <= job.host_mem_bytes);
    CHECK_MSG(p.tm == 4096 && p.tiles == 9 && p.kp == 2048, "%lld x %lld tiles, %lld of them, K panels of %lld",
              (long long)p.tm, (long long)p.tn, (long long)p.tiles, (long long)p.kp);
    job.panel_memory = stand_in_panel; /* only that tile counts */
    CHECK(oc_mm_cpu_plan_make(&job, &p) == OC_OK && p.tm == 4096 && p.panels == 1 && p.need_bytes == 128 << 20);
    job.panel_memory = NULL, job.tile_place_mapped = 0;
    job.tile_place_ld = (int64_t)INT32_MAX + 1; /* a stride CBLAS cannot take */
    CHECK(oc_mm_cpu_plan_make(&job, &p) == OC_OK && !p.in_place[2] && p.tm == 4096);
    job.tile_place_ld = 12288;
    job.panel_memory = stand_in_panel;
    stand_in_ld = (int64_t)INT32_MAX + 1;
    CHECK(oc_mm_cpu_plan_make(&job, &p) == OC_OK && !p.in_place[0] && !p.in_place[1] && p.in_place[2]);
    stand_in_ld = 12288;
    job.symmetric = 1;
    CHECK(oc_mm_cpu_plan_make(&job, &p) == OC_OK && p.in_place[0] && !p.in_place[2] && p.tm == p.tn);
    job.symmetric = 0;
    job.in_type = OC_MM_INT8, job.out_type = OC_MM_INT32; /* multiplied in float64 */
    CHECK(oc_mm_cpu_plan_make(&job, &p) == OC_OK && !p.in_place[0] && !p.in_place[2]);
    job.in_type = OC_MM_FLOAT32, job.out_type = OC_MM_FLOAT32;
    CHECK(oc_mm_cpu_plan_make(&job, &p) == OC_OK && p.in_place[0] && p.in_place[2]);
    job.k = 0; /* nothing to accumulate: zeros written */
    CHECK(oc_mm_cpu_plan_make(&job, &p) == OC_OK && !p.in_place[2]);
    oc_context_free(ctx);
}

/* The CPU plan under host budgets: what it holds fits, its K panels are even and cover k,
 * and a budget that holds a large tile with K panels a few thousand deep plans that tile
 * rather than smaller ones read more often (12288³ float64 under 256 MiB: 9 tiles of 4096,
 * 6 K panels of 2048, not 36 of 2048; 6144³ under 266 MiB: 4 of 3072); a tile given stays. */
static void test_cpu_plan(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    static const int64_t shapes[][3] = {{12288, 12288, 12288}, {6144, 6144, 6144}, {300, 260, 500}, {1, 1, 1},
                                        {100000, 17, 3000},    {5, 70000, 9}};
    static const int64_t budgets[] = {64 << 10, 1 << 20, 67 << 20, 256 << 20, 1 << 30};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++)
            for (int sym = 0; sym < 2; sym++) {
                if (sym && shapes[s][0] != shapes[s][1]) continue;
                oc_matmul_job job = {.ctx = ctx,
                                     .m = shapes[s][0],
                                     .n = shapes[s][1],
                                     .k = shapes[s][2],
                                     .in_type = OC_MM_FLOAT64,
                                     .out_type = OC_MM_FLOAT64,
                                     .symmetric = sym,
                                     .host_mem_bytes = budgets[b],
                                     .threads = 1};
                oc_mm_cpu_plan p;
                if (oc_mm_cpu_plan_make(&job, &p) != OC_OK) {
                    CHECK_MSG(budgets[b] < (1 << 20), "%lld x %lld x %lld under %lld: %s", (long long)job.m,
                              (long long)job.n, (long long)job.k, (long long)budgets[b], oc_context_last_error(ctx));
                    continue;
                }
                CHECK(p.need_bytes <= budgets[b]);
                CHECK(p.tm >= 1 && p.tn >= 1 && p.tm <= job.m && p.tn <= job.n && (!sym || p.tm == p.tn));
                CHECK((p.panels - 1) * p.kp < job.k && p.panels * p.kp >= job.k);
                CHECK(p.kp - (job.k - (p.panels - 1) * p.kp) < p.panels); /* even: the last no thinner */
            }
    oc_matmul_job job = cube_job(ctx);
    oc_mm_cpu_plan p;
    CHECK(oc_mm_cpu_plan_make(&job, &p) == OC_OK);
    CHECK_MSG(p.tm == 4096 && p.tn == 4096 && p.kp == 2048 && p.panels == 6, "%lld x %lld tiles, K panels of %lld",
              (long long)p.tm, (long long)p.tn, (long long)p.kp);
    job.m = job.n = job.k = 6144, job.host_mem_bytes = 266 << 20; /* 3072: 4096's 2 x 2 grid, deeper panels */
    CHECK(oc_mm_cpu_plan_make(&job, &p) == OC_OK);
    CHECK_MSG(p.tm == 3072 && p.tiles == 4 && p.panels == 2, "%lld x %lld tiles, %lld K panels", (long long)p.tm,
              (long long)p.tn, (long long)p.panels);
    job.tile = 1000;
    CHECK(oc_mm_cpu_plan_make(&job, &p) == OC_OK && p.tm == 1000 && p.tn == 1000);
    oc_context_free(ctx);
}

int main(void)
{
    test_cpu_plan();
    test_cpu_plan_in_place();
    test_choice();
    return oc_test_finish();
}
