/*
 * matmul_rate.c - the GEMM rate of one GPU, measured (oc_mm_cuda_gemm_rate): the cost model's
 * figure for `--backend auto`, taken once per machine and type and kept in the rate cache.
 *
 * A square product of operands resident on the device, through the tile path's own cuBLASLt
 * wrapper (matmul_gemm.h: the same compute type and the heuristic's algorithm for the shape),
 * timed with events: one call untimed (the algorithm's choice, the kernels' load), then calls
 * until RATE_SECONDS of work. What the model adds to it, PCIe, is measured elsewhere.
 */
#include <cuda_runtime_api.h>
#include <string.h>

#include "matmul/cuda/matmul_cuda_plan.h"
#include "matmul/cuda/matmul_gemm.h"
#include "matmul/matmul_dtype.h"
#include "matmul/cuda/matmul_rate.h"

/* Work timed, and the most calls it may take. */
#define RATE_SECONDS 0.02
#define RATE_CALLS_MAX 64
/* The edge of the product: large enough for the tensor cores' full rate, at most 400 MiB of
 * operands and result (8192² of int8 and int32). */
#define RATE_EDGE_WIDE 4096   /* float64, float32 (FP32 and TF32) */
#define RATE_EDGE_NARROW 8192 /* float16, bfloat16, int8 */

double oc_mm_cuda_gemm_rate(const oc_cublaslt_api *lt, oc_mm_type in, int tf32, int device, int64_t room)
{
    int count = 0;
    if (!lt || cudaGetDeviceCount(&count) != cudaSuccess || device < 0 || device >= count ||
        cudaSetDevice(device) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    oc_mm_cuda_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.in.in_type = in;
    plan.in.tf32 = tf32 && in == OC_MM_FLOAT32;
    plan.in.out_type = in == OC_MM_FLOAT64 ? OC_MM_FLOAT64 : in == OC_MM_INT8 ? OC_MM_INT32 : OC_MM_FLOAT32;
    plan.acc_type = plan.in.out_type;
    plan.workspace = OC_MM_WORKSPACE;
    const int64_t n = in == OC_MM_FLOAT64 || in == OC_MM_FLOAT32 ? RATE_EDGE_WIDE : RATE_EDGE_NARROW;
    const size_t in_bytes = (size_t)(n * n) * oc_mm_type_size(in),
                 acc_bytes = (size_t)(n * n) * oc_mm_type_size(plan.acc_type);
    if (room > 0 && (int64_t)(2 * in_bytes + acc_bytes) + plan.workspace > room) return 0;
    void *a = NULL, *b = NULL, *c = NULL, *work = NULL;
    cudaStream_t stream = NULL;
    cudaEvent_t ev[2] = {NULL, NULL};
    oc_context *ctx = NULL;
    oc_mm_gemm g;
    memset(&g, 0, sizeof g);
    double rate = 0;
    int measured = 0;
    if (oc_context_create(&ctx) != OC_OK) return 0;
    if (cudaMalloc(&a, in_bytes) != cudaSuccess || cudaMalloc(&b, in_bytes) != cudaSuccess ||
        cudaMalloc(&c, acc_bytes) != cudaSuccess || cudaMalloc(&work, (size_t)plan.workspace) != cudaSuccess ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreate(&ev[0]) != cudaSuccess || cudaEventCreate(&ev[1]) != cudaSuccess)
        goto done;
    /* Operands of small numbers in every type (0x3c: about 0.012 in float32, 1.0 in float16,
     * 60 in int8, whose sums stay far inside int32); the rate does not depend on them. */
    if (cudaMemsetAsync(a, 0x3c, in_bytes, stream) != cudaSuccess ||
        cudaMemsetAsync(b, 0x3c, in_bytes, stream) != cudaSuccess ||
        oc_mm_gemm_open(ctx, lt, &plan, work, &g) != OC_OK ||
        oc_mm_gemm_run(ctx, &g, n, n, n, a, b, c, 0, stream) != OC_OK || cudaStreamSynchronize(stream) != cudaSuccess)
        goto done;
    int calls = 1;
    for (int round = 0; round < 2; ++round) {
        float ms = 0;
        if (cudaEventRecord(ev[0], stream) != cudaSuccess) goto done;
        for (int i = 0; i < calls; ++i)
            if (oc_mm_gemm_run(ctx, &g, n, n, n, a, b, c, 0, stream) != OC_OK) goto done;
        if (cudaEventRecord(ev[1], stream) != cudaSuccess || cudaEventSynchronize(ev[1]) != cudaSuccess ||
            cudaEventElapsedTime(&ms, ev[0], ev[1]) != cudaSuccess || ms <= 0)
            goto done;
        rate = 2.0 * (double)n * (double)n * (double)n * calls / (ms * 1e-3);
        /* The second round long enough to time the rate, not the launch. */
        const double per_call = ms * 1e-3 / calls;
        calls = (int)(RATE_SECONDS / per_call) + 1;
        if (calls > RATE_CALLS_MAX) calls = RATE_CALLS_MAX;
    }
    measured = 1;
done:
    (void)cudaGetLastError();
    if (stream) (void)cudaStreamSynchronize(stream);
    oc_mm_gemm_close(&g);
    for (int i = 0; i < 2; ++i)
        if (ev[i]) (void)cudaEventDestroy(ev[i]);
    if (stream) (void)cudaStreamDestroy(stream);
    (void)cudaFree(a);
    (void)cudaFree(b);
    (void)cudaFree(c);
    (void)cudaFree(work);
    (void)cudaGetLastError();
    oc_context_free(ctx);
    return measured ? rate : 0;
}
