/*
 * inspect.c - oc_inspect_file: which kernels a code file holds, what each uses, and whether a
 * block size fits, for one GPU architecture.
 *
 * Who answers: with a usable GPU of the target architecture, the driver (it loads the code
 * and reports what it will really allocate); otherwise the code itself (ptxas' report for
 * PTX, the cubin's attributes). Either way the verdicts come from oc_launch_check, the rules
 * the CUDA launch planner uses too, so `inspect` and the library never disagree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/gpu_probe.h"
#include "../core/text_buf.h"
#include "kernel_image.h"

static const int block_sizes[OC_INSPECT_BLOCK_SIZES] = {64, 128, 256, 512, 768, 1024};

const int *oc_inspect_block_sizes(void) { return block_sizes; }

static oc_status check_options(oc_context *ctx, const oc_inspect_options *o, const oc_gpu_arch **arch)
{
    if (o->struct_size < sizeof(oc_inspect_options))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "oc_inspect_options.struct_size is %zu, expected %zu: start from OC_INSPECT_OPTIONS_INIT",
                       o->struct_size, sizeof(oc_inspect_options));
    if (o->block < 0 || o->block > 1024)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "block size %d is outside 1..1024", o->block);
    if (o->dyn_smem < 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "dynamic shared memory must be >= 0, got %lld", (long long)o->dyn_smem);
    *arch = NULL;
    if (o->arch) {
        *arch = oc_gpu_arch_parse(o->arch);
        if (!*arch) {
            char known[256] = "";
            for (int i = 0; oc_gpu_arch_at(i); i++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", oc_gpu_arch_at(i)->name);
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "unknown architecture '%s' (known: %s)", o->arch, known);
        }
    }
    return OC_OK;
}

/* The driver answers when a GPU is usable and its architecture is the target (or none was
 * named). Returns its compute capability, or 0 when the code files must answer. */
static int driver_target(const oc_inspect_options *o, const oc_gpu_arch *arch)
{
#ifdef OC_HAVE_CUDA
    if (!o->use_gpu) return 0;
    char why[128];
    int cc = oc_gpu_probe_cuda.device_cc(0, why, sizeof why);
    if (cc > 0 && (!arch || arch->cc == cc)) return cc;
#endif
    return 0;
}

/* A cubin runs on its own SM and on later minors of the same major. */
static int code_runs_on(int code_cc, int target_cc)
{
    return code_cc == target_cc || (code_cc / 10 == target_cc / 10 && code_cc < target_cc);
}

static oc_status gather(oc_context *ctx, const oc_kernel_image *img, const oc_inspect_options *o,
                        const oc_gpu_arch **arch, oc_kernel_list *list)
{
    int gpu_cc = driver_target(o, *arch);
#ifdef OC_HAVE_CUDA
    if (gpu_cc) {
        const void *image;
        size_t size;
        oc_kernel_image_loadable(img, &image, &size);
        oc_status st = oc_gpu_probe_cuda.inspect(ctx, img->path, image, size, 0, o->block, (size_t)o->dyn_smem, list);
        /* PTX the driver's JIT refuses: ptxas names the line and the problem, the driver does not. */
        if (st == OC_ERR_INPUT && img->format == OC_IMAGE_PTX) {
            oc_kernel_list_clear(list);
            gpu_cc = 0;
        } else if (st != OC_OK) {
            return oc_trace_at(ctx, st, __FILE__, __LINE__);
        } else {
            list->code_cc = gpu_cc;
        }
    }
#endif
    if (!gpu_cc) OC_CHECK(oc_kernel_image_resources(ctx, img, *arch ? (*arch)->cc : 0, list));
    if (!*arch) {
        *arch = oc_gpu_arch_find(gpu_cc ? gpu_cc : list->code_cc);
        if (!*arch)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: code for sm_%d, an architecture outcore has no table for; pass --arch",
                           img->path, list->code_cc);
    }
    if (!code_runs_on(list->code_cc, (*arch)->cc))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: the code is sm_%d machine code, which %s cannot run; pass --arch sm_%d",
                       img->path, list->code_cc, (*arch)->name, list->code_cc);
    return OC_OK;
}

static oc_status fill_kernel(oc_context *ctx, const oc_gpu_arch *arch, const oc_inspect_options *o,
                             const oc_kernel_entry *e, oc_inspect_kernel *k)
{
    k->name = strdup(e->name);
    if (!k->name) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of host memory");
    k->regs_per_thread = e->res.regs_per_thread;
    k->static_smem_bytes = (int64_t)e->res.static_smem;
    k->local_bytes = (int64_t)e->res.local_bytes;
    k->spill_store_bytes = e->spill_store_bytes;
    k->spill_load_bytes = e->spill_load_bytes;
    k->const_bytes = e->const_bytes;
    k->launch_bounds = e->launch_bounds;
    k->driver_blocks_per_sm = e->driver_blocks_per_sm;
    k->max_threads_per_block = oc_launch_largest_block(arch, &e->res, (size_t)o->dyn_smem);
    for (int i = 0; i < OC_INSPECT_BLOCK_SIZES; i++) {
        oc_launch_verdict v;
        if (oc_launch_check(arch, &e->res, block_sizes[i], (size_t)o->dyn_smem, &v) == OC_OK)
            k->occupancy[i] = v.fits ? v.occupancy : 0.0;
    }
    if (o->block > 0) {
        oc_launch_verdict v;
        if (oc_launch_check(arch, &e->res, o->block, (size_t)o->dyn_smem, &v) != OC_OK)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "block size %d does not suit %s", o->block, arch->name);
        k->fits = v.fits;
        k->blocks_per_sm = v.blocks_per_sm;
        k->block_occupancy = v.occupancy;
        k->largest_block = v.largest_block;
        k->reg_cap = v.reg_cap_for_block;
        k->needs_smem_optin = v.needs_smem_optin;
        memcpy(k->limiter, v.limiter, sizeof k->limiter);
        memcpy(k->explanation, v.explanation, sizeof k->explanation);
    }
    return OC_OK;
}

oc_status oc_inspect_file(oc_context *ctx, const char *path, const oc_inspect_options *opts, oc_inspect_report **out)
{
    if (!path || !opts || !out) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_inspect_file: NULL argument");
    const oc_gpu_arch *arch = NULL;
    OC_CHECK(check_options(ctx, opts, &arch));

    oc_status st = OC_OK;
    oc_kernel_image img = {0};
    oc_kernel_list list = {0};
    oc_inspect_report *r = NULL;
    OC_CHECK_GOTO(oc_kernel_image_read(ctx, path, &img));
    OC_CHECK_GOTO(gather(ctx, &img, opts, &arch, &list));

    if (opts->kernel && !oc_kernel_list_find(&list, opts->kernel, strlen(opts->kernel))) {
        char names[512] = "";
        for (int i = 0; i < list.count && strlen(names) < sizeof names - 64; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", list.items[i].name);
        st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: no kernel named '%s' (kernels: %s)", path, opts->kernel,
                     list.count ? names : "none");
        goto cleanup;
    }

    r = calloc(1, sizeof *r);
    if (r) r->kernels = calloc(list.count ? (size_t)list.count : 1, sizeof *r->kernels);
    if (!r || !r->kernels) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "out of host memory");
        goto cleanup;
    }
    snprintf(r->path, sizeof r->path, "%s", path);
    snprintf(r->format, sizeof r->format, "%s", oc_image_format_name(img.format));
    snprintf(r->arch, sizeof r->arch, "%s", arch->name);
    snprintf(r->source, sizeof r->source, "%s", list.source);
    r->code_cc = list.code_cc;
    r->block = opts->block;
    r->dyn_smem = opts->dyn_smem;
    for (int i = 0; i < list.count; i++) {
        if (opts->kernel && strcmp(list.items[i].name, opts->kernel) != 0) continue;
        OC_CHECK_GOTO(fill_kernel(ctx, arch, opts, &list.items[i], &r->kernels[r->count]));
        r->count++;
    }
    *out = r;
    r = NULL;
cleanup:
    oc_inspect_report_free(r);
    oc_kernel_list_clear(&list);
    oc_kernel_image_release(&img);
    return st;
}

void oc_inspect_report_free(oc_inspect_report *report)
{
    if (!report) return;
    if (report->kernels)
        for (int i = 0; i < report->count; i++) free((char *)report->kernels[i].name);
    free(report->kernels);
    free(report);
}

/* ------------------------------------------------------------------ rendering */

static void render_json(oc_text *t, const oc_inspect_report *r)
{
    oc_text_printf(t, "{\"file\": ");
    oc_text_json_string(t, r->path);
    oc_text_printf(t, ", \"format\": \"%s\", \"arch\": \"%s\", \"code_arch\": \"sm_%d\", \"source\": ", r->format, r->arch,
                   r->code_cc);
    oc_text_json_string(t, r->source);
    oc_text_printf(t, ", \"block\": %d, \"dyn_smem\": %lld, \"kernels\": [", r->block, (long long)r->dyn_smem);
    for (int i = 0; i < r->count; i++) {
        const oc_inspect_kernel *k = &r->kernels[i];
        oc_text_printf(t, "%s\n  {\"name\": ", i ? "," : "");
        oc_text_json_string(t, k->name);
        oc_text_printf(t,
                       ", \"registers\": %d, \"static_smem\": %lld, \"local_bytes\": %lld, \"spill_store_bytes\": %lld, "
                       "\"spill_load_bytes\": %lld, \"const_bytes\": %lld, \"launch_bounds\": %d, "
                       "\"max_threads_per_block\": %d, \"occupancy\": {",
                       k->regs_per_thread, (long long)k->static_smem_bytes, (long long)k->local_bytes,
                       (long long)k->spill_store_bytes, (long long)k->spill_load_bytes, (long long)k->const_bytes,
                       k->launch_bounds, k->max_threads_per_block);
        for (int j = 0; j < OC_INSPECT_BLOCK_SIZES; j++)
            oc_text_printf(t, "%s\"%d\": %.4f", j ? ", " : "", block_sizes[j], k->occupancy[j]);
        oc_text_printf(t, "}");
        if (r->block > 0) {
            oc_text_printf(t,
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

static void render_text(oc_text *t, const oc_inspect_report *r)
{
    oc_text_printf(t, "%s: %s, sm_%d code, figures from %s; limits of %s\n", r->path, r->format, r->code_cc, r->source,
                   r->arch);
    if (r->count == 0) oc_text_printf(t, "no kernels (entry functions) in the file\n");
    for (int i = 0; i < r->count; i++) {
        const oc_inspect_kernel *k = &r->kernels[i];
        oc_text_printf(t, "\nkernel %s\n", k->name);
        oc_text_printf(t, "  registers        %d per thread\n", k->regs_per_thread);
        oc_text_printf(t, "  shared memory    %lld bytes static", (long long)k->static_smem_bytes);
        if (r->dyn_smem) oc_text_printf(t, " + %lld dynamic", (long long)r->dyn_smem);
        oc_text_printf(t, "\n  local memory     %lld bytes per thread (stack frame)", (long long)k->local_bytes);
        if (k->spill_store_bytes >= 0)
            oc_text_printf(t, "; spills: %lld bytes stored, %lld loaded", (long long)k->spill_store_bytes,
                           (long long)k->spill_load_bytes);
        oc_text_printf(t, "\n");
        if (k->launch_bounds) oc_text_printf(t, "  launch bounds    %d threads\n", k->launch_bounds);
        oc_text_printf(t, "  largest block    %d threads on %s\n", k->max_threads_per_block, r->arch);
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
                oc_text_printf(t, "    the driver's occupancy calculator: %d block(s) per SM\n", k->driver_blocks_per_sm);
        }
    }
}

oc_status oc_inspect_report_render(oc_context *ctx, const oc_inspect_report *report, int json, char **out)
{
    if (!report || !out) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_inspect_report_render: NULL argument");
    oc_text t = {0};
    if (json) render_json(&t, report);
    else render_text(&t, report);
    OC_CHECK(oc_text_finish(ctx, &t, out));
    return OC_OK;
}
