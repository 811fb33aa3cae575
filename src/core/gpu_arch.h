/*
 * gpu_arch.h - what each GPU generation gives a kernel, and the rules that decide whether a
 * launch fits. Written once: `outcore inspect` (without a GPU), the CUDA launch planner and
 * the tests all use these tables and oc_launch_check. No CUDA headers here.
 */
#ifndef OC_CORE_GPU_ARCH_H
#define OC_CORE_GPU_ARCH_H

#include <stddef.h>
#include "outcore.h"

typedef struct oc_gpu_arch {
    int cc;                         /* compute capability x10: 80, 86, 89, 90, ... */
    const char *name;               /* "sm_90" */
    int regs_per_sm;                /* 65536 */
    int sub_partitions;             /* SM quadrants; registers are split evenly among them */
    int reg_alloc_unit;             /* registers per warp are allocated in units of this (256) */
    int reg_per_thread_granularity; /* per-thread counts round up to this before the warp unit */
    int max_regs_per_thread;        /* 255 */
    int max_regs_per_block;         /* 65536 */
    int max_threads_per_block;      /* 1024 */
    int max_warps_per_sm;
    int max_blocks_per_sm;
    int warp_alloc_granularity;     /* warps per block round up to this for the register rule */
    size_t smem_per_sm;             /* bytes usable by blocks on one SM */
    size_t smem_per_block;          /* without opt-in (48 KiB) */
    size_t smem_per_block_optin;    /* with cudaFuncAttributeMaxDynamicSharedMemorySize */
    size_t smem_reserved_per_block; /* system use per resident block (1 KiB since sm_80) */
    size_t smem_alloc_unit;         /* shared memory allocation granularity */
} oc_gpu_arch;

/* The table entry for a compute capability (x10), or NULL when unknown. */
const oc_gpu_arch *oc_gpu_arch_find(int cc);
/* The index-th table entry in ascending order, NULL past the end (for listing known arches). */
const oc_gpu_arch *oc_gpu_arch_at(int index);
/* Parses "sm_90", "sm_90a", "90", "9.0"; NULL when unknown. */
const oc_gpu_arch *oc_gpu_arch_parse(const char *text);

typedef struct oc_kernel_resources {
    int regs_per_thread;
    size_t static_smem;
    size_t local_bytes;        /* spill/stack per thread */
    int max_threads_per_block; /* the kernel's own limit (launch bounds), 0 = the arch's */
    int required_threads;      /* .reqntid: the one block size that launches, 0 = any */
    int reg_cap;               /* the register cap the code carries (reg_cap_kind), 0 = none known */
    int reg_cap_kind;          /* where reg_cap comes from: OC_REG_CAP_* */
} oc_kernel_resources;

/* Where a kernel's register cap comes from, which decides how to change it: a PTX .maxnreg is
 * the source's __maxnreg__ (-maxrregcount does not override it, __launch_bounds__ cannot join
 * it); a cubin records the cap it was compiled under (EIATTR_MAXREG_COUNT), from __maxnreg__ or
 * -maxrregcount, without saying which. */
enum { OC_REG_CAP_NONE = 0, OC_REG_CAP_MAXNREG = 1, OC_REG_CAP_BUILT = 2 };

typedef struct oc_launch_verdict {
    int fits;               /* the block of `block` threads can launch */
    int blocks_per_sm;      /* resident blocks per SM at that size (0 if it does not fit) */
    double occupancy;       /* resident warps / max warps per SM */
    int largest_block;      /* the largest block that fits (a .reqntid kernel's own size) */
    int reg_cap_for_block;  /* the register cap that makes `block` fit, 0 if none helps */
    char limiter[64];       /* "registers", "shared memory", "threads", "warps", "blocks" */
    char explanation[1024]; /* the arithmetic, several lines */
    int regs_per_warp;      /* registers one warp takes after rounding (0: count unknown) */
    int warps_per_block;    /* ceil(block / 32) */
    int reg_warp_limit;     /* warps per block the register file allows */
    int needs_smem_optin;   /* fits only after raising cudaFuncAttributeMaxDynamicSharedMemorySize */
} oc_launch_verdict;

/* Decides whether a kernel with resources r launches with `block` threads and dyn_smem bytes
 * of dynamic shared memory on arch. Returns OC_ERR_INVALID_ARGUMENT for a block outside
 * [1, 1024]; otherwise OC_OK with the verdict filled (fits or not). */
oc_status oc_launch_check(const oc_gpu_arch *arch, const oc_kernel_resources *r, int block, size_t dyn_smem,
                          oc_launch_verdict *v);

/* The largest block with which the kernel launches on arch with dyn_smem bytes of dynamic
 * shared memory: the kernel's own limit when it fits (its .reqntid, the only size it
 * launches with; or its .maxntid, a .maxntid of 100 launching 100 threads), else the largest
 * multiple of 32 under that limit that fits, else the largest part of one warp that fits; 0
 * when none does. reg_cap_for_block above is
 * the largest per-thread register count with which `block` fits (0 when no count helps). */
int oc_launch_largest_block(const oc_gpu_arch *arch, const oc_kernel_resources *r, size_t dyn_smem);

#endif
