/* gram_cpu.c - placeholder CPU backend: a direct loop, correct but slow. */
#include <stdlib.h>

#include "../core/error.h"
#include "../core/metric.h"
#include "../exec/backend.h"

const char *oc_cpu_isa(void) { return "ref"; }

static int cpu_usable(int device) { (void)device; return 1; }

static oc_status cpu_gram(oc_gram_job *job)
{
    oc_context *ctx = job->ctx;
    int64_t tp = job->p;
    char *row = malloc((size_t)tp * 4);
    if (!row) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    for (int64_t i = 0; i < job->n; ++i) {
        for (int64_t j = 0; j < tp; ++j) {
            const uint64_t *a = job->a->bits + i * job->a->words_per_row, *b = job->b->bits + j * job->b->words_per_row;
            int64_t c = 0;
            for (int64_t w = 0; w < job->a->words_per_row; ++w) c += __builtin_popcountll(a[w] & b[w]);
            int64_t pa = job->pop_a[i], pb = job->pop_b[j];
            switch (job->metric) {
            case OC_METRIC_JACCARD: ((float *)row)[j] = oc_metric_jaccard(c, pa, pb); break;
            case OC_METRIC_COSINE: ((float *)row)[j] = oc_metric_cosine(c, pa, pb); break;
            default: {
                int64_t v = job->metric == OC_METRIC_HAMMING ? oc_metric_hamming(c, pa, pb) : c;
                if (job->dtype == OC_DTYPE_UINT16) ((uint16_t *)row)[j] = (uint16_t)v;
                else ((int32_t *)row)[j] = (int32_t)v;
            }
            }
        }
        if (job->dense) {
            oc_dense_sink s = *job->dense;
            s.symmetric = 0;
            oc_dense_sink_store(&s, i, 0, 1, tp, row, tp);
        }
    }
    free(row);
    job->stats->backend = OC_BACKEND_CPU;
    job->stats->bit_macs_computed = (double)job->n * (double)job->p * (double)job->m;
    return OC_OK;
}

const oc_backend_vtbl oc_backend_cpu = {OC_BACKEND_ABI, "cpu", cpu_usable, cpu_gram};
