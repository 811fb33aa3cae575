/*
 * epilogue_ref.c - the reference tile epilogue: the specification of the epilogue contract
 * in ../kernel.h, element by element through src/core/metric.h. Every ISA epilogue is
 * tested against it byte for byte; keep it obviously correct.
 */
#include "core/metric.h"
#include "gram/cpu/kernels/kernel.h"

void oc_epilogue_ref(oc_epilogue_kind kind, const uint32_t *c, int64_t ldc, const int64_t *pa, const int64_t *pb,
                     int64_t rows, int64_t cols, int64_t pop_max, void *out, int64_t ldo)
{
    (void)pop_max;
    for (int64_t r = 0; r < rows; ++r) {
        const uint32_t *cr = c + r * ldc;
        switch (kind) {
        case OC_EPILOGUE_COUNTS_U16: {
            uint16_t *o = (uint16_t *)out + r * ldo;
            for (int64_t j = 0; j < cols; ++j) o[j] = (uint16_t)cr[j];
            break;
        }
        case OC_EPILOGUE_HAMMING_I32: {
            int32_t *o = (int32_t *)out + r * ldo;
            for (int64_t j = 0; j < cols; ++j) o[j] = (int32_t)oc_metric_hamming(cr[j], pa[r], pb[j]);
            break;
        }
        case OC_EPILOGUE_HAMMING_U16: {
            uint16_t *o = (uint16_t *)out + r * ldo;
            for (int64_t j = 0; j < cols; ++j) o[j] = (uint16_t)oc_metric_hamming(cr[j], pa[r], pb[j]);
            break;
        }
        case OC_EPILOGUE_JACCARD: {
            float *o = (float *)out + r * ldo;
            for (int64_t j = 0; j < cols; ++j) o[j] = oc_metric_jaccard(cr[j], pa[r], pb[j]);
            break;
        }
        case OC_EPILOGUE_COSINE: {
            float *o = (float *)out + r * ldo;
            for (int64_t j = 0; j < cols; ++j) o[j] = oc_metric_cosine(cr[j], pa[r], pb[j]);
            break;
        }
        }
    }
}
