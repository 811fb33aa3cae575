/*
 * cost_gram.c - the Gram job's backend choice (see cost_gram.h): the job as the cost model
 * sees it, the prediction, and the decision.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/text_buf.h"
#include "core/metric.h"
#include "gram/cost_gram.h"

#include "core/gpu_probe.h"
#include "core/context.h"
#include "core/threads.h"

/* The CPU planner's smallest tile edge (TILE_MIN_AUTO in gram/cpu/gram_cpu.c): a job has at
 * most one worker per tile of this edge. */
#define CPU_TILE_MIN 24

/* Worker threads the CPU backend would start for the job: one per tile at most, less those
 * the context's pool already runs (a pool outlives its jobs: core/workers.h). */
static int threads_to_start(const oc_gram_job *job)
{
    int threads = oc_threads_resolve(job->opts->threads);
    const int64_t rt = (job->n + CPU_TILE_MIN - 1) / CPU_TILE_MIN, ct = (job->p + CPU_TILE_MIN - 1) / CPU_TILE_MIN;
    const int64_t tiles = job->symmetric ? rt * (rt + 1) / 2 : rt * ct;
    if (tiles < threads) threads = (int)(tiles > 0 ? tiles : 1);
    const int running = job->ctx && job->ctx->workers ? oc_workers_count(job->ctx->workers) : 0;
    return threads > running ? threads - running : 0;
}

/* The job as oc_cost_job_gram describes it. */
static void gram_shape(const oc_gram_job *job, oc_output_kind out_kind, oc_cost_gram_shape *g)
{
    const oc_gram_options *o = job->opts;
    *g = (oc_cost_gram_shape){.n = job->n,
                              .p = job->p,
                              .m = job->m,
                              .symmetric = job->symmetric,
                              .elem_bytes = (int)oc_dtype_size(job->dtype),
                              .k = o->topk,
                              .popcounts = oc_metric_info_of(job->metric)->popcounts,
                              .to_file = out_kind == OC_OUTPUT_FILE,
                              .file_in_memory = out_kind == OC_OUTPUT_FILE && oc_cost_in_memory_fs(job->out_path),
                              .threads = threads_to_start(job)};
    if (o->topk > 0) g->output = OC_COST_GRAM_TOPK;
    else if (o->use_threshold) g->output = OC_COST_GRAM_THRESHOLD; /* pairs unknown before the job: not counted */
    else if (out_kind == OC_OUTPUT_DISCARD) g->output = OC_COST_GRAM_DISCARD;
    else g->output = OC_COST_GRAM_DENSE;
}

/* A job on fewer threads than cores gets their share of the arithmetic rates (memory
 * bandwidth is kept: a few cores already draw most of it). */
static void thread_share(const oc_gram_job *job, oc_cost_rates *r)
{
    const int threads = job->opts->threads;
    if (threads > 0 && threads < r->cpu_cores) {
        for (int op = 0; op < OC_COST_OPS; ++op) r->cpu[op] *= (double)threads / r->cpu_cores;
        r->cpu_cores = threads;
    }
}

static void cost_job(const oc_gram_job *job, oc_output_kind out_kind, oc_cost_job *cj)
{
    oc_cost_gram_shape g;
    gram_shape(job, out_kind, &g);
    oc_cost_job_gram(&g, cj);
    cj->gpu_warm = oc_cost_gpu_warm();
    cj->gpu_regret = oc_cost_gpu_regret();
    int physical[OC_MAX_LOGICAL_DEVICES];
    cj->gpu_devices = oc_device_list_physical(&job->devices, -1, physical);
}

int oc_gram_cpu_before_gpu_start(oc_context *ctx, const oc_gram_job *job, oc_output_kind out_kind,
                                 oc_gram_backend_choice *c)
{
    if (job->opts->backend != OC_BACKEND_AUTO || oc_cost_gpu_warm()) return 0;
    memset(c, 0, sizeof *c);
    oc_cost_rates_get(ctx, job->host_budget, 0, &c->rates); /* the host's section only: no driver */
    thread_share(job, &c->rates);
    oc_cost_job cj;
    cost_job(job, out_kind, &cj);
    const double start = c->rates.gpu_startup;
    char why[160];
    oc_snprintf(why, sizeof why, "not asked: a GPU's start-up (%.3g s%s) is longer than the job on the CPU", start,
                c->rates.measured & OC_COST_M_STARTUP ? "" : ", default");
    char label[32];
    oc_snprintf(label, sizeof label, "cuda:%d", job->opts->device);
    oc_cost_predict(&c->rates, &cj, 0, label, why, &c->pred);
    /* The output file's costs are paid on either backend: they decide nothing. */
    const oc_cost_prediction *p = &c->pred;
    const double own =
        p->cpu_seconds - (p->fixed[OC_COST_FIX_FILE] + p->fixed[OC_COST_FIX_PAGES] + p->fixed[OC_COST_FIX_SYNC]);
    if (!(own + cj.gpu_regret < start)) return 0;
    /* What a warm GPU would have saved is at most the CPU's own time: counted so, a loop of
     * such jobs asks CUDA once their time could have paid for its start-up. */
    c->pred.regret = own;
    c->use_gpu = 0;
    oc_snprintf(c->explain, sizeof c->explain, "%s", c->pred.reason);
    return 1;
}

void oc_gram_choose_backend(oc_context *ctx, const oc_gram_job *job, oc_output_kind out_kind, int gpu_usable,
                            const char *no_gpu_reason, oc_gram_backend_choice *c)
{
    memset(c, 0, sizeof *c);
    const oc_backend asked = job->opts->backend;
    /* Every job reports its prediction (oc_gram_stats.predicted_seconds): the host's rates
     * are measured at the first one on this machine. */
    oc_cost_rates_get(ctx, job->host_budget, asked != OC_BACKEND_CPU && gpu_usable, &c->rates);
    thread_share(job, &c->rates);
#ifdef OC_HAVE_CUDA
    /* Until `outcore devices --bandwidth` has measured it, the GPU's kernel rate is the
     * default of the kernel its architecture runs (asked without a context). */
    if (gpu_usable && !(c->rates.measured & OC_COST_M_GPU_BITS)) {
        char why[200];
        const int device = job->devices.count > 0 ? job->devices.dev[0].physical : job->opts->device;
        const double rate = oc_cost_gpu_default_bit_macs(oc_gpu_probe_cuda.device_cc(device, why, sizeof why), NULL);
        if (rate > 0) c->rates.gpu[OC_COST_BIT_MAC] = rate;
    }
#endif
    oc_cost_job cj;
    cost_job(job, out_kind, &cj);
    char label[32];
    oc_snprintf(label, sizeof label, "cuda:%d", job->opts->device);
    oc_cost_predict(&c->rates, &cj, gpu_usable, label, no_gpu_reason, &c->pred);
    switch (asked) {
    case OC_BACKEND_CPU:
        c->use_gpu = 0;
        oc_snprintf(c->explain, sizeof c->explain, "cpu (asked); predicted %s", c->pred.reason);
        break;
    case OC_BACKEND_CUDA:
        c->use_gpu = 1;
        oc_snprintf(c->explain, sizeof c->explain, "%s (asked); predicted %s", label, c->pred.reason);
        break;
    default:
        c->use_gpu = gpu_usable && c->pred.choice == OC_COST_GPU;
        oc_snprintf(c->explain, sizeof c->explain, "%s", c->pred.reason);
        break;
    }
}
