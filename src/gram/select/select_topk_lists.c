/*
 * select_topk_lists.c - the top-k lists leave the selection: merged with other devices'
 * lists (oc_select_topk_merge), handed to the caller as indices and scores
 * (oc_select_topk_result); both on all cores, over blocks of rows.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "matrix/matrix.h"
#include "core/threads.h"
#include "gram/select/select.h"
#include "gram/select/select_state.h"

/* Rows per task of the parallel merge and of the hand-over below. */
enum { RESULT_ROWS = 4096 };

typedef struct merge_task {
    oc_select *s;
    const uint64_t *const *lists;
    int count;
    int64_t row0, rows; /* the lists hold rows [row0, row0 + rows) */
} merge_task;

/* Rows row0 + [task * RESULT_ROWS, ...): every list merged into the selection's, one at a
 * time. */
static oc_status merge_rows(void *arg, int64_t task, int worker)
{
    (void)worker;
    const merge_task *mt = arg;
    oc_select *s = mt->s;
    const int64_t kept = s->kept, first = task * RESULT_ROWS;
    const int64_t last = first + RESULT_ROWS < mt->rows ? first + RESULT_ROWS : mt->rows;
    uint64_t stack[64], *row = kept <= 64 ? stack : malloc((size_t)kept * sizeof *row);
    if (!row) return OC_ERR_NO_MEMORY;
    for (int64_t i = first; i < last; ++i)
        for (int l = 0; l < mt->count; ++l) {
            const uint64_t *a = s->keys + (mt->row0 + i) * kept, *b = mt->lists[l] + i * kept;
            int64_t x = 0, y = 0;
            /* Both lists are best first with 0 past their ends; keys are distinct within a
             * row (select_key.h), and a key in both (a resumed job's lists hold tiles
             * that a device's lists hold too: gram_resume.h) is kept once. */
            for (int64_t o = 0; o < kept; ++o) {
                uint64_t ka = x < kept ? a[x] : 0, kb = y < kept ? b[y] : 0;
                row[o] = ka >= kb ? ka : kb;
                x += ka >= kb && ka != 0;
                y += kb >= ka && kb != 0;
            }
            memcpy(s->keys + (mt->row0 + i) * kept, row, (size_t)kept * sizeof *row);
        }
    if (row != stack) free(row);
    return OC_OK;
}

oc_status oc_select_topk_merge(oc_context *ctx, oc_select *s, const uint64_t *const *lists, int count, int threads)
{
    /* No lists, no selection to read: a dense job on several devices merges nothing. */
    if (count <= 0) return OC_OK;
    return oc_select_topk_merge_rows(ctx, s, lists, count, 0, s->cfg.n, threads);
}

oc_status oc_select_topk_merge_rows(oc_context *ctx, oc_select *s, const uint64_t *const *lists, int count,
                                    int64_t row0, int64_t rows, int threads)
{
    if (count <= 0 || rows <= 0 || s->kept <= 0) return OC_OK;
    if (row0 < 0 || row0 + rows > s->cfg.n)
        return oc_fail(ctx, OC_ERR_INTERNAL, "top-k merge of rows [%lld, %lld) past the %lld lists", (long long)row0,
                       (long long)(row0 + rows), (long long)s->cfg.n);
    merge_task mt = {s, lists, count, row0, rows};
    const int64_t tasks = (rows + RESULT_ROWS - 1) / RESULT_ROWS;
    if (threads < 1) threads = 1;
    oc_status st = oc_parallel_run(ctx, tasks < threads ? (int)tasks : threads, tasks, merge_rows, &mt, NULL, NULL);
    if (st == OC_ERR_NO_MEMORY)
        return oc_fail(ctx, st, "cannot allocate a top-k merge row of %lld keys", (long long)s->kept);
    return st;
}

/* The lists of rows [task * RESULT_ROWS, ...) into the caller's arrays. */
typedef struct result_task {
    const oc_select *s;
    int64_t *indices;
    void *scores;
} result_task;

void oc_select_padding_score(oc_dtype dtype, int use_min_score, void *score)
{
    if (!use_min_score) memset(score, 0, oc_dtype_size(dtype));
    else if (dtype == OC_DTYPE_FLOAT32) *(float *)score = NAN;
    else memset(score, 0xFF, oc_dtype_size(dtype)); /* -1 as int32, 65535 as uint16 */
}

/* The lists of rows [first, last) into indices and scores (either may be NULL), row i at
 * row i - base of them. */
static void fill_rows(const oc_select *s, int64_t first, int64_t last, int64_t *indices, void *scores, int64_t base)
{
    const int64_t k = s->cfg.k, kept = s->kept;
    /* With a minimum score, a key below it is padding: the lists are best first, so the
     * keys that pass are exactly the top-k among the columns that pass. */
    const int none_pass = s->topk_min_key > 0xFFFFFFFFu;
    const uint64_t min_key = none_pass ? 0 : s->topk_min_key << 32;
    for (int64_t i = first; i < last; ++i)
        for (int64_t t = 0; t < k; ++t) {
            uint64_t key = t < kept ? s->keys[i * kept + t] : 0;
            if (none_pass || key < min_key) key = 0;
            int64_t e = (i - base) * k + t;
            if (indices) indices[e] = key ? oc_key_index(key) : -1;
            if (!scores) continue;
            if (key) oc_key_store_score(s->kind, (uint32_t)(key >> 32), scores, e);
            else oc_select_padding_score(s->cfg.dtype, s->cfg.use_min_score, (char *)scores + e * (int64_t)s->elem);
        }
}

static oc_status result_rows(void *arg, int64_t task, int worker)
{
    (void)worker;
    const result_task *rt = arg;
    const int64_t first = task * RESULT_ROWS, n = rt->s->cfg.n;
    fill_rows(rt->s, first, first + RESULT_ROWS < n ? first + RESULT_ROWS : n, rt->indices, rt->scores, 0);
    return OC_OK;
}

oc_status oc_select_topk_rows(oc_context *ctx, oc_select *s, int64_t first, int64_t rows, int64_t *indices,
                              void *scores)
{
    OC_CHECK(ctx, oc_select_check(ctx, s));
    if (first < 0 || rows < 0 || first + rows > s->cfg.n)
        return oc_fail(ctx, OC_ERR_INTERNAL, "top-k rows %lld + %lld of %lld", (long long)first, (long long)rows,
                       (long long)s->cfg.n);
    fill_rows(s, first, first + rows, indices, scores, first);
    return OC_OK;
}

oc_status oc_select_topk_result(oc_context *ctx, oc_select *s, int threads, int64_t *indices, void *scores)
{
    OC_CHECK(ctx, oc_select_check(ctx, s));
    result_task rt = {s, indices, scores};
    const int64_t tasks = (s->cfg.n + RESULT_ROWS - 1) / RESULT_ROWS;
    /* A million lists take milliseconds on one core: the job's cores share them. */
    if (tasks <= 1 || threads <= 1) {
        for (int64_t t = 0; t < tasks; ++t) result_rows(&rt, t, 0);
        return OC_OK;
    }
    return oc_parallel_run(ctx, threads < tasks ? threads : (int)tasks, tasks, result_rows, &rt, NULL, NULL);
}
