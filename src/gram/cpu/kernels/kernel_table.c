/*
 * kernel_table.c - the CPU Gram kernel of each instruction set (kernel.h); core/isa.c says
 * which set is in use.
 */
#include "gram/cpu/kernels/kernel.h"

static const oc_cpu_kernel kernels[] = {
    {OC_CPU_ISA_REF, "ref", OC_KERNEL_REF_MR, OC_KERNEL_REF_NR, oc_gram_kernel_ref, oc_epilogue_ref},
    {OC_CPU_ISA_AVX2, "avx2", OC_KERNEL_AVX2_MR, OC_KERNEL_AVX2_NR, oc_gram_kernel_avx2, oc_epilogue_avx2},
    {OC_CPU_ISA_AVX512, "avx512", OC_KERNEL_AVX512_MR, OC_KERNEL_AVX512_NR, oc_gram_kernel_avx512, oc_epilogue_avx512},
};
_Static_assert(sizeof kernels / sizeof kernels[0] == OC_CPU_ISA_COUNT, "a kernel for every path");

const oc_cpu_kernel *oc_cpu_kernel_get(void) { return &kernels[oc_cpu_isa_get()]; }
