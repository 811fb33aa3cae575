/*
 * bench_b1_split.cu - what splitting a tile on K costs the wgmma kernel: one tile of
 * T x T elements over m bits, whole, against the same tile in S slices of K, each slice
 * adding the counts of the slices before it (gram_tile.h: acc_in) and writing the tile's
 * int32 counts, as the tiles of a multi-GPU job's first panels run (src/gram/cuda/gram_window.h).
 *
 *   bench_b1_split [--rows T] [--bits M] [--slices S,S,...] [--runs R]
 *
 * Defaults: the strong-scaling job's tiles (T = 6144, m = 1,000,000 bits), S = 2,3,4,6,8,
 * R = 9. Two panels of random bits (density 1/2) made on the device, the whole tile
 * A·Bᵀ; the slices' bounds are the window's (whole 1024-bit K blocks, gram_window.c).
 * Each way runs once to warm up, then R times timed with CUDA events back to back as a job
 * runs them, then R times with each slice alone (the device idle before it); medians are
 * printed, the split tile's beside the whole one's as "rate per bit" (whole time / split
 * time), and the slices' own back to back: the first (no counts to add), a middle one and
 * the last. Every split tile's counts are compared in full with the whole tile's on the
 * device (exit status 1 if any differs). Needs a Hopper GPU (the kernel that splits on K);
 * elsewhere it says SKIPPED and exits 77.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
#include "matrix/matrix.h"
}
#include "engine/cuda/device.h"
#include "gram/cuda/gram_b1.cuh"
#include "bench_bits.cuh"
#include "bench_check.h"

#define MAX_SLICES 16

static int cmp_double(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void launch(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *t)
{
    double macs;
    if (oc_cuda_gram_wgmma(ctx, dev, t, dev->compute, &macs) != OC_OK) {
        fprintf(stderr, "bench_b1_split: %s\n", oc_context_last_error(ctx));
        exit(1);
    }
}

/* The tile in `slices` slices of K (1: whole), timed: `each[s]` the time of slice s. Back to
 * back as a job runs them, or with `alone` each slice by itself (the device idle before it
 * starts); the result is then the sum of the slices' times. */
static double run(oc_context *ctx, oc_cuda_device *dev, const oc_gram_tile *whole, int slices, int alone,
                  cudaEvent_t *ev, double *each)
{
    const int64_t kblocks = (whole->words + 15) / 16;
    float ms;
    double sum = 0;
    CK(cudaEventRecord(ev[0], dev->compute));
    for (int s = 0; s < slices; ++s) {
        const int64_t w0 = kblocks * s / slices * 16,
                      w1 = s + 1 == slices ? whole->words : kblocks * (s + 1) / slices * 16;
        oc_gram_tile t = *whole;
        if (slices > 1) {
            t.a = whole->a + w0, t.b = whole->b + w0;
            t.words = w1 - w0, t.stride = whole->words;
            t.acc_in = s > 0 ? (const int32_t *)whole->out : NULL, t.acc_ld = whole->ld;
        }
        if (alone) {
            CK(cudaStreamSynchronize(dev->compute));
            CK(cudaEventRecord(ev[s], dev->compute));
        }
        launch(ctx, dev, &t);
        CK(cudaEventRecord(ev[s + 1], dev->compute));
        if (alone) {
            CK(cudaEventSynchronize(ev[s + 1]));
            CK(cudaEventElapsedTime(&ms, ev[s], ev[s + 1]));
            sum += each[s] = ms / 1e3;
        }
    }
    if (alone) return sum;
    CK(cudaEventSynchronize(ev[slices]));
    for (int s = 0; s < slices; ++s) {
        CK(cudaEventElapsedTime(&ms, ev[s], ev[s + 1]));
        each[s] = ms / 1e3;
    }
    CK(cudaEventElapsedTime(&ms, ev[0], ev[slices]));
    return ms / 1e3;
}

int main(int argc, char **argv)
{
    long long T = 6144, m = 1000000;
    int runs = 9, list[MAX_SLICES], nlist = 0;
    const char *slices_arg = "2,3,4,6,8";
    for (int i = 1; i < argc; ++i) {
        if (i + 1 < argc && strcmp(argv[i], "--rows") == 0) T = atoll(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--bits") == 0) m = atoll(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--slices") == 0) slices_arg = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--runs") == 0) runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_b1_split [--rows T] [--bits M] [--slices S,S,...] [--runs R]\n");
            return 2;
        }
    }
    for (const char *p = slices_arg; *p && nlist < MAX_SLICES;) {
        char *end;
        const long v = strtol(p, &end, 10);
        if (end == p || v < 2 || v > MAX_SLICES - 1) {
            fprintf(stderr, "bench_b1_split: --slices %s: expected numbers from 2 to %d, comma separated\n", slices_arg,
                    MAX_SLICES - 1);
            return 2;
        }
        list[nlist++] = (int)v;
        p = *end == ',' ? end + 1 : end;
    }
    if (T < 128 || T > 65536 || m < 1024 * 16 || runs < 1 || runs > 100) {
        fprintf(stderr, "bench_b1_split: need 128 <= rows <= 65536, bits >= 16384, 1 <= runs <= 100\n");
        return 2;
    }
    oc_context *ctx;
    oc_cuda_device dev;
    const int opened = bench_open_device("bench_b1_split", &ctx, &dev);
    if (opened) return opened;
    if (dev.cc != 90) {
        printf("SKIPPED: %s is sm_%d; tiles split on K run on the wgmma kernel (sm_90)\n", dev.name, dev.cc);
        return 77;
    }
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    printf("device: %s (sm_%d, %d SMs), %s\n", dev.name, dev.cc, dev.sm_count, date);
    printf("tile %lld x %lld, %lld bits, int32 counts, median of %d runs\n", T, T, m, runs);

    const int64_t words = (m + 511) / 512 * 8;
    uint64_t *a, *b;
    int32_t *whole_out, *split_out;
    unsigned long long *d_bad;
    CK(cudaMalloc((void **)&a, (size_t)(T * words * 8)));
    CK(cudaMalloc((void **)&b, (size_t)(T * words * 8)));
    CK(cudaMalloc((void **)&whole_out, (size_t)(T * T) * 4));
    CK(cudaMalloc((void **)&split_out, (size_t)(T * T) * 4));
    CK(cudaMalloc((void **)&d_bad, 8));
    /* Everything on the kernel's stream (it does not wait for the legacy default stream). */
    cudaStream_t st = dev.compute;
    fill_bits<<<1024, 256, 0, st>>>(a, T, words, m / 64, 1);
    fill_bits<<<1024, 256, 0, st>>>(b, T, words, m / 64, 2);
    CK(cudaStreamSynchronize(st));
    cudaEvent_t ev[MAX_SLICES + 1];
    for (int i = 0; i <= MAX_SLICES; ++i) CK(cudaEventCreate(&ev[i]));

    oc_gram_tile t;
    memset(&t, 0, sizeof t);
    t.a = a, t.b = b, t.words = words;
    t.rows = (int)T, t.cols = (int)T;
    t.out = whole_out, t.ld = T;
    t.metric = OC_METRIC_COUNTS, t.dtype = OC_DTYPE_INT32;

    /* Back to back (runs), then each slice alone (runs again). */
    double times[100], alone[100], each[MAX_SLICES], first[100], mid[100], last[100];
    run(ctx, &dev, &t, 1, 0, ev, each);
    for (int r = 0; r < runs; ++r) times[r] = run(ctx, &dev, &t, 1, 0, ev, each);
    for (int r = 0; r < runs; ++r) alone[r] = run(ctx, &dev, &t, 1, 1, ev, each);
    const double whole_ms = 1e3 * median(times, runs), whole_alone_ms = 1e3 * median(alone, runs);
    printf(
        "| slices | ms | rate per bit | ms, slices alone | rate per bit, alone | first slice ms | middle slice ms | last slice "
        "ms |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    printf("| 1 (whole) | %.3f | 100%% | %.3f | 100%% | - | - | - |\n", whole_ms, whole_alone_ms);
    int bad_ways = 0;
    t.out = split_out;
    for (int i = 0; i < nlist; ++i) {
        const int S = list[i];
        CK(cudaMemsetAsync(split_out, 0xff, (size_t)(T * T) * 4, st));
        run(ctx, &dev, &t, S, 0, ev, each);
        unsigned long long bad = 0;
        CK(cudaMemsetAsync(d_bad, 0, 8, st));
        count_diff<<<1024, 256, 0, st>>>(whole_out, split_out, T, T, 0, d_bad);
        CK(cudaMemcpyAsync(&bad, d_bad, 8, cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));
        if (bad) {
            printf("  %d slices: %llu elements differ from the whole tile's\n", S, bad);
            bad_ways++;
        }
        for (int r = 0; r < runs; ++r) {
            times[r] = run(ctx, &dev, &t, S, 0, ev, each);
            first[r] = each[0], mid[r] = each[S / 2], last[r] = each[S - 1];
        }
        for (int r = 0; r < runs; ++r) alone[r] = run(ctx, &dev, &t, S, 1, ev, each);
        const double split_ms = 1e3 * median(times, runs), alone_ms = 1e3 * median(alone, runs);
        printf("| %d | %.3f | %.1f%% | %.3f | %.1f%% | %.3f | %.3f | %.3f |\n", S, split_ms, 100 * whole_ms / split_ms,
               alone_ms, 100 * whole_alone_ms / alone_ms, 1e3 * median(first, runs), 1e3 * median(mid, runs),
               1e3 * median(last, runs));
        fflush(stdout);
    }
    for (int i = 0; i <= MAX_SLICES; ++i) CK(cudaEventDestroy(ev[i]));
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(whole_out));
    CK(cudaFree(split_out));
    CK(cudaFree(d_bad));
    oc_cuda_device_close(&dev);
    oc_context_free(ctx);
    return bad_ways ? 1 : 0;
}
