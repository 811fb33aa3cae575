/*
 * gram_reference.c - the reference of the case table: design.md's "Gram semantics" and
 * docs/topk.md, written to be obviously right rather than fast.
 *
 * - c_ij = |a_i AND b_j| and the popcounts, exact integers. The bytes are packed here, column
 *   k at bit k % 64 of word k / 64 (not the library's layout: AND and popcount do not care),
 *   only so that the larger cases of the table take seconds, not minutes.
 * - counts c; hamming |a| + |b| - 2c; jaccard c / (|a| + |b| - c) with 0/0 = 1; cosine
 *   c / sqrt(|a| |b|), 0 when a row is empty; the floating ones computed in double and
 *   rounded once to float32.
 * - top-k: all candidates of a row (A·Aᵀ: every column but the row itself) ordered by the
 *   stored score, best first (hamming: smallest first), equal scores by column ascending,
 *   and the first k kept (a full sort; for k small beside the candidates, the k best kept
 *   by insertion, the same k); slots past the candidates hold index -1 and score 0.
 * - threshold: stored score >= T (float32 scores against float32(T); hamming <= T); A·Aᵀ
 *   pairs (i, j) with i < j only; in (row, col) order.
 */
#include "gram_reference.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t *pack(const unsigned char *bytes, int64_t rows, int64_t m, int64_t words)
{
    uint64_t *w = calloc((size_t)(rows * words) + 1, sizeof *w);
    if (!w) return NULL;
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t k = 0; k < m; ++k)
            if (bytes[i * m + k]) w[i * words + k / 64] |= (uint64_t)1 << (k % 64);
    return w;
}

/* Bits set in v (SWAR): the tests are built for baseline x86-64, where __builtin_popcountll
 * is a call into libgcc that made the reference the slowest part of the table. */
static int64_t popcount(uint64_t v)
{
    v = v - ((v >> 1) & 0x5555555555555555ull);
    v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
    v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (int64_t)((v * 0x0101010101010101ull) >> 56);
}

static int64_t and_count(const uint64_t *x, const uint64_t *y, int64_t words)
{
    int64_t c = 0;
    for (int64_t w = 0; w < words; ++w) c += popcount(x[w] & y[w]);
    return c;
}

int gram_ref_exact(const unsigned char *a, const unsigned char *b, int64_t n, int64_t p, int64_t m, int symmetric,
                   gram_exact *e)
{
    const int64_t words = (m + 63) / 64;
    uint64_t *wa = pack(a, n, m, words), *wb = symmetric ? wa : pack(b, p, m, words);
    *e = (gram_exact){.n = n, .p = p, .m = m, .symmetric = symmetric};
    e->c = malloc((size_t)(n * p) * sizeof *e->c);
    e->pa = malloc((size_t)n * sizeof *e->pa);
    e->pb = malloc((size_t)p * sizeof *e->pb);
    int ok = wa && wb && e->c && e->pa && e->pb;
    if (ok) {
        for (int64_t i = 0; i < n; ++i) e->pa[i] = and_count(wa + i * words, wa + i * words, words);
        for (int64_t j = 0; j < p; ++j) e->pb[j] = and_count(wb + j * words, wb + j * words, words);
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = symmetric ? i : 0; j < p; ++j) {
                e->c[i * p + j] = and_count(wa + i * words, wb + j * words, words);
                if (symmetric) e->c[j * p + i] = e->c[i * p + j];
            }
    }
    if (wb != wa) free(wb);
    free(wa);
    if (!ok) gram_ref_free(e);
    return ok;
}

void gram_ref_free(gram_exact *e)
{
    free(e->c);
    free(e->pa);
    free(e->pb);
    e->c = e->pa = e->pb = NULL;
}

/* Pair (i, j)'s score, stored at dst in dtype. */
static void store(const gram_exact *e, oc_metric metric, oc_dtype dtype, int64_t i, int64_t j, void *dst)
{
    const int64_t c = e->c[i * e->p + j], pa = e->pa[i], pb = e->pb[j];
    if (metric == OC_METRIC_JACCARD || metric == OC_METRIC_COSINE) {
        float v;
        if (metric == OC_METRIC_JACCARD) v = pa + pb - c == 0 ? 1.0f : (float)((double)c / (double)(pa + pb - c));
        else v = pa == 0 || pb == 0 ? 0.0f : (float)((double)c / sqrt((double)pa * (double)pb));
        memcpy(dst, &v, sizeof v);
        return;
    }
    const int64_t v = metric == OC_METRIC_COUNTS ? c : pa + pb - 2 * c;
    if (dtype == OC_DTYPE_UINT16) {
        uint16_t s = (uint16_t)v;
        memcpy(dst, &s, sizeof s);
    } else {
        int32_t s = (int32_t)v;
        memcpy(dst, &s, sizeof s);
    }
}

/* A stored score as a number (every int32, uint16 and float32 is exact in double). */
static double stored_value(oc_dtype dtype, const void *v)
{
    if (dtype == OC_DTYPE_FLOAT32) {
        float f;
        memcpy(&f, v, sizeof f);
        return f;
    }
    if (dtype == OC_DTYPE_UINT16) {
        uint16_t u;
        memcpy(&u, v, sizeof u);
        return u;
    }
    int32_t s;
    memcpy(&s, v, sizeof s);
    return s;
}

void gram_ref_dense(const gram_exact *e, oc_metric metric, oc_dtype dtype, void *out, int64_t ld)
{
    const size_t es = oc_dtype_size(dtype);
    for (int64_t i = 0; i < e->n; ++i)
        for (int64_t j = 0; j < e->p; ++j) store(e, metric, dtype, i, j, (char *)out + (size_t)(i * ld + j) * es);
}

typedef struct candidate {
    double goodness; /* larger is better: the score, or minus the hamming distance */
    int64_t col;
} candidate;

static int best_first(const void *x, const void *y)
{
    const candidate *a = x, *b = y;
    if (a->goodness != b->goodness) return a->goodness > b->goodness ? -1 : 1;
    return a->col < b->col ? -1 : a->col > b->col;
}

/* Moves the k best of the nc candidates to the front, best first, and returns how many there
 * are (min(k, nc)): the first k of a full sort by best_first, a total order (the columns
 * differ). Where k is small beside nc, the k best are kept by insertion into a list of k
 * instead, which gives the same k without sorting every candidate of every row. */
static int64_t best_k(candidate *cand, int64_t nc, int64_t k)
{
    if (k * 8 >= nc) {
        qsort(cand, (size_t)nc, sizeof *cand, best_first);
        return nc < k ? nc : k;
    }
    int64_t kept = 0; /* cand[0..kept) is the list, best first; kept <= j, so no candidate is lost */
    for (int64_t j = 0; j < nc; ++j) {
        if (kept == k && best_first(&cand[j], &cand[k - 1]) > 0) continue;
        const candidate c = cand[j];
        int64_t t = kept < k ? kept++ : k - 1;
        for (; t > 0 && best_first(&c, &cand[t - 1]) < 0; --t) cand[t] = cand[t - 1];
        cand[t] = c;
    }
    return kept;
}

int gram_ref_topk(const gram_exact *e, oc_metric metric, oc_dtype dtype, int64_t k, int64_t *indices, void *scores)
{
    const size_t es = oc_dtype_size(dtype);
    candidate *cand = malloc((size_t)(e->p + 1) * sizeof *cand);
    if (!cand) return 0;
    for (int64_t i = 0; i < e->n; ++i) {
        int64_t nc = 0;
        for (int64_t j = 0; j < e->p; ++j) {
            if (e->symmetric && j == i) continue;
            unsigned char v[4];
            store(e, metric, dtype, i, j, v);
            double s = stored_value(dtype, v);
            cand[nc++] = (candidate){metric == OC_METRIC_HAMMING ? -s : s, j};
        }
        const int64_t best = best_k(cand, nc, k);
        for (int64_t t = 0; t < k; ++t) {
            char *dst = (char *)scores + (size_t)(i * k + t) * es;
            if (t < best) {
                indices[i * k + t] = cand[t].col;
                store(e, metric, dtype, i, cand[t].col, dst);
            } else {
                indices[i * k + t] = -1;
                memset(dst, 0, es);
            }
        }
    }
    free(cand);
    return 1;
}

void gram_ref_pairs(const gram_exact *e, oc_metric metric, oc_dtype dtype, double t, gram_pairs *out)
{
    for (int64_t i = 0; i < e->n; ++i)
        for (int64_t j = e->symmetric ? i + 1 : 0; j < e->p; ++j) {
            unsigned char v[4];
            store(e, metric, dtype, i, j, v);
            const double s = stored_value(dtype, v);
            int pass;
            if (dtype == OC_DTYPE_FLOAT32) pass = (float)s >= (float)t;
            else pass = metric == OC_METRIC_HAMMING ? s <= t : s >= t;
            if (pass) gram_pairs_add(out, &i, &j, v, 1);
        }
}
