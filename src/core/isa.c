/*
 * isa.c - cpuid detection and the choice of the CPU kernel path (see isa.h).
 *
 * An instruction set is usable only when the CPU has it (cpuid) AND the OS saves its
 * registers on a context switch (XCR0 read with xgetbv): a kernel that uses zmm registers
 * under an OS that does not save them would be corrupted by the first interrupt, and one
 * run where the OS disabled them faults. Both checks are done here, once.
 */
#include "core/isa.h"

#include <cpuid.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outcore.h"

static const char *const isa_names[] = {"ref", "avx2", "avx512"};
_Static_assert(sizeof isa_names / sizeof isa_names[0] == OC_CPU_ISA_COUNT, "a name for every path");

const char *oc_cpu_isa_name(oc_cpu_isa_id isa) { return (unsigned)isa < OC_CPU_ISA_COUNT ? isa_names[isa] : "?"; }

/* XCR0 state components (Intel SDM vol. 1, 13.1). */
#define XCR0_SSE (1u << 1)
#define XCR0_AVX (1u << 2)
#define XCR0_OPMASK (1u << 5)
#define XCR0_ZMM_HI256 (1u << 6)
#define XCR0_HI16_ZMM (1u << 7)

static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    /* The xgetbv mnemonic needs -mxsave; this file is built for any x86-64, so emit the
     * instruction's bytes (0f 01 d0) directly. Only called after cpuid reported OSXSAVE. */
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static int detect(oc_cpu_isa_id isa)
{
    if (isa == OC_CPU_ISA_REF) return 1;
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    /* Both ISA kernels are also built with -mpopcnt and -mbmi2 (CMakeLists.txt). */
    const unsigned osxsave = 1u << 27, avx = 1u << 28, popcnt = 1u << 23;
    if ((ecx & (osxsave | avx | popcnt)) != (osxsave | avx | popcnt)) return 0;
    uint64_t xcr0 = read_xcr0();
    if ((xcr0 & (XCR0_SSE | XCR0_AVX)) != (XCR0_SSE | XCR0_AVX)) return 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
    const unsigned avx2 = 1u << 5, bmi2 = 1u << 8;
    if ((ebx & (avx2 | bmi2)) != (avx2 | bmi2)) return 0;
    if (isa == OC_CPU_ISA_AVX2) return 1;

    const uint64_t zmm_state = XCR0_OPMASK | XCR0_ZMM_HI256 | XCR0_HI16_ZMM;
    if ((xcr0 & zmm_state) != zmm_state) return 0;
    const unsigned avx512f = 1u << 16, avx512bw = 1u << 30, avx512vl = 1u << 31;
    const unsigned vpopcntdq = 1u << 14; /* in ECX */
    return (ebx & (avx512f | avx512bw | avx512vl)) == (avx512f | avx512bw | avx512vl) && (ecx & vpopcntdq);
}

int oc_cpu_isa_supported(oc_cpu_isa_id isa)
{
    static atomic_int cache[OC_CPU_ISA_COUNT]; /* 0 unknown, 1 no, 2 yes */
    if ((unsigned)isa >= OC_CPU_ISA_COUNT) return 0;
    int v = atomic_load(&cache[isa]);
    if (v == 0) {
        v = detect(isa) ? 2 : 1;
        atomic_store(&cache[isa], v);
    }
    return v == 2;
}

static oc_cpu_isa_id best_supported(void)
{
    for (int isa = OC_CPU_ISA_COUNT - 1; isa > OC_CPU_ISA_REF; --isa)
        if (oc_cpu_isa_supported((oc_cpu_isa_id)isa)) return (oc_cpu_isa_id)isa;
    return OC_CPU_ISA_REF;
}

/* The selection. Written by select_isa() under pthread_once (first use) or by
 * oc_cpu_isa_select() while no job runs; read by jobs. */
static _Atomic(oc_cpu_isa_id) selected;
static char selection_note[80];
static pthread_once_t selection_once = PTHREAD_ONCE_INIT;

/* Makes the kernel that `name` asks for current (NULL or "": the best supported one).
 * Returns nonzero when the request was honoured. */
static int select_isa(const char *name)
{
    oc_cpu_isa_id best = best_supported();
    selection_note[0] = '\0';
    if (!name || !*name) {
        atomic_store(&selected, best);
        return 1;
    }
    for (int isa = 0; isa < OC_CPU_ISA_COUNT; ++isa) {
        if (strcmp(name, isa_names[isa]) != 0) continue;
        if (oc_cpu_isa_supported((oc_cpu_isa_id)isa)) {
            atomic_store(&selected, (oc_cpu_isa_id)isa);
            return 1;
        }
        snprintf(selection_note, sizeof selection_note, "OUTCORE_CPU_ISA=%s: not supported by this CPU", name);
        atomic_store(&selected, best);
        return 0;
    }
    snprintf(selection_note, sizeof selection_note, "OUTCORE_CPU_ISA=%.24s: unknown, use ref, avx2 or avx512", name);
    atomic_store(&selected, best);
    return 0;
}

static void select_from_environment(void) { select_isa(getenv("OUTCORE_CPU_ISA")); }

oc_cpu_isa_id oc_cpu_isa_get(void)
{
    pthread_once(&selection_once, select_from_environment);
    return atomic_load(&selected);
}

const char *oc_cpu_isa_note(void)
{
    pthread_once(&selection_once, select_from_environment);
    return selection_note;
}

int oc_cpu_isa_select(const char *name)
{
    pthread_once(&selection_once, select_from_environment);
    return select_isa(name);
}

const char *oc_cpu_isa(void) { return isa_names[oc_cpu_isa_get()]; }
