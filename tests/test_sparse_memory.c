/*
 * test_sparse_memory.c - the sparse path's memory, planned before it builds anything
 * (src/gram/sparse_memory.h), is an upper bound of what the index it builds holds.
 *
 * Each case builds the index of a random matrix (A·Aᵀ and A·Bᵀ; no hubs, a few, one hub word
 * whole with its pair lists, more than one word; rows that hold every hub, so that the pair
 * lists grow to the size where they are no longer built) and sums the arrays the index holds
 * from its own offsets. The bound must hold every array; it must not be loose past twice the
 * index and the pair lists' largest size, or the budget would turn away jobs it holds.
 */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "gram/cpu/sparse/sparse_index.h"
#include "gram/sparse_memory.h"
#include "matrix/matrix.h"

typedef struct memory_case {
    const char *name;
    int64_t n, p, m; /* p == 0: A·Aᵀ */
    double density;
    int64_t hubs;
    double hub_share; /* rows holding every hub column */
} memory_case;

static const memory_case CASES[] = {
    {"no hubs", 3000, 0, 500, 0.01, 0, 0.0},
    {"a few hubs", 3000, 0, 500, 0.01, 5, 0.3},
    {"one hub word", 2000, 0, 700, 0.005, 64, 0.02},
    {"one word, pair lists past their limit", 1500, 0, 300, 0.002, 64, 0.5},
    {"two hub words", 2000, 0, 900, 0.01, 100, 0.1},
    {"A·Bᵀ", 2500, 1800, 400, 0.02, 12, 0.2},
    {"A·Bᵀ, one hub word", 1000, 3000, 256, 0.01, 64, 0.05},
};

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static oc_matrix *random_matrix(oc_context *ctx, int64_t rows, const memory_case *c, uint64_t seed)
{
    oc_matrix *mx = NULL;
    if (oc_matrix_alloc(ctx, rows, c->m, "case", &mx) != OC_OK) return NULL;
    const uint64_t cut = (uint64_t)(c->density * 18446744073709551615.0);
    const uint64_t hub_cut = (uint64_t)(c->hub_share * 18446744073709551615.0);
    for (int64_t i = 0; i < rows; ++i) {
        const int all_hubs = next_random(&seed) < hub_cut;
        for (int64_t j = 0; j < c->m; ++j)
            if ((j < c->hubs && all_hubs) || next_random(&seed) < cut) oc_matrix_set(mx, i, j);
    }
    return mx;
}

/* Bytes of the arrays ix holds, from its offsets (sparse_index.h). */
static double side_held(const oc_sparse_side *s, int words)
{
    return 8.0 * (double)(s->rows + 1) + 8.0 * (double)s->rows + 8.0 * words * (double)s->rows +
           4.0 * (double)s->ptr[s->rows];
}

static double index_held(const oc_sparse_index *ix, int64_t cols)
{
    const int words = ix->hub_words;
    double bytes = side_held(&ix->a, words) + (ix->owns_b ? side_held(&ix->b, words) : 0.0);
    const double nonhub_b = (double)ix->b.ptr[ix->b.rows], entries = (double)ix->hub_ptr[ix->hubs];
    bytes += 8.0 * (double)(cols + 1) + 4.0 * nonhub_b + 8.0 * (double)ix->b.rows;
    bytes += 16.0 * (double)ix->ngroups + 8.0 + 8.0 * (double)(ix->hubs + 1) + 12.0 * entries;
    const oc_hub_pairs *hp = &ix->pairs;
    if (hp->post_hub) {
        const int64_t keys = ix->hubs * ix->hubs;
        bytes += 12.0 * nonhub_b + 8.0 * (double)(ix->hubs + 1) + 16.0 * (double)hp->single_ptr[ix->hubs];
        bytes += 8.0 * (double)(keys + 1) + (hp->pair ? 16.0 * (double)hp->pair_ptr[keys] : 0.0);
    }
    return bytes;
}

static void run_case(oc_context *ctx, const memory_case *c, uint64_t seed)
{
    oc_matrix *a = random_matrix(ctx, c->n, c, seed), *b = c->p ? random_matrix(ctx, c->p, c, seed * 3 + 1) : a;
    CHECK(a && b);
    if (!a || !b) return;
    int64_t *ca = calloc((size_t)c->m, sizeof *ca), *cb = calloc((size_t)c->m, sizeof *cb);
    uint32_t *hub_cols = malloc((size_t)(c->hubs ? c->hubs : 1) * sizeof *hub_cols);
    oc_matrix_col_counts(a, ca);
    oc_matrix_col_counts(b, cb);
    oc_sparse_sizes sizes = {.rows_a = c->n, .rows_b = c->p, .cols = c->m, .hubs = c->hubs, .block_rows = 64};
    for (int64_t j = 0; j < c->m; ++j) {
        sizes.ones_a += (double)ca[j], sizes.ones_b += (double)cb[j];
        if (j < c->hubs)
            sizes.hub_ones_a += (double)ca[j], sizes.hub_ones_b += (double)cb[j], hub_cols[j] = (uint32_t)j;
    }
    oc_sparse_index ix;
    CHECK_EQ_I64(oc_sparse_index_build(ctx, a, c->p ? b : NULL, hub_cols, c->hubs, 2, &ix), OC_OK);
    const double held = index_held(&ix, c->m), bound = oc_sparse_index_bytes(&sizes);
    CHECK_MSG(held <= bound, "%s: the index holds %.0f bytes, past the bound %.0f", c->name, held, bound);
    /* The pair lists are counted as large as they are ever built: whether they are depends on
     * how the hubs share rows, which the plan does not know. */
    const double pair_lists =
        ix.hub_words == 1 ? 8.0 * (double)(c->hubs * c->hubs + 1) + 16.0 * (2.0 * sizes.ones_b + 4096) : 0.0;
    const double fixed = pair_lists;
    CHECK_MSG(bound <= 2 * held + fixed, "%s: the bound %.0f is loose for an index of %.0f bytes", c->name, bound,
              held);
    /* The peak holds the build beside the index, and the workers' buffers grow with them. */
    CHECK(oc_sparse_peak_bytes(&sizes, 2) >= bound + oc_sparse_build_bytes(&sizes, 2));
    CHECK(oc_sparse_peak_bytes(&sizes, 8) > oc_sparse_peak_bytes(&sizes, 1));
    CHECK(oc_sparse_worker_bytes(&sizes) >= 24.0 * (double)(c->p ? c->p : c->n));
    oc_sparse_index_free(&ix);
    free(ca);
    free(cb);
    free(hub_cols);
    if (b != a) oc_matrix_free(b);
    oc_matrix_free(a);
}

int main(void)
{
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    for (size_t k = 0; k < sizeof CASES / sizeof CASES[0]; ++k) run_case(ctx, &CASES[k], 0x9E3779B97F4A7C15ull + k);
    oc_context_free(ctx);
    return oc_test_finish();
}
