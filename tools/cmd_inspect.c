/* cmd_inspect.c - `outcore inspect`: registers, shared memory and launch limits of the kernels
 * in a PTX, cubin, fatbinary or object file, and why a block size fits or does not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_parse.h"
#include "commands.h"
#include "outcore.h"

/* The exit status of a verdict that says no, apart from 2 (bad input) and 1 (failures), so
 * that a script or CI step can test a launch configuration with `outcore inspect`. */
#define INSPECT_EXIT_DOES_NOT_FIT 3

static const char inspect_usage[] =
    "usage: outcore inspect FILE [--arch sm_XX] [--block N] [--dyn-smem BYTES] [--kernel NAME]\n"
    "                       [--maxrregcount N] [--opt-level N] [--json] [--no-gpu]\n"
    "\n"
    "FILE is PTX, a cubin, a fatbinary, or an object/executable with embedded GPU code (nvcc,\n"
    "numba, Triton, ...). For each kernel: registers per thread, static shared memory, local\n"
    "(spill) memory, the largest block that fits and the occupancy at common block sizes.\n"
    "PTX is compiled first (ptxas, or the driver's JIT on a GPU): its figures hold for the\n"
    "options it is compiled with, which the report states. Give the producer's own options\n"
    "(numba passes max_registers to its linker, not in the PTX) to get its figures, or inspect\n"
    "the cubin it loaded. ptxas runs under limits, as PTX is untrusted input: 120 s and 8G of\n"
    "address space unless OUTCORE_PTXAS_TIMEOUT (seconds) or OUTCORE_PTXAS_MEMORY (a size) say\n"
    "otherwise (0: none).\n"
    "\n"
    "  --arch sm_XX        the target GPU (default: this machine's GPU, else the code's own);\n"
    "                      also 90, 9.0, compute_90, sm_90a\n"
    "  --block N           whether a block of N threads (1..1024) fits, with the arithmetic\n"
    "                      and the register cap that would make it fit\n"
    "  --dyn-smem BYTES    dynamic shared memory per block (64K, 100000, ...; default 0)\n"
    "  --kernel NAME       only this kernel\n"
    "  --maxrregcount N    compile PTX with a cap of N registers per thread (1..255), as\n"
    "                      ptxas -maxrregcount / CU_JIT_MAX_REGISTERS / numba max_registers;\n"
    "                      a kernel's own .maxnreg overrides it\n"
    "  --opt-level N       compile PTX at optimisation level N (0..4; ptxas -O,\n"
    "                      CU_JIT_OPTIMIZATION_LEVEL; default the compiler's: ptxas 3, the\n"
    "                      driver's JIT 4)\n"
    "  --no-gpu            answer from the file alone even when a GPU is present\n"
    "  --json              machine-readable output\n"
    "\n"
    "Exit status: 0 the report was made (and with --block, the block fits every kernel shown),\n"
    "3 with --block: the block does not fit a kernel shown (use --kernel to pick one),\n"
    "2 bad input or usage, 1 other failures.\n";

/* Parses an integer option value within [low, high]; 0 on success. */
static int int_option(const char *name, const char *value, int low, int high, int *out)
{
    int64_t v;
    if (cli_parse_i64(value, &v) != 0 || v < low || v > high) {
        cli_usage_error("%s must be an integer from %d to %d, got '%s'", name, low, high, value);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* The verdict as an exit status: 3 when a block was asked and some kernel shown refuses it. */
static int verdict_exit(const oc_inspect_report *report)
{
    if (report->block <= 0) return OC_EXIT_OK;
    for (int i = 0; i < report->count; i++)
        if (!report->kernels[i].fits) return INSPECT_EXIT_DOES_NOT_FIT;
    return OC_EXIT_OK;
}

int oc_cmd_inspect(int argc, char **argv)
{
    oc_inspect_options opts = OC_INSPECT_OPTIONS_INIT;
    const char *path = NULL, *value;
    int json = 0;
    cli_args args = CLI_ARGS_INIT(argc, argv), *a = &args;
    for (const char *arg; (arg = cli_next(a)) != NULL;) {
        int m;
        if (cli_positional(a)) {
            if (path) return cli_usage_error("inspect: one file at a time ('%s' and '%s')", path, arg);
            path = arg;
            continue;
        }
        if (cli_flag(a, "--help|-h")) {
            fputs(inspect_usage, stdout);
            return OC_EXIT_OK;
        }
        if (cli_flag(a, "--json")) {
            json = 1;
            continue;
        }
        if (cli_flag(a, "--no-gpu")) {
            opts.use_gpu = 0;
            continue;
        }
        if (CLI_OPTION(a, m, value, "--arch")) {
            if (m < 0) return OC_EXIT_USAGE;
            opts.arch = value;
        } else if (CLI_OPTION(a, m, value, "--kernel")) {
            if (m < 0) return OC_EXIT_USAGE;
            opts.kernel = value;
        } else if (CLI_OPTION(a, m, value, "--block")) {
            if (m < 0 || int_option("--block", value, 1, 1024, &opts.block) != 0) return OC_EXIT_USAGE;
        } else if (CLI_OPTION(a, m, value, "--maxrregcount")) {
            if (m < 0 || int_option("--maxrregcount", value, 1, 255, &opts.maxrregcount) != 0) return OC_EXIT_USAGE;
        } else if (CLI_OPTION(a, m, value, "--opt-level")) {
            if (m < 0 || int_option("--opt-level", value, 0, 4, &opts.opt_level) != 0) return OC_EXIT_USAGE;
        } else if (CLI_OPTION(a, m, value, "--dyn-smem")) {
            int64_t bytes;
            double fraction = 0.0;
            if (m < 0) return OC_EXIT_USAGE;
            if (strcmp(value, "0") == 0) bytes = 0; /* none, as the default; a size is never 0 elsewhere */
            else if (cli_parse_size(value, &bytes, &fraction) != 0 || fraction != 0.0 || bytes < 0)
                return cli_usage_error("--dyn-smem must be a byte count, got '%s'", value);
            opts.dyn_smem = bytes;
        } else {
            return cli_unknown_option(a, 1);
        }
    }
    if (!path) return cli_usage_error("inspect: which file? (see outcore inspect --help)");

    oc_context *ctx = NULL;
    oc_inspect_report *report = NULL;
    char *text = NULL;
    int code = OC_EXIT_OK;
    oc_status st = oc_context_create(&ctx);
    if (st != OC_OK) return cli_status_error(NULL, st);
    st = oc_inspect_file(ctx, path, &opts, &report);
    if (st == OC_OK) st = oc_inspect_report_render(ctx, report, json, &text);
    if (st == OC_OK) {
        fputs(text, stdout);
        code = verdict_exit(report);
    } else {
        code = cli_status_error(ctx, st);
    }
    free(text);
    oc_inspect_report_free(report);
    oc_context_free(ctx);
    return code;
}
