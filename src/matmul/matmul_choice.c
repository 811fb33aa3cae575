/*
 * matmul_choice.c - the backend of a product (matmul_choice.h). The model is the roofline of
 * cost.h: the CPU's time is its GEMM time; the GPU's is its start-up plus the slower of its
 * GEMM and the PCIe copies of the operands in and the result out.
 */
#include "matmul/matmul_choice.h"

#include <math.h>
#include <stdio.h>

#include "core/text_buf.h"
#include "core/error.h"
#include "core/gpu_probe.h"
#include "core/threads.h"
#include "core/trace.h"
#include "cost/cost.h"
#include "cost/cost_gemm.h"
#include "matmul/matmul_dtype.h"

static oc_cost_gemm_type gemm_type(oc_mm_type t, int tf32)
{
    switch (t) {
    case OC_MM_FLOAT64:
        return OC_COST_GEMM_F64;
    case OC_MM_FLOAT32:
        return tf32 ? OC_COST_GEMM_TF32 : OC_COST_GEMM_F32;
    case OC_MM_INT8:
        return OC_COST_GEMM_INT8;
    default:
        return OC_COST_GEMM_F16;
    }
}

/* The GEMM the CPU runs for in (TF32 is float32 there). */
static oc_cost_gemm_type cpu_type(const oc_mm_cost_input *in)
{
    const oc_cost_gemm_type t = gemm_type(in->in_type, in->tf32);
    /* int8 runs on sgemm while its float32 sums are exact (matmul_job.h) */
    if (t == OC_COST_GEMM_INT8 && in->k <= in->int8_f32_k_max) return OC_COST_GEMM_F32;
    return t == OC_COST_GEMM_TF32 ? OC_COST_GEMM_F32 : t;
}

/* The product's floating-point operations (A·Aᵀ: the upper triangle and its diagonal). */
static double flop_of(const oc_mm_cost_input *in)
{
    const double flop = 2.0 * (double)in->m * (double)in->n * (double)in->k;
    return in->symmetric ? flop / 2 + (double)in->m * (double)in->k : flop;
}

/* The CPU's GEMM rate for in: the measured one of a core times the cores, else the default;
 * *what names which. */
static double cpu_rate_of(const oc_mm_cost_input *in, const char **what)
{
    const int cores = in->cpu_cores > 0 ? in->cpu_cores : 1, measured = in->cpu_blas && in->cpu_core_rate > 0;
    *what = measured ? "measured" : "default rate";
    return measured ? in->cpu_core_rate * cores : oc_cost_gemm_cpu_rate(cpu_type(in), in->cpu_blas, cores);
}

/* The reason of a CPU choice: "cpu: the CPU's prediction; " then `why`. */
static void cpu_reason(const oc_mm_cost_input *in, const char *why, oc_mm_prediction *out)
{
    const char *rated;
    const double rate = cpu_rate_of(in, &rated), flop = flop_of(in);
    char file[64] = "";
    if (in->file_seconds > 0) oc_snprintf(file, sizeof file, " + the result's file %.3g s", in->file_seconds);
    oc_snprintf(out->reason, sizeof out->reason, "cpu: %.3g GFLOP at %.0f GFLOP/s (%s, %d cores, %s) = %.3g s%s; %s",
                flop / 1e9, rate / 1e9, in->cpu_blas ? "BLAS" : "reference loops", in->cpu_cores, rated, flop / rate,
                file, why);
}

void oc_mm_predict(const oc_mm_cost_input *in, oc_mm_prediction *out)
{
    const double flop = flop_of(in);
    const oc_cost_gemm_type t = gemm_type(in->in_type, in->tf32);
    const char *rated;
    const double cpu_rate = cpu_rate_of(in, &rated);
    out->cpu_seconds = flop / cpu_rate + in->file_seconds;
    out->gpu_seconds = INFINITY;
    out->gpu = 0;
    if (in->gpu_cc <= 0) {
        cpu_reason(in, "no GPU is usable", out);
        return;
    }
    const double gpu_rate = in->gpu_rate > 0 ? in->gpu_rate : oc_cost_gemm_gpu_rate(t, in->gpu_cc);
    const double compute = flop / gpu_rate;
    const double copies = in->in_bytes / in->h2d + in->out_bytes / in->d2h;
    const double start = in->gpu_warm ? 0.01 : in->gpu_startup + OC_COST_GEMM_GPU_LIBRARY_START;
    out->gpu_seconds = start + fmax(compute, copies) + in->file_seconds;
    out->gpu = out->gpu_seconds < out->cpu_seconds;
    char file[64] = "";
    if (in->file_seconds > 0) oc_snprintf(file, sizeof file, ", each + the result's file %.3g s", in->file_seconds);
    oc_snprintf(out->reason, sizeof out->reason,
                "%s: cpu %.3g s (%.3g GFLOP at %.0f GFLOP/s, %s, %d cores, %s) vs gpu %.3g s (start %.2f s + max(%s at "
                "%.0f TFLOP/s sm_%d %.3g s, PCIe %.3g GB in and out %.3g s))%s; the GPU's GEMM rate %s",
                out->gpu ? "cuda" : "cpu", out->cpu_seconds, flop / 1e9, cpu_rate / 1e9,
                in->cpu_blas ? "BLAS" : "reference loops", in->cpu_cores, rated, out->gpu_seconds, start,
                oc_cost_gemm_type_name(t), gpu_rate / 1e12, in->gpu_cc, compute, (in->in_bytes + in->out_bytes) / 1e9,
                copies, file, in->gpu_rate > 0 ? "measured" : "a default");
}

int oc_mm_cpu_before_gpu_start(const oc_mm_cost_input *in, oc_mm_prediction *out)
{
    oc_mm_cost_input cpu = *in;
    cpu.gpu_cc = 0;
    oc_mm_predict(&cpu, out);
    const double start = in->gpu_startup + OC_COST_GEMM_GPU_LIBRARY_START;
    /* The result's file is written either way: only the product's seconds count here. */
    if (in->gpu_warm || !(out->cpu_seconds - in->file_seconds < start)) return 0;
    char why[160];
    oc_snprintf(
        why, sizeof why,
        "the GPU not asked: its start-up (%.2f s with the GEMM library's) is longer than the product on the CPU",
        start);
    cpu_reason(in, why, out);
    return 1;
}

/* A GEMM rate measured now for `in`: on every core (where 0) or on CUDA device `where`. */
typedef struct rate_of {
    const oc_mm_cost_input *in;
    int where;
} rate_of;

/* Whether the CPU multiplies in's type as float32 (sgemm); float64 and int8 past
 * in->int8_f32_k_max go to dgemm. */
static int cpu_f32(const oc_mm_cost_input *in)
{
    return cpu_type(in) != OC_COST_GEMM_F64 && cpu_type(in) != OC_COST_GEMM_INT8;
}

/* The CPU backend's BLAS on every core, per core. */
static double measure_cpu(void *arg)
{
    const oc_mm_cost_input *in = ((const rate_of *)arg)->in;
    const int f32 = cpu_f32(in);
    const int cores = oc_threads_resolve(0);
    return oc_mm_backend_cpu.gemm_rate
               ? oc_mm_backend_cpu.gemm_rate(f32 ? OC_MM_FLOAT32 : OC_MM_FLOAT64, 0, cores, in->host_room) / cores
               : 0;
}

/* The measured GEMM rate of a core of the BLAS `blas` for in's type (the rate cache's, or
 * measured at a machine's first use); 0 with the cache off or without a BLAS. */
static double cpu_core_rate(const oc_mm_cost_input *in, const char *blas)
{
    if (!in->cpu_blas) return 0;
    const int f32 = cpu_f32(in);
    char name[96];
    oc_snprintf(name, sizeof name, "%s%s.%s", OC_COST_GEMM_FIGURE, blas, f32 ? "f32" : "f64");
    rate_of r = {in, 0};
    return oc_cost_figure(0, name, "cpu gemm", measure_cpu, &r);
}

#ifdef OC_HAVE_CUDA
static double measure_gpu(void *arg)
{
    const rate_of *r = arg;
    return oc_mm_backend_cuda.gemm_rate
               ? oc_mm_backend_cuda.gemm_rate(r->in->in_type, r->in->tf32, r->where, r->in->gpu_room)
               : 0;
}

/* The measured GEMM rate of one GPU for in's type (the rate cache's GPUs' section, or measured
 * on `device` at a machine's first use); 0 with the cache off. */
static double gpu_rate(const oc_mm_cost_input *in, int device)
{
    char name[64];
    oc_snprintf(name, sizeof name, "%s%s", OC_COST_GPU_GEMM_FIGURE,
                oc_cost_gemm_type_name(gemm_type(in->in_type, in->tf32)));
    rate_of r = {in, device};
    return oc_cost_figure(1, name, "gpu gemm", measure_gpu, &r);
}

/* Device `device`'s compute capability x10, or 0 with why[] saying why the product cannot run
 * there. */
static int gpu_cc(int device, char *why, size_t why_size)
{
    if (!oc_mm_backend_cuda.usable(device, why, why_size)) return 0;
    return oc_gpu_probe_cuda.device_cc(device, why, why_size);
}
#endif

/* The bytes of A and B a GPU uploads: each operand as stored where the device promotes it
 * (oc_matmul_widens), else in the compute type (symmetric: A alone). */
static double upload_bytes(const oc_matmul_job *job)
{
    const double rows[2] = {(double)job->m, job->symmetric ? 0.0 : (double)job->n};
    double bytes = 0;
    for (int i = 0; i < 2; i++) {
        const oc_matmul_dtype t = job->stored_type[i];
        const double elem =
            (double)(oc_matmul_widens(t, job->in_type) ? oc_matmul_dtype_size(t) : oc_mm_type_size(job->in_type));
        bytes += elem * rows[i] * (double)job->k;
    }
    return bytes;
}

/* The prediction's reason, and why the rates are defaults where the rate cache says (a cache
 * that cannot be read or written: gram's and map's explanations say it the same way). */
static void explain_with_note(char *explain, size_t size, const oc_mm_prediction *p, const oc_cost_rates *rates)
{
    if (rates->note[0]) oc_snprintf(explain, size, "%s [%s]", p->reason, rates->note);
    else oc_snprintf(explain, size, "%s", p->reason);
}

oc_status oc_mm_choose(oc_context *ctx, const oc_matmul_job *job, const oc_matmul_options *opts,
                       const oc_mm_backend **out, char *explain, size_t explain_size)
{
    if (explain && explain_size) explain[0] = '\0';
    const int device = job->devices ? job->devices[0] : opts->device;
    if (job->gpu_memory && opts->backend == OC_BACKEND_CPU)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "--backend cpu: A, B or C is in GPU memory, which the CPU backend cannot read");
#ifdef OC_HAVE_CUDA
    if (job->gpu_memory) {
        char why[400] = "";
        if (gpu_cc(device, why, sizeof why) <= 0)
            return oc_fail(ctx, OC_ERR_UNSUPPORTED, "A, B or C is in GPU memory, but device %d is not usable: %s",
                           device, why);
        *out = &oc_mm_backend_cuda;
        if (explain) oc_snprintf(explain, explain_size, "cuda: A, B or C is in GPU memory");
        return OC_OK;
    }
#endif
    if (opts->backend == OC_BACKEND_CPU) {
        *out = &oc_mm_backend_cpu;
        if (explain) oc_snprintf(explain, explain_size, "cpu: --backend cpu");
        return OC_OK;
    }
    /* A device list asks for the GPUs, as --backend cuda does (gram's rule too). */
    const int listed = opts->devices && *opts->devices;
    if (opts->backend == OC_BACKEND_CUDA || listed) {
        const char *asked = listed ? "--devices" : "--backend cuda";
#ifdef OC_HAVE_CUDA
        char why[400] = "";
        if (gpu_cc(device, why, sizeof why) > 0) {
            *out = &oc_mm_backend_cuda;
            if (explain) oc_snprintf(explain, explain_size, "cuda: %s", asked);
            return OC_OK;
        }
        if (listed) return oc_fail(ctx, OC_ERR_UNSUPPORTED, "%s: CUDA device %d is not usable: %s", asked, device, why);
        return oc_fail_no_gpu(ctx, "CUDA device %d is not usable: %s", device, why);
#else
        (void)device;
        if (listed) return oc_fail(ctx, OC_ERR_UNSUPPORTED, "%s: %s", asked, OC_NO_CUDA_BUILD);
        return oc_fail_no_gpu(ctx, "%s", OC_NO_CUDA_BUILD);
#endif
    }
    /* auto: first with the host's rates alone, since asking whether a GPU is usable starts the
     * driver. */
    oc_cost_rates rates;
    oc_cost_rates_get(ctx, 0, 0, &rates);
    char library[32];
    oc_mm_cost_input in = {
        .m = job->m,
        .n = job->n,
        .k = job->k,
        .symmetric = job->symmetric,
        .in_type = job->in_type,
        .tf32 = job->tf32,
        .int8_f32_k_max = oc_matmul_int8_f32_k_max(job->stored_type[OC_MM_A], job->stored_type[OC_MM_B]),
        .in_bytes = upload_bytes(job),
        .out_bytes = (double)oc_mm_type_size(job->out_type) * (double)job->m * (double)job->n,
        .cpu_blas = oc_mm_backend_cpu.library(library, sizeof library),
        .cpu_cores = oc_threads_resolve(job->threads),
        .gpu_warm = oc_cost_gpu_warm(),
        .gpu_startup = rates.gpu_startup,
        .file_seconds = oc_cost_result_file_seconds(&rates, job->out_file_bytes, job->out_file_in_memory),
        .host_room = job->host_mem_bytes,
        .gpu_room = job->gpu_mem_bytes};
    in.cpu_core_rate = cpu_core_rate(&in, library);
    oc_mm_prediction p;
    if (oc_mm_cpu_before_gpu_start(&in, &p)) {
        if (explain) explain_with_note(explain, explain_size, &p, &rates);
        *out = &oc_mm_backend_cpu;
        return OC_OK;
    }
#ifdef OC_HAVE_CUDA
    char no_gpu[400];
    in.gpu_cc = gpu_cc(device, no_gpu, sizeof no_gpu);
    if (in.gpu_cc > 0) in.gpu_rate = gpu_rate(&in, device);
#endif
    oc_cost_rates_get(ctx, 0, in.gpu_cc > 0, &rates);
    in.gpu_startup = rates.gpu_startup;
    in.h2d = rates.h2d_pinned;
    in.d2h = rates.d2h_pinned;
    oc_mm_predict(&in, &p);
    if (explain) explain_with_note(explain, explain_size, &p, &rates);
#ifdef OC_HAVE_CUDA
    if (p.gpu) {
        *out = &oc_mm_backend_cuda;
        return OC_OK;
    }
#endif
    *out = &oc_mm_backend_cpu;
    return OC_OK;
}
