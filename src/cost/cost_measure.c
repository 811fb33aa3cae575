/*
 * cost_measure.c - the measured rates: the CPU Gram kernel's rate, and oc_cost_calibrate
 * (`outcore devices --bandwidth`): every rate of this machine, stored in the rate cache.
 *
 * Kernel rates are measured through oc_gram itself, on the backend in question, so they
 * include what a real job pays around the kernel (threads, tiles, epilogue). The GPU's
 * start-up is the wall time of a tiny GPU job in a process that has not used CUDA yet
 * (context creation, module load, the engine's set-up), and the set-up of a later job is
 * the same tiny job again: the two figures the model uses for a process's first and later
 * GPU jobs. The host memory bandwidth is src/cost/stream_triad.c's.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/text_buf.h"
#include "core/threads.h"
#include "cost/cost.h"

/* The rows of the CPU kernel's measurement by oc_cost_calibrate. A build under
 * AddressSanitizer or ThreadSanitizer runs the kernels tens of times slower and its rates
 * mean nothing, so it measures a sixteenth of the job: the same code, in a second instead of
 * a minute (the first-use measurement shrinks by the same factor: MEASURE_SHRINK). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MEASURE_ROWS 1024
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MEASURE_ROWS 1024
#endif
#endif
#ifndef MEASURE_ROWS
#define MEASURE_ROWS 4096
#endif
#define MEASURE_SHRINK ((double)(MEASURE_ROWS * MEASURE_ROWS) / (4096.0 * 4096.0))

/* The first-use measurement (oc_cost_measure_cpu_bits_quick): a counts job of QUICK_BITS-bit
 * rows, as many as make QUICK_SECONDS of work at this machine's default kernel rate, best of
 * QUICK_RUNS (the first also starts the measurement's worker threads). */
#define QUICK_BITS 16384
#define QUICK_SECONDS 0.01
#define QUICK_RUNS 3
#define QUICK_MIN_ROWS 256

/* A random 0/1 matrix of rows x cols bits, packed; NULL on failure. */
static oc_matrix *random_bits(oc_context *ctx, int64_t rows, int64_t cols)
{
    const int64_t stride = cols / 8;
    unsigned char *bits = malloc((size_t)(rows * stride));
    if (!bits) return NULL;
    uint64_t x = 0x9e3779b97f4a7c15ull; /* xorshift: any bits do, the kernels are data-independent */
    for (int64_t i = 0; i < rows * stride; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        bits[i] = (unsigned char)x;
    }
    oc_matrix *m = NULL;
    if (oc_matrix_from_bits(ctx, bits, rows, cols, stride, OC_BITS_MSB_FIRST, &m) != OC_OK) m = NULL;
    free(bits);
    return m;
}

/* Seconds of a counts job A·Aᵀ with its output dropped, best of `runs`; in *macs its bit-MACs
 * as the model counts them (oc_cost_job_gram: the computed triangle), so that a rate from
 * them predicts a job counted the same way. */
static double time_gram(oc_context *ctx, oc_matrix *a, oc_backend backend, int runs, double *macs)
{
    const int64_t rows = oc_matrix_rows(a);
    const oc_cost_gram_shape shape = {
        .n = rows, .p = rows, .m = oc_matrix_cols(a), .symmetric = 1, .output = OC_COST_GRAM_DISCARD};
    oc_cost_job model;
    oc_cost_job_gram(&shape, &model);
    *macs = model.ops[OC_COST_BIT_MAC];
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    opts.backend = backend;
    opts.algorithm = OC_ALGORITHM_DENSE;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_DISCARD;
    double best = INFINITY;
    for (int r = 0; r < runs; ++r) {
        oc_gram_stats stats = {.struct_size = sizeof stats};
        double t0 = oc_now();
        if (oc_gram(ctx, a, NULL, &opts, &out, &stats) != OC_OK) return -1;
        double t = oc_now() - t0;
        if (t < best) best = t;
    }
    return best;
}

/* Bit-MAC/s of a rows x bits counts job on the CPU, on a context of its own (the
 * measurement's failures are its own), best of `runs`. 0 on failure. */
static double cpu_bits(int64_t rows, int64_t bits, int runs)
{
    oc_context *own = NULL;
    if (oc_context_create(&own) != OC_OK) return 0;
    oc_matrix *a = random_bits(own, rows, bits);
    double macs = 0, t = a ? time_gram(own, a, OC_BACKEND_CPU, runs, &macs) : -1;
    oc_matrix_free(a);
    oc_context_free(own);
    return t > 0 ? macs / t : 0;
}

double oc_cost_measure_cpu_bits(oc_context *ctx)
{
    (void)ctx;
    /* About 2.7·10¹¹ bit-MACs: tens of milliseconds on a server's cores, long enough that
     * starting the threads does not count. */
    return cpu_bits(MEASURE_ROWS, 32768, 3);
}

double oc_cost_measure_cpu_bits_quick(oc_context *ctx)
{
    (void)ctx;
    oc_cost_rates dflt = {0};
    oc_cost_rates_resolve(&dflt, oc_cpu_cores(), oc_cpu_isa());
    const double macs = QUICK_SECONDS * MEASURE_SHRINK * dflt.cpu[OC_COST_BIT_MAC];
    int64_t rows = ((int64_t)sqrt(2.0 * macs / QUICK_BITS) + 63) / 64 * 64;
    if (rows < QUICK_MIN_ROWS) rows = QUICK_MIN_ROWS;
    if (rows > MEASURE_ROWS) rows = MEASURE_ROWS;
    return cpu_bits(rows, QUICK_BITS, QUICK_RUNS);
}

/* The GPU's figures: start-up (this process's first GPU job), a later job's set-up, and the
 * kernel's rate on a job large enough to hide both. */
static void measure_gpu(oc_context *ctx, oc_cost_rates *r, oc_text *report)
{
    oc_matrix *tiny = random_bits(ctx, 64, 512), *big = random_bits(ctx, 16384, 65536);
    double macs = 0;
    if (!tiny || !big) goto cleanup;
    int warm = oc_cost_gpu_warm();
    double first = time_gram(ctx, tiny, OC_BACKEND_CUDA, 1, &macs);
    double later = time_gram(ctx, tiny, OC_BACKEND_CUDA, 3, &macs);
    double big_t = time_gram(ctx, big, OC_BACKEND_CUDA, 3, &macs);
    if (first > 0 && later > 0 && !warm) {
        r->gpu_startup = first;
        r->gpu_job_setup = later;
        r->measured |= OC_COST_M_STARTUP;
        oc_text_printf(report, "GPU start-up      %.3f s (first job of a process), %.4f s later jobs\n", first, later);
    } else if (warm) {
        oc_text_printf(report, "GPU start-up      not measured: this process had used the GPU already\n");
    }
    if (big_t > 0) {
        /* The model adds a job's set-up itself: the rate is of what follows it. */
        double work = later > 0 && big_t - later > 0.1 * big_t ? big_t - later : big_t;
        r->gpu[OC_COST_BIT_MAC] = macs / work;
        r->measured |= OC_COST_M_GPU_BITS;
        oc_text_printf(report, "GPU Gram kernel   %.3g bit-MAC/s (16384 x 16384 x 65536 bits, set-up excluded)\n",
                       r->gpu[OC_COST_BIT_MAC]);
    }
cleanup:
    oc_matrix_free(tiny);
    oc_matrix_free(big);
}

/* The slowest of the GPUs' measured PCIe rates: a job may run on any of them. */
static void take_pcie(const oc_devices *d, oc_cost_rates *r)
{
    for (int i = 0; i < d->count; ++i) {
        const oc_device_info *g = &d->devices[i];
        if (!(g->h2d_pinned > 0)) continue;
        double *dst[] = {&r->h2d_pinned, &r->d2h_pinned, &r->bidir_pinned, &r->h2d_pageable, &r->d2h_pageable};
        const double src[] = {g->h2d_pinned, g->d2h_pinned, g->bidir_pinned, g->h2d_pageable, g->d2h_pageable};
        for (int k = 0; k < 5; ++k)
            if (!(r->measured & OC_COST_M_PCIE) || src[k] * 1e9 < *dst[k]) *dst[k] = src[k] * 1e9;
        r->measured |= OC_COST_M_PCIE;
        if (!r->gpu_name[0]) snprintf(r->gpu_name, sizeof r->gpu_name, "%.127s", g->name);
    }
}

oc_status oc_cost_calibrate(oc_context *ctx, oc_devices **devices_out, char **report_out)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    if (devices_out) *devices_out = NULL;
    if (report_out) *report_out = NULL;
    oc_cost_rates r = {0};
    snprintf(r.cpu_isa, sizeof r.cpu_isa, "%s", oc_cpu_isa());
    oc_text report = {0};
    oc_devices *devices = NULL;
    oc_status st = OC_OK;
    /* The GPU first: its start-up is only seen by the process's first GPU work. */
    if (oc_cuda_device_count() > 0) measure_gpu(ctx, &r, &report);
    OC_CHECK_GOTO(ctx, st, oc_devices_query(ctx, 1, &devices), cleanup);
    take_pcie(devices, &r);
    if (r.measured & OC_COST_M_PCIE)
        oc_text_printf(
            &report, "PCIe (slowest GPU) pinned %.1f / %.1f GB/s (H2D / D2H), both %.1f, pageable %.1f / %.1f\n",
            r.h2d_pinned / 1e9, r.d2h_pinned / 1e9, r.bidir_pinned / 1e9, r.h2d_pageable / 1e9, r.d2h_pageable / 1e9);
    r.host_bw = oc_cost_measure_triad(ctx, oc_cpu_cores(), 0, &r.file_pages, &r.file_faults);
    if (r.host_bw > 0) {
        r.measured |= OC_COST_M_HOST_BW;
        oc_text_printf(&report, "host memory       %.1f GB/s (STREAM triad, %d threads)\n", r.host_bw / 1e9,
                       oc_cpu_cores());
    }
    if (r.file_pages > 0) {
        r.measured |= OC_COST_M_PAGES;
        oc_text_printf(&report, "fresh pages       %.1f GB/s on one thread, %.1f GB/s on %d at once\n",
                       r.file_pages / 1e9, r.file_faults / 1e9, oc_cpu_cores());
    }
    r.cpu[OC_COST_BIT_MAC] = oc_cost_measure_cpu_bits(ctx);
    if (r.cpu[OC_COST_BIT_MAC] > 0) {
        r.measured |= OC_COST_M_CPU_BITS;
        oc_text_printf(&report, "CPU Gram kernel   %.3g bit-MAC/s (%s, %d threads)\n", r.cpu[OC_COST_BIT_MAC],
                       r.cpu_isa, oc_cpu_cores());
    }
    char path[4096], why[256];
    if (!oc_cost_cache_path_why(path, sizeof path, why, sizeof why))
        oc_text_printf(&report, "not stored: %s\n", why[0] ? why : "the rate cache is off (OUTCORE_COST_CACHE)");
    else if (oc_cost_rates_store(&r) == 0) oc_text_printf(&report, "stored in         %s\n", path);
    else oc_text_printf(&report, "not stored: cannot write %s: %s\n", path, strerror(errno));
    if (report_out) OC_CHECK_GOTO(ctx, st, oc_text_finish(ctx, &report, report_out), cleanup);
    if (devices_out) *devices_out = devices, devices = NULL;
cleanup:
    free(report.data);
    oc_devices_free(devices);
    return st;
}
