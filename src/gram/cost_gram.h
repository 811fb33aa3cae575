/*
 * cost_gram.h - where a Gram job runs: `--backend auto` for gram, from the cost model
 * (cost/cost.h), and the text `--explain` prints for it.
 */
#ifndef OC_GRAM_COST_GRAM_H
#define OC_GRAM_COST_GRAM_H

#include "cost/cost.h"
#include "gram/gram_job.h"

typedef struct oc_gram_backend_choice {
    int use_gpu;             /* the decision */
    oc_cost_rates rates;     /* the table it was made from (the sparse/dense choice uses it too) */
    oc_cost_prediction pred; /* the dense path's prediction on each backend */
    char explain[640];       /* one paragraph for --explain and oc_gram_stats.backend_explain */
} oc_gram_backend_choice;

/* Chooses the backend of a dense Gram job: the one opts->backend names, or with auto the
 * faster prediction (gpu_usable: device opts->device can run it now; no_gpu_reason says
 * why not, may be NULL). The first job on a machine whose rate cache lacks the host's rates
 * measures them (cost.h: oc_cost_rates_get); nothing else is measured. Never fails. */
void oc_gram_choose_backend(oc_context *ctx, const oc_gram_job *job, oc_output_kind out_kind, int gpu_usable,
                            const char *no_gpu_reason, oc_gram_backend_choice *choice);

/* An auto job that the CPU is predicted to finish, together with the CPU time earlier auto
 * jobs of the process could have saved on a warm GPU, before a cold GPU could even start
 * (its start-up from the rate cache's host section or the default) runs on the CPU without
 * a question to the CUDA driver, whose initialisation alone costs more than the job. Fills
 * choice (its pred.regret: the CPU's time, the most a warm GPU could save) and returns 1
 * then; returns 0 when the full choice must be made (a GPU already warm, a larger job). */
int oc_gram_cpu_before_gpu_start(oc_context *ctx, const oc_gram_job *job, oc_output_kind out_kind,
                                 oc_gram_backend_choice *choice);

#endif
