/*
 * test_map_cuda.c - map's emitted CUDA kernels run on the device and give the CPU backend's
 * bytes: the element-wise kernel over two chunks (start offsets, a chunked input and a
 * broadcast one, output casts) for integer, comparison and float arithmetic (the reduction
 * kernels run through oc_map_run in test_map_run_cuda.c). Compiled with NVRTC (dlopen), loaded and launched through the
 * runtime's library API (cudaLibraryLoadData: the static runtime finds the driver itself, so
 * the test starts, and skips, on a machine without one). Exits 77 without a usable device or
 * without NVRTC.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "../map_nvrtc.h"
#include "map/map_codegen.h"
#include "map/map_types.h"
#include "map_values.h"

static oc_context *ctx;
static char arch[32];

#define N_ROWS 1000
#define N_COLS 257

static int cu_ok(cudaError_t r, const char *what)
{
    if (r == cudaSuccess) return 1;
    oc_test_fail(__FILE__, __LINE__, "%s: %s", what, cudaGetErrorString(r));
    return 0;
}

/* Runs kernel `name` of src over the plan's result in two chunks into host buffer out
 * (elementwise) or partials (reduce: one chunk, `blocks` partials). */
static int run_kernel(const oc_map_plan *m, const char *src, const char *name, void *out, size_t out_elem,
                      int64_t blocks)
{
    char *ptx = map_nvrtc_compile(src, arch, m->text);
    CHECK_MSG(ptx != NULL, "%s does not compile", m->text);
    if (!ptx) return 0;
    cudaLibrary_t lib = NULL;
    cudaKernel_t fn = NULL;
    int ok = cu_ok(cudaLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0), "cudaLibraryLoadData") &&
             cu_ok(cudaLibraryGetKernel(&fn, lib, name), name);
    free(ptx);
    char *din[4] = {0}, *dout = NULL, *derr = NULL;
    for (int k = 0; ok && k < m->n_inputs; k++) {
        size_t bytes = (size_t)m->inputs[k].count * oc_mt_size(m->inputs[k].type);
        ok = cu_ok(cudaMalloc((void **)&din[k], bytes ? bytes : 1), "cudaMalloc") &&
             cu_ok(cudaMemcpy(din[k], m->inputs[k].data, bytes, cudaMemcpyHostToDevice), "upload");
    }
    int reduce = blocks > 0;
    size_t out_bytes = reduce ? (size_t)blocks * out_elem : (size_t)m->count * out_elem;
    ok = ok && cu_ok(cudaMalloc((void **)&dout, out_bytes), "cudaMalloc") &&
         cu_ok(cudaMalloc((void **)&derr, sizeof(int)), "cudaMalloc") &&
         cu_ok(cudaMemset(derr, 0, sizeof(int)), "memset");
    /* Two chunks: the second starts mid-row, so the broadcast offsets start mid-pattern. */
    int64_t cut = reduce ? m->count : m->count / 2 + 3;
    for (int chunk = 0; ok && chunk < (reduce ? 1 : 2); chunk++) {
        long long start = chunk ? cut : 0, n = chunk ? m->count - cut : cut;
        char *in_ptr[4], *out_ptr = dout + (reduce ? 0 : start * (long long)out_elem);
        void *params[8];
        int np = 0;
        params[np++] = &out_ptr;
        for (int k = 0; k < m->n_inputs; k++) {
            if (!m->inputs[k].used) continue;
            in_ptr[k] = din[k] + (m->inputs[k].same_shape ? start * (long long)oc_mt_size(m->inputs[k].type) : 0);
            params[np++] = &in_ptr[k];
        }
        params[np++] = &n;
        params[np++] = &start;
        params[np++] = &derr;
        unsigned grid = reduce ? (unsigned)blocks : 120;
        dim3 g = {grid, 1, 1}, blk = {OC_MAP_CUDA_BLOCK, 1, 1};
        ok = cu_ok(cudaLaunchKernel((const void *)fn, g, blk, params, 0, NULL), "launch") &&
             cu_ok(cudaDeviceSynchronize(), "synchronize");
    }
    ok = ok && cu_ok(cudaMemcpy(out, dout, out_bytes, cudaMemcpyDeviceToHost), "download");
    for (int k = 0; k < 4; k++) cudaFree(din[k]);
    cudaFree(dout);
    cudaFree(derr);
    if (lib) cudaLibraryUnload(lib);
    return ok;
}

/* A float power that is not one of numpy's shortcuts (map_typecheck.c: fast_power) is a
 * math function: glibc's pow on the CPU, CUDA's on the device (3 ulp apart at most). x ** 0.5
 * of an integer array is such a power (numpy takes the sqrt shortcut for float arrays only). */
static int64_t pow_ulps(const char *expr, int ta)
{
    return strstr(expr, "**") && !oc_mt_is_float(ta) && strstr(expr, "0.5") ? 3 : 0;
}

static void check_elementwise(const char *expr, int ta, int tb, int dtype)
{
    static unsigned char a[N_ROWS * N_COLS * 8], b[N_COLS * 8];
    fill(a, ta, N_ROWS * N_COLS, 1);
    fill(b, tb, N_COLS, 2);
    int64_t sa[2] = {N_ROWS, N_COLS}, sb[1] = {N_COLS};
    oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
    in[0].name = "a", in[0].data = a, in[0].dtype = ta, in[0].ndim = 2, in[0].shape = sa;
    in[1].name = "b", in[1].data = b, in[1].dtype = tb, in[1].ndim = 1, in[1].shape = sb;
    oc_map_options o = OC_MAP_OPTIONS_INIT;
    o.dtype = dtype, o.backend = OC_BACKEND_CPU; /* the reference: never auto's GPU */
    oc_map *m = NULL;
    if (oc_map_create(ctx, expr, in, 2, NULL, 0, &o, &m) != OC_OK) return; /* numpy refuses it too */
    size_t elem = oc_mt_size(m->out_type);
    unsigned char *cpu = malloc((size_t)m->count * elem), *gpu = malloc((size_t)m->count * elem);
    char *src = NULL;
    int cpu_ok = oc_map_run(ctx, m, NULL, cpu, NULL) == OC_OK; /* a negative integer power fails: skip */
    if (cpu && gpu && cpu_ok && oc_map_emit_cuda(ctx, m, &src, NULL) == OC_OK &&
        run_kernel(m, src, "oc_map_elementwise", gpu, elem, 0))
        CHECK_MSG(same_values(cpu, gpu, m->out_type, m->count, pow_ulps(expr, ta)),
                  "%s over %s, %s: the GPU's values differ from the CPU's", expr, oc_mt_name(ta), oc_mt_name(tb));
    free(src);
    free(cpu);
    free(gpu);
    oc_map_free(m);
}

int main(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        oc_test_skip("no usable CUDA device");
        return oc_test_finish();
    }
    if (!map_nvrtc_load()) {
        oc_test_skip("libnvrtc is not installed");
        return oc_test_finish();
    }
    int major = 0, minor = 0;
    if (!cu_ok(cudaSetDevice(0), "cudaSetDevice") ||
        !cu_ok(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), "attribute") ||
        !cu_ok(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), "attribute"))
        return oc_test_finish();
    snprintf(arch, sizeof arch, "compute_%d%d", major, minor);
    if (oc_context_create(&ctx) != OC_OK) return 1;
    static const char *exprs[] = {"a + b",
                                  "a - b * 3",
                                  "a * b + 1",
                                  "a / b",
                                  "a // b",
                                  "a % b",
                                  "a ** 2",
                                  "-a",
                                  "~a",
                                  "abs(a)",
                                  "a == b",
                                  "a < b",
                                  "(a <= b) & (a >= b)",
                                  "a ^ b",
                                  "where(a > b, a, b)",
                                  "minimum(a, b)",
                                  "maximum(a, 2)",
                                  "clip(a, 1, 5)",
                                  "floor(a)",
                                  "ceil(b)",
                                  "a ** -1",
                                  "a ** 0.5"};
    for (size_t e = 0; e < sizeof exprs / sizeof exprs[0]; e++)
        for (int ta = 0; ta < OC_MT_COUNT; ta++) check_elementwise(exprs[e], ta, (ta * 7 + (int)e) % OC_MT_COUNT, -1);
    check_elementwise("a * b", MT_F64, MT_F64, MT_F32);
    check_elementwise("a + b", MT_I64, MT_I8, MT_I8);
    check_elementwise("a * b", MT_F64, MT_I32, MT_F32);
    oc_context_free(ctx);
    return oc_test_finish();
}
