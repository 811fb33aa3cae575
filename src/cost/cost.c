/*
 * cost.c - the cost model's arithmetic: defaults, job descriptions, the prediction and its
 * reason (see cost.h for the formulas, docs/cost-model.md for the defaults' sources).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <linux/magic.h>
#include <sys/vfs.h>
#endif

#include "core/text_buf.h"
#include "cost/cost.h"

/* Defaults where a rate was not measured. They lean towards the CPU where a job is small
 * (a GPU start-up of a third of a second, PCIe 3.0 x16) and are within a few times of
 * current hardware elsewhere, so that a large job still goes to the GPU. */
#define DEFAULT_PCIE_PINNED 12e9 /* PCIe 3.0 x16 as measured in practice, each way */
#define DEFAULT_PCIE_BIDIR 20e9
#define DEFAULT_PCIE_PAGEABLE 6e9
#define DEFAULT_HOST_BW_PER_CORE 5e9 /* a triad's share per core ... */
#define DEFAULT_HOST_BW_MAX 40e9     /* ... until the memory channels saturate */
#define DEFAULT_GPU_STARTUP 0.3      /* context creation and module load */
#define DEFAULT_GPU_JOB_SETUP 0.01   /* a later job: pool, streams, pinned staging from the cache */
/* The fixed costs' defaults: a local disk under a journalling file system. Where they come
 * from: bench/RESULTS.md, "Wall time as users see it: fixed costs". */
#define DEFAULT_THREAD_START 3e-5 /* a worker thread created (the pool keeps it for later jobs) */
#define DEFAULT_FILE_CREATE 1e-3  /* open O_EXCL beside the path, lock, rename, unlink stale */
#define DEFAULT_FILE_PAGES 1e9    /* bytes/s of a new file's pages: fallocate and first touch */
#define DEFAULT_FILE_SYNC 0.3e9   /* bytes/s of fsync of a freshly written file */

/* Per core, for the CPU; per GPU, for the device. The bit-MAC rates are those the
 * sparse/dense prediction used before there was a table (gram_choice.c). */
static const double default_cpu_per_core[OC_COST_OPS] = {
    [OC_COST_BIT_MAC] = 0.08e12, /* ref; avx2 and avx512 below */
    [OC_COST_ELEMENT] = 2.5e9,   [OC_COST_F32] = 2e9,      [OC_COST_F64] = 1e9,
    [OC_COST_F32_MATH] = 2e8,    [OC_COST_F64_MATH] = 1e8, [OC_COST_INT] = 2e9,
};
static const double default_gpu[OC_COST_OPS] = {
    [OC_COST_BIT_MAC] = 1e15, /* a conservative tensor-core b1 rate */
    [OC_COST_ELEMENT] = 1e11,  [OC_COST_F32] = 5e12,      [OC_COST_F64] = 2e12,
    [OC_COST_F32_MATH] = 1e12, [OC_COST_F64_MATH] = 2e11, [OC_COST_INT] = 5e12,
};

const char *oc_cost_fixed_name(oc_cost_fixed_term term)
{
    static const char *names[OC_COST_FIXED_TERMS] = {"threads", "file", "pages", "fsync"};
    return (unsigned)term < OC_COST_FIXED_TERMS ? names[term] : "?";
}

const char *oc_cost_op_name(oc_cost_op op)
{
    static const char *names[OC_COST_OPS] = {"bit-MAC",  "element",  "f32 op", "f64 op",
                                             "f32 math", "f64 math", "int op"};
    return (unsigned)op < OC_COST_OPS ? names[op] : "?";
}

void oc_cost_rates_resolve(oc_cost_rates *r, int cores, const char *isa)
{
    if (cores < 1) cores = 1;
    if (r->cpu_cores < 1) r->cpu_cores = cores;
    if (!r->cpu_isa[0]) oc_snprintf(r->cpu_isa, sizeof r->cpu_isa, "%s", isa ? isa : "ref");
    const double c = (double)r->cpu_cores;
    if (r->h2d_pinned <= 0) r->h2d_pinned = DEFAULT_PCIE_PINNED;
    if (r->d2h_pinned <= 0) r->d2h_pinned = DEFAULT_PCIE_PINNED;
    if (r->bidir_pinned <= 0) r->bidir_pinned = DEFAULT_PCIE_BIDIR;
    if (r->h2d_pageable <= 0) r->h2d_pageable = DEFAULT_PCIE_PAGEABLE;
    if (r->d2h_pageable <= 0) r->d2h_pageable = DEFAULT_PCIE_PAGEABLE;
    if (r->host_bw <= 0) r->host_bw = fmin(c * DEFAULT_HOST_BW_PER_CORE, DEFAULT_HOST_BW_MAX);
    for (int op = 0; op < OC_COST_OPS; ++op) {
        if (r->cpu[op] <= 0) {
            double per_core = default_cpu_per_core[op];
            if (op == OC_COST_BIT_MAC && strcmp(r->cpu_isa, "avx512") == 0) per_core = 0.9e12;
            else if (op == OC_COST_BIT_MAC && strcmp(r->cpu_isa, "avx2") == 0) per_core = 0.35e12;
            r->cpu[op] = per_core * c;
        }
        if (r->gpu[op] <= 0) r->gpu[op] = default_gpu[op];
    }
    if (r->gpu_startup <= 0) r->gpu_startup = DEFAULT_GPU_STARTUP;
    if (r->gpu_job_setup <= 0) r->gpu_job_setup = DEFAULT_GPU_JOB_SETUP;
    if (r->thread_start <= 0) r->thread_start = DEFAULT_THREAD_START;
    if (r->file_create <= 0) r->file_create = DEFAULT_FILE_CREATE;
    if (r->file_pages <= 0) r->file_pages = DEFAULT_FILE_PAGES;
    if (r->file_faults <= 0) r->file_faults = r->file_pages; /* a cache from before it was measured */
    if (r->file_sync <= 0) r->file_sync = DEFAULT_FILE_SYNC;
}

/* ---------------------------------------------------------------- job descriptions */

void oc_cost_job_gram(const oc_cost_gram_shape *g, oc_cost_job *job)
{
    memset(job, 0, sizeof *job);
    const double n = (double)g->n, p = (double)g->p, m = (double)g->m;
    /* Rows are packed to 512-bit multiples (design-notes.md, "packed-bit layout"). */
    const double row_bytes = ceil(m / 512.0) * 64.0;
    const double in_bytes = row_bytes * (g->symmetric ? n : n + p);
    const double pairs = g->symmetric ? n * (n + 1) / 2 : n * p;
    const double elem = g->elem_bytes > 0 ? g->elem_bytes : 4;
    static const char *kinds[] = {"dense", "top-k", "threshold", "discarded"};
    oc_snprintf(job->what, sizeof job->what, "gram %lldx%lldx%lld (%s)", (long long)g->n, (long long)g->p,
                (long long)g->m, kinds[g->output <= OC_COST_GRAM_DISCARD ? g->output : 0]);
    job->ops[OC_COST_BIT_MAC] = pairs * m;
    job->ops[OC_COST_ELEMENT] = pairs;
    double out_device = 0, out_host = 0; /* bytes leaving the device; bytes written on the host */
    switch (g->output) {
    case OC_COST_GRAM_DENSE:
        out_device = pairs * elem;
        out_host = n * p * elem; /* the mirror of A·Aᵀ is written on the host */
        break;
    case OC_COST_GRAM_TOPK:
        out_device = out_host = n * (double)g->k * (8.0 + elem);
        break;
    case OC_COST_GRAM_THRESHOLD:
        out_device = out_host = g->est_pairs * (16.0 + elem);
        break;
    case OC_COST_GRAM_DISCARD:
        break;
    }
    /* The CPU reads the packed rows once per panel pass (they stay in cache within a tile)
     * and once more for the popcounts; the GPU path copies them into pinned staging (read and
     * write), and reads the downloaded tiles from staging as it writes them out. */
    job->host_bytes_cpu = in_bytes * (g->popcounts ? 2.0 : 1.0) + out_host;
    job->h2d_bytes = in_bytes;
    job->d2h_bytes = out_device;
    job->host_bytes_gpu = 2.0 * in_bytes + out_device + out_host;
    /* Fixed costs: the worker threads, and an output file created, sized, flushed, renamed. */
    job->threads = g->threads > 0 ? g->threads : 0;
    if (g->to_file && g->output != OC_COST_GRAM_DISCARD) {
        job->files = 1;
        job->file_bytes = out_host;
        job->file_in_memory = g->file_in_memory;
    }
}

void oc_cost_job_map(const char *what, double bytes_in, double bytes_out, double elements,
                     const double ops_per_element[OC_COST_OPS], oc_cost_job *job)
{
    memset(job, 0, sizeof *job);
    oc_snprintf(job->what, sizeof job->what, "%s", what ? what : "map");
    for (int op = 0; op < OC_COST_OPS; ++op) job->ops[op] = elements * (ops_per_element ? ops_per_element[op] : 0);
    job->host_bytes_cpu = bytes_in + bytes_out;
    job->h2d_bytes = bytes_in;
    job->d2h_bytes = bytes_out;
    /* Staging: each input byte is copied into pinned memory, each output byte out of it. */
    job->host_bytes_gpu = 2.0 * (bytes_in + bytes_out);
}

/* ---------------------------------------------------------------- the prediction */

static double compute_seconds(const double *ops, const double *rates, int *bound_op)
{
    double total = 0, worst = -1;
    for (int op = 0; op < OC_COST_OPS; ++op) {
        if (ops[op] <= 0) continue;
        double t = ops[op] / rates[op];
        total += t;
        if (t > worst) worst = t, *bound_op = op;
    }
    return total;
}

/* "1.2 ms", "0.31 s", "4.2 min" */
static void fmt_seconds(char *buf, size_t size, double s)
{
    if (!isfinite(s)) oc_snprintf(buf, size, "-");
    else if (s < 1e-3) oc_snprintf(buf, size, "%.3g us", s * 1e6);
    else if (s < 1.0) oc_snprintf(buf, size, "%.3g ms", s * 1e3);
    else if (s < 600) oc_snprintf(buf, size, "%.3g s", s);
    else oc_snprintf(buf, size, "%.3g min", s / 60);
}

/* "55 GB/s", "1.2 P bit-MAC/s" */
static void fmt_rate(char *buf, size_t size, double r, const char *unit)
{
    static const char *prefix[] = {"", "k", "M", "G", "T", "P", "E"};
    int i = 0;
    while (r >= 1000 && i < 6) r /= 1000, i++;
    oc_snprintf(buf, size, "%.3g %s%s", r, prefix[i], unit);
}

static void fmt_bytes(char *buf, size_t size, double b) { fmt_rate(buf, size, b, "B"); }

static const char *dflt(const oc_cost_rates *r, unsigned bit) { return r->measured & bit ? "" : " (default)"; }

/* " (default)" after an operation rate that was not measured. */
static const char *op_dflt(const oc_cost_rates *r, int gpu, int op)
{
    if (op == OC_COST_BIT_MAC) return dflt(r, gpu ? OC_COST_M_GPU_BITS : OC_COST_M_CPU_BITS);
    return (gpu ? r->gpu_ops_measured : r->cpu_ops_measured) & (1u << op) ? "" : " (default)";
}

void oc_cost_predict(const oc_cost_rates *r, const oc_cost_job *job, int gpu_available, const char *gpu_label,
                     const char *no_gpu_reason, oc_cost_prediction *out)
{
    memset(out, 0, sizeof *out);
    int cpu_op = -1, gpu_op = -1;
    out->cpu_memory = job->host_bytes_cpu / r->host_bw;
    out->cpu_compute = compute_seconds(job->ops, r->cpu, &cpu_op);
    out->fixed[OC_COST_FIX_THREADS] = job->threads * r->thread_start;
    out->fixed[OC_COST_FIX_FILE] = job->files * r->file_create;
    /* A new file's pages. On a disk the reservation (fallocate) takes extents alone and the
     * writes fault each page into the page cache, counted at one thread's rate. On a memory
     * file system the reservation allocates and zeroes every page on one thread, and the
     * job's threads then map them in at once, nothing left to zero (bench/RESULTS.md, the
     * ladder on 16 cores). */
    out->fixed[OC_COST_FIX_PAGES] =
        job->file_bytes / r->file_pages + (job->file_in_memory ? job->file_bytes / r->file_faults : 0);
    out->fixed[OC_COST_FIX_SYNC] = job->file_in_memory ? 0 : job->file_bytes / r->file_sync;
    double fixed = 0;
    for (int f = 0; f < OC_COST_FIXED_TERMS; ++f) fixed += out->fixed[f];
    const double gpu_fixed = job->gpu_fixed + fixed - out->fixed[OC_COST_FIX_THREADS];
    out->cpu_seconds = job->cpu_fixed + fixed + fmax(out->cpu_memory, out->cpu_compute);

    /* Several GPUs each take their share of the work over their own link; the driver starts
     * them one after the other (bench/wall_targets.sh measures cuInit and the contexts). */
    const int gpus = job->gpu_devices > 1 ? job->gpu_devices : 1;
    const double h2d = job->pageable ? r->h2d_pageable : r->h2d_pinned;
    const double d2h = job->pageable ? r->d2h_pageable : r->d2h_pinned;
    out->gpu_transfer = fmax(job->h2d_bytes / h2d, job->d2h_bytes / d2h) / gpus;
    if (!job->pageable && job->h2d_bytes > 0 && job->d2h_bytes > 0)
        out->gpu_transfer = fmax(out->gpu_transfer, (job->h2d_bytes + job->d2h_bytes) / r->bidir_pinned / gpus);
    out->gpu_host = job->host_bytes_gpu / r->host_bw;
    out->gpu_compute = compute_seconds(job->ops, r->gpu, &gpu_op) / gpus;
    out->gpu_start = job->gpu_warm ? r->gpu_job_setup : r->gpu_startup * gpus;
    out->gpu_seconds = gpu_available
                           ? out->gpu_start + gpu_fixed + fmax(out->gpu_transfer, fmax(out->gpu_host, out->gpu_compute))
                           : INFINITY;
    out->choice = out->gpu_seconds < out->cpu_seconds ? OC_COST_GPU : OC_COST_CPU;
    out->regret = 0;
    int repaid = 0;
    if (gpu_available && !job->gpu_warm && out->choice == OC_COST_CPU) {
        const double warm = out->gpu_seconds - out->gpu_start + r->gpu_job_setup;
        if (warm < out->cpu_seconds) {
            out->regret = out->cpu_seconds - warm;
            if (job->gpu_regret + out->regret >= out->gpu_start) out->choice = OC_COST_GPU, repaid = 1;
        }
    }

    /* The reason: the job's size, then each backend's time and the stage that bounds it. */
    oc_text t = {0};
    char a[32], b[32], c[32];
    double ops_total = 0, pcie = job->h2d_bytes + job->d2h_bytes;
    for (int op = 0; op < OC_COST_OPS; ++op) ops_total += job->ops[op];
    oc_text_printf(&t, "%s", job->what);
    if (gpu_available && ops_total > 0 && pcie > 0)
        oc_text_printf(&t, " moves %.3g bytes over PCIe per operation and", pcie / ops_total);
    fmt_bytes(a, sizeof a, job->host_bytes_cpu);
    oc_text_printf(&t, " touches %s of host memory", a);
    if (fixed > 0) { /* the fixed costs, in both totals below (the threads in the CPU's) */
        fmt_seconds(a, sizeof a, fixed);
        oc_text_printf(&t, "; fixed %s:", a);
        for (int f = 0; f < OC_COST_FIXED_TERMS; ++f)
            if (out->fixed[f] > 0) {
                fmt_seconds(a, sizeof a, out->fixed[f]);
                oc_text_printf(&t, " %s %s", oc_cost_fixed_name((oc_cost_fixed_term)f), a);
            }
        oc_text_printf(&t, r->measured & OC_COST_M_PAGES ? " (pages measured, the rest default)" : " (default)");
    }

    /* CPU */
    fmt_seconds(a, sizeof a, out->cpu_seconds);
    if (cpu_op >= 0 && out->cpu_compute >= out->cpu_memory) {
        fmt_rate(b, sizeof b, r->cpu[cpu_op], oc_cost_op_name((oc_cost_op)cpu_op));
        oc_text_printf(&t, ": %s%s%s/s%s -> %s on %d cores", cpu_op == OC_COST_BIT_MAC ? r->cpu_isa : "",
                       cpu_op == OC_COST_BIT_MAC ? " kernel " : "", b, op_dflt(r, 0, cpu_op), a, r->cpu_cores);
    } else {
        fmt_rate(b, sizeof b, r->host_bw, "B/s");
        oc_text_printf(&t, ": host memory %s%s -> %s on %d cores", b, dflt(r, OC_COST_M_HOST_BW), a, r->cpu_cores);
    }

    /* GPU */
    const char *label = gpu_label && *gpu_label ? gpu_label : "cuda";
    if (!gpu_available && no_gpu_reason && strncmp(no_gpu_reason, "not asked", 9) == 0) {
        oc_text_printf(&t, "; %s %s", label, no_gpu_reason);
    } else if (!gpu_available) {
        oc_text_printf(&t, "; %s not usable%s%s", label, no_gpu_reason && *no_gpu_reason ? ": " : "",
                       no_gpu_reason ? no_gpu_reason : "");
    } else {
        fmt_seconds(a, sizeof a, out->gpu_seconds);
        fmt_seconds(c, sizeof c, out->gpu_start);
        oc_text_printf(&t, "; %s %s (start-up %s%s", label, a, c, job->gpu_warm ? "" : dflt(r, OC_COST_M_STARTUP));
        if (gpus > 1) oc_text_printf(&t, ", %d GPUs", gpus);
        const double stage = fmax(out->gpu_transfer, fmax(out->gpu_host, out->gpu_compute));
        if (stage > 0) {
            fmt_seconds(c, sizeof c, stage);
            if (stage == out->gpu_transfer) {
                fmt_rate(b, sizeof b, job->d2h_bytes / d2h > job->h2d_bytes / h2d ? d2h : h2d, "B/s");
                oc_text_printf(&t, ", PCIe %s %s%s -> %s", job->pageable ? "pageable" : "pinned", b,
                               dflt(r, OC_COST_M_PCIE), c);
            } else if (stage == out->gpu_host) {
                fmt_rate(b, sizeof b, r->host_bw, "B/s");
                oc_text_printf(&t, ", host memory %s%s -> %s", b, dflt(r, OC_COST_M_HOST_BW), c);
            } else {
                fmt_rate(b, sizeof b, r->gpu[gpu_op], oc_cost_op_name((oc_cost_op)gpu_op));
                oc_text_printf(&t, ", %s/s%s -> %s", b, op_dflt(r, 1, gpu_op), c);
            }
        }
        oc_text_printf(&t, ")");
    }
    if (repaid) {
        fmt_seconds(a, sizeof a, job->gpu_regret + out->regret);
        oc_text_printf(&t, "; the CPU jobs of this process have lost %s against a warm GPU, the start-up's worth", a);
    }
    oc_text_printf(&t, ": %s", out->choice == OC_COST_GPU ? label : "cpu");
    if (r->note[0]) oc_text_printf(&t, " [%s]", r->note);
    oc_snprintf(out->reason, sizeof out->reason, "%s", t.data ? t.data : job->what);
    free(t.data);
}

int oc_cost_in_memory_fs(const char *path)
{
#ifdef __linux__
    char dir[4096];
    if (!path || oc_snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir) return 0;
    char *slash = strrchr(dir, '/');
    if (!slash) oc_snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    struct statfs fs;
    return statfs(dir, &fs) == 0 && (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
#else
    (void)path;
    return 0;
#endif
}

double oc_cost_result_file_seconds(const oc_cost_rates *r, double bytes, int in_memory)
{
    if (bytes <= 0) return 0;
    return r->file_create + (in_memory ? bytes / r->file_faults : bytes / r->file_pages + bytes / r->file_sync);
}
