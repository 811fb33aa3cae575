/*
 * test_cuda_cases.c - the case table (tests/gram_cases.c) on the CUDA backend, against the
 * reference, with the same runner as the CPU's (tests/test_gram_cases.c).
 *
 * The variants, each a backend of the runner: both device kernels (b1 tensor cores and
 * CUDA-core popc, forced through OUTCORE_CUDA_KERNEL) on every row; and b1 with selection
 * buckets of one and three entries (OUTCORE_CUDA_SELECT_BUCKET) on the top-k and threshold
 * rows, where most fused tiles overflow their buckets and are selected by the dense pass:
 * both paths, and tiles of either kind in one job; and b1 on device 0 split into two and
 * three logical devices (--devices 0:2, 0:3), whose results must be the same bytes. Rows with a GPU budget hold fewer panels
 * than the job has, so panels stream through a few slots. The backend also checks what only
 * it reports: the device and kernel, peak memory within the budget, uploads past the
 * matrices' size when a budget forces streaming, and where the selection ran (on the device
 * up to 128 kept per row, every tile fused into the b1 kernel; on the host past it). At the
 * end no device or pinned memory may be left once the cached staging is released.
 *
 * OUTCORE_TEST_QUICK (bench/gpu_check.sh, under compute-sanitizer) runs the rows marked for
 * its level (1 for memcheck; 2, fewer, for racecheck, the slowest tool) with the outputs
 * GRAM_QUICK_OUTPUTS, on b1, popc and b1 with one-entry buckets.
 * Exits 77 when no CUDA device is usable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gram_cases.h"
#include "harness.h"
#include "matrix/matrix.h"
#include "engine/cuda/device.h"

typedef struct cuda_settings {
    const char *kernel; /* OUTCORE_CUDA_KERNEL */
    const char *bucket; /* OUTCORE_CUDA_SELECT_BUCKET, NULL: the default */
    int quick;          /* the largest OUTCORE_TEST_QUICK level that runs this variant */
    int parts;          /* > 1: device 0 split into that many logical devices (--devices 0:N) */
} cuda_settings;

/* Where the selection of a top-k job ran, as stats.select_desc says: on the device when a row
 * keeps at most 128 entries (k, or the row's candidates when fewer: p, less the row itself for
 * A·Aᵀ), every tile fused into the b1 kernel's epilogue when there is anything to keep;
 * otherwise on the host. */
static void check_selection(const gram_job *job, const cuda_settings *s, const oc_gram_stats *stats, const char *label)
{
    const int64_t candidates = job->p - (job->b == NULL), kept = job->k < candidates ? job->k : candidates;
    if (kept > 128) {
        CHECK_MSG(strstr(stats->select_desc, "host") != NULL, "%s: selected on '%s', expected the host", label,
                  stats->select_desc);
        return;
    }
    CHECK_MSG(strncmp(stats->select_desc, "device", 6) == 0, "%s: selected on '%s', expected the device", label,
              stats->select_desc);
    long long fused = 0, tiles = 0;
    /* Split, the description is the first logical device's, which may have had no tile. */
    if (kept > 0 && strcmp(s->kernel, "popc") != 0 && s->parts <= 1)
        CHECK_MSG(sscanf(stats->select_desc, "device, %lld of %lld tiles fused", &fused, &tiles) == 2 && fused > 0 &&
                      fused == tiles,
                  "%s: expected every tile fused (%s)", label, stats->select_desc);
}

static oc_status run_cuda(const gram_backend *be, oc_context *ctx, const gram_job *job, gram_result *res, char *label)
{
    const cuda_settings *s = be->settings;
    /* The variants take turns job by job: each sets its own environment. */
    setenv("OUTCORE_CUDA_KERNEL", s->kernel, 1);
    if (s->bucket) setenv("OUTCORE_CUDA_SELECT_BUCKET", s->bucket, 1);
    else unsetenv("OUTCORE_CUDA_SELECT_BUCKET");
    const size_t len = strlen(label);
    snprintf(label + len, GRAM_LABEL_SIZE - len, " tile %lld budget %lld", (long long)job->row->gpu_tile,
             (long long)job->row->gpu_mem);
    oc_gram_options o;
    gram_job_options(job, &o);
    o.backend = OC_BACKEND_CUDA;
    o.algorithm = OC_ALGORITHM_DENSE; /* the kernels under test, not auto's choice */
    o.tile = job->row->gpu_tile;
    o.gpu_mem_bytes = job->row->gpu_mem;
    /* Split: each logical device gets the row's budget (the device's is shared by its parts),
     * so that the rows' small budgets still stream panels without falling below the smallest
     * plan. */
    char devices[16], budgets[48];
    if (s->parts > 1) {
        snprintf(devices, sizeof devices, "0:%d", s->parts);
        o.devices = devices;
        if (job->row->gpu_mem) {
            snprintf(budgets, sizeof budgets, "0=%lld", (long long)job->row->gpu_mem * s->parts);
            o.gpu_mem_devices = budgets;
        }
    }
    oc_status st = gram_job_run_oc_gram(ctx, job, &o, res, label);
    if (st != OC_OK) return st;
    const oc_gram_stats *stats = &res->stats;
    CHECK_MSG(stats->backend == OC_BACKEND_CUDA, "%s: ran on %s", label, oc_backend_name(stats->backend));
    char want[32];
    snprintf(want, sizeof want, s->parts > 1 ? "%d devices: cuda:0.0/%d " : "cuda:0 ", s->parts, s->parts);
    CHECK_MSG(strncmp(stats->backend_desc, want, strlen(want)) == 0 &&
                  strstr(stats->backend_desc, strcmp(s->kernel, "b1") == 0      ? "b1-mma"
                                              : strcmp(s->kernel, "wgmma") == 0 ? "b1-wgmma"
                                                                                : "popc") != NULL,
              "%s: backend_desc '%s'", label, stats->backend_desc);
    /* Every tile was computed by exactly one logical device. */
    int64_t tiles = 0;
    for (int d = 0; d < stats->device_count; ++d) tiles += stats->devices[d].tiles;
    CHECK_MSG(stats->device_count == (s->parts > 1 ? s->parts : 1) && tiles == stats->tiles,
              "%s: %d devices did %lld of %lld tiles", label, stats->device_count, (long long)tiles,
              (long long)stats->tiles);
    CHECK_MSG(stats->tiles > 0, "%s: %lld tiles", label, (long long)stats->tiles);
    CHECK_MSG(stats->dev_peak_bytes <= stats->dev_budget_bytes, "%s: peak %lld bytes over the budget of %lld", label,
              (long long)stats->dev_peak_bytes, (long long)stats->dev_budget_bytes);
    if (job->row->kind == GRAM_DENSE) {
        CHECK_MSG(stats->bytes_d2h > 0, "%s: nothing copied back", label);
        if (job->row->gpu_mem) {
            /* Streaming re-uploads panels: more bytes go up than A and B hold. */
            const int64_t held = (job->n + (job->b ? job->p : 0)) * job->a->words_per_row * 8;
            CHECK_MSG(stats->bytes_h2d > held, "%s: %lld bytes uploaded, matrices hold %lld: panels did not stream",
                      label, (long long)stats->bytes_h2d, (long long)held);
        }
    }
    if (job->row->kind == GRAM_TOPK) check_selection(job, s, stats, label);
    return st;
}

int main(void)
{
    if (oc_cuda_device_count() == 0) {
        oc_test_skip("no usable CUDA device");
        return oc_test_finish();
    }
    const int quick = gram_test_quick();
    static const cuda_settings settings[] = {
        {"b1", NULL, 2, 1},    {"popc", NULL, 2, 1}, {"b1", "1", 2, 1},  {"b1", "3", 0, 1},
        {"wgmma", NULL, 2, 1}, {"wgmma", "1", 2, 1}, {"b1", NULL, 0, 2}, {"b1", NULL, 0, 3},
    };
    static const char *const names[] = {"cuda b1",
                                        "cuda popc",
                                        "cuda b1 buckets 1",
                                        "cuda b1 buckets 3",
                                        "cuda wgmma",
                                        "cuda wgmma buckets 1",
                                        "cuda b1 devices 0:2",
                                        "cuda b1 devices 0:3"};
    enum { VARIANTS = sizeof settings / sizeof settings[0] };
    /* The wgmma kernel on Hopper (every CUDA 12+ build holds its sm_90a code). */
    oc_context *probe = NULL;
    oc_cuda_device dev0;
    int hopper = 0;
    if (oc_context_create(&probe) == OC_OK && oc_cuda_device_open(probe, 0, &dev0) == OC_OK) {
        hopper = dev0.cc == 90;
        oc_cuda_device_close(&dev0);
    }
    oc_context_free(probe);
    gram_backend backends[VARIANTS];
    const gram_backend *list[VARIANTS];
    int count = 0;
    for (int v = 0; v < VARIANTS; ++v) {
        if (quick > settings[v].quick) continue;
        if (strcmp(settings[v].kernel, "wgmma") == 0 && !hopper) continue;
        backends[count] = (gram_backend){.name = names[v],
                                         .kind = GRAM_ON_CUDA,
                                         .run = run_cuda,
                                         .settings = &settings[v],
                                         .selection_only = settings[v].bucket != NULL};
        list[count] = &backends[count];
        count++;
    }
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    int64_t jobs = gram_cases_run(ctx, list, count, quick);
    printf("%d rows in the table, %lld jobs run (OUTCORE_TEST_QUICK=%d)\n", gram_case_count, (long long)jobs, quick);
    unsetenv("OUTCORE_CUDA_KERNEL");
    unsetenv("OUTCORE_CUDA_SELECT_BUCKET");

    /* Jobs keep their pinned staging in the context for its next job; once that is
     * released, nothing the jobs took may be left. */
    oc_context_release_cached_memory(ctx);
    CHECK_MSG(oc_context_cached_memory_bytes(ctx) == 0, "idle staging left after its release");
    CHECK_MSG(oc_cuda_live_device_bytes() == 0 && oc_cuda_live_pinned_bytes() == 0,
              "%lld device and %lld pinned bytes left allocated", (long long)oc_cuda_live_device_bytes(),
              (long long)oc_cuda_live_pinned_bytes());
    oc_context_free(ctx);
    return oc_test_finish();
}
