/*
 * inspect.c - oc_inspect_file: which kernels a code file holds, what each uses, and whether a
 * block size fits, for one GPU architecture.
 *
 * Who answers: with a usable GPU of the target architecture, the driver (it loads the code
 * and reports what it will really allocate); otherwise the code itself (ptxas' report for
 * PTX, the cubin's attributes). Either way the verdicts come from oc_launch_check, the rules
 * the CUDA launch planner uses too, so `inspect` and the library never disagree.
 *
 * PTX is not yet machine code: its registers depend on how it is compiled. The report names
 * the compiler and the options (the defaults unless the caller gave a register cap or an
 * optimisation level, as a producer like numba gives its linker), and the PTX's own
 * directives (.maxnreg, .maxntid, .reqntid, .minnctapersm) enter the figures and the verdict.
 * Rendering lives in inspect_render.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/gpu_probe.h"
#include "core/text_buf.h"
#include "inspect/kernel_image.h"
#include "inspect/ptx_directives.h"

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
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "dynamic shared memory must be >= 0, got %lld",
                       (long long)o->dyn_smem);
    if (o->maxrregcount < 0 || o->maxrregcount > 255)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "maxrregcount must be from 1 to 255 (0: no cap), got %d",
                       o->maxrregcount);
    if (o->opt_level < -1 || o->opt_level > 4)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "opt_level must be from 0 to 4 (-1: the compiler's default), got %d", o->opt_level);
    *arch = NULL;
    if (o->arch) {
        *arch = oc_gpu_arch_parse(o->arch);
        if (!*arch) {
            char known[256] = "";
            for (int i = 0; oc_gpu_arch_at(i); i++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                         oc_gpu_arch_at(i)->name);
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

/* PTX compiles for its .target and later architectures only (an sm_90a .target for sm_90
 * alone). ptxas says "SM version specified by .target is higher than default"; this says it
 * in the user's terms, naming both architectures and the two ways out. */
static oc_status check_ptx_target(oc_context *ctx, const oc_kernel_image *img, const oc_gpu_arch *arch, int gpu_cc)
{
    char suffix;
    int ptx_cc = oc_ptx_target_cc((const char *)img->data, img->size, &suffix);
    int target = arch ? arch->cc : gpu_cc;
    if (ptx_cc == 0 || target == 0 || (ptx_cc <= target && (!suffix || ptx_cc == target))) return OC_OK;
    char named[48];
    if (arch) snprintf(named, sizeof named, "--arch sm_%d", target);
    else snprintf(named, sizeof named, "this GPU (sm_%d)", target);
    if (ptx_cc > target)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "%s: .target sm_%d%.1s is newer than %s: pass --arch sm_%d%.1s or compile the PTX for sm_%d",
                       img->path, ptx_cc, &suffix, named, ptx_cc, &suffix, target);
    return oc_fail(
        ctx, OC_ERR_INVALID_ARGUMENT,
        "%s: .target sm_%d%c compiles for sm_%d%c alone, not %s: pass --arch sm_%d%c or compile the PTX for sm_%d",
        img->path, ptx_cc, suffix, ptx_cc, suffix, named, ptx_cc, suffix, target);
}

static oc_status gather(oc_context *ctx, const oc_kernel_image *img, const oc_inspect_options *o,
                        const oc_gpu_arch **arch, oc_kernel_list *list)
{
    /* Relocatable code is not loaded unlinked: its cubins answer. */
    int gpu_cc = img->relocatable ? 0 : driver_target(o, *arch);
    if (img->format == OC_IMAGE_PTX) OC_CHECK(ctx, check_ptx_target(ctx, img, *arch, gpu_cc));
#ifdef OC_HAVE_CUDA
    if (gpu_cc) {
        const void *image;
        size_t size;
        oc_kernel_image_loadable(img, &image, &size);
        oc_status st = oc_gpu_probe_cuda.inspect(ctx, img->path, image, size, 0, o, list);
        /* PTX the driver's JIT refuses: ptxas names the line and the problem, the driver does not. */
        if (st == OC_ERR_INPUT && img->format == OC_IMAGE_PTX) {
            oc_kernel_list_clear(list);
            gpu_cc = 0;
        } else if (st != OC_OK) {
            return oc_trace_at(ctx, st, __FILE__, __LINE__);
        } else if (oc_kernel_image_is_jit(img, gpu_cc)) {
            snprintf(list->jit_compiler, sizeof list->jit_compiler, "CUDA driver JIT");
            list->jit_opt_level = o->opt_level >= 0 ? o->opt_level : OC_DRIVER_JIT_DEFAULT_OPT_LEVEL;
            /* The driver folds the thread directives into one limit; the text has them all. */
            if (img->format == OC_IMAGE_PTX) oc_ptx_entry_directives((const char *)img->data, img->size, list, 0);
        }
    }
#endif
    if (!gpu_cc) OC_CHECK(ctx, oc_kernel_image_resources(ctx, img, *arch ? (*arch)->cc : 0, o, list));
    if (!*arch) {
        *arch = oc_gpu_arch_find(gpu_cc ? gpu_cc : list->code_cc);
        if (!*arch)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "%s: code for sm_%d, an architecture outcore has no table for; pass --arch", img->path,
                           list->code_cc);
    }
    if (!code_runs_on(list->code_cc, (*arch)->cc))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "%s: the code is sm_%d machine code, which %s cannot run; pass --arch sm_%d", img->path,
                       list->code_cc, (*arch)->name, list->code_cc);
    return OC_OK;
}

/* The kernel's resources with the register cap it carries, which decides how a verdict says
 * to lower its registers: a PTX .maxnreg, else a cubin's recorded cap below the architecture's
 * where no launch bounds set it (raising the bounds is the advice then). */
static oc_kernel_resources judged(const oc_gpu_arch *arch, const oc_kernel_entry *e)
{
    oc_kernel_resources r = e->res;
    if (e->maxnreg > 0) {
        r.reg_cap = e->maxnreg;
        r.reg_cap_kind = OC_REG_CAP_MAXNREG;
    } else if (e->built_reg_cap > 0 && e->built_reg_cap < arch->max_regs_per_thread && !e->launch_bounds) {
        r.reg_cap = e->built_reg_cap;
        r.reg_cap_kind = OC_REG_CAP_BUILT;
    }
    return r;
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
    k->maxntid = e->maxntid;
    k->reqntid = e->reqntid;
    k->maxnreg = e->maxnreg;
    k->minnctapersm = e->minnctapersm;
    k->driver_blocks_per_sm = e->driver_blocks_per_sm;
    k->max_threads_per_block = oc_launch_largest_block(arch, &e->res, (size_t)o->dyn_smem);
    for (int i = 0; i < OC_INSPECT_BLOCK_SIZES; i++) {
        oc_launch_verdict v;
        if (oc_launch_check(arch, &e->res, block_sizes[i], (size_t)o->dyn_smem, &v) == OC_OK)
            k->occupancy[i] = v.fits ? v.occupancy : 0.0;
    }
    if (o->block > 0) {
        oc_launch_verdict v;
        oc_kernel_resources res = judged(arch, e);
        if (oc_launch_check(arch, &res, o->block, (size_t)o->dyn_smem, &v) != OC_OK)
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

/* The report of the kernels in list (only opts->kernel when named), judged for arch. */
static oc_status build_report(oc_context *ctx, const char *display, const char *format, const oc_gpu_arch *arch,
                              oc_kernel_list *list, const oc_inspect_options *opts, oc_inspect_report **out)
{
    if (opts->kernel && !oc_kernel_list_find(list, opts->kernel, strlen(opts->kernel))) {
        char names[512] = "";
        for (int i = 0; i < list->count && strlen(names) < sizeof names - 64; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", list->items[i].name);
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: no kernel named '%s' (kernels: %s)", display, opts->kernel,
                       list->count ? names : "none");
    }
    oc_status st = OC_OK;
    oc_inspect_report *r = calloc(1, sizeof *r);
    if (r) r->kernels = calloc(list->count ? (size_t)list->count : 1, sizeof *r->kernels);
    if (!r || !r->kernels) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "out of host memory");
        goto cleanup;
    }
    snprintf(r->path, sizeof r->path, "%s", display);
    snprintf(r->format, sizeof r->format, "%s", format);
    snprintf(r->arch, sizeof r->arch, "%s", arch->name);
    snprintf(r->source, sizeof r->source, "%s", list->source);
    r->code_cc = list->code_cc;
    r->block = opts->block;
    r->dyn_smem = opts->dyn_smem;
    snprintf(r->jit_compiler, sizeof r->jit_compiler, "%s", list->jit_compiler);
    if (r->jit_compiler[0]) {
        r->jit_opt_level = list->jit_opt_level;
        r->jit_maxrregcount = opts->maxrregcount;
        r->jit_defaults = opts->maxrregcount == 0 && opts->opt_level < 0;
    }
    for (int i = 0; i < list->count; i++) {
        if (opts->kernel && strcmp(list->items[i].name, opts->kernel) != 0) continue;
        OC_CHECK_GOTO(ctx, st, fill_kernel(ctx, arch, opts, &list->items[i], &r->kernels[r->count]), cleanup);
        r->count++;
    }
    *out = r;
    r = NULL;
cleanup:
    oc_inspect_report_free(r);
    return st;
}

/* Inspects an image already in memory; img is released by the caller. */
static oc_status inspect_image(oc_context *ctx, const oc_kernel_image *img, const oc_inspect_options *opts,
                               const oc_gpu_arch *arch, oc_inspect_report **out)
{
    oc_status st = OC_OK;
    oc_kernel_list list = {0};
    OC_CHECK_GOTO(ctx, st, gather(ctx, img, opts, &arch, &list), cleanup);
    OC_CHECK_GOTO(ctx, st, build_report(ctx, img->path, oc_image_format_name(img->format), arch, &list, opts, out),
                  cleanup);
cleanup:
    oc_kernel_list_clear(&list);
    return st;
}

oc_status oc_inspect_file(oc_context *ctx, const char *path, const oc_inspect_options *opts, oc_inspect_report **out)
{
    if (!path || !opts || !out) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_inspect_file: NULL argument");
    const oc_gpu_arch *arch = NULL;
    OC_CHECK(ctx, check_options(ctx, opts, &arch));
    oc_kernel_image img = {0};
    OC_CHECK(ctx, oc_kernel_image_read(ctx, path, &img));
    oc_status st = inspect_image(ctx, &img, opts, arch, out);
    oc_kernel_image_release(&img);
    return st == OC_OK ? OC_OK : oc_trace_at(ctx, st, __FILE__, __LINE__);
}

oc_status oc_inspect_image(oc_context *ctx, const char *name, const void *data, size_t size,
                           const oc_inspect_options *opts, oc_inspect_report **out)
{
    if (!name || !opts || !out) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_inspect_image: NULL argument");
    const oc_gpu_arch *arch = NULL;
    OC_CHECK(ctx, check_options(ctx, opts, &arch));
    oc_kernel_image img = {0};
    OC_CHECK(ctx, oc_kernel_image_copy(ctx, name, data, size, &img));
    oc_status st = inspect_image(ctx, &img, opts, arch, out);
    oc_kernel_image_release(&img);
    return st == OC_OK ? OC_OK : oc_trace_at(ctx, st, __FILE__, __LINE__);
}

oc_status oc_inspect_module(oc_context *ctx, const char *name, void *cu_module, const oc_inspect_options *opts,
                            oc_inspect_report **out)
{
    if (!name || !cu_module || !opts || !out)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_inspect_module: NULL argument");
    const oc_gpu_arch *arch = NULL;
    OC_CHECK(ctx, check_options(ctx, opts, &arch));
#ifdef OC_HAVE_CUDA
    oc_status st = OC_OK;
    oc_kernel_list list = {0};
    OC_CHECK_GOTO(ctx, st, oc_gpu_probe_cuda.inspect_module(ctx, name, cu_module, opts, &list), cleanup);
    const oc_gpu_arch *device_arch = oc_gpu_arch_find(list.code_cc);
    if (!device_arch || (arch && arch != device_arch)) {
        st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                     "%s: the module is loaded on an sm_%d GPU; its figures answer for sm_%d only%s", name,
                     list.code_cc, list.code_cc, device_arch ? "" : ", an architecture outcore has no table for");
        goto cleanup;
    }
    OC_CHECK_GOTO(ctx, st, build_report(ctx, name, "module", device_arch, &list, opts, out), cleanup);
cleanup:
    oc_kernel_list_clear(&list);
    return st;
#else
    (void)arch;
    return oc_fail(ctx, OC_ERR_UNSUPPORTED,
                   "%s: a loaded CUDA module is read through the driver, and this outcore is built without CUDA", name);
#endif
}

void oc_inspect_report_free(oc_inspect_report *report)
{
    if (!report) return;
    if (report->kernels)
        for (int i = 0; i < report->count; i++) free((char *)report->kernels[i].name);
    free(report->kernels);
    free(report);
}
