/* cmd_gen.c - `outcore gen`: writes a random 0/1 matrix with planted near-duplicates,
 * streamed to the file in blocks of rows by oc_matrix_write_rows. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "generate.h"

static const char gen_usage[] =
    "usage: outcore gen --rows N --cols M --density P [--plant K] [--flip F] [--seed S] [--packed]\n"
    "                   [--threads N] [-q] -o A.npy\n"
    "\n"
    "Writes a random 0/1 matrix (each bit 1 with probability P, to 1/4096) as uint8 .npy, or\n"
    "as numpy.packbits rows with --packed (read it back with --bits M). --plant K makes K\n"
    "rows near-copies of K others (K at most half the rows), with a fraction F (default 0.01)\n"
    "of their bits flipped.\n"
    "Each row comes from its own random stream of (S, row), so the file is the same for any\n"
    "number of threads. Rows are written in blocks as they are made: the file may be larger\n"
    "than memory.\n"
    "\n"
    "  --threads N            threads (default: all cores)\n"
    "  -q, --quiet            no progress bar, no line for a stale temporary removed\n";

static int parse_count(const char *name, const char *v, int64_t *out)
{
    if (cli_parse_i64(v, out) || *out < 0)
        return cli_usage_error("gen: %s needs a whole number >= 0, got '%s'", name, v);
    return 0;
}

static int parse_fraction(const char *name, const char *v, double *out)
{
    if (cli_parse_double(v, out) || *out < 0 || *out > 1)
        return cli_usage_error("gen: %s needs a number in [0, 1], got '%s'", name, v);
    return 0;
}

int oc_cmd_gen(int argc, char **argv)
{
    gen_params p = {.rows = 0, .cols = 0, .density = -1, .plant = 0, .flip = 0.01, .seed = 1};
    const char *output = NULL;
    oc_write_options wopts = OC_WRITE_OPTIONS_INIT;
    int quiet = 0;
    cli_args args = CLI_ARGS_INIT(argc, argv), *a = &args;
    for (const char *arg; (arg = cli_next(a)) != NULL;) {
        const char *v = NULL;
        int64_t iv;
        int r;
        if (cli_positional(a)) return cli_usage_error("gen: unexpected argument %s (see outcore gen --help)", arg);
        if (cli_flag(a, "--help|-h")) {
            fputs(gen_usage, stdout);
            return OC_EXIT_OK;
        }
        if (cli_flag(a, "--packed")) {
            wopts.packed = 1;
            continue;
        }
        if (cli_flag(a, "--quiet|-q")) {
            quiet = 1;
            continue;
        }
        if (CLI_OPTION(a, r, v, "--rows")) {
            if (r < 0 || parse_count("--rows", v, &p.rows)) return OC_EXIT_USAGE;
        } else if (CLI_OPTION(a, r, v, "--cols")) {
            if (r < 0 || parse_count("--cols", v, &p.cols)) return OC_EXIT_USAGE;
        } else if (CLI_OPTION(a, r, v, "--plant")) {
            if (r < 0 || parse_count("--plant", v, &p.plant)) return OC_EXIT_USAGE;
        } else if (CLI_OPTION(a, r, v, "--seed")) {
            if (r < 0 || parse_count("--seed", v, &iv)) return OC_EXIT_USAGE;
            p.seed = (uint64_t)iv;
        } else if (CLI_OPTION(a, r, v, "--density")) {
            if (r < 0 || parse_fraction("--density", v, &p.density)) return OC_EXIT_USAGE;
        } else if (CLI_OPTION(a, r, v, "--flip")) {
            if (r < 0 || parse_fraction("--flip", v, &p.flip)) return OC_EXIT_USAGE;
        } else if (CLI_OPTION(a, r, v, "--threads")) {
            if (r < 0) return OC_EXIT_USAGE;
            if ((r = cli_parse_threads(v, &wopts.threads)) >= 0) return r;
        } else if (CLI_OPTION(a, r, v, "-o|--output")) {
            if (r < 0) return OC_EXIT_USAGE;
            output = v;
        } else {
            return cli_unknown_option(a, "gen");
        }
    }
    if (p.rows < 1 || p.cols < 1) return cli_usage_error("gen: --rows and --cols must be given and positive");
    if (p.density < 0) return cli_usage_error("gen: --density must be given (a number in [0, 1])");
    if (!output) return cli_usage_error("gen: no output given: add -o A.npy");
    if (p.plant > p.rows / 2)
        return cli_usage_error(
            "gen: --plant %lld needs %lld rows (each planted row copies another), but --rows is %lld: "
            "plant at most %lld",
            (long long)p.plant, p.plant > INT64_MAX / 2 ? (long long)INT64_MAX : 2 * (long long)p.plant,
            (long long)p.rows, (long long)(p.rows / 2));

    /* Tests force small blocks to show that the bytes do not depend on them. */
    const char *block_rows = getenv("OUTCORE_GEN_BLOCK_ROWS");
    if (block_rows && (cli_parse_i64(block_rows, &wopts.block_rows) || wopts.block_rows < 1))
        return cli_usage_error("gen: OUTCORE_GEN_BLOCK_ROWS=%s is not a whole number >= 1", block_rows);

    oc_context *ctx = NULL;
    gen_plan plan;
    if (oc_context_create(&ctx) != OC_OK) return OC_EXIT_FAILURE;
    cli_quiet_library(ctx, quiet);
    if (gen_plan_init(&plan, &p) != 0) {
        oc_context_free(ctx);
        fprintf(stderr, "outcore: gen: out of memory for %lld planted pairs\n", (long long)p.plant);
        return OC_EXIT_FAILURE;
    }
    cli_cancel_on_signal(ctx);
    cli_progress progress;
    double bytes = (double)p.rows * (double)(wopts.packed ? (p.cols + 7) / 8 : p.cols);
    cli_progress_init(&progress, "gen", bytes, !quiet);
    progress.unit = "B";
    wopts.progress = cli_progress_update;
    wopts.progress_user = &progress;
    oc_status st = oc_matrix_write_rows(ctx, output, p.rows, p.cols, gen_fill_rows, &plan, &wopts);
    cli_progress_finish(&progress);
    int rc = st == OC_OK ? OC_EXIT_OK : cli_status_error(ctx, st);
    cli_cancel_on_signal(NULL);
    gen_plan_free(&plan);
    oc_context_free(ctx);
    return rc;
}
