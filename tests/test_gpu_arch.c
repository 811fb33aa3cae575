/*
 * test_gpu_arch.c - the launch-fit arithmetic of oc_launch_check against what an H100
 * (sm_90, 65536 registers per SM) accepted and refused, plus shared-memory limits, the
 * register-cap suggestion and the arch parser.
 */
#include <string.h>

#include "core/gpu_arch.h"
#include "harness.h"

/* Measured on an H100: the largest block per register count; one warp more is refused with
 * CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES. */
static const struct {
    int regs, largest;
} h100_cases[] = {
    {64, 1024}, {72, 896}, {96, 640}, {128, 512}, {168, 384}, {255, 256},
};

static void test_h100_register_table(void)
{
    const oc_gpu_arch *a = oc_gpu_arch_find(90);
    CHECK(a != NULL);
    if (!a) return;
    for (size_t i = 0; i < sizeof h100_cases / sizeof h100_cases[0]; i++) {
        oc_kernel_resources r = {.regs_per_thread = h100_cases[i].regs};
        oc_launch_verdict v;
        int largest = h100_cases[i].largest;
        CHECK(oc_launch_check(a, &r, largest, 0, &v) == OC_OK);
        CHECK_MSG(v.fits, "%d registers: %d threads should fit:\n%s", r.regs_per_thread, largest, v.explanation);
        CHECK_EQ_I64(v.largest_block, largest);
        CHECK_EQ_I64(v.blocks_per_sm, 1); /* the block takes every register warp slot */
        if (largest < 1024) {
            CHECK(oc_launch_check(a, &r, largest + 32, 0, &v) == OC_OK);
            CHECK_MSG(!v.fits, "%d registers: %d threads should not fit", r.regs_per_thread, largest + 32);
            CHECK(strcmp(v.limiter, "registers") == 0);
            CHECK_EQ_I64(v.largest_block, largest);
            /* One thread more is one warp more, too. */
            CHECK(oc_launch_check(a, &r, largest + 1, 0, &v) == OC_OK);
            CHECK(!v.fits);
        }
    }
}

static void test_explanation_of_641(void)
{
    const oc_gpu_arch *a = oc_gpu_arch_find(90);
    oc_kernel_resources r = {.regs_per_thread = 96};
    oc_launch_verdict v;
    CHECK(oc_launch_check(a, &r, 641, 0, &v) == OC_OK);
    CHECK(!v.fits);
    CHECK_EQ_I64(v.regs_per_warp, 3072);
    CHECK_EQ_I64(v.warps_per_block, 21);
    CHECK_EQ_I64(v.reg_warp_limit, 20);
    /* 21 warps need 6 per sub-partition: 16384 / 6 = 2730 registers per warp -> 2560 -> 80. */
    CHECK_EQ_I64(v.reg_cap_for_block, 80);
    CHECK(strstr(v.explanation, "floor(16384 / 3072) = 5") != NULL);
    CHECK(strstr(v.explanation, "largest block that fits: 640") != NULL);
    CHECK(strstr(v.explanation, "-maxrregcount=80") != NULL);
    CHECK(strstr(v.explanation, "__launch_bounds__(641)") != NULL);
    CHECK(strstr(v.explanation, "max_registers=80") != NULL);
    /* A cap the code carries is changed where it is set: a PTX .maxnreg (the source's
     * __maxnreg__, which neither -maxrregcount nor __launch_bounds__ can change) ... */
    r.reg_cap = 96;
    r.reg_cap_kind = OC_REG_CAP_MAXNREG;
    CHECK(oc_launch_check(a, &r, 641, 0, &v) == OC_OK && !v.fits);
    CHECK_EQ_I64(v.reg_cap_for_block, 80);
    CHECK(strstr(v.explanation, ".maxnreg 96 to 80 (__maxnreg__(80)") != NULL);
    CHECK(strstr(v.explanation, "__launch_bounds__") == NULL);
    CHECK(strstr(v.explanation, "max_registers") == NULL);
    /* ... or a cubin's recorded cap, from __maxnreg__ or -maxrregcount. */
    r.reg_cap_kind = OC_REG_CAP_BUILT;
    CHECK(oc_launch_check(a, &r, 641, 0, &v) == OC_OK && !v.fits);
    CHECK(strstr(v.explanation, "compiled under a cap of 96") != NULL);
    CHECK(strstr(v.explanation, "__maxnreg__(80) where the source has one") != NULL);
    CHECK(strstr(v.explanation, "__launch_bounds__(641) or -maxrregcount=80") != NULL);
    CHECK(strlen(v.explanation) + 1 < sizeof v.explanation); /* nothing cut */
    r.reg_cap = 0;
    r.reg_cap_kind = OC_REG_CAP_NONE;

    /* The suggested cap really makes it fit, and one register more does not. */
    r.regs_per_thread = 80;
    CHECK(oc_launch_check(a, &r, 641, 0, &v) == OC_OK && v.fits);
    r.regs_per_thread = 81;
    CHECK(oc_launch_check(a, &r, 641, 0, &v) == OC_OK && !v.fits);
}

static void test_occupancy_and_residency(void)
{
    const oc_gpu_arch *a = oc_gpu_arch_find(90);
    oc_kernel_resources r = {.regs_per_thread = 32};
    oc_launch_verdict v;
    /* 32 registers: 1024 regs/warp, 16 warps per sub-partition = 64 warps: full occupancy. */
    CHECK(oc_launch_check(a, &r, 256, 0, &v) == OC_OK);
    CHECK_EQ_I64(v.blocks_per_sm, 8);
    CHECK(v.occupancy == 1.0);
    /* Tiny blocks hit the 32-blocks-per-SM limit. */
    CHECK(oc_launch_check(a, &r, 32, 0, &v) == OC_OK);
    CHECK_EQ_I64(v.blocks_per_sm, 32);
    CHECK(strcmp(v.limiter, "blocks") == 0);
    CHECK(v.occupancy == 0.5);
    /* sm_86 holds 48 warps: 1024-thread blocks leave 16 idle. */
    CHECK(oc_launch_check(oc_gpu_arch_find(86), &r, 1024, 0, &v) == OC_OK);
    CHECK_EQ_I64(v.blocks_per_sm, 1);
    CHECK(v.occupancy > 0.66 && v.occupancy < 0.67);
}

static void test_shared_memory(void)
{
    const oc_gpu_arch *a = oc_gpu_arch_find(90);
    oc_kernel_resources r = {.regs_per_thread = 32, .static_smem = 16 * 1024};
    oc_launch_verdict v;
    /* 16 KiB static + 1 KiB reserved = 17 KiB per block: 228 / 17 = 13 blocks. */
    CHECK(oc_launch_check(a, &r, 128, 0, &v) == OC_OK);
    CHECK(v.fits);
    CHECK_EQ_I64(v.blocks_per_sm, 13);
    CHECK(strcmp(v.limiter, "shared memory") == 0);
    CHECK(!v.needs_smem_optin);
    /* 90 KiB dynamic: over 48 KiB, fits only with the opt-in; 107 KiB a block, 2 per SM. */
    CHECK(oc_launch_check(a, &r, 128, 90 * 1024, &v) == OC_OK);
    CHECK(v.fits && v.needs_smem_optin);
    CHECK_EQ_I64(v.blocks_per_sm, 2);
    /* 16 + 212 KiB = 228 KiB > 227 KiB opt-in limit: no block size helps, no register cap. */
    CHECK(oc_launch_check(a, &r, 128, 212 * 1024, &v) == OC_OK);
    CHECK(!v.fits);
    CHECK(strcmp(v.limiter, "shared memory") == 0);
    CHECK_EQ_I64(v.largest_block, 0);
    CHECK_EQ_I64(v.reg_cap_for_block, 0);
    /* sm_86 allows 99 KiB with opt-in. */
    CHECK(oc_launch_check(oc_gpu_arch_find(86), &r, 128, 90 * 1024, &v) == OC_OK);
    CHECK(!v.fits);
}

static void test_limits_and_bad_blocks(void)
{
    const oc_gpu_arch *a = oc_gpu_arch_find(80);
    oc_kernel_resources r = {.regs_per_thread = 32, .max_threads_per_block = 256};
    oc_launch_verdict v;
    /* __launch_bounds__(256): a 288-thread block is refused whatever the registers. */
    CHECK(oc_launch_check(a, &r, 288, 0, &v) == OC_OK);
    CHECK(!v.fits);
    CHECK(strcmp(v.limiter, "launch bounds") == 0);
    CHECK_EQ_I64(v.largest_block, 256);
    CHECK_EQ_I64(v.reg_cap_for_block, 0);
    CHECK(oc_launch_check(a, &r, 0, 0, &v) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_launch_check(a, &r, 1025, 0, &v) == OC_ERR_INVALID_ARGUMENT);
    /* A launch bound under a warp: a block up to the bound fits, one thread more does not. */
    r = (oc_kernel_resources){.regs_per_thread = 32, .max_threads_per_block = 8};
    CHECK(oc_launch_check(a, &r, 8, 0, &v) == OC_OK && v.fits);
    CHECK_EQ_I64(v.largest_block, 8);
    CHECK(oc_launch_check(a, &r, 9, 0, &v) == OC_OK && !v.fits);
    CHECK_EQ_I64(v.largest_block, 8);
    /* A bound that is no multiple of 32 launches up to itself (__launch_bounds__(100): the
     * driver's maxThreadsPerBlock is 100, and 100 threads launch). */
    r = (oc_kernel_resources){.regs_per_thread = 32, .max_threads_per_block = 100};
    CHECK(oc_launch_check(a, &r, 100, 0, &v) == OC_OK && v.fits);
    CHECK_EQ_I64(v.largest_block, 100);
    CHECK(oc_launch_check(a, &r, 101, 0, &v) == OC_OK && !v.fits);
    /* .reqntid 128: that size alone launches, a smaller one neither. */
    r = (oc_kernel_resources){.regs_per_thread = 32, .max_threads_per_block = 128, .required_threads = 128};
    CHECK(oc_launch_check(a, &r, 128, 0, &v) == OC_OK && v.fits);
    CHECK_EQ_I64(v.largest_block, 128);
    CHECK(oc_launch_check(a, &r, 64, 0, &v) == OC_OK && !v.fits);
    CHECK(strstr(v.explanation, "requires blocks of exactly 128 threads") != NULL);
    CHECK(oc_launch_check(a, &r, 129, 0, &v) == OC_OK && !v.fits);
    /* A static size past any GPU's, as a damaged file may claim, cannot wrap with the dynamic
     * part to a small sum that fits. */
    r = (oc_kernel_resources){.regs_per_thread = 32, .static_smem = SIZE_MAX - 2047};
    CHECK(oc_launch_check(a, &r, 128, 4096, &v) == OC_OK && !v.fits);
    /* More registers than a thread may have: nothing fits. */
    r = (oc_kernel_resources){.regs_per_thread = 256};
    CHECK(oc_launch_check(a, &r, 32, 0, &v) == OC_OK);
    CHECK(!v.fits);
    CHECK_EQ_I64(v.largest_block, 0);
}

static void test_parse(void)
{
    CHECK(oc_gpu_arch_parse("sm_90") == oc_gpu_arch_find(90));
    CHECK(oc_gpu_arch_parse("sm_90a") == oc_gpu_arch_find(90));
    CHECK(oc_gpu_arch_parse("9.0") == oc_gpu_arch_find(90));
    CHECK(oc_gpu_arch_parse("86") == oc_gpu_arch_find(86));
    CHECK(oc_gpu_arch_parse("sm_120") == oc_gpu_arch_find(120));
    CHECK(oc_gpu_arch_parse("sm_91") == NULL);
    CHECK(oc_gpu_arch_parse("sm_") == NULL);
    CHECK(oc_gpu_arch_parse("sm_90x") == NULL);
    CHECK(oc_gpu_arch_parse("") == NULL);
    CHECK(oc_gpu_arch_parse(NULL) == NULL);
    for (int i = 0; oc_gpu_arch_at(i); i++) {
        const oc_gpu_arch *a = oc_gpu_arch_at(i);
        CHECK(oc_gpu_arch_parse(a->name) == a);
        CHECK(a->smem_per_block_optin <= a->smem_per_sm);
        CHECK(a->max_warps_per_sm * 32 >= a->max_threads_per_block);
    }
}

int main(void)
{
    test_h100_register_table();
    test_explanation_of_641();
    test_occupancy_and_residency();
    test_shared_memory();
    test_limits_and_bad_blocks();
    test_parse();
    return oc_test_finish();
}
