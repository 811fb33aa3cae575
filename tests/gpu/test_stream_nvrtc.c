/*
 * test_stream_nvrtc.c - on a real GPU: a kernel compiled at run time with NVRTC, loaded once
 * (the second lookup is the in-process cache's), run by oc_stream_run as a generated kernel
 * is (oc_nvrtc_launch from the launch callback) over arrays larger than the budget, equals a
 * CPU loop. This is the path `outcore map` takes. Exits 77 without a GPU or without NVRTC.
 */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "map/cuda/nvrtc.h"
#include "nvrtc_skip.h"

static const char *source =
    "extern \"C\" __global__ void fma_kernel(const double *a, const double *b, double *c, double s, long long n)\n"
    "{\n"
    "    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
    "         i += (long long)gridDim.x * blockDim.x)\n"
    "        c[i] = a[i] * s + b[i];\n"
    "}\n";

typedef struct job {
    oc_context *ctx;
    CUfunction fn;
    double scale;
} job;

static int launch(const oc_stream_chunk *c, void *user)
{
    job *j = user;
    long long n = c->rows * c->shapes[1];
    void *args[] = {(void *)&c->data[0], (void *)&c->data[1], (void *)&c->data[2], &j->scale, &n};
    unsigned grid[3] = {(unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096), 1, 1}, block[3] = {256, 1, 1};
    return oc_nvrtc_launch(j->ctx, j->fn, "fma_kernel", grid, block, 0, (CUstream)c->stream, args) == OC_OK ? 0 : 1;
}

int main(void)
{
    if (gpu_nvrtc_missing()) return oc_test_finish();
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    /* The module is loaded into the device's primary context, current from here on. */
    CHECK(cudaSetDevice(0) == cudaSuccess && cudaFree(0) == cudaSuccess);
    oc_nvrtc_source src = {"fma.cu", source, NULL, 0};
    job j = {ctx, NULL, 1.5};
    CUfunction again = NULL;
    CHECK_MSG(oc_nvrtc_function(ctx, &src, "fma_kernel", &j.fn) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK(oc_nvrtc_function(ctx, &src, "fma_kernel", &again) == OC_OK && again == j.fn);
    CHECK(oc_nvrtc_function(ctx, &src, "no_such_kernel", &again) == OC_ERR_INVALID_ARGUMENT);

    const long long rows = 200000, cols = 20, n = rows * cols; /* 32 MB per array */
    double *a = malloc(n * 8), *b = malloc(n * 8), *c = calloc(n, 8);
    for (long long i = 0; i < n; ++i) a[i] = (double)(i % 311) - 100.0, b[i] = (double)(i % 7) * 0.25;
    oc_stream_array arrays[3] = {
        {"a", OC_STREAM_INPUT, 8, 2, {rows, cols}, 0, a},
        {"b", OC_STREAM_INPUT, 8, 2, {rows, cols}, 0, b},
        {"c", OC_STREAM_OUTPUT, 8, 2, {rows, cols}, 0, c},
    };
    oc_stream_spec spec = OC_STREAM_SPEC_INIT;
    spec.arrays = arrays, spec.narrays = 3, spec.launch = launch, spec.user = &j;
    oc_stream_options opts = OC_STREAM_OPTIONS_INIT;
    opts.gpu_mem_bytes = 24LL << 20;
    CHECK_MSG(oc_stream_run(ctx, &spec, &opts, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    long long bad = 0;
    for (long long i = 0; i < n; ++i) bad += c[i] != a[i] * 1.5 + b[i];
    CHECK_EQ_I64(bad, 0);
    free(a), free(b), free(c);
    oc_context_free(ctx);
    return oc_test_finish();
}
