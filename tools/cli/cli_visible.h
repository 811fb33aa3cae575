/*
 * cli_visible.h - the CLI starts only the GPUs its job names. The CUDA driver starts every
 * visible device at its first call, one after the other; on a host of several GPUs that is
 * most of a small job's wall time (bench/RESULTS.md, "Wall time"). A process of its own, the
 * CLI narrows CUDA_VISIBLE_DEVICES before its first CUDA call to devices 0..M, the highest
 * index its job names: every device keeps its index, so messages, --json and the user's
 * device numbers agree. A list that names "all", a spelling it does not know, or a
 * CUDA_VISIBLE_DEVICES that is already shorter than M+1 leave the environment as it is.
 */
#ifndef OC_TOOLS_CLI_VISIBLE_H
#define OC_TOOLS_CLI_VISIBLE_H

#include <stddef.h>

/* The CUDA_VISIBLE_DEVICES that shows devices 0..M of the job's list (as --devices: "0,2",
 * "0:2", "all"; NULL or "": the one device `device`) given the current value (NULL: unset),
 * into out: 1 when it narrows the devices, 0 when it leaves them as they are. Pure. */
int cli_visible_prefix(const char *devices, int device, const char *current, char *out, size_t size);

/* Sets CUDA_VISIBLE_DEVICES as cli_visible_prefix says; before any CUDA call of the process.
 * OUTCORE_ALL_DEVICES=1 turns it off. */
void cli_limit_visible_devices(const char *devices, int device);

#endif
