/*
 * cubin.h - the kernels of an ELF cubin and their attributes, read as the driver reads them.
 */
#ifndef OC_INSPECT_CUBIN_H
#define OC_INSPECT_CUBIN_H

#include <stddef.h>

#include "inspect/kernel_list.h"
#include "outcore.h"

/* Adds the kernels of the cubin at data to out, with their registers, stack frame, shared
 * and constant memory and launch bounds; display_name names the code in messages. */
oc_status oc_cubin_resources(oc_context *ctx, const char *display_name, const unsigned char *data, size_t size,
                             oc_kernel_list *out);
/* The SM of a cubin (x10), 0 when data is not a cubin. */
int oc_cubin_cc(const unsigned char *data, size_t size);

#endif
