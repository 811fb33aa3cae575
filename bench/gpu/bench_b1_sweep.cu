/*
 * bench_b1_sweep.cu - the two 1-bit Gram kernels (mma.sync "b1" and Hopper's "wgmma") over a
 * grid of shapes, so that the planner's choice per shape rests on measurements.
 *
 *   bench_b1_sweep [--quick]
 *
 * Shapes: n from 4096 to 65536 rows, m from 2048 to 524288 bits, A·Aᵀ (upper triangle of
 * CTAs, as the pipeline runs a diagonal tile) and A·Bᵀ with p != n; counts stay on the
 * device. Data: random bits (density 1/2) made on the device. Each kernel runs once to warm
 * up and three times timed (CUDA events); the median is reported as raw bit-MAC/s (what the
 * kernel executes) beside the ratio wgmma / b1. The two kernels' outputs are compared in
 * full on the device for every shape (exit status 1 if any element differs). Without a
 * Hopper GPU (or an sm_90a build) only b1 runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
#include "core/gpu_arch.h"
#include "matrix/matrix.h"
}
#include "engine/cuda/device.h"
#include "gram/cuda/gram_b1.cuh"
#include "bench_bits.cuh"
#include "bench_check.h"

typedef oc_status (*kernel_fn)(oc_context *, oc_cuda_device *, const oc_gram_tile *, cudaStream_t, double *);

static double time_kernel(oc_context *ctx, oc_cuda_device *dev, kernel_fn fn, const oc_gram_tile *t, double *macs)
{
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    if (fn(ctx, dev, t, dev->compute, macs) != OC_OK) {
        fprintf(stderr, "%s\n", oc_context_last_error(ctx));
        exit(1);
    }
    double times[3];
    for (int r = 0; r < 3; ++r) {
        CK(cudaEventRecord(e0, dev->compute));
        fn(ctx, dev, t, dev->compute, macs);
        CK(cudaEventRecord(e1, dev->compute));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        times[r] = ms / 1e3;
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    /* median of three */
    double a = times[0], b = times[1], c = times[2];
    return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

int main(int argc, char **argv)
{
    const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    oc_context *ctx;
    oc_cuda_device dev;
    const int opened = bench_open_device("bench_b1_sweep", &ctx, &dev);
    if (opened) return opened;
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    printf("device: %s (sm_%d, %d SMs), date %s\n", dev.name, dev.cc, dev.sm_count, date);
    const int wgmma = dev.cc == 90;
    static const int64_t ns[] = {4096, 16384, 65536};
    static const int64_t ms[] = {2048, 16384, 131072, 524288};
    printf("| n | p | m | b1 raw P | wgmma raw P | wgmma / b1 |\n|---|---|---|---|---|---|\n");
    int bad_shapes = 0;
    for (int ni = 0; ni < 3; ++ni)
        for (int mi = 0; mi < 4; ++mi)
            for (int ab = 0; ab < 2; ++ab) {
                const int64_t n = ns[ni], m = ms[mi], p = ab ? n / 2 + 1000 : n;
                if (quick && (ni == 2 || mi == 3)) continue;
                /* Keep the inputs and the two outputs within a few GiB each. */
                if ((double)n * m / 8 > 4.5e9 || (double)n * p * 4 > 17.5e9) continue;
                const int64_t words = (m + 511) / 512 * 8;
                uint64_t *a, *b = NULL;
                int32_t *out1, *out2;
                CK(cudaMalloc((void **)&a, (size_t)(n * words * 8)));
                fill_bits<<<1024, 256>>>(a, n, words, m / 64, 1);
                if (ab) {
                    CK(cudaMalloc((void **)&b, (size_t)(p * words * 8)));
                    fill_bits<<<1024, 256>>>(b, p, words, m / 64, 2);
                }
                CK(cudaMalloc((void **)&out1, (size_t)(n * p) * 4));
                CK(cudaMalloc((void **)&out2, (size_t)(n * p) * 4));
                CK(cudaDeviceSynchronize());
                oc_gram_tile t;
                memset(&t, 0, sizeof t);
                t.a = a;
                t.b = ab ? b : a;
                t.words = words;
                t.rows = (int)n;
                t.cols = (int)p;
                t.out = out1;
                t.ld = p;
                t.metric = OC_METRIC_COUNTS;
                t.dtype = OC_DTYPE_INT32;
                t.upper_only = !ab;
                double macs1 = 0, macs2 = 0;
                const double s1 = time_kernel(ctx, &dev, oc_cuda_gram_b1, &t, &macs1);
                double s2 = 0;
                if (wgmma) {
                    t.out = out2;
                    s2 = time_kernel(ctx, &dev, oc_cuda_gram_wgmma, &t, &macs2);
                    unsigned long long *d_bad, h_bad = 0;
                    CK(cudaMalloc((void **)&d_bad, 8));
                    CK(cudaMemset(d_bad, 0, 8));
                    count_diff<<<1024, 256>>>(out1, out2, n, p, !ab, d_bad);
                    CK(cudaMemcpy(&h_bad, d_bad, 8, cudaMemcpyDeviceToHost));
                    CK(cudaFree(d_bad));
                    if (h_bad) {
                        printf("  n=%lld p=%lld m=%lld: %llu elements differ between b1 and wgmma\n", (long long)n,
                               (long long)p, (long long)m, h_bad);
                        bad_shapes++;
                    }
                }
                if (wgmma)
                    printf("| %lld | %lld | %lld | %.3f | %.3f | %.2f |\n", (long long)n, (long long)p, (long long)m,
                           macs1 / s1 / 1e15, macs2 / s2 / 1e15, (macs2 / s2) / (macs1 / s1));
                else
                    printf("| %lld | %lld | %lld | %.3f | - | - |\n", (long long)n, (long long)p, (long long)m,
                           macs1 / s1 / 1e15);
                fflush(stdout);
                CK(cudaFree(a));
                if (b) CK(cudaFree(b));
                CK(cudaFree(out1));
                CK(cudaFree(out2));
            }
    oc_cuda_device_close(&dev);
    oc_context_free(ctx);
    return bad_shapes ? 1 : 0;
}
