/*
 * test_select.c - what the case table does not reach of top-k and threshold outputs.
 *
 * The results themselves (every metric and dtype, k and threshold, tiles, thread counts, the
 * pairs spill file) are rows of the case table (gram_cases.c), run on every backend against
 * the reference. Here: bad selection arguments fail before any work, with a message; and the
 * CRC-32 combination the .npz writer relies on.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "outcore.h"
#include "io/crc32.h"

static int ignore_pairs(void *user, const int64_t *rows, const int64_t *cols, const void *scores, int64_t count)
{
    (void)user, (void)rows, (void)cols, (void)scores, (void)count;
    return 0;
}

/* Bad selection arguments fail before any work, with a message. */
static void check_bad_arguments(oc_context *ctx)
{
    unsigned char d[4] = {1, 0, 1, 1};
    oc_matrix *a = NULL;
    CHECK(oc_matrix_from_dense(ctx, d, 2, 2, 2, &a) == OC_OK);
    int64_t idx[4];
    float sc[4];
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_TOPK, out.indices = idx, out.scores = sc;
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    CHECK(oc_gram(ctx, a, NULL, &o, &out, NULL) == OC_ERR_INVALID_ARGUMENT); /* TOPK without topk */
    o.topk = 2, o.use_threshold = 1;
    CHECK(oc_gram(ctx, a, NULL, &o, &out, NULL) == OC_ERR_INVALID_ARGUMENT);
    o.topk = 0, o.threshold = NAN;
    out.kind = OC_OUTPUT_PAIRS, out.pairs = ignore_pairs;
    CHECK(oc_gram(ctx, a, NULL, &o, &out, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "NaN") != NULL);
    o.threshold = 1;
    out.kind = OC_OUTPUT_MEMORY, out.data = sc;
    CHECK(oc_gram(ctx, a, NULL, &o, &out, NULL) == OC_ERR_INVALID_ARGUMENT);
    out.kind = OC_OUTPUT_FILE, out.path = "pairs.npy";
    CHECK(oc_gram(ctx, a, NULL, &o, &out, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), ".mtx") != NULL);
    oc_matrix_free(a);
}

static void check_crc(void)
{
    unsigned char buf[3000];
    uint64_t seed = 99;
    for (size_t i = 0; i < sizeof buf; ++i) buf[i] = (unsigned char)oc_test_rand(&seed);
    CHECK(oc_crc32_update(0, "123456789", 9) == 0xCBF43926u); /* the standard check value */
    const size_t splits[] = {0, 1, 7, 1500, 2999, 3000};
    uint32_t whole = oc_crc32_update(0, buf, sizeof buf);
    for (size_t s = 0; s < sizeof splits / sizeof *splits; ++s) {
        size_t k = splits[s];
        uint32_t a = oc_crc32_update(0, buf, k), b = oc_crc32_update(0, buf + k, sizeof buf - k);
        CHECK_MSG(oc_crc32_combine(a, b, sizeof buf - k) == whole, "crc32 combine at split %zu", k);
    }
}

int main(void)
{
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    check_crc();
    check_bad_arguments(ctx);
    oc_context_free(ctx);
    return oc_test_finish();
}
