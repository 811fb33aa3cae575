/*
 * gram_reference.h - the answer to every Gram case, from design.md's semantics written as
 * plainly as possible (gram_reference.c). It shares no code with the library: its own bit
 * packing, its own metric formulas, a full sort for top-k and a double loop for pairs.
 */
#ifndef OC_TEST_GRAM_REFERENCE_H
#define OC_TEST_GRAM_REFERENCE_H

#include <stdint.h>

#include "gram_cases.h"
#include "outcore.h"

/* Exact intersections c[i * p + j] and row popcounts of A (pa) and B (pb). */
typedef struct gram_exact {
    int64_t n, p, m;
    int symmetric; /* A·Aᵀ: the diagonal is no candidate, pairs have i < j */
    int64_t *c, *pa, *pb;
} gram_exact;

/* From the 0/1 bytes (rows x m each; b == a for A·Aᵀ). Returns 0 when out of memory. */
int gram_ref_exact(const unsigned char *a, const unsigned char *b, int64_t n, int64_t p, int64_t m, int symmetric,
                   gram_exact *e);
void gram_ref_free(gram_exact *e);

/* The dense result, n x ld elements of dtype (the ld - p trailing ones are left alone). */
void gram_ref_dense(const gram_exact *e, oc_metric metric, oc_dtype dtype, void *out, int64_t ld);

/* Each row's k best: indices[n * k] and scores[n * k] of dtype. Returns 0 when out of memory. */
int gram_ref_topk(const gram_exact *e, oc_metric metric, oc_dtype dtype, int64_t k, int64_t *indices, void *scores);

/* Every pair that passes threshold t, in (row, col) order, appended to out (its elem set). */
void gram_ref_pairs(const gram_exact *e, oc_metric metric, oc_dtype dtype, double t, gram_pairs *out);

#endif
