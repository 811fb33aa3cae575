/*
 * map_choice.c - where a map plan runs: the backend asked for, or, for auto, the cost model's
 * faster prediction (cost.h) when the GPU can run the plan. oc_map_run and oc_map_explain
 * both call oc_map_choose, so --explain states the decision the run takes.
 */
#include <stdio.h>
#include <string.h>

#include "core/text_buf.h"
#include "core/error.h"
#include "core/gpu_probe.h"
#include "cost/cost.h"
#include "map/map_codegen.h"
#include "map/map_plan.h"
#include "map/map_types.h"
#include "mem/host_budget.h"

static int is_math(oc_map_op op)
{
    const oc_map_op_info *info = oc_map_op_info_of(op);
    return info && info->transcendental;
}

/* Operations per result element by cost class: every live IR node but inputs and constants
 * counts once, in the class of the type it computes in, and a reduction's step once more. */
static void ops_per_element(const oc_map_plan *m, double ops[OC_COST_OPS])
{
    memset(ops, 0, sizeof(double) * OC_COST_OPS);
    char live[4096];
    const oc_map_expr *e = &m->ir;
    if (e->count > (int)sizeof live) {
        ops[OC_COST_F64] = e->count; /* a huge expression: any estimate decides the same */
        return;
    }
    memset(live, 0, (size_t)e->count);
    oc_map_expr_live(e, e->root, live);
    for (int k = 0; k < e->count; k++) {
        const oc_map_node *n = &e->nodes[k];
        if (!live[k] || n->op == MOP_INPUT || n->op == MOP_CONST) continue;
        int t = n->op == MOP_CAST ? n->type : n->otype;
        if (t == OC_MAP_FLOAT32) ops[is_math(n->op) ? OC_COST_F32_MATH : OC_COST_F32] += 1;
        else if (t == OC_MAP_FLOAT64) ops[is_math(n->op) ? OC_COST_F64_MATH : OC_COST_F64] += 1;
        else ops[OC_COST_INT] += 1;
    }
    /* A reduction adds each element to (or compares it with) its accumulator. */
    if (m->reduce != OC_MAP_REDUCE_NONE)
        ops[m->reduce_type == OC_MAP_FLOAT32   ? OC_COST_F32
            : m->reduce_type == OC_MAP_FLOAT64 ? OC_COST_F64
                                               : OC_COST_INT] += 1;
}

static const char *gpu_reason(const oc_map_plan *m, char *why, size_t size)
{
    if (m->reduce != OC_MAP_REDUCE_NONE) {
        /* A run reduced within one chunk (the reduced axis when nothing after it is larger
         * than 1; all elements: the last dimension) must fit the device whole. */
        int64_t len = m->axis < 0 ? (m->ndim ? m->shape[m->ndim - 1] : 1) : m->shape[m->axis], inner = 1;
        for (int d = m->axis + 1; m->axis >= 0 && d < m->ndim; d++) inner *= m->shape[d];
        if (inner == 1 && len > OC_MAP_CUDA_MAX_RUN) {
            oc_snprintf(why, size,
                        "map reduces runs of at most %lld elements on the GPU and this reduction's runs are %lld long",
                        (long long)OC_MAP_CUDA_MAX_RUN, (long long)len);
            return why;
        }
    }
#ifdef OC_HAVE_CUDA
    if (oc_map_backend_cuda.usable(why, size)) return NULL;
#else
    oc_snprintf(why, size, "%s", OC_NO_CUDA_BUILD);
#endif
    return why;
}

/* The plan as the cost model sees it, and this machine's rates for it (the host's section
 * only unless gpu; threads below the cores get their share of the arithmetic rates). */
static void map_job(const oc_map_plan *m, oc_cost_job *job)
{
    int64_t in_bytes = 0;
    for (int i = 0; i < m->n_inputs; i++)
        if (m->inputs[i].used) in_bytes += m->inputs[i].count * (int64_t)oc_mt_size(m->inputs[i].type);
    const double out_bytes = (double)m->out_count * oc_mt_size(m->out_type);
    double per[OC_COST_OPS];
    ops_per_element(m, per);
    oc_cost_job_map(m->text, (double)in_bytes, out_bytes, (double)m->count, per, job);
    job->gpu_warm = oc_cost_gpu_warm();
}

/* The rates, the host's measured at a machine's first use within the job's host budget. */
static void map_rates(oc_context *ctx, const oc_map_plan *m, int gpu, oc_cost_rates *rates)
{
    oc_cost_rates_get(ctx, oc_host_budget_resolve(m->opts.host_mem_bytes), gpu, rates);
    const int threads = m->opts.threads;
    if (threads > 0 && threads < rates->cpu_cores) {
        for (int op = 0; op < OC_COST_OPS; ++op) rates->cpu[op] *= (double)threads / rates->cpu_cores;
        rates->cpu_cores = threads;
    }
}

#ifdef OC_HAVE_CUDA
/* Auto with a cold GPU: a plan the CPU finishes before a GPU could start runs there without
 * a question to the CUDA driver, whose initialisation alone costs more (as for gram:
 * cost_gram.h). Returns 1 with c filled then. */
static int cpu_before_gpu_start(oc_context *ctx, const oc_map_plan *m, oc_map_choice *c)
{
    if (m->opts.backend != OC_BACKEND_AUTO || oc_cost_gpu_warm()) return 0;
    oc_cost_rates rates;
    map_rates(ctx, m, 0, &rates);
    oc_cost_job job;
    map_job(m, &job);
    char why[160];
    oc_snprintf(why, sizeof why, "not asked: a GPU's start-up (%.3g s%s) is longer than the job on the CPU",
                rates.gpu_startup, rates.measured & OC_COST_M_STARTUP ? "" : ", default");
    oc_cost_prediction p;
    oc_cost_predict(&rates, &job, 0, "cuda:0", why, &p);
    if (!(p.cpu_seconds < rates.gpu_startup)) return 0;
    oc_snprintf(c->explain, sizeof c->explain, "%s", p.reason);
    return 1;
}
#endif

oc_status oc_map_choose(oc_context *ctx, const oc_map_plan *m, oc_map_choice *c)
{
    memset(c, 0, sizeof *c);
    c->backend = &oc_map_backend_cpu;
    const oc_backend asked = m->opts.backend;
    if (asked != OC_BACKEND_AUTO && asked != OC_BACKEND_CPU && asked != OC_BACKEND_CUDA)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "unknown backend %d", (int)asked);
#ifdef OC_HAVE_CUDA
    if (cpu_before_gpu_start(ctx, m, c)) return OC_OK;
#endif
    char why[400] = "";
    const char *no_gpu = asked == OC_BACKEND_CPU ? "--backend cpu" : gpu_reason(m, why, sizeof why);
    if (asked == OC_BACKEND_CUDA && no_gpu) return oc_fail_no_gpu(ctx, "%s", no_gpu);
    c->gpu_candidate = !no_gpu;
    if (asked == OC_BACKEND_CPU) {
        oc_snprintf(c->explain, sizeof c->explain, "cpu (asked)");
        return OC_OK;
    }
    oc_cost_rates rates;
    /* The prediction decides, or --explain prints it: the host's rates are measured at the
     * first such job on this machine. */
    map_rates(ctx, m, c->gpu_candidate, &rates);
    oc_cost_job job;
    map_job(m, &job);
    oc_cost_prediction p;
    oc_cost_predict(&rates, &job, c->gpu_candidate, "cuda:0", no_gpu, &p);
#ifdef OC_HAVE_CUDA
    if (asked == OC_BACKEND_CUDA || (c->gpu_candidate && p.choice == OC_COST_GPU)) c->backend = &oc_map_backend_cuda;
#endif
    oc_snprintf(c->explain, sizeof c->explain, "%s%s", asked == OC_BACKEND_CUDA ? "cuda:0 (asked); predicted " : "",
                p.reason);
    return OC_OK;
}
