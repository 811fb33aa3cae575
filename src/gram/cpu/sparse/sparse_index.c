/*
 * sparse_index.c - builds the sparse view of packed matrices and, with one hub word, its hub
 * word lists (see sparse_index.h).
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/threads.h"
#include "gram/cpu/sparse/sparse_index.h"
#include "gram/sparse_memory.h"

/* The choice plans the host budget with the entries' size (gram/sparse_memory.h). */
_Static_assert(sizeof(oc_hub_entry) == OC_SPARSE_HUB_ENTRY_BYTES, "oc_hub_entry is OC_SPARSE_HUB_ENTRY_BYTES");

#define ROWS_PER_TASK 1024

typedef struct side_build {
    const oc_matrix *m;
    oc_sparse_side *s;
    const int32_t *hub_slot; /* per column: its hub bit, or -1 */
    int hub_words;
    uint32_t **scratch; /* per worker: one row's columns */
    int fill;           /* 0: count non-hub columns into ptr[i + 1]; 1: fill */
} side_build;

static oc_status side_task(void *arg, int64_t task, int worker)
{
    side_build *b = arg;
    oc_sparse_side *s = b->s;
    uint32_t *cols = b->scratch[worker];
    const int64_t end = (task + 1) * ROWS_PER_TASK < s->rows ? (task + 1) * ROWS_PER_TASK : s->rows;
    for (int64_t i = task * ROWS_PER_TASK; i < end; ++i) {
        const int64_t n = oc_matrix_row_columns(b->m, i, cols);
        int64_t kept = 0, at = b->fill ? s->ptr[i] : 0;
        for (int64_t e = 0; e < n; ++e) {
            const int32_t h = b->hub_slot[cols[e]];
            if (h < 0) {
                if (b->fill) s->idx[at + kept] = cols[e];
                kept++;
            } else if (b->fill) {
                s->hub[i * b->hub_words + h / 64] |= 1ull << (h % 64);
            }
        }
        if (!b->fill) {
            s->pop[i] = n;
            s->ptr[i + 1] = kept;
        }
    }
    return OC_OK;
}

static oc_status build_side(oc_context *ctx, const oc_matrix *m, const int32_t *hub_slot, int hub_words, int threads,
                            oc_sparse_side *s)
{
    s->rows = m->rows;
    s->ptr = calloc((size_t)m->rows + 1, sizeof *s->ptr);
    s->pop = malloc((size_t)m->rows * sizeof *s->pop);
    s->hub = hub_words ? calloc((size_t)(m->rows * hub_words), sizeof *s->hub) : NULL;
    uint32_t **scratch = calloc((size_t)threads, sizeof *scratch);
    oc_status st = OC_OK;
    if (!s->ptr || !s->pop || (hub_words && !s->hub) || !scratch) goto no_memory;
    for (int t = 0; t < threads; ++t)
        if (!(scratch[t] = malloc((size_t)(m->cols + 1) * sizeof **scratch))) goto no_memory;
    side_build b = {m, s, hub_slot, hub_words, scratch, 0};
    const int64_t tasks = (m->rows + ROWS_PER_TASK - 1) / ROWS_PER_TASK;
    OC_CHECK_GOTO(ctx, st, oc_parallel_run(ctx, threads, tasks, side_task, &b, NULL, NULL), cleanup);
    for (int64_t i = 0; i < m->rows; ++i) s->ptr[i + 1] += s->ptr[i];
    if (!(s->idx = malloc((size_t)(s->ptr[m->rows] ? s->ptr[m->rows] : 1) * sizeof *s->idx))) goto no_memory;
    b.fill = 1;
    OC_CHECK_GOTO(ctx, st, oc_parallel_run(ctx, threads, tasks, side_task, &b, NULL, NULL), cleanup);
    goto cleanup;
no_memory:
    st = oc_fail(ctx, OC_ERR_NO_MEMORY, "sparse path: cannot allocate the row lists of %s (%lld rows)", m->name,
                 (long long)m->rows);
cleanup:
    if (scratch)
        for (int t = 0; t < threads; ++t) free(scratch[t]);
    free(scratch);
    return st;
}

static int u64_ascending(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Sorts rows[n] by (pop, row): as keys pop << 32 | row (pop <= cols < 2^32, row < 2^32). */
static oc_status sort_by_pop(oc_context *ctx, uint32_t *rows, int64_t n, const int64_t *pop)
{
    uint64_t *keys = malloc((size_t)(n ? n : 1) * sizeof *keys);
    if (!keys) return oc_fail(ctx, OC_ERR_NO_MEMORY, "sparse path: cannot sort %lld hub rows", (long long)n);
    for (int64_t r = 0; r < n; ++r) keys[r] = (uint64_t)pop[rows[r]] << 32 | rows[r];
    qsort(keys, (size_t)n, sizeof *keys, u64_ascending);
    for (int64_t r = 0; r < n; ++r) rows[r] = (uint32_t)keys[r];
    free(keys);
    return OC_OK;
}

typedef struct hub_entry {
    uint32_t nb, hp, row;
} hub_entry;

static int by_hub_order(const void *x, const void *y)
{
    const hub_entry *a = x, *b = y;
    if (a->nb != b->nb) return a->nb < b->nb ? -1 : 1;
    if (a->hp != b->hp) return a->hp > b->hp ? -1 : 1;
    return a->row < b->row ? -1 : a->row > b->row;
}

/* Postings of B's non-hub columns, its hub rows in groups, its hub lists, its empty rows. */
static oc_status build_b_lists(oc_context *ctx, int64_t cols, oc_sparse_index *ix)
{
    const oc_sparse_side *b = &ix->b;
    const int64_t ones = b->ptr[b->rows];
    ix->post_ptr = calloc((size_t)cols + 1, sizeof *ix->post_ptr);
    ix->post_rows = malloc((size_t)(ones ? ones : 1) * sizeof *ix->post_rows);
    ix->hub_rows = malloc((size_t)(b->rows ? b->rows : 1) * sizeof *ix->hub_rows);
    ix->empty_b = malloc((size_t)(b->rows ? b->rows : 1) * sizeof *ix->empty_b);
    if (!ix->post_ptr || !ix->post_rows || !ix->hub_rows || !ix->empty_b)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "sparse path: cannot allocate the column lists (%lld ones)",
                       (long long)ones);
    for (int64_t e = 0; e < ones; ++e) ix->post_ptr[b->idx[e] + 1]++;
    for (int64_t c = 0; c < cols; ++c) ix->post_ptr[c + 1] += ix->post_ptr[c];
    int64_t *at = malloc((size_t)(cols ? cols : 1) * sizeof *at);
    if (!at) return oc_fail(ctx, OC_ERR_NO_MEMORY, "sparse path: cannot allocate the column lists");
    memcpy(at, ix->post_ptr, (size_t)cols * sizeof *at);
    int64_t nhub = 0;
    for (int64_t i = 0; i < b->rows; ++i) {
        for (int64_t e = b->ptr[i]; e < b->ptr[i + 1]; ++e) ix->post_rows[at[b->idx[e]]++] = (uint32_t)i;
        int any = 0;
        for (int w = 0; w < ix->hub_words; ++w) any |= b->hub[i * ix->hub_words + w] != 0;
        if (any) ix->hub_rows[nhub++] = (uint32_t)i;
        if (b->pop[i] == 0) ix->empty_b[ix->nempty_b++] = (uint32_t)i;
    }
    free(at);
    OC_CHECK(ctx, sort_by_pop(ctx, ix->hub_rows, nhub, b->pop));
    int64_t groups = 0;
    for (int64_t r = 0; r < nhub; ++r) groups += r == 0 || b->pop[ix->hub_rows[r]] != b->pop[ix->hub_rows[r - 1]];
    ix->group_start = malloc((size_t)(groups + 1) * sizeof *ix->group_start);
    ix->group_pop = malloc((size_t)(groups ? groups : 1) * sizeof *ix->group_pop);
    if (!ix->group_start || !ix->group_pop)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "sparse path: cannot allocate hub groups");
    for (int64_t r = 0; r < nhub; ++r)
        if (r == 0 || b->pop[ix->hub_rows[r]] != b->pop[ix->hub_rows[r - 1]]) {
            ix->group_start[ix->ngroups] = r;
            ix->group_pop[ix->ngroups++] = b->pop[ix->hub_rows[r]];
        }
    ix->group_start[ix->ngroups] = nhub;
    /* The hub rows in list order, then dealt into each hub's list, which keeps that order. */
    const int hw = ix->hub_words;
    hub_entry *order = malloc((size_t)(nhub ? nhub : 1) * sizeof *order);
    ix->hub_ptr = calloc((size_t)ix->hubs + 1, sizeof *ix->hub_ptr);
    if (!order || !ix->hub_ptr) {
        free(order);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "sparse path: cannot allocate the hub lists");
    }
    int64_t entries = 0;
    for (int64_t r = 0; r < nhub; ++r) {
        const uint32_t row = ix->hub_rows[r];
        uint32_t hp = 0;
        for (int w = 0; w < hw; ++w)
            for (uint64_t bits = b->hub[(int64_t)row * hw + w]; bits; bits &= bits - 1, ++hp)
                ix->hub_ptr[w * 64 + __builtin_ctzll(bits) + 1]++;
        order[r] = (hub_entry){(uint32_t)(b->pop[row] - hp), hp, row};
        entries += hp;
    }
    qsort(order, (size_t)nhub, sizeof *order, by_hub_order);
    for (int64_t h = 0; h < ix->hubs; ++h) ix->hub_ptr[h + 1] += ix->hub_ptr[h];
    uint32_t *rows = malloc((size_t)(entries ? entries : 1) * sizeof *rows);
    ix->hub_nb = malloc((size_t)(entries ? entries : 1) * sizeof *ix->hub_nb);
    ix->hub_hp = malloc((size_t)(entries ? entries : 1) * sizeof *ix->hub_hp);
    int64_t *next = malloc((size_t)(ix->hubs ? ix->hubs : 1) * sizeof *next);
    if (!rows || !ix->hub_nb || !ix->hub_hp || !next) {
        free(order);
        free(rows);
        free(next);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "sparse path: cannot allocate the hub lists (%lld entries)",
                       (long long)entries);
    }
    memcpy(next, ix->hub_ptr, (size_t)ix->hubs * sizeof *next);
    for (int64_t r = 0; r < nhub; ++r)
        for (int w = 0; w < hw; ++w)
            for (uint64_t bits = b->hub[(int64_t)order[r].row * hw + w]; bits; bits &= bits - 1) {
                const int64_t at = next[w * 64 + __builtin_ctzll(bits)]++;
                rows[at] = order[r].row;
                ix->hub_nb[at] = order[r].nb;
                ix->hub_hp[at] = order[r].hp;
            }
    free(order);
    free(next);
    ix->hub_list = rows;
    return OC_OK;
}

/* ---------------------------------------------------------------- the hub word lists (sparse_index.h) */
/* The pair lists are skipped past this many entries per one of B: rows holding dozens of hubs
 * (documents with many common words) would make them quadratic, and such rows take the
 * popcount sweep anyway. */
#define PAIR_ENTRIES_PER_ONE 2

/* Deals the hub rows (ix->hub_rows: by popcount, then row) into per-key lists that keep that
 * order: with out NULL counts into ptr[key + 1], else fills from next (a copy of ptr). pairs:
 * keys are hub pairs. */
static void deal(const oc_sparse_index *ix, int pairs, int64_t *ptr, int64_t *next, oc_hub_entry *out)
{
    const oc_sparse_side *b = &ix->b;
    const int64_t nhub = ix->group_start[ix->ngroups];
    for (int64_t r = 0; r < nhub; ++r) {
        const uint32_t row = ix->hub_rows[r];
        const uint64_t word = b->hub[row];
        const oc_hub_entry e = {row, (uint32_t)b->pop[row], word};
        for (uint64_t x = word; x; x &= x - 1) {
            const int64_t hx = __builtin_ctzll(x);
            if (!pairs) {
                if (out) out[next[hx]++] = e;
                else ptr[hx + 1]++;
                continue;
            }
            for (uint64_t y = x & (x - 1); y; y &= y - 1) {
                const int64_t key = oc_hub_pair_key(hx, __builtin_ctzll(y), ix->hubs);
                if (out) out[next[key]++] = e;
                else ptr[key + 1]++;
            }
        }
    }
}

static oc_status build_lists(oc_context *ctx, const oc_sparse_index *ix, int pairs, int64_t **ptr_out,
                             oc_hub_entry **out, int64_t limit)
{
    const int64_t keys = pairs ? ix->hubs * ix->hubs : ix->hubs;
    int64_t *ptr = calloc((size_t)keys + 1, sizeof *ptr);
    if (!ptr) return oc_fail(ctx, OC_ERR_NO_MEMORY, "sparse path: cannot allocate the hub lists");
    deal(ix, pairs, ptr, NULL, NULL);
    for (int64_t k = 0; k < keys; ++k) ptr[k + 1] += ptr[k];
    *ptr_out = ptr;
    if (ptr[keys] > limit) return OC_OK; /* not built: *out stays NULL */
    oc_hub_entry *e = malloc((size_t)(ptr[keys] ? ptr[keys] : 1) * sizeof *e);
    int64_t *next = malloc((size_t)keys * sizeof *next);
    if (!e || !next) {
        free(e);
        free(next);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "sparse path: cannot allocate %lld hub list entries",
                       (long long)ptr[keys]);
    }
    memcpy(next, ptr, (size_t)keys * sizeof *next);
    deal(ix, pairs, ptr, next, e);
    free(next);
    *out = e;
    return OC_OK;
}

static void hub_pairs_free(oc_hub_pairs *hp)
{
    free(hp->post_hub);
    free(hp->post_pop);
    free(hp->single_ptr);
    free(hp->single);
    free(hp->pair_ptr);
    free(hp->pair);
    memset(hp, 0, sizeof *hp);
}

/* Builds hp for ix (which has hub_words == 1 and its B lists built). Fails on allocation
 * only; hp is then empty. */
static oc_status hub_pairs_build(oc_context *ctx, const oc_sparse_index *ix, oc_hub_pairs *hp)
{
    memset(hp, 0, sizeof *hp);
    const oc_sparse_side *b = &ix->b;
    const int64_t entries = ix->post_ptr ? b->ptr[b->rows] : 0;
    hp->post_hub = malloc((size_t)(entries ? entries : 1) * sizeof *hp->post_hub);
    hp->post_pop = malloc((size_t)(entries ? entries : 1) * sizeof *hp->post_pop);
    oc_status st = OC_OK;
    if (!hp->post_hub || !hp->post_pop) {
        st = oc_fail(ctx, OC_ERR_NO_MEMORY, "sparse path: cannot allocate the hub words of %lld list entries",
                     (long long)entries);
        goto fail;
    }
    for (int64_t e = 0; e < entries; ++e) {
        const uint32_t row = ix->post_rows[e];
        hp->post_hub[e] = b->hub[row];
        hp->post_pop[e] = (uint32_t)b->pop[row];
    }
    const int64_t ones = b->ptr[b->rows] + ix->hub_ptr[ix->hubs];
    if ((st = build_lists(ctx, ix, 0, &hp->single_ptr, &hp->single, INT64_MAX)) != OC_OK) goto fail;
    if ((st = build_lists(ctx, ix, 1, &hp->pair_ptr, &hp->pair, PAIR_ENTRIES_PER_ONE * ones + 4096)) != OC_OK)
        goto fail;
    return OC_OK;
fail:
    hub_pairs_free(hp);
    return st;
}

/* ---------------------------------------------------------------- the index */
oc_status oc_sparse_index_build(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const uint32_t *hub_cols,
                                int64_t hubs, int threads, oc_sparse_index *ix)
{
    memset(ix, 0, sizeof *ix);
    ix->hub_words = (int)((hubs + 63) / 64);
    ix->hubs = hubs;
    int32_t *slot = malloc((size_t)a->cols * sizeof *slot);
    if (!slot)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "sparse path: cannot allocate the hub map of %lld columns",
                       (long long)a->cols);
    for (int64_t j = 0; j < a->cols; ++j) slot[j] = -1;
    for (int64_t h = 0; h < hubs; ++h) slot[hub_cols[h]] = (int32_t)h;
    oc_status st = build_side(ctx, a, slot, ix->hub_words, threads, &ix->a);
    if (st == OC_OK && b && b != a) {
        ix->owns_b = 1;
        st = build_side(ctx, b, slot, ix->hub_words, threads, &ix->b);
    } else {
        ix->b = ix->a;
    }
    free(slot);
    if (st == OC_OK) st = build_b_lists(ctx, a->cols, ix);
    if (st == OC_OK && ix->hub_words == 1) st = hub_pairs_build(ctx, ix, &ix->pairs);
    if (st != OC_OK) oc_sparse_index_free(ix);
    return st;
}

static void free_side(oc_sparse_side *s)
{
    free(s->ptr);
    free(s->idx);
    free(s->hub);
    free(s->pop);
}

void oc_sparse_index_free(oc_sparse_index *ix)
{
    if (!ix) return;
    free_side(&ix->a);
    if (ix->owns_b) free_side(&ix->b);
    free(ix->post_ptr);
    free(ix->post_rows);
    free(ix->hub_rows);
    free(ix->hub_ptr);
    free(ix->group_start);
    free(ix->group_pop);
    free(ix->hub_list);
    free(ix->hub_nb);
    free(ix->hub_hp);
    free(ix->empty_b);
    hub_pairs_free(&ix->pairs);
    memset(ix, 0, sizeof *ix);
}
