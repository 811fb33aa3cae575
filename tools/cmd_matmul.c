/* cmd_matmul.c - `outcore matmul`: the dense product of two .npy matrices (docs/matmul.md). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_names.h"
#include "cli/cli_parse.h"
#include "cli/cli_placement.h"
#include "cli/cli_progress.h"
#include "cli/cli_signal.h"
#include "cli/cli_visible.h"
#include "commands.h"

static const char matmul_usage[] =
    "usage: outcore matmul A.npy B.npy -o C.npy [options]\n"
    "       outcore matmul A.npy --gram -o C.npy [options]\n"
    "\n"
    "Computes C = op(A)·op(B) of dense .npy matrices of any size, tile by tile within the host\n"
    "and device memory budgets, on a BLAS (OpenBLAS, MKL: loaded at run time), the GPU, or\n"
    "reference loops. Inputs: 2-D float64, float32, float16, int8-64, uint8-64, bool (C or\n"
    "Fortran order), or 1-D vectors as numpy's matmul reads them (a row as A, a column as B;\n"
    "the result drops their dimension). The result's dtype is numpy's (int8 x int8 is int32,\n"
    "exact; bool x bool is bool). See docs/matmul.md.\n"
    "\n"
    "  -o, --output C.npy     result file (written under a temporary name, renamed when done)\n"
    "  --transpose-a          op(A) = Aᵀ\n"
    "  --transpose-b          op(B) = Bᵀ\n"
    "  --gram                 C = op(A)·op(A)ᵀ from A alone: only the tiles on and above the\n"
    "                         diagonal are computed, then mirrored (so is B the same file as A\n"
    "                         with op(B) = op(A)ᵀ)\n";
/* Then the --dtype line, from the library's list (print_usage), and the rest. */
static const char matmul_usage_dtype[] =
    "                         the type the product is computed and written in: int32 of int8\n"
    "                         or bool inputs alone, bool of bool inputs (default: numpy's result\n"
    "                         type, but float32 for float16 and bfloat16, whose sums are\n"
    "                         float32, and int32 for int8); integer inputs other than int8 and\n"
    "                         bool need a float here\n"
    "  --tf32                 float32 on the GPU: allow TF32 tensor cores (10-bit mantissa)\n";
/* Then the --backend line, from the library's list (print_usage), and the rest. */
static const char matmul_usage_rest[] =
    "                         auto runs the one the cost model predicts faster, the CPU\n"
    "                         without a usable GPU (docs/cost-model.md)\n"
    "  --explain              print the predicted time of each backend and the plan (on\n"
    "                         stderr before the job; with no -o, alone on stdout)\n"
    "  --threads N            CPU threads (default: all cores)\n"
    "  --device N             CUDA device index (default 0)\n"
    "  --devices LIST         several CUDA devices: 0,1,3 or all; 0:2 splits device 0 into two\n" CLI_HELP_GPU_MEM
    "\n" CLI_HELP_HOST_MEM ": panels, tiles\n"
    "                         and K panels fit in it beside the inputs it maps (those that take\n"
    "                         at most half of it); a larger input stays in its file and is read\n"
    "                         in panels\n"
    "  --tile N               tile edge of C (default: chosen by the planner)\n"
    "  --plan                 print the plan (tiles, K panels, budgets and what bounds them)\n"
    "                         and exit without computing\n"
    "  --json                 print the summary (or the plan) as JSON on stdout; --explain\n"
    "                         with no -o prints {\"explain\": TEXT}\n"
    "  --resume               keep a journal (C.npy.outcore-journal) so that the same command\n"
    "                         with --resume, run again after an interruption, continues where\n"
    "                         it stopped (the same inputs and plan; docs/resume.md)\n"
    "  -q, --quiet            no progress bar, no summary, no line for a stale temporary removed\n"
    "  -v, --verbose          on failure, also print the library's file:line trace\n"
    "  --                     ends the options: an input after it may start with '-'\n"
    "\n"
    "Environment: OUTCORE_BLAS names the BLAS library to load (none: the reference loops);\n"
    "OPENBLAS_THREAD_TIMEOUT, when unset, is set to 4 (OpenBLAS's threads sleep between calls);\n"
    "with --threads N, OPENBLAS_NUM_THREADS is set to N when it, GOTO_NUM_THREADS and\n"
    "OMP_NUM_THREADS are unset (OpenBLAS starts that many threads as it loads, not one a core).\n";

static void print_usage(void)
{
    const oc_matmul_options defaults = OC_MATMUL_OPTIONS_INIT;
    fputs(matmul_usage, stdout);
    cli_help_names("--dtype T", cli_matmul_dtype_at, NULL);
    fputs(matmul_usage_dtype, stdout);
    cli_help_names("--backend B", cli_backend_at, oc_backend_name(defaults.backend));
    fputs(matmul_usage_rest, stdout);
}

typedef struct matmul_args {
    const char *inputs[2];
    int ninputs;
    const char *output;
    const char *gpu_mem; /* --gpu-mem as given */
    const char *device;  /* --device as given */
    int json, quiet, explain, plan;
    oc_matmul_options opts;
} matmul_args;

/* The option that sets a flag, or 0 when arg is none of them. */
static int take_flag(cli_args *a, matmul_args *g)
{
    if (cli_flag(a, "--json")) g->json = 1;
    else if (cli_flag(a, "--explain")) g->explain = 1;
    else if (cli_flag(a, "--plan")) g->plan = 1;
    else if (cli_flag(a, "--quiet|-q")) g->quiet = 1;
    else if (cli_flag(a, "--verbose|-v")) cli_verbose = 1;
    else if (cli_flag(a, "--transpose-a")) g->opts.transpose_a = 1;
    else if (cli_flag(a, "--transpose-b")) g->opts.transpose_b = 1;
    else if (cli_flag(a, "--gram")) g->opts.gram = 1;
    else if (cli_flag(a, "--tf32")) g->opts.tf32 = 1;
    else if (cli_flag(a, "--resume")) g->opts.resume = 1;
    else return 0;
    return 1;
}

/* Options with a value: -1 when arg was one and parsed, 0 when it is none of them, else the
 * exit status. */
static int take_value(cli_args *a, matmul_args *g)
{
    const char *v = NULL;
    int r;
    const cli_placement where = CLI_PLACEMENT_OF(g->opts, &g->gpu_mem, &g->device);
    if ((r = cli_take_placement(a, &where)) != 0) return r;
    if (CLI_OPTION(a, r, v, "-o|--output")) {
        if (r < 0) return OC_EXIT_USAGE;
        g->output = v;
    } else if (CLI_OPTION(a, r, v, "--dtype")) {
        if (r < 0) return OC_EXIT_USAGE;
        const unsigned uses = OC_MATMUL_DTYPE_RESULT | OC_MATMUL_DTYPE_NPY; /* cli_matmul_dtype_at's */
        if (oc_matmul_dtype_parse(v, &g->opts.dtype) != OC_OK || (oc_matmul_dtype_uses(g->opts.dtype) & uses) != uses)
            return cli_expected("--dtype", v, cli_matmul_dtype_at);
    } else if (CLI_OPTION(a, r, v, "--tile")) {
        if (r < 0) return OC_EXIT_USAGE;
        if (cli_parse_i64(v, &g->opts.tile) || g->opts.tile < 1)
            return cli_usage_error("--tile %s: expected a positive number of rows", v);
    } else {
        return 0;
    }
    return -1;
}

static int parse_matmul_args(int argc, char **argv, matmul_args *g)
{
    cli_args args = CLI_ARGS_INIT(argc, argv), *a = &args;
    for (const char *arg; (arg = cli_next(a)) != NULL;) {
        if (cli_positional(a)) {
            if (g->ninputs == 2) return cli_usage_error("matmul: at most two inputs (A and B), got a third: %s", arg);
            g->inputs[g->ninputs++] = arg;
            continue;
        }
        if (cli_flag(a, "--help|-h")) {
            print_usage();
            return OC_EXIT_OK;
        }
        if (take_flag(a, g)) continue;
        int r = take_value(a, g);
        if (r == 0) return cli_unknown_option(a, 1);
        if (r >= 0) return r;
    }
    if (g->ninputs == 0) return cli_usage_error("matmul: no input matrix given (see outcore matmul --help)");
    if (g->opts.gram && g->ninputs == 2)
        return cli_usage_error("matmul: --gram computes A·Aᵀ from A alone: give one input, or drop --gram");
    if (!g->opts.gram && g->ninputs == 1) return cli_usage_error("matmul: one input: give B too, or --gram for A·Aᵀ");
    if (g->plan || (g->explain && !g->output)) return -1;
    if (!g->output) return cli_usage_error("matmul: no output given: add -o C.npy");
    int rc = cli_check_output(g->output); /* a folder, a missing one: before the extension */
    if (rc >= 0) return rc;
    if (strcasecmp(cli_path_extension(g->output), "npy") != 0)
        return cli_usage_error("%s: matmul writes .npy files: name the output C.npy", g->output);
    return -1;
}

static void print_summary(const matmul_args *g, const oc_matmul_stats *s)
{
    const double rate = s->seconds > 0 ? s->flops / s->seconds : 0;
    if (g->json) {
        printf("{\"command\": \"matmul\", \"a\": ");
        cli_json_string(stdout, g->inputs[0]);
        printf(", \"b\": ");
        cli_json_string(stdout, g->ninputs > 1 ? g->inputs[1] : NULL);
        printf(", \"output\": ");
        cli_json_string(stdout, g->output);
        printf(", \"m\": %" PRId64 ", \"n\": %" PRId64 ", \"k\": %" PRId64 ", \"dtype\": \"%s\", \"backend\": \"%s\", "
               "\"backend_desc\": ",
               s->m, s->n, s->k, oc_matmul_dtype_name(s->dtype), oc_backend_name(s->backend));
        cli_json_string(stdout, s->backend_desc);
        printf(", \"backend_explain\": ");
        cli_json_string(stdout, s->backend_explain);
        printf(", \"seconds\": %.6f, \"flops\": %.6g, \"gflops_per_second\": %.6g, \"tiles\": %" PRId64
               ", \"bytes_read\": %" PRId64 ", \"bytes_written\": %" PRId64 ", \"bytes_h2d\": %" PRId64
               ", \"bytes_d2h\": %" PRId64 ", \"host_budget_bytes\": %" PRId64 ", \"host_peak_bytes\": %" PRId64
               ", \"dev_peak_bytes\": %" PRId64 ", \"threads\": %d}\n",
               s->seconds, s->flops, rate / 1e9, s->tiles, s->bytes_read, s->bytes_written, s->bytes_h2d, s->bytes_d2h,
               s->host_budget_bytes, s->host_peak_bytes, s->dev_peak_bytes, s->threads);
        return;
    }
    char r[32], peak[32];
    cli_message("matmul %" PRId64 " x %" PRId64 " x %" PRId64 " %s on %s: %.3f s, %sFLOP/s, peak %s -> %s", s->m, s->n,
                s->k, oc_matmul_dtype_name(s->dtype), s->backend_desc, s->seconds, cli_si(rate, r, sizeof r),
                cli_bytes((double)s->host_peak_bytes, peak, sizeof peak), g->output);
}

/* The plan (--plan) or the reasons (--explain) on stdout or stderr; the exit status. */
static int print_plan(oc_context *ctx, const matmul_args *g, const oc_matmul_array *a, const oc_matmul_array *b,
                      const oc_matmul_array *c, int explain)
{
    char *text = NULL;
    oc_status st = oc_matmul_plan(ctx, a, b, c, &g->opts, g->json && !explain, explain, &text);
    if (st != OC_OK) return cli_status_error(ctx, st);
    if (explain && g->json && !g->output) { /* the reasons are the whole output: as JSON */
        fputs("{\"explain\": ", stdout);
        cli_json_string(stdout, text);
        fputs("}\n", stdout);
    } else {
        fputs(text, explain && g->output && !g->plan ? stderr : stdout);
    }
    free(text);
    return OC_EXIT_OK;
}

/* OpenBLAS starts a thread for each core as it loads (matmul loads it at run time), unless
 * told a count; one it cannot start (under ulimit -v) is handed work all the same, a call that
 * never returns. A process of its own, the CLI tells it the --threads given, unless the user
 * named a count; the library checks the room for them before it loads (docs/matmul.md). */
static void blas_load_threads(int threads)
{
    if (threads <= 0 || getenv("OPENBLAS_NUM_THREADS") || getenv("GOTO_NUM_THREADS") || getenv("OMP_NUM_THREADS"))
        return;
    char count[16];
    snprintf(count, sizeof count, "%d", threads);
    setenv("OPENBLAS_NUM_THREADS", count, 1);
}

int oc_cmd_matmul(int argc, char **argv)
{
    matmul_args g = {.opts = OC_MATMUL_OPTIONS_INIT};
    int rc = parse_matmul_args(argc, argv, &g);
    if (rc >= 0) return rc;
    cli_limit_visible_devices(g.opts.devices, g.opts.device);
    blas_load_threads(g.opts.threads);
    oc_context *ctx = NULL;
    oc_status st = oc_context_create(&ctx);
    if (st != OC_OK) return cli_usage_error("cannot create a context: %s", oc_status_string(st)) - 1;
    cli_cancel_on_signal(ctx);
    cli_quiet_library(ctx, g.quiet);
    oc_matmul_array a = OC_MATMUL_ARRAY_INIT, b = OC_MATMUL_ARRAY_INIT, c = OC_MATMUL_ARRAY_INIT;
    a.path = g.inputs[0];
    b.path = g.inputs[1];
    c.path = g.output;
    const oc_matmul_array *bp = g.ninputs > 1 ? &b : NULL;
    if (g.plan || g.explain) {
        /* --plan --explain: the prediction and the plan (the plan alone as JSON), as gram. */
        rc = print_plan(ctx, &g, &a, bp, g.output ? &c : NULL, g.explain && !(g.plan && g.json));
        if (rc != OC_EXIT_OK || g.plan || !g.output) goto done;
    }
    cli_progress progress;
    cli_progress_init(&progress, "matmul", 0, !g.quiet && !g.json);
    progress.unit = "MAC";
    g.opts.progress = cli_progress_update;
    g.opts.progress_user = &progress;
    oc_matmul_stats stats = {.struct_size = sizeof stats};
    if ((rc = cli_cancelled_before_job()) >= 0) goto done; /* its start would clear the cancel */
    st = oc_matmul(ctx, &a, bp, &c, &g.opts, &stats);
    cli_progress_finish(&progress);
    if (st != OC_OK) {
        rc = cli_status_error(ctx, st);
        goto done;
    }
    cli_warn_gpu_only("--gpu-mem", g.gpu_mem, g.gpu_mem != NULL, g.opts.backend);
    cli_warn_gpu_only("--device", g.device, g.device != NULL, g.opts.backend);
    cli_warn_gpu_only("--tf32", NULL, g.opts.tf32, g.opts.backend);
    if (!g.quiet || g.json) print_summary(&g, &stats);
    rc = OC_EXIT_OK;
done:
    cli_cancel_on_signal(NULL);
    oc_context_free(ctx);
    return rc;
}
