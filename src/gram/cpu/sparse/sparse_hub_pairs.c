/*
 * sparse_hub_pairs.c - builds the hub-word lists of a sparse Gram job (see sparse_hub_pairs.h).
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gram/cpu/sparse/sparse_hub_pairs.h"
#include "gram/cpu/sparse/sparse_index.h"

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

oc_status oc_hub_pairs_build(oc_context *ctx, const oc_sparse_index *ix, oc_hub_pairs *hp)
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
    oc_hub_pairs_free(hp);
    return st;
}

void oc_hub_pairs_free(oc_hub_pairs *hp)
{
    if (!hp) return;
    free(hp->post_hub);
    free(hp->post_pop);
    free(hp->single_ptr);
    free(hp->single);
    free(hp->pair_ptr);
    free(hp->pair);
    memset(hp, 0, sizeof *hp);
}
