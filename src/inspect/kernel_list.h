/*
 * kernel_list.h - the kernels a piece of GPU code holds and what each one uses, as every
 * reader of inspect fills it: the cubin reader (cubin.c), ptxas' report (ptxas.c), the PTX
 * directives (ptx_directives.c) and the CUDA driver (src/inspect/cuda/inspect_driver.c).
 *
 * This is the bottom of src/inspect: it includes no other file of the folder, so the readers
 * and kernel_image.c, which picks among them, depend on it and not on each other.
 */
#ifndef OC_INSPECT_KERNEL_LIST_H
#define OC_INSPECT_KERNEL_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "core/gpu_arch.h"
#include "outcore.h"

/* What one kernel uses, wherever the figures came from. */
typedef struct oc_kernel_entry {
    char *name;
    oc_kernel_resources res;
    int64_t spill_store_bytes; /* -1: not reported by the source */
    int64_t spill_load_bytes;
    int64_t const_bytes;       /* -1: unknown */
    int launch_bounds;         /* threads the kernel allows (.maxntid, .reqntid), 0 = no own limit */
    int maxntid, reqntid;      /* the code's thread directives (x*y*z), 0 = absent */
    int maxnreg, minnctapersm; /* PTX register directives, 0 = absent */
    int built_reg_cap;         /* a cubin's recorded register cap (255: none), 0 = unknown */
    int driver_blocks_per_sm;  /* cuOccupancyMaxActiveBlocksPerMultiprocessor, -1 = not asked */
} oc_kernel_entry;

typedef struct oc_kernel_list {
    oc_kernel_entry *items;
    int count;
    int capacity;
    int code_cc;           /* compute capability x10 of the machine code measured */
    char source[64];       /* "ptxas 13.0", "cubin attributes", "driver" */
    char jit_compiler[64]; /* who compiled PTX for these figures; "" for machine code */
    int jit_opt_level;     /* the optimisation level it used */
} oc_kernel_list;

/* The optimisation levels ptxas and the driver's JIT use when none is asked (`ptxas --help`:
 * "Default value: 3"; CU_JIT_OPTIMIZATION_LEVEL: "4 being the default"). */
#define OC_PTXAS_DEFAULT_OPT_LEVEL 3
#define OC_DRIVER_JIT_DEFAULT_OPT_LEVEL 4

/* Appends a kernel called name[0..name_len) with unknown figures; *entry points at it. */
oc_status oc_kernel_list_add(oc_context *ctx, oc_kernel_list *list, const char *name, size_t name_len,
                             oc_kernel_entry **entry);
oc_kernel_entry *oc_kernel_list_find(oc_kernel_list *list, const char *name, size_t name_len);
void oc_kernel_list_clear(oc_kernel_list *list);

#endif
