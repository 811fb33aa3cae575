/*
 * mm_half_run.h - runs of float32 rounded to float16 and of float16 widened to float32,
 * element for element as mm_half.h's oc_mm_float_to_half and oc_mm_half_to_float (NaNs
 * included), on the CPU's F16C instructions where it has them (eight elements an
 * instruction), else on those scalar conversions. Contiguous runs; any alignment.
 */
#ifndef OC_MATMUL_MM_HALF_RUN_H
#define OC_MATMUL_MM_HALF_RUN_H

#include <stdint.h>

typedef enum { OC_MM_HALF_SCALAR, OC_MM_HALF_F16C, OC_MM_HALF_VARIANTS } oc_mm_half_variant;

typedef struct oc_mm_half_runs {
    const char *name;
    /* n float32 at src rounded to nearest even into n float16 at dst. */
    void (*to_half)(const void *src, int64_t n, void *dst);
    /* n float16 at src widened (exactly) into n float32 at dst. */
    void (*to_float)(const void *src, int64_t n, void *dst);
} oc_mm_half_runs;

/* Variant v's runs, or NULL where this build or CPU lacks it (tests compare the variants). */
const oc_mm_half_runs *oc_mm_half_runs_get(oc_mm_half_variant v);

/* The fastest runs this CPU has (chosen once). */
const oc_mm_half_runs *oc_mm_half_runs_best(void);

#endif
