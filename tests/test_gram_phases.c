/*
 * test_gram_phases.c - oc_gram_stats.phases on the CPU: every phase present and not negative,
 * their sum within the job's `seconds`, and `seconds` within the wall time measured around
 * the call; a dense file output spends time completing the file (synced and renamed: the
 * output phase) that a job in memory does not, and a CPU job spends none in CUDA's start.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "outcore.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs one job and checks its phases; returns them. */
static oc_gram_phases run(oc_context *ctx, const oc_matrix *a, const oc_gram_options *o, const oc_output *out,
                          const char *what)
{
    oc_gram_stats s = {.struct_size = sizeof s};
    memset(&s.phases, 0xFF, sizeof s.phases); /* NaNs: a phase left unwritten shows */
    const double t0 = now();
    oc_status st = oc_gram(ctx, a, NULL, o, out, &s);
    const double wall = now() - t0;
    CHECK_MSG(st == OC_OK, "%s: %s", what, oc_context_last_error(ctx));
    const double p[] = {s.phases.cuda_start, s.phases.prepare, s.phases.setup,
                        s.phases.compute,    s.phases.output,  s.phases.teardown};
    double sum = 0;
    for (size_t i = 0; i < sizeof p / sizeof p[0]; ++i) {
        CHECK_MSG(p[i] >= 0 && p[i] <= wall, "%s: phase %zu is %g s of a %g s call", what, i, p[i], wall);
        sum += p[i];
    }
    CHECK_MSG(sum <= s.seconds + 1e-6, "%s: the phases sum to %g s, the job took %g s", what, sum, s.seconds);
    CHECK_MSG(s.seconds <= wall + 1e-6, "%s: the job says %g s, the call took %g s", what, s.seconds, wall);
    CHECK_MSG(sum >= 0.5 * s.seconds, "%s: the phases hold %g s of the job's %g s", what, sum, s.seconds);
    CHECK_MSG(s.phases.cuda_start == 0, "%s: a CPU job spent %g s in CUDA's start", what, s.phases.cuda_start);
    CHECK_MSG(s.phases.compute > 0, "%s: no compute time", what);
    return s.phases;
}

int main(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    CHECK(oc_test_tmp_create("phases") != NULL);
    oc_matrix *a = oc_test_random01(ctx, 1500, 700, 3);
    CHECK(a != NULL);
    if (a) {
        oc_gram_options o = OC_GRAM_OPTIONS_INIT;
        o.backend = OC_BACKEND_CPU;
        o.algorithm = OC_ALGORITHM_DENSE;
        o.metric = OC_METRIC_JACCARD;

        int32_t *mem = malloc((size_t)1500 * 1500 * 4);
        oc_output in_memory = OC_OUTPUT_INIT;
        in_memory.data = mem;
        oc_gram_phases m = run(ctx, a, &o, &in_memory, "dense in memory");
        free(mem);

        oc_output file = OC_OUTPUT_INIT;
        file.kind = OC_OUTPUT_FILE;
        file.path = oc_test_tmp_path("C.npy");
        oc_gram_phases f = run(ctx, a, &o, &file, "dense to a file");
        CHECK_MSG(f.output > 0 && f.setup > 0, "dense to a file: output %g s, setup %g s", f.output, f.setup);
        /* Memory needs nothing completed; a file is synced and renamed. */
        CHECK_MSG(m.output < f.output, "output phase: %g s in memory, %g s to a file", m.output, f.output);

        o.topk = 5;
        file.path = oc_test_tmp_path("K.npz");
        oc_gram_phases k = run(ctx, a, &o, &file, "top-k to a file");
        CHECK(k.output > 0);
    }
    oc_matrix_free(a);
    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
