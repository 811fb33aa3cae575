/*
 * test_gram_large_shape.c - a job whose n·p·m overflows 64 bits but whose work is small: a
 * sparse A·Aᵀ top-k of 3,100,000 rows over 4,194,304 columns (n·n·m is about 4e19, past
 * 2^63), one or two ones per row. oc_gram once refused every job of n·p·m past 2^63 though
 * nothing it keeps or counts in 64 bits grows with it (work is counted in double); the
 * result is 3.1M x 3 and the sparse algorithm's work a few million updates.
 *
 * Every row's columns are its own (row i holds column i, and every third row also column
 * n + i/3), so that the answers are known exactly, except for planted rows: a twin pair
 * (jaccard 1), a row sharing one column with both twins (jaccard 1/3), and the last row a
 * copy of row 0. A row that shares nothing is filled with score-0 columns, lowest first,
 * itself excluded (outcore.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "outcore.h"

#define ROWS 3100000LL
#define COLS (1LL << 22)
#define K 3
#define TWIN_A 123456LL  /* a multiple of 3: two ones */
#define TWIN_B 3000001LL /* made a copy of TWIN_A */
#define SHARER 2999999LL /* its own column and TWIN_A's first */

/* Row i's columns into cols (at most 2); returns how many. */
static int row_columns(int64_t i, int64_t *cols)
{
    if (i == TWIN_B) i = TWIN_A;
    if (i == ROWS - 1) i = 0;
    if (i == SHARER) {
        cols[0] = TWIN_A;
        cols[1] = SHARER;
        return 2;
    }
    cols[0] = i;
    if (i % 3 != 0) return 1;
    cols[1] = ROWS + i / 3;
    return 2;
}

/* Row i's top-k from the result, against the expected columns and scores. */
static void expect_row(const int64_t *idx, const float *score, int64_t i, const int64_t want[K],
                       const float want_score[K])
{
    for (int k = 0; k < K; ++k) {
        const int64_t got = idx[i * K + k];
        const float s = score[i * K + k];
        CHECK_MSG(got == want[k] && s > want_score[k] - 1e-6f && s < want_score[k] + 1e-6f,
                  "row %lld, rank %d: column %lld score %g, expected column %lld score %g", (long long)i, k,
                  (long long)got, (double)s, (long long)want[k], (double)want_score[k]);
    }
}

int main(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    int64_t *indptr = malloc((size_t)(ROWS + 1) * sizeof *indptr);
    int64_t *indices = malloc((size_t)ROWS * 2 * sizeof *indices);
    int64_t *idx = malloc((size_t)ROWS * K * sizeof *idx);
    float *score = malloc((size_t)ROWS * K * sizeof *score);
    oc_matrix *a = NULL;
    CHECK(indptr && indices && idx && score);
    if (!indptr || !indices || !idx || !score) goto done;

    indptr[0] = 0;
    for (int64_t i = 0; i < ROWS; ++i) indptr[i + 1] = indptr[i] + row_columns(i, indices + indptr[i]);
    CHECK(ROWS + ROWS / 3 < COLS);
    oc_status st = oc_matrix_from_csr(ctx, ROWS, COLS, indptr, indices, &a);
    CHECK_MSG(st == OC_OK, "oc_matrix_from_csr: %s", oc_context_last_error(ctx));
    if (st != OC_OK) goto done;

    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    o.algorithm = OC_ALGORITHM_SPARSE;
    o.metric = OC_METRIC_JACCARD;
    o.threads = 2;
    o.topk = K;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_TOPK;
    out.indices = idx;
    out.scores = score;
    oc_gram_stats stats = {.struct_size = sizeof stats};
    st = oc_gram(ctx, a, NULL, &o, &out, &stats);
    CHECK_MSG(st == OC_OK, "sparse top-%d of %lld x %lld rows over %lld columns: %s", K, ROWS, ROWS, COLS,
              oc_context_last_error(ctx));
    if (st != OC_OK) goto done;
    CHECK(stats.algorithm == OC_ALGORITHM_SPARSE);
    const double effective = (double)ROWS * (double)ROWS * (double)COLS;
    CHECK_MSG(effective > 9.3e18 && stats.bit_macs_effective == effective, "bit_macs_effective %g, expected %g",
              stats.bit_macs_effective, effective);

    const float one = 1.0f, third = 1.0f / 3.0f;
    expect_row(idx, score, TWIN_A, (int64_t[K]){TWIN_B, SHARER, 0}, (float[K]){one, third, 0});
    expect_row(idx, score, TWIN_B, (int64_t[K]){TWIN_A, SHARER, 0}, (float[K]){one, third, 0});
    expect_row(idx, score, SHARER, (int64_t[K]){TWIN_A, TWIN_B, 0}, (float[K]){third, third, 0});
    expect_row(idx, score, 0, (int64_t[K]){ROWS - 1, 1, 2}, (float[K]){one, 0, 0});
    expect_row(idx, score, ROWS - 1, (int64_t[K]){0, 1, 2}, (float[K]){one, 0, 0});
    expect_row(idx, score, 1, (int64_t[K]){0, 2, 3}, (float[K]){0, 0, 0});
    expect_row(idx, score, 2999998, (int64_t[K]){0, 1, 2}, (float[K]){0, 0, 0});

done:
    oc_matrix_free(a);
    free(indptr);
    free(indices);
    free(idx);
    free(score);
    oc_context_free(ctx);
    return oc_test_finish();
}
