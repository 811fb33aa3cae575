/*
 * cmd_demo.c - `outcore demo`: the main job on a built-in example. Generates a random 0/1
 * matrix with planted near-duplicate rows, computes its Jaccard Gram matrix (on the GPU when
 * one is usable) as the pairs above a threshold, without the dense matrix existing anywhere,
 * and checks them against the plant.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_names.h"
#include "cli/cli_parse.h"
#include "cli/cli_progress.h"
#include "cli/cli_signal.h"
#include "commands.h"
#include "generate.h"

typedef struct found_pairs {
    const int64_t *planted;
    int64_t plant;
    int64_t found, planted_found;
    float planted_min, planted_max, other_max;
} found_pairs;

/* The fewest columns the demo takes (--cols): at its density of 0.1 two random rows then
 * share too few ones to reach its Jaccard threshold of 0.5 among millions of pairs. */
#define DEMO_COLS_MIN 512

static int is_planted(const int64_t *pairs, int64_t plant, int64_t i, int64_t j)
{
    for (int64_t k = 0; k < plant; ++k) {
        int64_t a = pairs[2 * k], b = pairs[2 * k + 1];
        if ((a == i && b == j) || (a == j && b == i)) return 1;
    }
    return 0;
}

/* Receives the threshold pairs (i < j, in row order) as the job produces them. */
static int on_pairs(void *user, const int64_t *rows, const int64_t *cols, const void *scores, int64_t count)
{
    found_pairs *f = user;
    const float *s = scores;
    for (int64_t k = 0; k < count; ++k) {
        f->found++;
        if (is_planted(f->planted, f->plant, rows[k], cols[k])) {
            f->planted_found++;
            f->planted_min = s[k] < f->planted_min ? s[k] : f->planted_min;
            f->planted_max = s[k] > f->planted_max ? s[k] : f->planted_max;
        } else if (s[k] > f->other_max) {
            f->other_max = s[k];
        }
    }
    return 0;
}

int oc_cmd_demo(int argc, char **argv)
{
    const gen_params defaults = {.rows = 8192, .cols = 32768, .density = 0.1, .plant = 32, .flip = 0.01, .seed = 2026};
    gen_params p = defaults;
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    opts.metric = OC_METRIC_JACCARD;
    opts.use_threshold = 1;
    opts.threshold = 0.5;
    cli_args args = CLI_ARGS_INIT(argc, argv), *cl = &args;
    for (const char *arg; (arg = cli_next(cl)) != NULL;) {
        const char *v;
        int r;
        if (cli_positional(cl)) return cli_usage_error("demo: unexpected argument %s (see outcore demo --help)", arg);
        /* r < 0: cli_take has said what is wrong (a missing value, an option given twice). */
        if (CLI_OPTION(cl, r, v, "--rows")) {
            if (r < 0) return OC_EXIT_USAGE;
            if (cli_parse_i64(v, &p.rows) || p.rows < 2) return cli_usage_error("demo: --rows needs a number >= 2");
        } else if (CLI_OPTION(cl, r, v, "--cols")) {
            if (r < 0) return OC_EXIT_USAGE;
            /* With fewer columns random rows (two empty ones among them) pass the demo's
             * threshold beside the planted pairs, and its check could not hold. */
            if (cli_parse_i64(v, &p.cols) || p.cols < DEMO_COLS_MIN)
                return cli_usage_error("demo: --cols needs a number >= %d (fewer columns let random rows pass "
                                       "its threshold)",
                                       DEMO_COLS_MIN);
        } else if (CLI_OPTION(cl, r, v, "--backend")) {
            if (r < 0) return OC_EXIT_USAGE;
            if (oc_backend_parse(v, &opts.backend)) {
                char names[64];
                return cli_usage_error("demo: --backend %s",
                                       cli_join_names(names, sizeof names, cli_backend_at, ", ", " or ", NULL));
            }
        } else if (cli_flag(cl, "--help|-h")) {
            printf("usage: outcore demo [--rows N] [--cols M] [--backend auto|cpu|cuda]\n\n"
                   "Plants near-duplicate rows in a random 0/1 matrix and finds them with a Jaccard Gram matrix.\n\n"
                   "  --rows N               rows of the matrix (default %lld, at least 2)\n"
                   "  --cols M               columns (default %lld, at least %d)\n"
                   "  --backend B            auto (the default: the GPU where one is usable), cpu or cuda\n",
                   (long long)defaults.rows, (long long)defaults.cols, DEMO_COLS_MIN);
            return OC_EXIT_OK;
        } else {
            return cli_unknown_option(cl, 0);
        }
    }
    if (p.plant > p.rows / 2) p.plant = p.rows / 2;

    oc_context *ctx = NULL;
    oc_matrix *a = NULL;
    int64_t *pairs = malloc((size_t)(2 * p.plant + 2) * sizeof *pairs);
    int rc = OC_EXIT_FAILURE;
    oc_status st = oc_context_create(&ctx);
    if (st != OC_OK || !pairs) goto done;
    cli_cancel_on_signal(ctx);

    printf("outcore demo: %lld random rows x %lld columns (density %.2f), %lld planted near-duplicate pairs\n",
           (long long)p.rows, (long long)p.cols, p.density, (long long)p.plant);
    st = gen_matrix(ctx, &p, &a, pairs);
    if (st != OC_OK) {
        rc = cli_status_error(ctx, st);
        goto done;
    }
    cli_progress progress;
    cli_progress_init(&progress, "gram", (double)p.rows * (double)p.rows * (double)p.cols, 1);
    opts.progress = cli_progress_update;
    opts.progress_user = &progress;
    found_pairs f = {.planted = pairs, .plant = p.plant, .planted_min = 1};
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_PAIRS;
    out.pairs = on_pairs;
    out.pairs_user = &f;
    oc_gram_stats stats = {.struct_size = sizeof stats};
    if ((rc = cli_cancelled_before_job()) >= 0) goto done; /* its start would clear the cancel */
    st = oc_gram(ctx, a, NULL, &opts, &out, &stats);
    cli_progress_finish(&progress);
    if (st != OC_OK) {
        rc = cli_status_error(ctx, st);
        goto done;
    }
    char rate[32];
    printf("gram jaccard on %s: %.3f s, %sbit-MAC/s effective\n", stats.backend_desc, stats.seconds,
           cli_si(stats.bit_macs_effective / stats.seconds, rate, sizeof rate));

    printf("pairs with jaccard >= %.2f: %lld, of which %lld of the %lld planted ones (jaccard %.3f-%.3f); %lld others",
           opts.threshold, (long long)f.found, (long long)f.planted_found, (long long)p.plant, f.planted_min,
           f.planted_max, (long long)(f.found - f.planted_found));
    if (f.found > f.planted_found) printf(" (best %.3f)", f.other_max);
    printf("\n");
    rc = (f.planted_found == p.plant && f.found == p.plant) ? OC_EXIT_OK : OC_EXIT_FAILURE;
    if (rc != OC_EXIT_OK) fprintf(stderr, "outcore: demo: the pairs found differ from the planted ones\n");

done:
    free(pairs);
    oc_matrix_free(a);
    oc_context_free(ctx);
    return rc;
}
