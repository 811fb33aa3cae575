/*
 * gram_epilogue.cuh - the fused epilogue of the Gram kernels: one count in, one converted
 * element out, through the same metric functions as the CPU (src/core/metric.h), so the
 * device writes exactly the bits the CPU would.
 */
#ifndef OC_CUDA_GRAM_EPILOGUE_CUH
#define OC_CUDA_GRAM_EPILOGUE_CUH

#include "outcore.h"
#include "../core/metric.h"
#include "gram_tile.h"

/* The floating metrics stay out of line: a double division inlined at every one of a
 * thread's 128 stores would bloat the kernel and its register pressure for a step that
 * runs once per element. */
__device__ __noinline__ static float oc_gram_float_metric(int metric, int count, int pa, int pb)
{
    return metric == OC_METRIC_JACCARD ? oc_metric_jaccard(count, pa, pb) : oc_metric_cosine(count, pa, pb);
}

__device__ __forceinline__ void oc_gram_store(const oc_gram_tile &t, int r, int c, int count)
{
    if (r >= t.rows || c >= t.cols) return;
    size_t off = (size_t)r * (size_t)t.ld + (size_t)c;
    if (t.metric == OC_METRIC_JACCARD || t.metric == OC_METRIC_COSINE) {
        ((float *)t.out)[off] = oc_gram_float_metric(t.metric, count, t.pop_a[r], t.pop_b[c]);
        return;
    }
    int64_t v = t.metric == OC_METRIC_HAMMING ? oc_metric_hamming(count, t.pop_a[r], t.pop_b[c]) : count;
    if (t.dtype == OC_DTYPE_UINT16)
        ((uint16_t *)t.out)[off] = (uint16_t)v;
    else
        ((int32_t *)t.out)[off] = (int32_t)v;
}

#endif
