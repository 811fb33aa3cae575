/*
 * cli_placement.c - the options every job's command takes for where it runs and within what
 * (cli_placement.h).
 */
#include "cli/cli_placement.h"

#include <string.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_names.h"
#include "cli/cli_parse.h"

int cli_take_placement(cli_args *a, const cli_placement *p)
{
    const char *v = NULL;
    int r;
    if (p->backend && CLI_OPTION(a, r, v, "--backend")) {
        if (r < 0) return OC_EXIT_USAGE;
        if (oc_backend_parse(v, p->backend) != OC_OK) return cli_expected("--backend", v, cli_backend_at);
    } else if (p->threads && CLI_OPTION(a, r, v, "--threads")) {
        if (r < 0) return OC_EXIT_USAGE;
        if ((r = cli_parse_threads(v, p->threads)) >= 0) return r;
    } else if (p->device && CLI_OPTION(a, r, v, "--device")) {
        if (r < 0) return OC_EXIT_USAGE;
        if ((r = cli_parse_device(v, p->device)) >= 0) return r;
        if (p->device_text) *p->device_text = v;
    } else if (p->devices && CLI_OPTION(a, r, v, "--devices")) {
        if (r < 0) return OC_EXIT_USAGE;
        if ((r = cli_parse_devices(v)) >= 0) return r;
        *p->devices = v;
    } else if (p->gpu_mem_bytes && CLI_OPTION(a, r, v, "--gpu-mem")) {
        if (r < 0) return OC_EXIT_USAGE;
        if (p->gpu_mem_text) *p->gpu_mem_text = v;
        if (p->gpu_mem_devices && strchr(v, '=')) *p->gpu_mem_devices = v; /* per device */
        else if ((r = cli_parse_gpu_mem(v, p->gpu_mem_bytes, p->gpu_mem_fraction)) >= 0) return r;
    } else if (p->host_mem_bytes && CLI_OPTION(a, r, v, "--host-mem")) {
        if (r < 0) return OC_EXIT_USAGE;
        if ((r = cli_parse_host_mem(v, p->host_mem_bytes)) >= 0) return r;
    } else {
        return 0;
    }
    return -1;
}
