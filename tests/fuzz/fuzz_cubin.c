/*
 * fuzz_cubin.c - the cubin reader (src/inspect/cubin.c) and the ELF section reader under it
 * (src/inspect/elf_read.c); the input is the file, read in place as the inspector reads it.
 *
 * Beyond the statuses, it checks that every section the ELF reader hands out lies inside the
 * file, and runs each kernel it finds through the launch rules of every known architecture,
 * as `outcore inspect` does with the figures.
 */
#include <stdint.h>
#include <string.h>

#include "common.h"
#include "core/gpu_arch.h"
#include "inspect/elf_read.h"
#include "inspect/cubin.h"
#include "inspect/kernel_image.h"
#include "inspect/kernel_list.h"
#include "inspect/ptx_directives.h"
#include "inspect/ptxas.h"

static void check_inside(const uint8_t *data, size_t size, const unsigned char *p, size_t n, const char *what)
{
    if (p && (p < data || p > data + size || n > (size_t)(data + size - p)))
        fuzz_fail("%s [%p, +%zu) is outside the file [%p, +%zu)", what, (const void *)p, n, (const void *)data, size);
}

static void check_sections(const uint8_t *data, size_t size)
{
    oc_elf elf;
    if (oc_elf_open(&elf, data, size) != 0) return;
    for (unsigned i = 0; i < elf.shnum; i++) {
        oc_elf_section s;
        if (oc_elf_section_at(&elf, i, &s) != 0) continue;
        check_inside(data, size, s.data, s.size, "a section");
        if (s.name[0]) /* an unnamed section's "" is the reader's own */
            check_inside(data, size, (const unsigned char *)s.name, strlen(s.name) + 1, "a section name");
    }
    const unsigned char *fat = NULL;
    size_t fat_size = 0;
    if (oc_elf_find_section(data, size, ".nv_fatbin", &fat, &fat_size))
        check_inside(data, size, fat, fat_size, "the .nv_fatbin section");
}

static void check_launch_rules(const oc_kernel_list *list)
{
    for (int k = 0; k < list->count; k++)
        if (list->items[k].launch_bounds < 0)
            fuzz_fail("kernel %s: launch bound %d", list->items[k].name, list->items[k].launch_bounds);
    for (int k = 0; k < list->count; k++)
        for (int a = 0; oc_gpu_arch_at(a); a++) {
            const oc_gpu_arch *arch = oc_gpu_arch_at(a);
            const oc_kernel_resources *r = &list->items[k].res;
            int largest = oc_launch_largest_block(arch, r, 0);
            /* Whole warps, or the kernel's own limit (.reqntid, or .maxntid under the arch's),
             * or a part of one warp. */
            const int own = r->required_threads > 0 ? r->required_threads
                            : r->max_threads_per_block > 0 && r->max_threads_per_block < arch->max_threads_per_block
                                ? r->max_threads_per_block
                                : arch->max_threads_per_block;
            if (largest < 0 || largest > 1024 || largest > own || (largest % 32 && largest != own && largest > 31))
                fuzz_fail("largest block %d for %s on %s (its own limit %d)", largest, list->items[k].name, arch->name,
                          own);
            oc_launch_verdict v;
            if (oc_launch_check(arch, &list->items[k].res, 256, 0, &v) != OC_OK || v.blocks_per_sm < 0 ||
                v.occupancy < 0 || v.occupancy > 1)
                fuzz_fail("launch check of %s on %s: %d blocks, occupancy %g", list->items[k].name, arch->name,
                          v.blocks_per_sm, v.occupancy);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const oc_status allowed[] = {OC_ERR_INPUT, OC_ERR_NO_MEMORY, OC_OK};
    check_sections(data, size);
    (void)oc_cubin_cc(data, size);
    oc_kernel_list list = {0};
    oc_status st = oc_cubin_resources(fuzz_context(), "fuzz.cubin", data, size, &list);
    fuzz_check_status(st, "fuzz.cubin", allowed);
    if (st == OC_OK) check_launch_rules(&list);
    oc_kernel_list_clear(&list);
    return 0;
}
