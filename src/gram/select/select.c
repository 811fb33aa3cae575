/*
 * select.c - the selection object (select.h): creation and set-up, worker errors, the
 * accessors, and the entry point of a converted tile, which goes to the job's mode:
 * select_topk.c (top-k lists) or select_pairs.c (threshold pairs). select_state.h holds
 * the state they share; select_key.h the order of both.
 */
#include "gram/select/select.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/metric.h"
#include "matrix/matrix.h"
#include "gram/select/select_state.h"

/* ---------------------------------------------------------------- errors */
void oc_select_set_error(oc_select *s, oc_status st, const char *fmt, ...)
{
    pthread_mutex_lock(&s->elock);
    if (s->err == OC_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->errmsg, sizeof s->errmsg, fmt, ap);
        va_end(ap);
        s->err = st;
    }
    pthread_mutex_unlock(&s->elock);
}

oc_status oc_select_check(oc_context *ctx, oc_select *s)
{
    pthread_mutex_lock(&s->elock);
    oc_status st = s->err;
    char msg[sizeof s->errmsg];
    memcpy(msg, s->errmsg, sizeof msg);
    pthread_mutex_unlock(&s->elock);
    return st == OC_OK ? OC_OK : oc_fail(ctx, st, "%s", msg);
}

/* ---------------------------------------------------------------- set-up */
/* See select_state.h. The test is made in the result dtype: float scores against (float)T, integer scores against
 * ceil(T) (>=) or floor(T) (Hamming, <=). */
uint64_t oc_select_score_min_key(oc_key_kind kind, double t)
{
    const uint64_t none = 1ull << 32;
    switch (kind) {
    case OC_KEY_F32:
        return oc_key_f32((float)t);
    case OC_KEY_I32: {
        double lo = ceil(t);
        if (lo <= (double)INT32_MIN) return 0;
        return lo > (double)INT32_MAX ? none : oc_key_i32((int32_t)lo);
    }
    case OC_KEY_U16: {
        double lo = ceil(t);
        if (lo <= 0) return 0;
        return lo > 65535.0 ? none : (uint64_t)lo;
    }
    case OC_KEY_I32_REV: {
        double hi = floor(t);
        if (hi >= (double)INT32_MAX) return 0;
        return hi < (double)INT32_MIN ? none : ~oc_key_i32((int32_t)hi);
    }
    default: {
        double hi = floor(t);
        if (hi >= 65535.0) return 0;
        return hi < 0 ? none : 0xFFFFu - (uint64_t)hi;
    }
    }
}

static oc_key_kind key_kind(oc_metric metric, oc_dtype dtype)
{
    if (dtype == OC_DTYPE_FLOAT32) return OC_KEY_F32;
    int rev = oc_metric_info_of(metric)->is_distance;
    if (dtype == OC_DTYPE_UINT16) return rev ? OC_KEY_U16_REV : OC_KEY_U16;
    return rev ? OC_KEY_I32_REV : OC_KEY_I32;
}

oc_status oc_select_create(oc_context *ctx, const oc_select_config *cfg, oc_select **out)
{
    if (cfg->n > OC_KEY_MAX_INDEX || cfg->p > OC_KEY_MAX_INDEX)
        return oc_fail(ctx, OC_ERR_UNSUPPORTED,
                       "top-k and threshold outputs index rows and columns in 32 bits: "
                       "%lld x %lld is too large",
                       (long long)cfg->n, (long long)cfg->p);
    /* aligned: the locks are a cache line each (sizeof is a multiple of their alignment) */
    oc_select *s = aligned_alloc(_Alignof(oc_select), sizeof *s);
    if (!s) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the selection state");
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->spill_fd = -1;
    s->io_ctx = ctx;
    s->kind = key_kind(cfg->metric, cfg->dtype);
    s->elem = oc_dtype_size(cfg->dtype);
    s->topk_min_key = cfg->use_min_score ? oc_select_score_min_key(s->kind, cfg->min_score) : 0;
    for (int i = 0; i < NLOCKS; ++i) pthread_mutex_init(&s->locks[i].m, NULL);
    pthread_mutex_init(&s->plock, NULL);
    pthread_mutex_init(&s->elock, NULL);
    *out = s;

    if (cfg->mode == OC_SELECT_PAIRS) {
        oc_select_pairs_create(s);
        return OC_OK;
    }
    return oc_select_topk_create(ctx, s);
}

oc_status oc_select_begin(oc_context *ctx, oc_select *s, int64_t tile, int workers)
{
    s->tile = tile;
    s->tiles_j = (s->cfg.p + tile - 1) / tile;
    s->nworkers = workers;
    s->workers = calloc((size_t)(workers > 0 ? workers : 1), sizeof *s->workers);
    if (!s->workers) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the selection's worker state");
    int64_t tt;
    if (!oc_mul_i64(tile, tile, &tt))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "tile edge %lld is too large", (long long)tile);
    return s->cfg.mode == OC_SELECT_TOPK ? oc_select_topk_begin(ctx, s) : oc_select_pairs_begin(ctx, s);
}

oc_status oc_select_begin_rows(oc_context *ctx, oc_select *s, int64_t rows)
{
    s->whole_rows = 1;
    OC_CHECK(ctx, oc_select_begin(ctx, s, rows, 0));
    s->tiles_j = 1;
    return s->cfg.mode == OC_SELECT_PAIRS ? oc_select_pairs_rows(s) : OC_OK;
}

int64_t oc_select_piece_pairs(const oc_select *s, int workers)
{
    const int64_t pairs = s->buffer_bytes / (int64_t)(4 + s->elem) / (2 * (workers > 0 ? workers : 1));
    return pairs > 4096 ? pairs : 4096;
}

void oc_select_free(oc_select *s)
{
    if (!s) return;
    oc_select_topk_free(s);
    oc_select_pairs_free(s);
    free(s->workers);
    for (int i = 0; i < NLOCKS; ++i) pthread_mutex_destroy(&s->locks[i].m);
    pthread_mutex_destroy(&s->plock);
    pthread_mutex_destroy(&s->elock);
    free(s);
}

oc_select_mode oc_select_get_mode(const oc_select *s) { return s->cfg.mode; }
oc_key_kind oc_select_key_kind(const oc_select *s) { return s->kind; }
int64_t oc_select_kept(const oc_select *s) { return s->kept; }
int64_t oc_select_lists_bytes(const oc_select *s)
{
    return s->cfg.mode == OC_SELECT_TOPK ? s->cfg.n * (s->kept + 1) * 8 : 0;
}
uint64_t oc_select_min_key(const oc_select *s) { return s->min_key; }

/* ---------------------------------------------------------------- tiles */
oc_status oc_select_tile(oc_select *s, int worker, int64_t i0, int64_t j0, int64_t rows, int64_t cols, const void *tile,
                         int64_t ld)
{
    sel_worker *w = &s->workers[worker];
    if (s->cfg.mode == OC_SELECT_TOPK) {
        oc_select_topk_tile(s, w, i0, j0, rows, cols, tile, ld);
        return OC_OK;
    }
    return oc_select_pairs_tile(s, w, i0, j0, rows, cols, tile, ld);
}

/* ---------------------------------------------------------------- resumed jobs */
int64_t oc_select_pairs_blocks_delivered(const oc_select *s) { return s->next_block; }

void oc_select_pairs_resume(oc_select *s, int64_t blocks, int64_t pairs)
{
    s->next_block = blocks;
    s->emitted = pairs;
}

void oc_select_topk_restored(oc_select *s)
{
    /* A list's floor is its kept-th key, 0 while it is not full (select_topk.c). */
    if (s->kept == 0) return;
    for (int64_t i = 0; i < s->cfg.n; ++i)
        atomic_store_explicit(&s->floors[i], s->keys[i * s->kept + s->kept - 1], memory_order_relaxed);
}
