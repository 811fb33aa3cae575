/*
 * test_topk_merge.c - merging the top-k lists of several devices (oc_select_topk_merge):
 * candidates of each row split at random between devices, each device's lists its own top
 * kept, merged in every order and on one or several threads, give exactly the lists of one
 * device that saw them all. More rows than one merge task takes (4096), so that the row
 * blocks split between threads.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "gram/select/select.h"

enum { ROWS = 4096 + 40, COLS = 300, K = 7, DEVICES = 3 };

static int cmp_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x < y) - (x > y);
}

/* The best `kept` of n keys, best first, 0 past them. */
static void best_of(const uint64_t *keys, int n, int kept, uint64_t *out)
{
    uint64_t tmp[COLS];
    memcpy(tmp, keys, (size_t)n * sizeof *tmp);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_desc);
    for (int i = 0; i < kept; ++i) out[i] = i < n ? tmp[i] : 0;
}

static oc_select *new_select(oc_context *ctx)
{
    oc_select_config cfg = {
        .mode = OC_SELECT_TOPK, .n = ROWS, .p = COLS, .metric = OC_METRIC_COUNTS, .dtype = OC_DTYPE_INT32, .k = K};
    oc_select *s = NULL;
    CHECK(oc_select_create(ctx, &cfg, &s) == OC_OK);
    return s;
}

int main(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    /* A job without a selection (dense, on several devices) merges no lists and reads none. */
    CHECK(oc_select_topk_merge(ctx, NULL, NULL, 0, 4) == OC_OK);
    srand(17);
    /* Scores with many ties (small counts), so the column decides often. */
    static uint64_t part[DEVICES][ROWS * K], whole[ROWS * K];
    for (int i = 0; i < ROWS; ++i) {
        uint64_t all[COLS], mine[DEVICES][COLS];
        int nmine[DEVICES] = {0};
        /* Row 0 has fewer candidates than K on every device but one. */
        int cols = i == 0 ? 4 : COLS;
        for (int j = 0; j < cols; ++j) {
            uint32_t score = (uint32_t)(rand() % 5) ^ 0x80000000u;
            all[j] = (uint64_t)score << 32 | (0xFFFFFFFFu - (uint32_t)j);
            int d = i == 0 ? 1 : rand() % DEVICES;
            mine[d][nmine[d]++] = all[j];
        }
        best_of(all, cols, K, whole + i * K);
        for (int d = 0; d < DEVICES; ++d) best_of(mine[d], nmine[d], K, part[d] + i * K);
    }
    static const int orders[6][DEVICES] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int o = 0; o < 12; ++o) {
        oc_select *s = new_select(ctx);
        if (!s) break;
        CHECK_EQ_I64(oc_select_kept(s), K);
        /* The first device's lists land in the selection's, the others merge in. */
        const int *order = orders[o % 6];
        const int threads = o < 6 ? 1 : 3;
        memcpy(oc_select_topk_keys(s), part[order[0]], sizeof whole);
        const uint64_t *lists[DEVICES - 1];
        for (int d = 1; d < DEVICES; ++d) lists[d - 1] = part[order[d]];
        CHECK(oc_select_topk_merge(ctx, s, lists, DEVICES - 1, threads) == OC_OK);
        CHECK_MSG(memcmp(oc_select_topk_keys(s), whole, sizeof whole) == 0,
                  "merge order %d on %d threads differs from one device", o % 6, threads);
        oc_select_free(s);
    }
    oc_context_free(ctx);
    return oc_test_finish();
}
