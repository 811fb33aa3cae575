/*
 * fuzz_ptx.c - the PTX readers of the launch doctor: recognising PTX text among kernel
 * images (src/inspect/kernel_image.c: .version and .target at the start of a line), the target
 * architecture it names, the .maxntid launch bounds of its entries, and the parser of
 * ptxas' -v report (src/inspect/ptxas.c). ptxas itself is not run: its report is text the fuzzer
 * writes too. The input is read as both, so one file can name an entry in a report line
 * ("Compiling entry function 'k'") and give it bounds (".entry k( ... .maxntid 128, 1, 1").
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "inspect/cubin.h"
#include "inspect/kernel_image.h"
#include "inspect/kernel_list.h"
#include "inspect/ptx_directives.h"
#include "inspect/ptxas.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const oc_status allowed[] = {OC_ERR_INPUT, OC_ERR_NO_MEMORY, OC_OK};
    oc_context *ctx = fuzz_context();

    /* As a file: recognised (or refused) the way `outcore inspect` does. */
    const char *path = fuzz_file(data, size);
    oc_kernel_image img;
    oc_status st = oc_kernel_image_read(ctx, path, &img);
    fuzz_check_status(st, path, allowed);
    if (st == OC_OK) {
        char suffix;
        if (img.format == OC_IMAGE_PTX) (void)oc_ptx_target_cc((const char *)img.data, img.size, &suffix);
        oc_kernel_image_release(&img);
    }

    /* As text: the readers take NUL-terminated text, as the image reader and ptxas give it. */
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char suffix;
    (void)oc_ptx_target_cc(text, size, &suffix);
    (void)oc_ptx_find_directive(text, size, ".version");
    oc_kernel_list list = {0};
    oc_ptxas_parse_report(text, &list, 0);
    oc_ptx_entry_directives(text, size, &list, 0);
    for (int i = 0; i < list.count; i++)
        if (list.items[i].launch_bounds < 0 || list.items[i].res.regs_per_thread < 0)
            fuzz_fail("kernel %s: launch bound %d, %d registers", list.items[i].name, list.items[i].launch_bounds,
                      list.items[i].res.regs_per_thread);
    oc_kernel_list_clear(&list);
    free(text);
    return 0;
}
