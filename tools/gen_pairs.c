/*
 * gen_pairs.c - the planted pairs of outcore gen: which rows are near-copies of which.
 *
 * The 2K rows of K pairs are the first 2K entries of a random permutation of the rows
 * (partial Fisher-Yates from the stream (seed, GEN_STREAM_PAIRS, 0)): entry 2k is the source
 * of pair k, entry 2k+1 its copy. Only the entries the shuffle touched differ from the
 * identity: the first 2K, kept as an array, and at most 2K others (each step swaps entry i
 * with one at or after it), kept in a small hash map, instead of an array of all rows:
 * memory is O(K) whatever the number of rows.
 */
#include "gen_pairs.h"

#include <stdint.h>
#include <stdlib.h>

#include "gen_rng.h"

/* Entries below `head` in an array; the others in open addressing with linear probing, key
 * -1 an empty slot. */
typedef struct sparse_perm {
    int64_t *first, head;
    int64_t *key, *value;
    uint64_t mask;
} sparse_perm;

static int64_t *perm_slot(const sparse_perm *m, int64_t i)
{
    uint64_t h = gen_splitmix64((uint64_t)i) & m->mask;
    while (m->key[h] != -1 && m->key[h] != i) h = (h + 1) & m->mask;
    return &m->key[h];
}

static int64_t perm_get(const sparse_perm *m, int64_t i)
{
    if (i < m->head) return m->first[i];
    int64_t *k = perm_slot(m, i);
    return *k == i ? m->value[k - m->key] : i;
}

static void perm_set(sparse_perm *m, int64_t i, int64_t v)
{
    if (i < m->head) {
        m->first[i] = v;
        return;
    }
    int64_t *k = perm_slot(m, i);
    *k = i;
    m->value[k - m->key] = v;
}

static int by_copy_row(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

int gen_pairs_pick(gen_pairs *g, int64_t rows, int64_t plant, uint64_t seed)
{
    g->count = plant < rows / 2 ? plant : rows / 2;
    g->pairs = g->by_copy = NULL;
    if (g->count <= 0) {
        g->count = 0;
        return 0;
    }
    /* The first 2K entries in an array; at most 2K others, one per step, in a table at most
     * half full. A count whose table or lists no address space holds is out of memory (the
     * doubling below would wrap). */
    if ((uint64_t)g->count > SIZE_MAX / 64 / sizeof(int64_t)) {
        g->count = 0;
        return -1;
    }
    uint64_t slots = 16;
    while (slots < 4 * (uint64_t)g->count) slots *= 2;
    sparse_perm m = {.first = malloc((size_t)g->count * 2 * sizeof *m.first),
                     .head = 2 * g->count,
                     .key = malloc(slots * sizeof *m.key),
                     .value = malloc(slots * sizeof *m.value),
                     .mask = slots - 1};
    g->pairs = malloc((size_t)g->count * 2 * sizeof *g->pairs);
    g->by_copy = malloc((size_t)g->count * 2 * sizeof *g->by_copy);
    if (!m.first || !m.key || !m.value || !g->pairs || !g->by_copy) {
        free(m.first);
        free(m.key);
        free(m.value);
        gen_pairs_free(g);
        return -1;
    }
    for (int64_t i = 0; i < m.head; ++i) m.first[i] = i;
    for (uint64_t s = 0; s < slots; ++s) m.key[s] = -1;
    gen_rng r;
    gen_rng_stream(&r, seed, GEN_STREAM_PAIRS, 0);
    for (int64_t i = 0; i < 2 * g->count; ++i) {
        int64_t j = i + (int64_t)gen_rng_below(&r, (uint64_t)(rows - i));
        int64_t vi = perm_get(&m, i), vj = perm_get(&m, j);
        perm_set(&m, i, vj);
        perm_set(&m, j, vi);
    }
    for (int64_t k = 0; k < g->count; ++k) {
        int64_t src = perm_get(&m, 2 * k), dst = perm_get(&m, 2 * k + 1);
        g->pairs[2 * k] = dst;
        g->pairs[2 * k + 1] = src;
    }
    free(m.first);
    free(m.key);
    free(m.value);
    for (int64_t k = 0; k < 2 * g->count; ++k) g->by_copy[k] = g->pairs[k];
    qsort(g->by_copy, (size_t)g->count, 2 * sizeof *g->by_copy, by_copy_row);
    return 0;
}

int64_t gen_pairs_source(const gen_pairs *g, int64_t row)
{
    int64_t lo = 0, hi = g->count; /* binary search of the copies, sorted */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (g->by_copy[2 * mid] < row) lo = mid + 1;
        else hi = mid;
    }
    return lo < g->count && g->by_copy[2 * lo] == row ? g->by_copy[2 * lo + 1] : -1;
}

void gen_pairs_free(gen_pairs *g)
{
    free(g->pairs);
    free(g->by_copy);
    g->pairs = g->by_copy = NULL;
    g->count = 0;
}
