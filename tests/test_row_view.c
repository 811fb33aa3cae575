/*
 * test_row_view.c - the sub-range interface of the rank layer (matrix/matrix.h:
 * oc_matrix_row_view): oc_gram on views of rows [r0, r1) of A and [c0, c1) of B gives exactly
 * block (r0..r1, c0..c1) of the whole job's result, for every metric, from a resident, a
 * lists and a file-backed parent, and from a view of a view.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "matrix/matrix.h"

enum { N = 97, P = 61, M = 150 };

static void check_block(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, oc_metric metric, int64_t r0,
                        int64_t r1, int64_t c0, int64_t c1)
{
    const int symmetric = a == b;
    const int64_t n = oc_matrix_rows(a), p = oc_matrix_rows(b);
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.metric = metric;
    o.backend = OC_BACKEND_CPU;
    o.threads = 2;
    o.tile = 16;
    const size_t es = oc_dtype_size(oc_gram_result_dtype(metric, OC_DTYPE_DEFAULT));
    char *whole = malloc((size_t)(n * p) * es), *block = malloc((size_t)((r1 - r0) * (c1 - c0)) * es);
    oc_matrix *va = NULL, *vb = NULL;
    CHECK(whole && block);
    oc_output out = OC_OUTPUT_INIT;
    out.data = whole;
    CHECK(oc_gram(ctx, a, symmetric ? NULL : b, &o, &out, NULL) == OC_OK);
    CHECK(oc_matrix_row_view(ctx, a, r0, r1 - r0, &va) == OC_OK);
    CHECK(oc_matrix_row_view(ctx, b, c0, c1 - c0, &vb) == OC_OK);
    out.data = block;
    CHECK(oc_gram(ctx, va, vb, &o, &out, NULL) == OC_OK);
    for (int64_t r = r0; r < r1; ++r)
        CHECK_MSG(memcmp(block + (r - r0) * (c1 - c0) * (int64_t)es, whole + (r * p + c0) * (int64_t)es,
                         (size_t)(c1 - c0) * es) == 0,
                  "%s block [%lld,%lld) x [%lld,%lld): row %lld differs from the whole job's", oc_metric_name(metric),
                  (long long)r0, (long long)r1, (long long)c0, (long long)c1, (long long)r);
    oc_matrix_free(va);
    oc_matrix_free(vb);
    free(whole);
    free(block);
}

int main(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    unsigned char *da = malloc(N * M), *db = malloc(P * M);
    uint32_t seed = 12345;
    for (int i = 0; i < N * M; ++i) da[i] = (unsigned char)(((seed = seed * 1103515245u + 12345u) >> 16) % 5 == 0);
    for (int i = 0; i < P * M; ++i) db[i] = (unsigned char)(((seed = seed * 1103515245u + 12345u) >> 16) % 3 == 0);
    memset(da + 40 * M, 0, M); /* an empty row */
    oc_matrix *a = NULL, *b = NULL, *lists = NULL;
    CHECK(oc_matrix_from_dense(ctx, da, N, M, M, &a) == OC_OK);
    CHECK(oc_matrix_from_dense(ctx, db, P, M, M, &b) == OC_OK);
    /* The same rows as column lists. */
    int64_t *ptr = malloc((N + 1) * sizeof *ptr);
    int64_t *idx = malloc((size_t)N * M * sizeof *idx);
    ptr[0] = 0;
    for (int i = 0; i < N; ++i) {
        ptr[i + 1] = ptr[i];
        for (int j = 0; j < M; ++j)
            if (da[i * M + j]) idx[ptr[i + 1]++] = j;
    }
    CHECK(oc_matrix_from_csr(ctx, N, M, ptr, idx, &lists) == OC_OK);

    /* A parent left in its file. */
    oc_matrix *in_file = NULL, *view_of_view = NULL, *outer = NULL;
    const char *dir = oc_test_tmp_create("oc_row_view");
    CHECK(dir != NULL);
    const char *path = oc_test_tmp_path("A.npy");
    CHECK(oc_matrix_save(ctx, a, path, 0) == OC_OK);
    oc_read_options ro = OC_READ_OPTIONS_INIT;
    ro.host_mem_bytes = 4096; /* far less than A: it stays in its file */
    CHECK(oc_matrix_read(ctx, path, &ro, &in_file) == OC_OK);
    CHECK(in_file && oc_matrix_file_backed(in_file));
    CHECK(oc_matrix_row_view(ctx, lists, 10, 80, &outer) == OC_OK);
    CHECK(oc_matrix_row_view(ctx, outer, 5, 60, &view_of_view) == OC_OK); /* rows 15..75 of A */

    static const oc_metric metrics[] = {OC_METRIC_COUNTS, OC_METRIC_JACCARD, OC_METRIC_COSINE, OC_METRIC_HAMMING};
    for (size_t k = 0; k < sizeof metrics / sizeof metrics[0]; ++k) {
        check_block(ctx, a, b, metrics[k], 0, N, 0, P);
        check_block(ctx, a, b, metrics[k], 13, 50, 7, 60);
        check_block(ctx, a, a, metrics[k], 30, 71, 30, N);  /* a trapezoid of A·Aᵀ with its diagonal */
        check_block(ctx, a, a, metrics[k], 90, 97, 0, 5);   /* below the diagonal */
        check_block(ctx, lists, b, metrics[k], 5, 6, 0, P); /* one row of a lists parent */
        if (in_file) check_block(ctx, in_file, b, metrics[k], 20, 77, 3, 40);
        if (view_of_view) check_block(ctx, view_of_view, view_of_view, metrics[k], 7, 50, 7, 60);
    }
    oc_matrix_free(view_of_view);
    oc_matrix_free(outer);
    oc_matrix_free(in_file);
    oc_test_tmp_remove();
    oc_matrix *v = NULL;
    CHECK(oc_matrix_row_view(ctx, a, 90, 8, &v) != OC_OK); /* past the end */
    CHECK(oc_matrix_row_view(ctx, a, 0, 0, &v) != OC_OK);  /* empty */
    oc_matrix_free(a);
    oc_matrix_free(b);
    oc_matrix_free(lists);
    free(da);
    free(db);
    free(ptr);
    free(idx);
    oc_context_free(ctx);
    return oc_test_finish();
}
