// pricer.cu - the Monte Carlo European call pricer on outcore's streaming API
// (docs/stream.md): outcore plans chunks of paths under --gpu-mem, runs this file's kernel
// on each chunk and streams the results back while the next chunk computes.
//
//   pricer [--paths N] [--steps S] [--gpu-mem SIZE] [--paths-out FILE.npy | --paths-on-device]
//          [--check N] [--seed X] [--device D]
//
// Modes (the payoffs, 8 bytes per path, always come back; the price and its standard error
// are computed from them on the host):
//   default            the paths live in registers only: price and standard error
//   --paths-on-device  the full paths matrix is written to device scratch, never copied
//   --paths-out F.npy  the full paths matrix, (steps + 1) x paths float64 (one row per time
//                      step), is streamed to F.npy chunk by chunk
// Random numbers: Philox4x32-10 + Box-Muller written here (examples/common/philox.h), so the
// CPU check draws exactly the same normals. --check N recomputes the first N paths on the
// CPU and compares payoffs (and written paths) to 1e-12 relative. Exits 77 without a GPU.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outcore.h"
#include "pricer_model.h"
#include "../common/example_args.h"
#include "../common/npy_file.h"

__global__ void pricer_kernel(pricer_model m, pricer_step st, long long first, long long rows, double *paths,
                              double *payoff)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < rows) payoff[i] = pricer_path(&m, st, (uint64_t)(first + i), paths ? paths + i : NULL, rows);
}

typedef struct pricer_job {
    pricer_model model;
    pricer_step step;
    int paths_array;   // index of the paths array in the spec, -1 without one
} pricer_job;

// outcore calls this for each chunk: enqueue the kernel on the chunk's stream, nothing else.
static int launch(const oc_stream_chunk *c, void *user)
{
    const pricer_job *job = (const pricer_job *)user;
    double *paths = job->paths_array >= 0 ? (double *)c->data[job->paths_array] : NULL;
    unsigned blocks = (unsigned)((c->rows + 255) / 256);
    pricer_kernel<<<blocks, 256, 0, (cudaStream_t)c->stream>>>(job->model, job->step, c->start, c->rows, paths,
                                                              (double *)c->data[0]);
    return cudaPeekAtLastError() == cudaSuccess ? 0 : 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: pricer [--paths N] [--steps S] [--gpu-mem SIZE] [--paths-out FILE.npy | --paths-on-device] "
                    "[--check N] [--seed X] [--device D]\n");
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
    int on_device = 0, device = 0;
    pricer_model m = PRICER_MODEL_DEFAULT;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--paths-on-device")) on_device = 1;
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
    if (paths < 1 || m.steps < 1 || gpu_mem < 0 || (paths_out && on_device)) return usage();
    if (check < 0) check = paths < 20000 ? paths : 20000;
    if (check > paths) check = paths;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("pricer: no usable CUDA device (skipped)\n");
        return 77;
    }

    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    pricer_job job = {m, pricer_step_of(&m), -1};
    double *payoff = (double *)malloc(sizeof(double) * paths);
    npy_file out;
    int have_out = 0;
    oc_stream_array arrays[2] = {{"payoff", OC_STREAM_OUTPUT, 8, 1, {paths}, 0, payoff}};
    int narrays = 1;
    if (paths_out || on_device) {
        if (paths_out) {
            if (npy_create(&out, paths_out, m.steps + 1, paths) != 0) return 1;
            have_out = 1;
        }
        // (steps + 1) x paths, chunked along the paths: a chunk is (steps + 1) x rows on the device
        oc_stream_array p = {"paths", paths_out ? OC_STREAM_OUTPUT : OC_STREAM_SCRATCH, 8, 2,
                             {m.steps + 1, paths}, 1, paths_out ? out.data : NULL};
        arrays[1] = p;
        job.paths_array = narrays++;
    }
    oc_stream_spec spec = OC_STREAM_SPEC_INIT;
    spec.arrays = arrays, spec.narrays = narrays, spec.launch = launch, spec.user = &job;
    oc_stream_options opts = OC_STREAM_OPTIONS_INIT;
    opts.device = device;
    opts.gpu_mem_bytes = gpu_mem;

    // A small run first: the CUDA context, the kernel's module and the pinned staging are
    // then set up, and the timed run measures the pricing.
    oc_stream_array warm = {"payoff", OC_STREAM_OUTPUT, 8, 1, {paths < 4096 ? paths : 4096}, 0, payoff};
    oc_stream_spec wspec = spec;
    wspec.arrays = &warm, wspec.narrays = 1;
    pricer_job wjob = job;
    wjob.paths_array = -1;
    wspec.user = &wjob;
    oc_status st = oc_stream_run(ctx, &wspec, &opts, NULL);

    oc_stream_stats stats;
    stats.struct_size = sizeof stats;
    if (st == OC_OK) st = oc_stream_run(ctx, &spec, &opts, &stats);
    if (st != OC_OK) {
        fprintf(stderr, "pricer: %s\n", oc_context_last_error(ctx));
        if (have_out) npy_discard(&out);
        return 1;
    }
    double sum = 0, sum2 = 0;
    for (long long i = 0; i < paths; ++i) sum += payoff[i], sum2 += payoff[i] * payoff[i];
    double disc = exp(-m.rate * m.maturity), mean = sum / paths;
    double price = disc * mean, se = disc * sqrt(fmax(sum2 / paths - mean * mean, 0.0) / paths);
    double steps = (double)paths * m.steps;
    printf("pricer: %lld paths x %d steps (%s): price %.6f, standard error %.6f\n", paths, m.steps,
           paths_out ? "paths streamed to the file" : on_device ? "paths kept in device scratch" : "paths in registers",
           price, se);
    printf("pricer: %.4f s, %.1f Msteps/s; %lld chunks of %lld paths, %d in flight; %.2f GB down, device peak %.1f MiB "
           "of %.1f MiB\n",
           stats.seconds, steps / stats.seconds / 1e6, (long long)stats.chunks, (long long)stats.chunk_rows,
           stats.in_flight, stats.bytes_d2h / 1e9, stats.dev_peak_bytes / 1048576.0,
           stats.dev_budget_bytes / 1048576.0);

    // The CPU check: the same arithmetic on the same random numbers.
    int bad = 0;
    long long check_paths_written = paths_out ? (check < 1000 ? check : 1000) : 0;
    double *row = (double *)malloc(sizeof(double) * (m.steps + 1));
    for (long long p = 0; p < check; ++p) {
        double pay = pricer_path(&m, job.step, (uint64_t)p, p < check_paths_written ? row : NULL, 1);
        if (!near(pay, payoff[p], m.strike) && bad++ == 0)
            printf("pricer: path %lld: payoff %.17g on the GPU, %.17g on the CPU\n", p, payoff[p], pay);
        for (int t = 0; p < check_paths_written && t <= m.steps; ++t) bad += !near(row[t], out.data[(long long)t * paths + p], 1.0);
    }
    free(row);
    if (check > 0)
        printf("pricer: CPU check of the first %lld paths%s: %s\n", check,
               check_paths_written ? " (and the written paths of the first 1000)" : "", bad ? "MISMATCH" : "equal");
    if (have_out && npy_commit(&out) != 0) return 1;
    free(payoff);
    oc_context_free(ctx);
    return bad ? 1 : 0;
}
