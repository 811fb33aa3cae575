/*
 * test_gram_cases.c - the case table (gram_cases.c) on the CPU backend, against the reference.
 *
 * Every row runs on every kernel path this CPU has (ref, avx2, avx512, forced as
 * OUTCORE_CPU_ISA does; a path the CPU lacks is reported as skipped), each job under one of
 * 1, 2, 3 worker threads and all cores, in turn, so that every path and every part of the
 * table meets every thread count.
 * The backend also checks what only it reports: the path and thread count it ran with, and
 * the pairs its kernels computed (every pair once for A·Bᵀ; for A·Aᵀ at least the upper
 * triangle and less than everything).
 * The same rows also run with the sparse algorithm (docs/sparse.md), which must give the
 * reference's bytes as the dense kernels do; tests/test_gram_sparse.c checks its own
 * corners (hub splits, inputs held as lists).
 */
#include <stdio.h>
#include <string.h>

#include "gram_cases.h"
#include "harness.h"
#include "core/isa.h"

typedef struct cpu_settings {
    const char *isa;
    int path; /* oc_cpu_isa_id */
} cpu_settings;

/* Thread counts, taken in turn job by job (1, 2 and 3 split the work in different ways on any
 * machine; 0 is all cores, what users get). Running every job under each would quadruple the
 * table's time for little: the order of results never depends on the thread count. */
static const int thread_counts[] = {1, 2, 3, 0};

static oc_status run_cpu(const gram_backend *be, oc_context *ctx, const gram_job *job, gram_result *res, char *label)
{
    const cpu_settings *s = be->settings;
    const int threads = thread_counts[(job->serial + s->path) % 4];
    const size_t len = strlen(label);
    snprintf(label + len, GRAM_LABEL_SIZE - len, " tile %lld threads %d", (long long)job->row->tile, threads);
    /* The path is process-wide and the variants take turns job by job. */
    CHECK_MSG(oc_cpu_isa_select(s->isa) && strcmp(oc_cpu_isa(), s->isa) == 0, "%s: cannot select %s", label, s->isa);
    oc_gram_options o;
    gram_job_options(job, &o);
    o.backend = OC_BACKEND_CPU;
    o.tile = job->row->tile;
    o.algorithm = OC_ALGORITHM_DENSE; /* the kernels under test, not auto's choice */
    o.threads = threads;
    oc_status st = gram_job_run_oc_gram(ctx, job, &o, res, label);
    if (st != OC_OK) return st;
    const oc_gram_stats *stats = &res->stats;
    CHECK_EQ_I64(stats->backend, OC_BACKEND_CPU);
    /* Small jobs take fewer threads than asked, never more. */
    char isa[16] = "";
    int used_threads = 0;
    const int most = threads ? threads : oc_cpu_cores();
    CHECK_MSG(sscanf(stats->backend_desc, "cpu %15s %d thread", isa, &used_threads) == 2 && strcmp(isa, s->isa) == 0 &&
                  used_threads >= 1 && used_threads <= most,
              "%s: backend_desc '%s' does not name %s and at most %d threads", label, stats->backend_desc, s->isa,
              most);
    CHECK_MSG(stats->tiles > 0, "%s: %lld tiles", label, (long long)stats->tiles);
    double words = (double)((job->m + 511) / 512 * 8), pairs = stats->bit_macs_computed / (64.0 * words);
    const double n = (double)job->n, p = (double)job->p;
    if (job->b == NULL)
        CHECK_MSG(pairs >= n * (n + 1) / 2 && pairs <= n * n, "%s: %g pairs computed for n = %g", label, pairs, n);
    else CHECK_MSG(pairs == n * p, "%s: %g pairs computed for %g x %g", label, pairs, n, p);
    return st;
}

/* The sparse algorithm on the CPU: the thread counts in turn, as above. */
static oc_status run_sparse(const gram_backend *be, oc_context *ctx, const gram_job *job, gram_result *res, char *label)
{
    (void)be;
    const int threads = thread_counts[job->serial % 4];
    const size_t len = strlen(label);
    snprintf(label + len, GRAM_LABEL_SIZE - len, " threads %d", threads);
    oc_cpu_isa_select(NULL); /* the dense variants above leave their path selected */
    oc_gram_options o;
    gram_job_options(job, &o);
    o.backend = OC_BACKEND_CPU;
    o.threads = threads;
    o.algorithm = OC_ALGORITHM_SPARSE;
    oc_status st = gram_job_run_oc_gram(ctx, job, &o, res, label);
    if (st != OC_OK) return st;
    CHECK_MSG(res->stats.algorithm == OC_ALGORITHM_SPARSE, "%s: algorithm %s ran, not sparse", label,
              oc_algorithm_name(res->stats.algorithm));
    return st;
}

/* argv[1], when given, names the one path to run (ref, avx2, avx512 or sparse): ctest runs
 * each path as a test of its own, side by side. Without it, every path runs. */
int main(int argc, char **argv)
{
    static const char *const isa_names[OC_CPU_ISA_COUNT] = {"ref", "avx2", "avx512"};
    const char *only = argc > 1 ? argv[1] : NULL;
    cpu_settings settings[OC_CPU_ISA_COUNT];
    char names[OC_CPU_ISA_COUNT][32];
    gram_backend backends[OC_CPU_ISA_COUNT + 1];
    const gram_backend *list[OC_CPU_ISA_COUNT + 1];
    int count = 0, known = only == NULL || strcmp(only, "sparse") == 0;
    for (int i = 0; i < OC_CPU_ISA_COUNT; ++i) {
        if (only && strcmp(only, isa_names[i]) != 0) continue;
        known = 1;
        if (!oc_cpu_isa_supported((oc_cpu_isa_id)i)) {
            char why[96];
            snprintf(why, sizeof why, "path %s: this CPU or OS does not support it", isa_names[i]);
            oc_test_skip(why);
            continue;
        }
        settings[count] = (cpu_settings){isa_names[i], i};
        snprintf(names[count], sizeof names[count], "cpu %s", isa_names[i]);
        backends[count] =
            (gram_backend){.name = names[count], .kind = GRAM_ON_CPU, .run = run_cpu, .settings = &settings[count]};
        list[count] = &backends[count];
        count++;
    }
    if (!known) {
        fprintf(stderr, "usage: %s [ref|avx2|avx512|sparse]\n", argv[0]);
        return 2;
    }
    if (only == NULL || strcmp(only, "sparse") == 0) {
        backends[count] = (gram_backend){.name = "cpu sparse", .kind = GRAM_ON_CPU, .run = run_sparse};
        list[count] = &backends[count];
        count++;
    }
    if (count == 0) return oc_test_finish();
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    int64_t jobs = gram_cases_run(ctx, list, count, 0);
    oc_cpu_isa_select(NULL);
    printf("%d rows in the table, %lld jobs run\n", gram_case_count, (long long)jobs);
    oc_context_free(ctx);
    return oc_test_finish();
}
