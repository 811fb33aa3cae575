/*
 * gpu_arch.c - the hardware facts per compute capability and the launch-fit rules.
 *
 * Sources: the CUDA C++ Programming Guide, "Compute Capabilities" (technical specifications
 * table), and the toolkit's cuda_occupancy.h, whose register and shared-memory rules the
 * driver applies when it accepts or refuses a launch. This is the only place that knows them.
 *
 * The register rule, as the hardware checks it (cuda_occupancy.h calls it the "hardware
 * check"): registers per thread round up to a multiple of 8, a warp takes 32 times that rounded
 * up to the 256-register allocation unit, and the register file is split evenly among the SM's
 * 4 sub-partitions, each warp living in one. A block of W warps therefore needs
 * ceil(W / 4) warps' worth of registers in one sub-partition:
 *
 *     warps per block <= 4 * floor((regs_per_sm / 4) / regs_per_warp)
 *
 * On an H100 with 96 registers per thread: 96 * 32 = 3072 per warp, floor(16384 / 3072) = 5
 * warps per sub-partition, 20 warps = 640 threads. 641 threads are 21 warps: refused with
 * CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES however much device memory is free.
 */
#include "core/gpu_arch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text_buf.h"

#define KIB 1024u

/* Fields in declaration order: cc, name, regs/SM, sub-partitions, reg unit, per-thread
 * granularity, max regs/thread, max regs/block, max threads/block, max warps/SM,
 * max blocks/SM, warp granularity, smem/SM, smem/block, smem/block opt-in, reserved/block,
 * smem unit. Volta and Turing reserve no shared memory per block; Ampere and later 1 KiB. */
static const oc_gpu_arch arch_table[] = {
    {70, "sm_70", 65536, 4, 256, 8, 255, 65536, 1024, 64, 32, 4, 96 * KIB, 48 * KIB, 96 * KIB, 0, 256},
    {75, "sm_75", 65536, 4, 256, 8, 255, 65536, 1024, 32, 16, 4, 64 * KIB, 48 * KIB, 64 * KIB, 0, 256},
    {80, "sm_80", 65536, 4, 256, 8, 255, 65536, 1024, 64, 32, 4, 164 * KIB, 48 * KIB, 163 * KIB, 1 * KIB, 128},
    {86, "sm_86", 65536, 4, 256, 8, 255, 65536, 1024, 48, 16, 4, 100 * KIB, 48 * KIB, 99 * KIB, 1 * KIB, 128},
    {87, "sm_87", 65536, 4, 256, 8, 255, 65536, 1024, 48, 16, 4, 164 * KIB, 48 * KIB, 163 * KIB, 1 * KIB, 128},
    {89, "sm_89", 65536, 4, 256, 8, 255, 65536, 1024, 48, 24, 4, 100 * KIB, 48 * KIB, 99 * KIB, 1 * KIB, 128},
    {90, "sm_90", 65536, 4, 256, 8, 255, 65536, 1024, 64, 32, 4, 228 * KIB, 48 * KIB, 227 * KIB, 1 * KIB, 128},
    {100, "sm_100", 65536, 4, 256, 8, 255, 65536, 1024, 64, 32, 4, 228 * KIB, 48 * KIB, 227 * KIB, 1 * KIB, 128},
    {120, "sm_120", 65536, 4, 256, 8, 255, 65536, 1024, 48, 24, 4, 100 * KIB, 48 * KIB, 99 * KIB, 1 * KIB, 128},
};

#define ARCH_COUNT (sizeof arch_table / sizeof arch_table[0])

const oc_gpu_arch *oc_gpu_arch_find(int cc)
{
    for (size_t i = 0; i < ARCH_COUNT; i++)
        if (arch_table[i].cc == cc) return &arch_table[i];
    return NULL;
}

const oc_gpu_arch *oc_gpu_arch_at(int index)
{
    return index >= 0 && (size_t)index < ARCH_COUNT ? &arch_table[index] : NULL;
}

const oc_gpu_arch *oc_gpu_arch_parse(const char *text)
{
    if (!text) return NULL;
    const char *p = text;
    if (strncmp(p, "sm_", 3) == 0 || strncmp(p, "compute_", 8) == 0) p = strchr(p, '_') + 1;
    char *end = NULL;
    long major = strtol(p, &end, 10);
    if (end == p || major < 0) return NULL;
    long cc = major;
    if (*end == '.') { /* "9.0" */
        const char *minor_text = end + 1;
        long minor = strtol(minor_text, &end, 10);
        if (end == minor_text || minor < 0 || minor > 9) return NULL;
        cc = major * 10 + minor;
    }
    /* "sm_90a" / "sm_100f": architecture-specific feature sets share the base limits. */
    if ((*end == 'a' || *end == 'f') && end[1] == '\0') end++;
    if (*end != '\0' || cc > 1000) return NULL;
    return oc_gpu_arch_find((int)cc);
}

static int round_up(int x, int unit) { return (x + unit - 1) / unit * unit; }
static size_t round_up_size(size_t x, size_t unit) { return (x + unit - 1) / unit * unit; }

/* Registers one warp of this kernel takes: per-thread count rounded to the granularity, times
 * 32, rounded to the allocation unit. */
static int regs_per_warp(const oc_gpu_arch *a, int regs_per_thread)
{
    int per_thread = round_up(regs_per_thread, a->reg_per_thread_granularity);
    return round_up(per_thread * 32, a->reg_alloc_unit);
}

/* The most warps one block may have under the register rule (0 when regs_per_thread exceeds the
 * per-thread maximum). Also the most warps of this kernel an SM holds. */
static int reg_warp_limit(const oc_gpu_arch *a, int regs_per_thread)
{
    if (regs_per_thread > a->max_regs_per_thread) return 0;
    if (regs_per_thread <= 0) return a->max_warps_per_sm;
    int per_warp = regs_per_warp(a, regs_per_thread);
    int per_partition = a->regs_per_sm / a->sub_partitions / per_warp;
    /* The per-block check of cuda_occupancy.h: the hardware assumes the block's warps are
     * spread over all sub-partitions, rounding the warp count up to their number. */
    int by_block = a->max_regs_per_block / per_warp / a->warp_alloc_granularity * a->warp_alloc_granularity;
    int limit = per_partition * a->sub_partitions;
    return limit < by_block ? limit : by_block;
}

/* Everything oc_launch_check derives, without the text. */
typedef struct fit {
    int warps;                                 /* warps in the block */
    int kernel_limit;                          /* threads per block the kernel itself allows */
    int other_size;                            /* the kernel requires another block size (.reqntid) */
    int per_warp;                              /* registers per warp */
    int warp_limit_regs;                       /* warps per block (and per SM) the registers allow */
    size_t smem_block;                         /* static + dynamic shared memory of one block */
    size_t smem_alloc;                         /* plus the reserved part, rounded to the allocation unit */
    size_t smem_limit;                         /* the per-block limit that applies (opt-in when needed) */
    int by_regs, by_warps, by_blocks, by_smem; /* resident blocks per SM under each limit */
    int blocks_per_sm;
    const char *limiter; /* what stops the block, or what bounds residency when it fits */
} fit;

static void evaluate(const oc_gpu_arch *a, const oc_kernel_resources *r, int block, size_t dyn_smem, fit *f)
{
    memset(f, 0, sizeof *f);
    f->warps = (block + 31) / 32;
    f->kernel_limit = a->max_threads_per_block;
    if (r->max_threads_per_block > 0 && r->max_threads_per_block < f->kernel_limit)
        f->kernel_limit = r->max_threads_per_block;
    f->per_warp = r->regs_per_thread > 0 ? regs_per_warp(a, r->regs_per_thread) : 0;
    f->warp_limit_regs = reg_warp_limit(a, r->regs_per_thread);
    /* Saturated: a damaged size cannot wrap to a small sum that fits. */
    f->smem_block = r->static_smem > SIZE_MAX / 2 || dyn_smem > SIZE_MAX / 2 ? SIZE_MAX / 2 : r->static_smem + dyn_smem;
    f->smem_alloc = round_up_size(f->smem_block + a->smem_reserved_per_block, a->smem_alloc_unit);
    f->smem_limit = f->smem_block > a->smem_per_block ? a->smem_per_block_optin : a->smem_per_block;

    f->by_regs = f->warp_limit_regs / f->warps;
    f->by_warps = a->max_warps_per_sm / f->warps;
    f->by_blocks = a->max_blocks_per_sm;
    f->by_smem = f->smem_alloc > 0 ? (int)(a->smem_per_sm / f->smem_alloc) : a->max_blocks_per_sm;
    if (f->smem_block > f->smem_limit) f->by_smem = 0;

    if (block > f->kernel_limit) {
        f->limiter = f->kernel_limit < a->max_threads_per_block ? "launch bounds" : "threads";
        return;
    }
    if (r->required_threads > 0 && block != r->required_threads) {
        f->other_size = 1;
        f->limiter = "launch bounds";
        return;
    }
    /* The first limit that reaches the minimum names the limiter: registers before shared memory
     * before warps and blocks, the order in which a user can change them. */
    struct {
        int blocks;
        const char *name;
    } limits[] = {
        {f->by_regs, "registers"}, {f->by_smem, "shared memory"}, {f->by_warps, "warps"}, {f->by_blocks, "blocks"}};
    f->blocks_per_sm = limits[0].blocks;
    f->limiter = limits[0].name;
    for (size_t i = 1; i < sizeof limits / sizeof limits[0]; i++)
        if (limits[i].blocks < f->blocks_per_sm) {
            f->blocks_per_sm = limits[i].blocks;
            f->limiter = limits[i].name;
        }
}

static int block_fits(const oc_gpu_arch *a, const oc_kernel_resources *r, int block, size_t dyn_smem)
{
    fit f;
    evaluate(a, r, block, dyn_smem, &f);
    return block <= f.kernel_limit && !f.other_size && f.blocks_per_sm > 0;
}

int oc_launch_largest_block(const oc_gpu_arch *a, const oc_kernel_resources *r, size_t dyn_smem)
{
    /* A block's registers and shared memory grow with its warps alone, so the largest block
     * is the kernel's own limit when it fits (a .maxntid of 100 launches 100 threads), else
     * the largest whole number of warps under it that fits, else a part of one warp. */
    if (r->required_threads > 0) return block_fits(a, r, r->required_threads, dyn_smem) ? r->required_threads : 0;
    int limit = a->max_threads_per_block;
    if (r->max_threads_per_block > 0 && r->max_threads_per_block < limit) limit = r->max_threads_per_block;
    if (block_fits(a, r, limit, dyn_smem)) return limit;
    for (int block = (limit - 1) / 32 * 32; block >= 32; block -= 32)
        if (block_fits(a, r, block, dyn_smem)) return block;
    for (int block = limit < 31 ? limit - 1 : 31; block >= 1; --block)
        if (block_fits(a, r, block, dyn_smem)) return block;
    return 0;
}

/* The largest per-thread register count with which `block` fits, 0 when none does (the block
 * is stopped by something registers cannot change). */
static int register_cap(const oc_gpu_arch *a, const oc_kernel_resources *r, int block, size_t dyn_smem)
{
    oc_kernel_resources capped = *r;
    for (int regs = a->max_regs_per_thread; regs >= 16; regs--) {
        capped.regs_per_thread = regs;
        if (block_fits(a, &capped, block, dyn_smem)) return regs;
    }
    return 0;
}

/* Appends printf-style text to v->explanation, silently truncating at its size. */
static void say(oc_launch_verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(oc_launch_verdict *v, const char *fmt, ...)
{
    size_t used = strlen(v->explanation);
    if (used + 1 >= sizeof v->explanation) return;
    va_list ap;
    va_start(ap, fmt);
    oc_vsnprintf(v->explanation + used, sizeof v->explanation - used, fmt, ap);
    va_end(ap);
}

/* How to bring the registers down to v->reg_cap_for_block: the ways that work depend on
 * where the code's own cap, if any, comes from (OC_REG_CAP_*). */
static void advise_cap(oc_launch_verdict *v, const oc_kernel_resources *r, int block)
{
    int cap = v->reg_cap_for_block;
    say(v, "to launch %d threads cap registers at %d: ", block, cap);
    if (r->reg_cap_kind == OC_REG_CAP_MAXNREG)
        say(v,
            "lower the kernel's .maxnreg %d to %d (__maxnreg__(%d) in the source; -maxrregcount does not override it)\n",
            r->reg_cap, cap, cap);
    else if (r->reg_cap_kind == OC_REG_CAP_BUILT)
        say(v,
            "the code was compiled under a cap of %d (__maxnreg__ or -maxrregcount); compile it under %d: "
            "__maxnreg__(%d) where the source has one, else __launch_bounds__(%d) or -maxrregcount=%d\n",
            r->reg_cap, cap, cap, block, cap);
    else say(v, "__launch_bounds__(%d), -maxrregcount=%d, numba max_registers=%d\n", block, cap, cap);
}

static void explain(const oc_gpu_arch *a, const oc_kernel_resources *r, int block, size_t dyn_smem, const fit *f,
                    oc_launch_verdict *v)
{
    int regs = r->regs_per_thread;
    if (regs > a->max_regs_per_thread) {
        say(v, "%d registers per thread exceed the %s maximum of %d\n", regs, a->name, a->max_regs_per_thread);
    } else if (regs > 0) {
        int rounded = round_up(regs, a->reg_per_thread_granularity);
        int per_partition = a->regs_per_sm / a->sub_partitions;
        say(v, "registers: %d/thread -> %d (multiple of %d) x 32 = %d/warp (unit %d)\n", regs, rounded,
            a->reg_per_thread_granularity, f->per_warp, a->reg_alloc_unit);
        say(v,
            "register file %d = %d sub-partitions x %d; a warp lives in one: floor(%d / %d) = %d warps each, "
            "%d x %d = %d warps (%d threads) per block\n",
            a->regs_per_sm, a->sub_partitions, per_partition, per_partition, f->per_warp, per_partition / f->per_warp,
            a->sub_partitions, per_partition / f->per_warp, f->warp_limit_regs, f->warp_limit_regs * 32);
    }
    say(v, "block: %d threads = %d warps (rounded to %d: %d x %d = %d registers of %d per block)\n", block, f->warps,
        round_up(f->warps, a->warp_alloc_granularity), round_up(f->warps, a->warp_alloc_granularity), f->per_warp,
        round_up(f->warps, a->warp_alloc_granularity) * f->per_warp, a->max_regs_per_block);
    say(v, "shared memory: %zu static + %zu dynamic + %zu reserved -> %zu per block (limit %zu%s, %zu per SM)\n",
        r->static_smem, dyn_smem, a->smem_reserved_per_block, f->smem_alloc, f->smem_limit,
        f->smem_block > a->smem_per_block ? " with opt-in" : "", a->smem_per_sm);
    if (v->fits) {
        say(v, "fits: %d block(s) per SM (limited by %s), occupancy %.0f%%\n", v->blocks_per_sm, v->limiter,
            v->occupancy * 100.0);
    } else if (f->other_size) {
        say(v, "does not launch: the kernel requires blocks of exactly %d threads (.reqntid)\n", r->required_threads);
    } else if (strcmp(v->limiter, "registers") == 0) {
        say(v, "does not fit: %d warps > %d warps the registers allow\n", f->warps, f->warp_limit_regs);
    } else if (strcmp(v->limiter, "shared memory") == 0) {
        say(v, "does not fit: %zu bytes of shared memory > %zu\n", f->smem_block, f->smem_limit);
    } else {
        say(v, "does not fit: %d threads > %d allowed (%s)\n", block, f->kernel_limit, v->limiter);
    }
    say(v, "largest block that fits: %d threads\n", v->largest_block);
    if (!v->fits && v->reg_cap_for_block > 0) advise_cap(v, r, block);
    if (v->needs_smem_optin)
        say(v, "needs cudaFuncSetAttribute(MaxDynamicSharedMemorySize, %zu) before the launch\n", dyn_smem);
}

oc_status oc_launch_check(const oc_gpu_arch *arch, const oc_kernel_resources *r, int block, size_t dyn_smem,
                          oc_launch_verdict *v)
{
    if (!arch || !r || !v || block < 1 || block > arch->max_threads_per_block) return OC_ERR_INVALID_ARGUMENT;
    memset(v, 0, sizeof *v);
    fit f;
    evaluate(arch, r, block, dyn_smem, &f);
    v->fits = block <= f.kernel_limit && !f.other_size && f.blocks_per_sm > 0;
    v->blocks_per_sm = v->fits ? f.blocks_per_sm : 0;
    v->occupancy = (double)(v->blocks_per_sm * f.warps) / arch->max_warps_per_sm;
    v->largest_block = oc_launch_largest_block(arch, r, dyn_smem);
    v->reg_cap_for_block = register_cap(arch, r, block, dyn_smem);
    v->regs_per_warp = f.per_warp;
    v->warps_per_block = f.warps;
    v->reg_warp_limit = f.warp_limit_regs;
    v->needs_smem_optin = v->fits && f.smem_block > arch->smem_per_block;
    snprintf(v->limiter, sizeof v->limiter, "%s", f.limiter);
    explain(arch, r, block, dyn_smem, &f, v);
    return OC_OK;
}
