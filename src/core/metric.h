/*
 * metric.h - the Gram epilogues, written once for every backend (host and device).
 *
 * Floating metrics are computed in double from exact integers and rounded once to float32.
 * IEEE division and square root are correctly rounded on x86-64 and on CUDA devices alike,
 * and no step here can be contracted into an FMA, so every backend, tiling and thread count
 * gives bit-identical results. Keep these functions free of any other operation.
 */
#ifndef OC_CORE_METRIC_H
#define OC_CORE_METRIC_H

#include <math.h>
#include <stdint.h>

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
