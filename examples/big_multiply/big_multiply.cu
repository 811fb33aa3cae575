// big_multiply.cu - c = a * b element-wise for arrays larger than the device budget, through
// outcore's streaming API (docs/stream.md) with a kernel written here: outcore cuts the rows
// into chunks that fit --gpu-mem, uploads a chunk of a and b while the previous chunk
// multiplies and the one before comes back.
//
//   big_multiply [--rows N] [--cols M] [--gpu-mem SIZE] [--a A.npy --b B.npy] [-o C.npy]
//                [--no-check] [--device D]
//
// Without --a/--b the inputs are made in memory (N x M float64, default 1,000,000 x 500:
// 4 GB each). The result is checked element by element against a CPU product (one thread,
// as numpy computes a * b), whose time is printed beside outcore's. Exits 77 without a GPU.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outcore.h"
#include "../common/example_args.h"
#include "../common/npy_file.h"

__global__ void multiply(const double *a, const double *b, double *c, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        c[i] = a[i] * b[i];
}

// One chunk: rows x cols elements of each array, contiguous on the device.
static int launch(const oc_stream_chunk *chunk, void *user)
{
    (void)user;
    long long n = chunk->rows * chunk->shapes[1];
    int blocks = (int)((n + 255) / 256 < 65536 ? (n + 255) / 256 : 65536);
    multiply<<<blocks, 256, 0, (cudaStream_t)chunk->stream>>>((const double *)chunk->data[0],
                                                             (const double *)chunk->data[1], (double *)chunk->data[2], n);
    return cudaPeekAtLastError() == cudaSuccess ? 0 : 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: big_multiply [--rows N] [--cols M] [--gpu-mem SIZE] [--a A.npy --b B.npy] [-o C.npy] "
                    "[--no-check] [--device D]\n");
    return 2;
}

int main(int argc, char **argv)
{
    long long rows = 1000000, cols = 500;
    int64_t gpu_mem = 1LL << 30;
    const char *pa = NULL, *pb = NULL, *pc = NULL;
    int check = 1, device = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-check")) check = 0;
        else if (!v) return usage();
        else if (!strcmp(a, "--rows")) rows = atoll(v), ++i;
        else if (!strcmp(a, "--cols")) cols = atoll(v), ++i;
        else if (!strcmp(a, "--gpu-mem")) gpu_mem = example_size(v), ++i;
        else if (!strcmp(a, "--a")) pa = v, ++i;
        else if (!strcmp(a, "--b")) pb = v, ++i;
        else if (!strcmp(a, "-o")) pc = v, ++i;
        else if (!strcmp(a, "--device")) device = atoi(v), ++i;
        else return usage();
    }
    if (rows < 1 || cols < 1 || gpu_mem < 0 || (!pa != !pb)) return usage();
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("big_multiply: no usable CUDA device (skipped)\n");
        return 77;
    }
    // This program's kernels launch through its own CUDA runtime, on outcore's streams: they
    // must run on the device outcore uses.
    if (cudaSetDevice(device) != cudaSuccess) {
        fprintf(stderr, "big_multiply: CUDA device %d does not exist\n", device);
        return 2;
    }

    npy_file fa, fb, fc;
    double *a, *b, *c;
    if (pa) {
        if (npy_open(&fa, pa) || npy_open(&fb, pb)) return 1;
        if (fa.shape[0] != fb.shape[0] || fa.shape[1] != fb.shape[1]) {
            fprintf(stderr, "big_multiply: %s is %lld x %lld, %s is %lld x %lld\n", pa, (long long)fa.shape[0],
                    (long long)fa.shape[1], pb, (long long)fb.shape[0], (long long)fb.shape[1]);
            return 1;
        }
        rows = fa.shape[0], cols = fa.shape[1], a = fa.data, b = fb.data;
    } else {
        a = (double *)malloc(sizeof(double) * rows * cols);
        b = (double *)malloc(sizeof(double) * rows * cols);
        if (!a || !b) return fprintf(stderr, "big_multiply: out of host memory\n"), 1;
        for (long long i = 0; i < rows * cols; ++i) a[i] = (double)(i % 1013) * 0.5 - 17.0, b[i] = 1.0 + (double)(i % 97) * 0.125;
    }
    if (pc) {
        if (npy_create(&fc, pc, rows, cols)) return 1;
        c = fc.data;
    } else if (!(c = (double *)malloc(sizeof(double) * rows * cols))) {
        return fprintf(stderr, "big_multiply: out of host memory\n"), 1;
    }

    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    oc_stream_array arrays[3] = {
        {"a", OC_STREAM_INPUT, 8, 2, {rows, cols}, 0, a},
        {"b", OC_STREAM_INPUT, 8, 2, {rows, cols}, 0, b},
        {"c", OC_STREAM_OUTPUT, 8, 2, {rows, cols}, 0, c},
    };
    oc_stream_spec spec = OC_STREAM_SPEC_INIT;
    spec.arrays = arrays, spec.narrays = 3, spec.launch = launch;
    oc_stream_options opts = OC_STREAM_OPTIONS_INIT;
    opts.gpu_mem_bytes = gpu_mem;
    opts.device = device;
    oc_stream_stats stats;
    stats.struct_size = sizeof stats;
    oc_status st = oc_stream_run(ctx, &spec, &opts, &stats);
    if (st != OC_OK) {
        fprintf(stderr, "big_multiply: %s\n", oc_context_last_error(ctx));
        if (pc) npy_discard(&fc);
        return 1;
    }
    double moved = 3.0 * 8.0 * (double)rows * (double)cols;
    printf("big_multiply: %lld x %lld float64, --gpu-mem %.0f MiB: %.3f s, %.1f GB/s over PCIe (%.2f GB up, %.2f GB down); "
           "%lld chunks of %lld rows, %d in flight\n",
           rows, cols, gpu_mem / 1048576.0, stats.seconds, moved / stats.seconds / 1e9, stats.bytes_h2d / 1e9,
           stats.bytes_d2h / 1e9, (long long)stats.chunks, (long long)stats.chunk_rows, stats.in_flight);
    int bad = 0;
    if (check) {
        double *ref = (double *)malloc(sizeof(double) * rows * cols);
        double t0 = example_now();
        for (long long i = 0; i < rows * cols; ++i) ref[i] = a[i] * b[i];
        double cpu = example_now() - t0;
        long long diff = 0;
        for (long long i = 0; i < rows * cols; ++i) diff += ref[i] != c[i];
        bad = diff != 0;
        printf("big_multiply: CPU product (one thread) %.3f s; outcore %.2fx; %lld elements differ\n", cpu,
               cpu / stats.seconds, diff);
        free(ref);
    }
    if (pc && npy_commit(&fc) != 0) return 1;
    oc_context_free(ctx);
    return bad ? 1 : 0;
}
