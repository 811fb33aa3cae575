/*
 * inspect_render.c - an inspect report as text for people or as JSON for scripts. Both say
 * the same things: where the figures come from, how PTX was compiled for them (the options
 * assumed), each kernel's resources and directives, and the verdict for a block size.
 */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/text_buf.h"
#include "outcore.h"

static void render_json(oc_text *t, const oc_inspect_report *r)
{
    const int *block_sizes = oc_inspect_block_sizes();
    oc_text_printf(t, "{\"file\": ");
    oc_text_json_string(t, r->path);
    oc_text_printf(t, ", \"format\": \"%s\", \"arch\": ", r->format);
    oc_text_json_string(t, r->arch);
    oc_text_printf(t, ", \"code_arch\": \"sm_%d\", \"source\": ", r->code_cc);
    oc_text_json_string(t, r->source);
    oc_text_printf(t, ", \"jit\": ");
    if (r->jit_compiler[0]) {
        oc_text_printf(t, "{\"compiler\": ");
        oc_text_json_string(t, r->jit_compiler);
        oc_text_printf(t, ", \"opt_level\": %d, \"maxrregcount\": %d, \"defaults\": %s}", r->jit_opt_level,
                       r->jit_maxrregcount, r->jit_defaults ? "true" : "false");
    } else {
        oc_text_printf(t, "null");
    }
    oc_text_printf(t, ", \"block\": %d, \"dyn_smem\": %lld, \"kernels\": [", r->block, (long long)r->dyn_smem);
    for (int i = 0; i < r->count; i++) {
        const oc_inspect_kernel *k = &r->kernels[i];
        oc_text_printf(t, "%s\n  {\"name\": ", i ? "," : "");
        oc_text_json_string(t, k->name);
        oc_text_printf(
            t,
            ", \"registers\": %d, \"static_smem\": %lld, \"local_bytes\": %lld, \"spill_store_bytes\": %lld, "
            "\"spill_load_bytes\": %lld, \"const_bytes\": %lld, \"launch_bounds\": %d, "
            "\"maxntid\": %d, \"reqntid\": %d, \"maxnreg\": %d, \"minnctapersm\": %d, "
            "\"max_threads_per_block\": %d, \"occupancy\": {",
            k->regs_per_thread, (long long)k->static_smem_bytes, (long long)k->local_bytes,
            (long long)k->spill_store_bytes, (long long)k->spill_load_bytes, (long long)k->const_bytes,
            k->launch_bounds, k->maxntid, k->reqntid, k->maxnreg, k->minnctapersm, k->max_threads_per_block);
        for (int j = 0; j < OC_INSPECT_BLOCK_SIZES; j++)
            oc_text_printf(t, "%s\"%d\": %.4f", j ? ", " : "", block_sizes[j], k->occupancy[j]);
        oc_text_printf(t, "}");
        if (r->block > 0) {
            oc_text_printf(
                t,
                ", \"verdict\": {\"block\": %d, \"fits\": %s, \"blocks_per_sm\": %d, \"occupancy\": %.4f, "
                "\"largest_block\": %d, \"reg_cap\": %d, \"needs_smem_optin\": %s, \"driver_blocks_per_sm\": %d, "
                "\"limiter\": ",
                r->block, k->fits ? "true" : "false", k->blocks_per_sm, k->block_occupancy, k->largest_block,
                k->reg_cap, k->needs_smem_optin ? "true" : "false", k->driver_blocks_per_sm);
            oc_text_json_string(t, k->limiter);
            oc_text_printf(t, ", \"explanation\": ");
            oc_text_json_string(t, k->explanation);
            oc_text_printf(t, "}");
        }
        oc_text_printf(t, "}");
    }
    oc_text_printf(t, "%s]}\n", r->count ? "\n" : "");
}

/* The options PTX was compiled with: the figures hold for those options only. */
static void render_jit(oc_text *t, const oc_inspect_report *r)
{
    if (!r->jit_compiler[0]) return;
    if (r->jit_defaults) {
        oc_text_printf(t, "PTX compiled by ");
        oc_text_shown(t, r->jit_compiler);
        oc_text_printf(
            t,
            " with its defaults (-O%d, no register cap); where the producer compiles "
            "it otherwise (numba max_registers, nvcc -maxrregcount), pass --maxrregcount N / --opt-level N\n",
            r->jit_opt_level);
        return;
    }
    oc_text_printf(t, "PTX compiled by ");
    oc_text_shown(t, r->jit_compiler);
    oc_text_printf(t, " with -O%d", r->jit_opt_level);
    if (r->jit_maxrregcount > 0)
        oc_text_printf(t, ", -maxrregcount=%d (a kernel's own .maxnreg overrides it)", r->jit_maxrregcount);
    else oc_text_printf(t, ", no register cap");
    oc_text_printf(t, "\n");
}

/* The kernel's own launch and register directives, on one line when it has any. */
static void render_directives(oc_text *t, const oc_inspect_report *r, const oc_inspect_kernel *k)
{
    if (!k->maxntid && !k->reqntid && !k->maxnreg && !k->minnctapersm) return;
    char line[256] = "";
    size_t n = 0;
    if (k->maxntid)
        n += (size_t)snprintf(line + n, sizeof line - n, ", .maxntid %d (no larger block launches)", k->maxntid);
    if (k->reqntid && n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, ", .reqntid %d (no other block size launches)", k->reqntid);
    if (k->minnctapersm && n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, ", .minnctapersm %d", k->minnctapersm);
    if (k->maxnreg && n < sizeof line) {
        n += (size_t)snprintf(line + n, sizeof line - n, ", .maxnreg %d", k->maxnreg);
        if (r->jit_maxrregcount > 0 && r->jit_maxrregcount != k->maxnreg && n < sizeof line)
            snprintf(line + n, sizeof line - n, " (overrides -maxrregcount=%d)", r->jit_maxrregcount);
    }
    oc_text_printf(t, "  directives       %s\n", line + 2);
}

static void render_text(oc_text *t, const oc_inspect_report *r)
{
    const int *block_sizes = oc_inspect_block_sizes();
    oc_text_shown(t, r->path);
    oc_text_printf(t, ": %s, sm_%d code, figures from %s; limits of ", r->format, r->code_cc, r->source);
    oc_text_shown(t, r->arch);
    oc_text_printf(t, "\n");
    render_jit(t, r);
    if (r->count == 0) oc_text_printf(t, "no kernels (entry functions) in the file\n");
    for (int i = 0; i < r->count; i++) {
        const oc_inspect_kernel *k = &r->kernels[i];
        oc_text_printf(t, "\nkernel ");
        oc_text_shown(t, k->name);
        oc_text_printf(t, "\n");
        oc_text_printf(t, "  registers        %d per thread\n", k->regs_per_thread);
        oc_text_printf(t, "  shared memory    %lld bytes static", (long long)k->static_smem_bytes);
        if (r->dyn_smem) oc_text_printf(t, " + %lld dynamic", (long long)r->dyn_smem);
        oc_text_printf(t, "\n  local memory     %lld bytes per thread (stack frame)", (long long)k->local_bytes);
        if (k->spill_store_bytes >= 0)
            oc_text_printf(t, "; spills: %lld bytes stored, %lld loaded", (long long)k->spill_store_bytes,
                           (long long)k->spill_load_bytes);
        oc_text_printf(t, "\n");
        if (k->launch_bounds) oc_text_printf(t, "  launch bounds    %d threads\n", k->launch_bounds);
        render_directives(t, r, k);
        oc_text_printf(t, "  largest block    %d threads on ", k->max_threads_per_block);
        oc_text_shown(t, r->arch);
        oc_text_printf(t, "\n");
        oc_text_printf(t, "  occupancy       ");
        for (int j = 0; j < OC_INSPECT_BLOCK_SIZES; j++)
            oc_text_printf(t, " %d: %3.0f%%", block_sizes[j], k->occupancy[j] * 100.0);
        oc_text_printf(t, "\n");
        if (r->block > 0) {
            oc_text_printf(t, "  block %d: %s\n", r->block, k->fits ? "fits" : "DOES NOT FIT");
            /* The explanation's lines, indented under the verdict. */
            for (const char *line = k->explanation; *line;) {
                const char *end = strchr(line, '\n');
                int len = end ? (int)(end - line) : (int)strlen(line);
                oc_text_printf(t, "    %.*s\n", len, line);
                line += len + (end ? 1 : 0);
            }
            if (k->driver_blocks_per_sm >= 0)
                oc_text_printf(t, "    the driver's occupancy calculator: %d block(s) per SM\n",
                               k->driver_blocks_per_sm);
        }
    }
}

oc_status oc_inspect_report_render(oc_context *ctx, const oc_inspect_report *report, int json, char **out)
{
    if (!report || !out) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_inspect_report_render: NULL argument");
    oc_text t = {0};
    if (json) render_json(&t, report);
    else render_text(&t, report);
    OC_CHECK(ctx, oc_text_finish(ctx, &t, out));
    return OC_OK;
}
