/*
 * test_cost_gpu.c - the cost model on a GPU: oc_cost_calibrate measures and stores every
 * rate (PCIe, start-up, both kernels, host memory), and `--backend auto` then sends a tiny
 * job to the CPU and a large one to the GPU.
 *
 * The two decisions are far from the margin on any GPU host, from the rates just measured:
 * the tiny job (64 x 512 bits) is microseconds of CPU work against a GPU job set-up measured
 * in milliseconds, and the large one (16384 x 65536 bits, 8.8·10¹² bit-MACs) is seconds of
 * CPU kernel against milliseconds of tensor cores. The rate cache is a file of this test's
 * own (OUTCORE_COST_CACHE). Exits 77 when no CUDA device is usable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "outcore.h"
#include "cost/cost.h"

static oc_matrix *random_matrix(oc_context *ctx, int64_t rows, int64_t cols)
{
    int64_t stride = cols / 8;
    unsigned char *bits = malloc((size_t)(rows * stride));
    if (!bits) return NULL;
    uint64_t seed = 11;
    for (int64_t i = 0; i < rows * stride; ++i) bits[i] = (unsigned char)oc_test_rand(&seed);
    oc_matrix *m = NULL;
    if (oc_matrix_from_bits(ctx, bits, rows, cols, stride, OC_BITS_MSB_FIRST, &m) != OC_OK) m = NULL;
    free(bits);
    return m;
}

static oc_backend auto_backend(oc_context *ctx, oc_matrix *a, char *explain, size_t size)
{
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    opts.algorithm = OC_ALGORITHM_DENSE;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_DISCARD;
    oc_gram_stats stats = {.struct_size = sizeof stats};
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, &stats) == OC_OK);
    snprintf(explain, size, "%s", stats.backend_explain);
    return stats.backend;
}

int main(void)
{
    if (oc_cuda_device_count() == 0) {
        printf("SKIPPED: no usable CUDA device\n");
        oc_test_skip("no usable CUDA device");
        return oc_test_finish();
    }
    if (!oc_test_tmp_create("oc_cost_gpu")) return 1;
    setenv("OUTCORE_COST_CACHE", oc_test_tmp_path("rates.txt"), 1);
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;

    oc_devices *devices = NULL;
    char *report = NULL;
    CHECK(oc_cost_calibrate(ctx, &devices, &report) == OC_OK);
    if (report) printf("%s", report);
    CHECK(devices && devices->count > 0 && devices->devices[0].h2d_pinned > 0);
    oc_cost_rates r;
    oc_cost_rates_get(ctx, 0, 1, &r);
    const unsigned all =
        OC_COST_M_PCIE | OC_COST_M_HOST_BW | OC_COST_M_CPU_BITS | OC_COST_M_STARTUP | OC_COST_M_GPU_BITS;
    CHECK_MSG((r.measured & all) == all, "measured %#x, note: %s", r.measured, r.note);
    CHECK(r.gpu_startup > r.gpu_job_setup);

    char explain[640];
    oc_matrix *tiny = random_matrix(ctx, 64, 512), *large = random_matrix(ctx, 16384, 65536);
    CHECK(tiny && large);
    if (tiny && large) {
        CHECK_MSG(auto_backend(ctx, tiny, explain, sizeof explain) == OC_BACKEND_CPU, "tiny: %s", explain);
        CHECK_MSG(auto_backend(ctx, large, explain, sizeof explain) == OC_BACKEND_CUDA, "large: %s", explain);
        printf("large: %s\n", explain);
    }
    oc_matrix_free(tiny);
    oc_matrix_free(large);
    free(report);
    oc_devices_free(devices);
    oc_context_free(ctx);
    unsetenv("OUTCORE_COST_CACHE");
    oc_test_tmp_remove();
    return oc_test_finish();
}
