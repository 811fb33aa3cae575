/*
 * isa.h - the CPU kernel path: which instruction set the CPU kernels (Gram, map) use.
 *
 * The path is chosen once, on first use, from cpuid and the OS's saved-state mask (xgetbv):
 * the best one the CPU and the OS support, or the one OUTCORE_CPU_ISA=ref|avx2|avx512
 * names. A request the CPU cannot honour, or an unknown name, falls back to the best
 * supported path and says so in oc_cpu_isa_note(); a kernel whose instructions the CPU
 * lacks is never called.
 */
#ifndef OC_CORE_ISA_H
#define OC_CORE_ISA_H

typedef enum oc_cpu_isa_id {
    OC_CPU_ISA_REF = 0,
    OC_CPU_ISA_AVX2 = 1,
    OC_CPU_ISA_AVX512 = 2,
    OC_CPU_ISA_COUNT
} oc_cpu_isa_id;

/* The path in use (selected on first call; thread-safe). */
oc_cpu_isa_id oc_cpu_isa_get(void);

/* "ref", "avx2", "avx512". */
const char *oc_cpu_isa_name(oc_cpu_isa_id isa);

/* Why the kernel in use differs from what was asked ("" when it does not). */
const char *oc_cpu_isa_note(void);

/* Nonzero when this CPU and OS can run the kernel of isa. */
int oc_cpu_isa_supported(oc_cpu_isa_id isa);

/* Tests: parses a name as OUTCORE_CPU_ISA would and makes the result the kernel in use.
 * Returns nonzero when the named path is supported (and now in use); otherwise the best
 * path is in use with a note. Call only while no job runs. */
int oc_cpu_isa_select(const char *name);

#endif
