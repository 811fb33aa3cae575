/* cmd_devices.c - `outcore devices`: the GPUs outcore can use, their limits and, with
 * --bandwidth, measured transfer rates; the CPU when there is no GPU. --bandwidth also
 * measures the cost model's other rates and stores them all (oc_cost_calibrate). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "commands.h"
#include "outcore.h"

static const char devices_usage[] =
    "usage: outcore devices [--bandwidth] [--json]\n"
    "\n"
    "Per GPU: name, compute capability, SMs, memory total and free, registers and shared\n"
    "memory per SM and per block, thread limits, copy engines, PCIe link. Without a GPU: why,\n"
    "and the CPU outcore will use.\n"
    "\n"
    "  --bandwidth   measure host<->device copy rates (pageable and pinned, each way and\n"
    "                both at once; 256 MiB copies, median of several): a few seconds per GPU;\n"
    "                also the GPU's start-up and kernel rate, the host memory bandwidth\n"
    "                (STREAM triad) and the CPU kernel's rate, stored in the rate cache that\n"
    "                --backend auto reads (docs/cost-model.md; the figures go to stderr)\n"
    "  --json        machine-readable output\n";

int oc_cmd_devices(int argc, char **argv)
{
    int json = 0, bandwidth = 0;
    cli_args args = CLI_ARGS_INIT(argc, argv), *a = &args;
    for (const char *arg; (arg = cli_next(a)) != NULL;) {
        if (cli_positional(a))
            return cli_usage_error("devices: unexpected argument %s (see outcore devices --help)", arg);
        if (cli_flag(a, "--help|-h")) {
            fputs(devices_usage, stdout);
            return OC_EXIT_OK;
        }
        if (cli_flag(a, "--json")) json = 1;
        else if (cli_flag(a, "--bandwidth")) bandwidth = 1;
        else return cli_unknown_option(a, 0);
    }
    oc_context *ctx = NULL;
    oc_devices *devices = NULL;
    char *text = NULL;
    int code = OC_EXIT_OK;
    oc_status st = oc_context_create(&ctx);
    if (st != OC_OK) return cli_status_error(NULL, st);
    char *rates = NULL;
    st = bandwidth ? oc_cost_calibrate(ctx, &devices, &rates) : oc_devices_query(ctx, 0, &devices);
    if (st == OC_OK && rates) fprintf(stderr, "cost-model rates:\n%s", rates);
    free(rates);
    if (st == OC_OK) st = oc_devices_render(ctx, devices, json, &text);
    if (st == OC_OK) fputs(text, stdout);
    else code = cli_status_error(ctx, st);
    free(text);
    oc_devices_free(devices);
    oc_context_free(ctx);
    return code;
}
