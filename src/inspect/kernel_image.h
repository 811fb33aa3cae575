/*
 * kernel_image.h - GPU code files and the resources of their kernels, read without a GPU.
 *
 * Recognised: PTX text (.version and .target directives), cubins (ELF with e_machine
 * EM_CUDA = 190), fatbinaries (magic 0xBA55ED50) and host objects or executables holding a
 * .nv_fatbin section. Resources come from the code itself: for a cubin the ELF's .nv.info
 * attributes and sections, for PTX the resource report of the toolkit's ptxas. No CUDA
 * headers: the driver path lives behind gpu_probe.h.
 *
 * This file chooses which reader answers (cubin.h, ptxas.h, ptx_directives.h); the readers
 * fill an oc_kernel_list (kernel_list.h) and never call back into it.
 */
#ifndef OC_INSPECT_KERNEL_IMAGE_H
#define OC_INSPECT_KERNEL_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "inspect/kernel_list.h"
#include "outcore.h"

typedef enum oc_image_format {
    OC_IMAGE_PTX = 0,
    OC_IMAGE_CUBIN = 1,
    OC_IMAGE_FATBIN = 2,
    OC_IMAGE_HOST_ELF = 3
} oc_image_format;

/* A whole file (or a caller's buffer, copied) in memory with its recognised format. */
typedef struct oc_kernel_image {
    const char *path; /* the file, or the name the caller gave the buffer */
    int in_memory;    /* 1: no file of that name exists for ptxas to read */
    oc_image_format format;
    /* 1: relocatable device code (an ET_REL cubin, or an object's __nv_relfatbin), which the
     * driver's module loader does not take unlinked: its figures come from the cubins */
    int relocatable;
    unsigned char *data;
    size_t size;
} oc_kernel_image;

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

#endif
