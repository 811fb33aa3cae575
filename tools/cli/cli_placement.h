/*
 * cli_placement.h - the options that say where a job runs and within what, as every job's
 * command takes them: --backend, --threads, --device, --devices, --gpu-mem, --host-mem. A
 * command points each at its own options' field; one it does not take stays NULL and is then
 * an unknown option there.
 */
#ifndef OC_TOOLS_CLI_PLACEMENT_H
#define OC_TOOLS_CLI_PLACEMENT_H

#include <stdint.h>

#include "outcore.h"
#include "cli/cli_args.h"

typedef struct cli_placement {
    oc_backend *backend;
    int *threads;
    int *device;
    const char **devices;         /* the list as given: the library parses it */
    int64_t *gpu_mem_bytes;       /* --gpu-mem SIZE ... */
    double *gpu_mem_fraction;     /* ... or PCT */
    const char **gpu_mem_devices; /* ... or DEV=SIZE,...: the library parses it; NULL: refused */
    const char **gpu_mem_text;    /* --gpu-mem as given, for the warnings after parsing */
    const char **device_text;     /* --device as given, likewise */
    int64_t *host_mem_bytes;
} cli_placement;

/* The placement of a job whose options struct opts has a field of every one's name (gram's,
 * matmul's), the --gpu-mem and --device texts going to *gpu_mem_text and *device_text (const
 * char **). */
#define CLI_PLACEMENT_OF(opts, gpu_mem_text_, device_text_)                                                           \
    {                                                                                                                 \
        .backend = &(opts).backend, .threads = &(opts).threads, .device = &(opts).device, .devices = &(opts).devices, \
        .gpu_mem_bytes = &(opts).gpu_mem_bytes, .gpu_mem_fraction = &(opts).gpu_mem_fraction,                         \
        .gpu_mem_text = (gpu_mem_text_), .device_text = (device_text_), .host_mem_bytes = &(opts).host_mem_bytes      \
    }

/* The help lines of the memory budgets with their defaults (the library's: 90% of a device's
 * free memory, 80% of the host's available at start), for a command's text to go on from, so
 * that every command states them alike. */
#define CLI_HELP_GPU_MEM "  --gpu-mem SIZE|PCT     device memory budget, e.g. 2G or 50% (default 90% of free)"
#define CLI_HELP_HOST_MEM                                                                   \
    "  --host-mem SIZE|PCT    host memory budget, e.g. 4G or 25% of the machine's memory\n" \
    "                         (default 80% of the memory available at start)"

/* Takes the option at a's cursor when it is one of p's: -1 when it was and parsed, 0 when it
 * is none of them, else the exit status (its usage error printed). */
int cli_take_placement(cli_args *a, const cli_placement *p);

#endif
