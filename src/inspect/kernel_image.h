/*
 * kernel_image.h - GPU code files and the resources of their kernels, read without a GPU.
 *
 * Recognised: PTX text (.version and .target directives), cubins (ELF with e_machine
 * EM_CUDA = 190), fatbinaries (magic 0xBA55ED50) and host objects or executables holding a
 * .nv_fatbin section. Resources come from the code itself: for a cubin the ELF's .nv.info
 * attributes and sections, for PTX the resource report of the toolkit's ptxas. No CUDA
 * headers: the driver path lives behind gpu_probe.h.
 */
#ifndef OC_IO_KERNEL_IMAGE_H
#define OC_IO_KERNEL_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "../core/gpu_arch.h"
#include "outcore.h"

typedef enum oc_image_format {
    OC_IMAGE_PTX = 0,
    OC_IMAGE_CUBIN = 1,
    OC_IMAGE_FATBIN = 2,
    OC_IMAGE_HOST_ELF = 3
} oc_image_format;

/* A whole file (or a caller's buffer, copied) in memory with its recognised format. */
typedef struct oc_kernel_image {
    const char *path;           /* the file, or the name the caller gave the buffer */
    int in_memory;              /* 1: no file of that name exists for ptxas to read */
    oc_image_format format;
    unsigned char *data;
    size_t size;
} oc_kernel_image;

/* What one kernel uses, wherever the figures came from. */
typedef struct oc_kernel_entry {
    char *name;
    oc_kernel_resources res;
    int64_t spill_store_bytes;  /* -1: not reported by the source */
    int64_t spill_load_bytes;
    int64_t const_bytes;        /* -1: unknown */
    int launch_bounds;          /* threads the kernel allows (.maxntid, .reqntid), 0 = no own limit */
    int maxntid, reqntid;       /* the code's thread directives (x*y*z), 0 = absent */
    int maxnreg, minnctapersm;  /* PTX register directives, 0 = absent */
    int driver_blocks_per_sm;   /* cuOccupancyMaxActiveBlocksPerMultiprocessor, -1 = not asked */
} oc_kernel_entry;

typedef struct oc_kernel_list {
    oc_kernel_entry *items;
    int count;
    int capacity;
    int code_cc;                /* compute capability x10 of the machine code measured */
    char source[64];            /* "ptxas 13.0", "cubin attributes", "driver" */
    char jit_compiler[64];      /* who compiled PTX for these figures; "" for machine code */
    int jit_opt_level;          /* the optimisation level it used */
} oc_kernel_list;

/* The optimisation levels ptxas and the driver's JIT use when none is asked (`ptxas --help`:
 * "Default value: 3"; CU_JIT_OPTIMIZATION_LEVEL: "4 being the default"). */
#define OC_PTXAS_DEFAULT_OPT_LEVEL 3
#define OC_DRIVER_JIT_DEFAULT_OPT_LEVEL 4

/* Reads path whole and recognises its format; anything else fails with OC_ERR_INPUT naming
 * the file. Release with oc_kernel_image_release. */
oc_status oc_kernel_image_read(oc_context *ctx, const char *path, oc_kernel_image *img);
/* The same for size bytes at data (copied), called `name` in messages. */
oc_status oc_kernel_image_copy(oc_context *ctx, const char *name, const void *data, size_t size, oc_kernel_image *img);
void oc_kernel_image_release(oc_kernel_image *img);
const char *oc_image_format_name(oc_image_format format);

/* The resources of every kernel for target_cc (x10; 0 = the code's own architecture). PTX is
 * compiled by ptxas for the target with jit's maxrregcount and opt_level; from a fatbinary
 * the cubin for the target is read, else its PTX is compiled, else a cubin of the same major
 * and a lower minor (which the target runs) is read. */
oc_status oc_kernel_image_resources(oc_context *ctx, const oc_kernel_image *img, int target_cc,
                                    const oc_inspect_options *jit, oc_kernel_list *out);
/* 1 when the code img runs on target_cc is PTX that must be compiled (PTX text, or a fatbinary
 * whose entry for the target is PTX), 0 for machine code. */
int oc_kernel_image_is_jit(const oc_kernel_image *img, int target_cc);

/* The bytes the driver's module loader accepts for img: the PTX text (NUL-terminated), the
 * cubin, or the (first) fatbinary. */
void oc_kernel_image_loadable(const oc_kernel_image *img, const void **data, size_t *size);

/* PTX directives (ptx_directives.c). The first `directive` (".target") that starts a word
 * on a line, pointing just after it; NULL when absent. */
const char *oc_ptx_find_directive(const char *text, size_t size, const char *directive);
/* The compute capability PTX text names in .target (x10), 0 when absent; *suffix (may be
 * NULL) gets its feature-set letter ('a' of sm_90a, 'f' of sm_100f) or '\0'. */
int oc_ptx_target_cc(const char *text, size_t size, char *suffix);
/* Reads .maxntid, .reqntid, .maxnreg and .minnctapersm of list entries [first, count) from
 * the PTX text; the thread directives become the entry's launch bound. */
void oc_ptx_entry_directives(const char *text, size_t size, oc_kernel_list *list, int first);

/* Appends a kernel called name[0..name_len) with unknown figures; *entry points at it. */
oc_status oc_kernel_list_add(oc_context *ctx, oc_kernel_list *list, const char *name, size_t name_len,
                             oc_kernel_entry **entry);
oc_kernel_entry *oc_kernel_list_find(oc_kernel_list *list, const char *name, size_t name_len);
void oc_kernel_list_clear(oc_kernel_list *list);

/* ptxas (ptxas.c): compiles the PTX file ptx_path for sm_<cc><suffix> with -v (and jit's
 * -maxrregcount and -O when set) and adds each entry function's report to out; sets
 * out->jit_compiler and jit_opt_level. display_name names the code in messages. A PTX error
 * fails with OC_ERR_INPUT and ptxas' first error line. */
oc_status oc_ptxas_resources(oc_context *ctx, const char *ptx_path, const char *display_name, int cc, char suffix,
                             const oc_inspect_options *jit, oc_kernel_list *out);

/* Cubin (cubin.c): the kernels of an ELF cubin and their attributes. */
oc_status oc_cubin_resources(oc_context *ctx, const char *display_name, const unsigned char *data, size_t size,
                             oc_kernel_list *out);
/* The SM of a cubin (x10), 0 when data is not a cubin. */
int oc_cubin_cc(const unsigned char *data, size_t size);

#endif
