/*
 * mm_ref.c - the reference loops of the CPU product, for machines without a BLAS: blocked
 * over columns for the cache, each element summed in k order (so a K panel split changes no
 * bit), rows shared among threads.
 */
#include <stdint.h>

#include "core/threads.h"
#include "matmul/cpu/mm_cpu.h"

#define ROWS_PER_TASK 16
#define COLS_PER_BLOCK 256

typedef struct ref_args {
    oc_mm_kind kind;
    int64_t h, w, kw;
    const void *a, *b;
    void *acc;
} ref_args;

#define REF_LOOP(TA, TACC, g, r0, r1)                                                       \
    do {                                                                                    \
        const TA *a = (g)->a;                                                               \
        const TA *b = (g)->b;                                                               \
        TACC *acc = (g)->acc;                                                               \
        for (int64_t j0 = 0; j0 < (g)->w; j0 += COLS_PER_BLOCK) {                           \
            const int64_t j1 = j0 + COLS_PER_BLOCK < (g)->w ? j0 + COLS_PER_BLOCK : (g)->w; \
            for (int64_t i = (r0); i < (r1); i++) {                                         \
                TACC *c = acc + i * (g)->w;                                                 \
                for (int64_t l = 0; l < (g)->kw; l++) {                                     \
                    const TACC x = (TACC)a[i * (g)->kw + l];                                \
                    const TA *bl = b + l * (g)->w;                                          \
                    for (int64_t j = j0; j < j1; j++) c[j] += x * (TACC)bl[j];              \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    } while (0)

static oc_status ref_task(void *arg, int64_t task, int worker)
{
    (void)worker;
    const ref_args *g = arg;
    const int64_t r0 = task * ROWS_PER_TASK, r1 = r0 + ROWS_PER_TASK < g->h ? r0 + ROWS_PER_TASK : g->h;
    switch (g->kind) {
    case OC_MM_KIND_F64:
        REF_LOOP(double, double, g, r0, r1);
        break;
    case OC_MM_KIND_F32:
        REF_LOOP(float, float, g, r0, r1);
        break;
    default:
        REF_LOOP(int8_t, int32_t, g, r0, r1);
        break;
    }
    return OC_OK;
}

oc_status oc_mm_ref_gemm(oc_context *ctx, oc_mm_kind kind, int threads, int64_t h, int64_t w, int64_t kw, const void *a,
                         const void *b, void *acc)
{
    ref_args g = {kind, h, w, kw, a, b, acc};
    const int64_t tasks = (h + ROWS_PER_TASK - 1) / ROWS_PER_TASK;
    if (threads <= 1 || tasks <= 1) {
        for (int64_t t = 0; t < tasks; t++) ref_task(&g, t, 0);
        return OC_OK;
    }
    return oc_parallel_run(ctx, threads < tasks ? threads : (int)tasks, tasks, ref_task, &g, NULL, NULL);
}
