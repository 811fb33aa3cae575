/*
 * fuzz_fatbin.c - `outcore inspect` over any kernel image, fatbinaries first: recognition
 * (src/inspect/kernel_image.c), the fatbinary walk, LZ4 and zstd entries, host objects with a
 * .nv_fatbin section, the cubin inside, the launch verdicts (src/inspect/inspect.c) and both
 * renderings of the report. The input is the file, read through a memfd as the CLI reads
 * a path. No GPU is asked, and no ptxas is started (see common.c): PTX inside a fatbinary
 * ends in OC_ERR_UNSUPPORTED.
 *
 * Each input is inspected twice: for the code's own architecture, and for one chosen by the
 * input's size with a block size, so that the entry choice (exact cubin, PTX, a cubin of an
 * earlier minor) and the verdicts for a block are both reached.
 */
#include <stdint.h>
#include <stdlib.h>

#include "common.h"
#include "core/gpu_arch.h"

static void inspect(const char *path, const char *arch, int block)
{
    static const oc_status allowed[] = {OC_ERR_INPUT, OC_ERR_INVALID_ARGUMENT, OC_ERR_UNSUPPORTED, OC_ERR_NO_MEMORY,
                                        OC_OK};
    oc_context *ctx = fuzz_context();
    oc_inspect_options opts = OC_INSPECT_OPTIONS_INIT;
    opts.arch = arch;
    opts.block = block;
    opts.use_gpu = 0;
    oc_inspect_report *report = NULL;
    oc_status st = oc_inspect_file(ctx, path, &opts, &report);
    fuzz_check_status(st, path, allowed);
    if (st != OC_OK) return;
    for (int json = 0; json <= 1; json++) {
        char *text = NULL;
        if (oc_inspect_report_render(ctx, report, json, &text) != OC_OK || !text) fuzz_fail("rendering failed");
        free(text);
    }
    oc_inspect_report_free(report);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    inspect(path, NULL, 0);
    int arches = 0;
    while (oc_gpu_arch_at(arches)) arches++;
    inspect(path, oc_gpu_arch_at((int)(size % (size_t)arches))->name, 1 + (int)(size % 1024));
    return 0;
}
