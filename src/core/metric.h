/*
 * metric.h - the Gram metrics: what the library knows of each, in one table (names.c)
 * indexed by oc_metric, and their formulas, written once for every backend (host and device).
 *
 * The table gives a metric's name, whether it is a float similarity or a whole-number count,
 * whether smaller is better, the range a threshold takes and the result dtypes it allows:
 * code that needs one of these properties reads the table. Code that picks a metric's formula
 * (the CPU and GPU epilogues, the sparse path) switches over oc_metric without a default, so
 * the compiler names every such site when a metric is added (-Wswitch-enum on those files;
 * tests/cli/test_table_sites.py adds a pretend metric and checks that it does).
 *
 * Floating metrics are computed in double from exact integers and rounded once to float32.
 * IEEE division and square root are correctly rounded on x86-64 and on CUDA devices alike,
 * and no step here can be contracted into an FMA, so every backend, tiling and thread count
 * gives bit-identical results. Keep these functions free of any other operation.
 */
#ifndef OC_CORE_METRIC_H
#define OC_CORE_METRIC_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "outcore.h"

/* The values a threshold or minimum score of the metric may take. */
typedef enum oc_metric_range {
    OC_METRIC_RANGE_UNIT,   /* a real number in [0, 1] */
    OC_METRIC_RANGE_COLUMNS /* a whole number in [0, m], m the column count */
} oc_metric_range;

typedef struct oc_metric_info {
    const char *name;    /* as --metric and metric= take it */
    int is_float;        /* a float32 similarity; else an integer (count or distance) */
    int is_distance;     /* smaller is better: top-k ascending, thresholds keep <= T */
    int popcounts;       /* the formula reads the rows' popcounts |a|, |b| */
    int unshared_worst;  /* a pair sharing no column (c = 0) scores the worst value, 0
                                 * (unless both rows are empty: empty_pair_best), so the sparse
                                 * path may visit only pairs that share a column */
    int empty_pair_best; /* two empty rows score the best value, 1 (jaccard's 0/0): pairs
                                 * that share no column, which the sparse path adds itself */
    oc_metric_range range;
    unsigned dtypes;        /* the result dtypes allowed: bit (1u << oc_dtype) each */
    oc_dtype default_dtype; /* what OC_DTYPE_DEFAULT resolves to */
} oc_metric_info;

#ifdef __cplusplus
extern "C" {
#endif

/* The metric's row, or NULL when m is not a metric. */
const oc_metric_info *oc_metric_info_of(oc_metric m);

#ifdef __cplusplus
}
#endif

#if defined(__CUDACC__)
#define OC_HD __host__ __device__ __forceinline__
#else
#define OC_HD static inline
#endif

/* jaccard = c / (|a| + |b| - c); two empty rows are identical (0/0 = 1). */
OC_HD float oc_metric_jaccard(int64_t c, int64_t pa, int64_t pb)
{
    int64_t uni = pa + pb - c;
    return uni == 0 ? 1.0f : (float)((double)c / (double)uni);
}

/* cosine = c / sqrt(|a|·|b|); 0 when either row is empty. |a|·|b| < 2^53 is exact in double. */
OC_HD float oc_metric_cosine(int64_t c, int64_t pa, int64_t pb)
{
    return (pa == 0 || pb == 0) ? 0.0f : (float)((double)c / sqrt((double)pa * (double)pb));
}

/* hamming = |a| + |b| - 2c: the number of columns where the rows differ. */
OC_HD int64_t oc_metric_hamming(int64_t c, int64_t pa, int64_t pb) { return pa + pb - 2 * c; }

#endif
