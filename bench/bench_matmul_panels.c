/*
 * bench_matmul_panels.c - the host's side of a product's panels on one core: the element
 * conversions of mixed pairs and asked dtypes (oc_matmul_convert), and read_panel over an
 * operand in memory, as stored and transposed. The best of --rounds rounds of each, after one
 * that faults the pages in.
 *
 * Usage: bench_matmul_panels [ELEMENTS_M] [ROUNDS]   (default 50 M elements, 3 rounds)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "matmul/matmul_dtype.h"
#include "matmul/matmul_io.h"
#include "matmul/matmul_source.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void conversion(oc_matmul_dtype from, oc_mm_type to, int64_t n, int rounds)
{
    unsigned char *src = calloc((size_t)n, oc_matmul_dtype_size(from)), *dst = malloc((size_t)n * oc_mm_type_size(to));
    if (!src || !dst) exit(1);
    double best = 1e30;
    for (int r = 0; r <= rounds; r++) {
        const double t = now();
        oc_matmul_convert(from, src, n, to, dst, 1);
        if (r > 0 && now() - t < best) best = now() - t;
    }
    printf("convert %-8s -> %-8s %6.2f G elements/s\n", oc_matmul_dtype_name(from),
           oc_matmul_dtype_name(oc_matmul_dtype_of(to)), (double)n / best / 1e9);
    free(src);
    free(dst);
}

/* Panels of 1024 columns of op(B), B an n x n float32 array in memory, transposed or not. */
static void panels(int64_t n, int transposed, int rounds)
{
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) exit(1);
    float *b = malloc((size_t)(n * n) * sizeof *b), *dst = malloc((size_t)(n * 1024) * sizeof *dst);
    if (!b || !dst) exit(1);
    for (int64_t i = 0; i < n * n; i++) b[i] = (float)i;
    oc_matmul_array B = OC_MATMUL_ARRAY_INIT;
    B.dtype = OC_MATMUL_FLOAT32, B.data = b, B.rows = n, B.cols = n;
    oc_mm_source sb;
    if (oc_mm_source_open(ctx, &B, "B", 0, &sb) != OC_OK) exit(1);
    oc_mm_io io;
    memset(&io, 0, sizeof io);
    io.src[0] = io.src[1] = &sb;
    io.transpose[OC_MM_B] = transposed;
    oc_matmul_job job;
    memset(&job, 0, sizeof job);
    job.ctx = ctx, job.m = job.n = job.k = n, job.in_type = job.out_type = OC_MM_FLOAT32;
    oc_mm_io_bind(&job, &io);
    double best = 1e30;
    for (int r = 0; r <= rounds; r++) {
        const double t = now();
        for (int64_t c = 0; c + 1024 <= n; c += 1024) job.read_panel(&job, OC_MM_B, 0, n, c, 1024, dst);
        if (r > 0 && now() - t < best) best = now() - t;
    }
    printf("read_panel float32 %s, %lld x 1024 panels: %.2f GB/s\n", transposed ? "transposed" : "as stored",
           (long long)n, (double)(n / 1024 * 1024 * n) * 4.0 / best / 1e9);
    oc_mm_source_close(&sb);
    free(b);
    free(dst);
    oc_context_free(ctx);
}

int main(int argc, char **argv)
{
    const int64_t n = (argc > 1 ? atoll(argv[1]) : 50) << 20;
    const int rounds = argc > 2 ? atoi(argv[2]) : 3;
    conversion(OC_MATMUL_INT8, OC_MM_FLOAT32, n, rounds);
    conversion(OC_MATMUL_FLOAT16, OC_MM_FLOAT32, n, rounds);
    conversion(OC_MATMUL_FLOAT32, OC_MM_FLOAT64, n, rounds);
    conversion(OC_MATMUL_FLOAT64, OC_MM_FLOAT32, n, rounds);
    conversion(OC_MATMUL_UINT8, OC_MM_FLOAT16, n, rounds);
    conversion(OC_MATMUL_FLOAT32, OC_MM_FLOAT16, n, rounds);
    conversion(OC_MATMUL_FLOAT32, OC_MM_BFLOAT16, n, rounds);
    panels(4096, 0, rounds);
    panels(4096, 1, rounds);
    return 0;
}
