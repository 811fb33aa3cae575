// pricer.cu - the Monte Carlo European call pricer on outcore's streaming API
// (docs/stream.md): outcore plans chunks of paths under --gpu-mem, runs this file's kernel
// on each chunk and streams the results back while the next chunk computes.
//
//   pricer [--paths N] [--steps S] [--gpu-mem SIZE]
//          [--paths-out FILE.npy | --paths-host | --paths-on-device] [--check N] [--seed X] [--device D]
//
// Modes:
//   default            the paths live in registers only; a sum and a sum of squares of the
//                      payoffs accumulate on the device (an OC_STREAM_RESULT): only they, and
//                      the first --check payoffs, come back
//   (the two modes below also bring every payoff back, 8 bytes per path)
//   --paths-on-device  the full paths matrix is written to device scratch, never copied
//   --paths-out F.npy  the full paths matrix, (steps + 1) x paths float64 (one row per time
//                      step), is streamed to F.npy chunk by chunk
//   --paths-host       the same matrix returned to host memory, pinned (oc_pinned_alloc): each
//                      chunk lands there straight from the device, at the PCIe rate
// Random numbers: Philox4x32-10 + Box-Muller written here (examples/common/philox.h), so the
// CPU check draws exactly the same normals. --check N recomputes the first N paths on the
// CPU and compares payoffs (and written paths) to 1e-12 relative. Exits 77 without a GPU.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "outcore.h"
#include "pricer_model.h"
#include "../common/example_args.h"
#include "../common/npy_file.h"

// One path per thread. Each of paths, payoff, acc and first may be NULL: the paths matrix
// chunk ((steps + 1) x rows), the payoffs chunk, the [sum, sum of squares] result (one atomic
// add per block and value) and the first-paths payoffs result (indexed by path).
__global__ void pricer_kernel(pricer_model m, pricer_step st, long long start, long long rows, double *paths,
                              double *payoff, double *acc, double *first, long long nfirst)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    double pay = 0;
    if (i < rows) {  // no early return: every thread takes part in the block's reduction
        pay = pricer_path(&m, st, (uint64_t)(start + i), paths ? paths + i : NULL, rows);
        if (payoff) payoff[i] = pay;
        if (first && start + i < nfirst) first[start + i] = pay;
    }
    if (!acc) return;
    __shared__ double part[2][32];
    double s = pay, s2 = pay * pay;
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o), s2 += __shfl_down_sync(0xffffffffu, s2, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    if (lane == 0) part[0][warp] = s, part[1][warp] = s2;
    __syncthreads();
    if (warp != 0) return;
    s = lane < warps ? part[0][lane] : 0, s2 = lane < warps ? part[1][lane] : 0;
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_down_sync(0xffffffffu, s, o), s2 += __shfl_down_sync(0xffffffffu, s2, o);
    if (lane == 0) atomicAdd(&acc[0], s), atomicAdd(&acc[1], s2);
}

// Where each array sits in the spec, -1 when the mode has none.
typedef struct pricer_job {
    pricer_model model;
    pricer_step step;
    int paths, payoff, acc, first;
    long long nfirst;
} pricer_job;

static void *array_of(const oc_stream_chunk *c, int k) { return k >= 0 ? c->data[k] : NULL; }

// outcore calls this for each chunk: enqueue the kernel on the chunk's stream, nothing else.
static int launch(const oc_stream_chunk *c, void *user)
{
    const pricer_job *j = (const pricer_job *)user;
    unsigned blocks = (unsigned)((c->rows + 255) / 256);
    pricer_kernel<<<blocks, 256, 0, (cudaStream_t)c->stream>>>(
        j->model, j->step, c->start, c->rows, (double *)array_of(c, j->paths), (double *)array_of(c, j->payoff),
        (double *)array_of(c, j->acc), (double *)array_of(c, j->first), j->nfirst);
    return cudaPeekAtLastError() == cudaSuccess ? 0 : 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: pricer [--paths N] [--steps S] [--gpu-mem SIZE] "
                    "[--paths-out FILE.npy | --paths-host | --paths-on-device] [--check N] [--seed X] [--device D]\n");
    return 2;
}

// Equal to 1e-12 relative of `scale`: the GPU's exp, log, sin and cos differ from glibc's by an
// ulp or two, which 200 steps accumulate to some 1e-14 of the price level; a payoff is a
// difference S - K of that level, so it is compared at the scale of S, not of itself.
static int near(double a, double b, double scale) { return fabs(a - b) <= 1e-12 * fmax(scale, fmax(fabs(a), fabs(b))); }

int main(int argc, char **argv)
{
    long long paths = 500000, check = -1;
    int64_t gpu_mem = 0;
    const char *paths_out = NULL;
    int on_device = 0, to_host = 0, device = 0;
    pricer_model m = PRICER_MODEL_DEFAULT;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--paths-on-device")) on_device = 1;
        else if (!strcmp(a, "--paths-host")) to_host = 1;
        else if (!v) return usage();
        else if (!strcmp(a, "--paths")) paths = atoll(v), ++i;
        else if (!strcmp(a, "--steps")) m.steps = atoi(v), ++i;
        else if (!strcmp(a, "--gpu-mem")) gpu_mem = example_size(v), ++i;
        else if (!strcmp(a, "--paths-out")) paths_out = v, ++i;
        else if (!strcmp(a, "--check")) check = atoll(v), ++i;
        else if (!strcmp(a, "--seed")) m.seed = strtoull(v, NULL, 0), ++i;
        else if (!strcmp(a, "--device")) device = atoi(v), ++i;
        else return usage();
    }
    if (paths < 1 || m.steps < 1 || gpu_mem < 0 || (!!paths_out + on_device + to_host > 1)) return usage();
    if (check < 0) check = paths < 20000 ? paths : 20000;
    if (check > paths) check = paths;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("pricer: no usable CUDA device (skipped)\n");
        return 77;
    }
    // This program's kernels launch through its own CUDA runtime, on outcore's streams: they
    // must run on the device outcore uses.
    if (cudaSetDevice(device) != cudaSuccess) {
        fprintf(stderr, "pricer: CUDA device %d does not exist\n", device);
        return 2;
    }

    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    pricer_job job = {m, pricer_step_of(&m), -1, -1, -1, -1, check};
    double acc[2] = {0, 0};
    double *payoff = NULL, *first = check > 0 ? (double *)calloc(check, sizeof(double)) : NULL, *host_paths = NULL;
    npy_file out;
    int have_out = 0, narrays = 0;
    oc_stream_array arrays[3];
    oc_stream_spec spec = OC_STREAM_SPEC_INIT;
    if (!paths_out && !on_device && !to_host) {
        // Price and standard error only: a sum and a sum of squares stay on the device through
        // every chunk (and the first paths' payoffs, for the check); nothing else comes back.
        oc_stream_array a = {"acc", OC_STREAM_RESULT, 8, 1, {2}, 0, acc};
        arrays[job.acc = narrays++] = a;
        if (check > 0) {
            oc_stream_array f = {"first", OC_STREAM_RESULT, 8, 1, {check}, 0, first};
            arrays[job.first = narrays++] = f;
        }
        spec.extent = paths;
    } else {
        if (to_host) {
            // Pinned, the payoffs too: both cross straight from the device, no staging.
            size_t bytes = sizeof(double) * (size_t)paths * (size_t)(m.steps + 1);
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            if (oc_pinned_alloc(ctx, bytes, (void **)&host_paths) != OC_OK ||
                oc_pinned_alloc(ctx, sizeof(double) * (size_t)paths, (void **)&payoff) != OC_OK) {
                fprintf(stderr, "pricer: %s\n", oc_context_last_error(ctx));
                return 1;
            }
            clock_gettime(CLOCK_MONOTONIC, &t1);
            printf("pricer: %.2f GB of host memory pinned in %.2f s (once; not in the times below)\n",
                   (bytes + sizeof(double) * paths) / 1e9, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
        } else {
            payoff = (double *)malloc(sizeof(double) * paths);
        }
        oc_stream_array pay = {"payoff", OC_STREAM_OUTPUT, 8, 1, {paths}, 0, payoff};
        arrays[job.payoff = narrays++] = pay;
        if (paths_out) {
            if (npy_create(&out, paths_out, m.steps + 1, paths) != 0) return 1;
            have_out = 1;
        }
        // (steps + 1) x paths, chunked along the paths: a chunk is (steps + 1) x rows on the device
        double *dest = paths_out ? out.data : host_paths;
        oc_stream_array p = {"paths", dest ? OC_STREAM_OUTPUT : OC_STREAM_SCRATCH, 8, 2, {m.steps + 1, paths}, 1, dest};
        arrays[job.paths = narrays++] = p;
    }
    spec.arrays = arrays, spec.narrays = narrays, spec.launch = launch, spec.user = &job;
    oc_stream_options opts = OC_STREAM_OPTIONS_INIT;
    opts.device = device;
    opts.gpu_mem_bytes = gpu_mem;

    // A small run first: the CUDA context, the kernel's module and the pinned staging are
    // then set up, and the timed run measures the pricing.
    double warm_acc[2] = {0, 0};
    oc_stream_array warm = {"acc", OC_STREAM_RESULT, 8, 1, {2}, 0, warm_acc};
    oc_stream_spec wspec = OC_STREAM_SPEC_INIT;
    pricer_job wjob = {m, job.step, -1, -1, 0, -1, 0};
    wspec.arrays = &warm, wspec.narrays = 1, wspec.launch = launch, wspec.user = &wjob;
    wspec.extent = paths < 4096 ? paths : 4096;
    oc_status st = oc_stream_run(ctx, &wspec, &opts, NULL);

    oc_stream_stats stats;
    stats.struct_size = sizeof stats;
    if (st == OC_OK) st = oc_stream_run(ctx, &spec, &opts, &stats);
    if (st != OC_OK) {
        fprintf(stderr, "pricer: %s\n", oc_context_last_error(ctx));
        if (have_out) npy_discard(&out);
        return 1;
    }
    double sum = acc[0], sum2 = acc[1];
    if (payoff) {
        sum = sum2 = 0;
        for (long long i = 0; i < paths; ++i) sum += payoff[i], sum2 += payoff[i] * payoff[i];
    }
    double disc = exp(-m.rate * m.maturity), mean = sum / paths;
    double price = disc * mean, se = disc * sqrt(fmax(sum2 / paths - mean * mean, 0.0) / paths);
    double steps = (double)paths * m.steps;
    printf("pricer: %lld paths x %d steps (%s): price %.6f, standard error %.6f\n", paths, m.steps,
           paths_out  ? "paths streamed to the file"
           : to_host  ? "paths returned to pinned host memory"
           : on_device ? "paths kept in device scratch"
                       : "paths in registers, only the sums come back",
           price, se);
    printf("pricer: %.4f s, %.1f Msteps/s; %lld chunks of %lld paths, %d in flight; %.3f GB down (%.1f GB/s, %.3f GB "
           "straight to pinned memory), device peak %.1f MiB of %.1f MiB\n",
           stats.seconds, steps / stats.seconds / 1e6, (long long)stats.chunks, (long long)stats.chunk_rows,
           stats.in_flight, stats.bytes_d2h / 1e9, stats.bytes_d2h / stats.seconds / 1e9, stats.bytes_direct / 1e9,
           stats.dev_peak_bytes / 1048576.0, stats.dev_budget_bytes / 1048576.0);

    // The CPU check: the same arithmetic on the same random numbers.
    int bad = 0;
    const double *written = paths_out ? out.data : host_paths;
    long long check_paths_written = written ? (check < 1000 ? check : 1000) : 0;
    double *row = (double *)malloc(sizeof(double) * (m.steps + 1));
    const double *gpu_pay = payoff ? payoff : first;
    double cpu_sum = 0;
    for (long long p = 0; p < check; ++p) {
        double pay = pricer_path(&m, job.step, (uint64_t)p, p < check_paths_written ? row : NULL, 1);
        cpu_sum += pay;
        if (!near(pay, gpu_pay[p], m.strike) && bad++ == 0)
            printf("pricer: path %lld: payoff %.17g on the GPU, %.17g on the CPU\n", p, gpu_pay[p], pay);
        for (int t = 0; p < check_paths_written && t <= m.steps; ++t) bad += !near(row[t], written[(long long)t * paths + p], 1.0);
    }
    free(row);
    // Every path checked: the sums agree too (the device adds them in no fixed order).
    if (check == paths && fabs(cpu_sum - sum) > 1e-10 * fmax(1.0, fabs(sum)) && bad++ == 0)
        printf("pricer: payoff sum %.17g on the GPU, %.17g on the CPU\n", sum, cpu_sum);
    if (check > 0)
        printf("pricer: CPU check of the first %lld paths%s: %s\n", check,
               check_paths_written ? " (and the written paths of the first 1000)" : "", bad ? "MISMATCH" : "equal");
    if (have_out && npy_commit(&out) != 0) return 1;
    if (to_host) oc_pinned_free(payoff), oc_pinned_free(host_paths);
    else free(payoff);
    free(first);
    oc_context_free(ctx);
    return bad ? 1 : 0;
}
