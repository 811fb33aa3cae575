/*
 * test_sink.c - the dense sink's block copy (oc_dense_sink_put) against a plain loop.
 *
 * The copy streams whole rows with non-temporal stores after an unaligned head, so the
 * cases put blocks at every alignment of the destination row (column offsets 0..7 of 2- and
 * 4-byte elements), with widths below, at and past the streaming threshold, and check that
 * every element of the block arrived and that nothing around it was touched.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "engine/sink.h"

static void check_put(size_t es, int64_t ld, int64_t i0, int64_t j0, int64_t rows, int64_t cols, int64_t block_ld)
{
    int64_t n = i0 + rows + 1;
    size_t bytes = (size_t)(n * ld) * es;
    unsigned char *dst = malloc(bytes), *want = malloc(bytes), *block = malloc((size_t)(rows * block_ld) * es);
    CHECK(dst && want && block);
    if (!dst || !want || !block) goto done;
    memset(dst, 0xa5, bytes);
    memset(want, 0xa5, bytes);
    for (size_t k = 0; k < (size_t)(rows * block_ld) * es; ++k) block[k] = (unsigned char)(k * 131 + 7);
    for (int64_t r = 0; r < rows; ++r)
        memcpy(want + ((i0 + r) * ld + j0) * (int64_t)es, block + r * block_ld * (int64_t)es, (size_t)cols * es);
    oc_dense_sink sink = {(char *)dst, ld, es, 1, 1};
    oc_dense_sink_put(&sink, i0, j0, rows, cols, block, block_ld);
    CHECK_MSG(memcmp(dst, want, bytes) == 0, "put of %lld x %lld (%zu-byte elements) at (%lld, %lld), ld %lld differs",
              (long long)rows, (long long)cols, es, (long long)i0, (long long)j0, (long long)ld);
done:
    free(dst);
    free(want);
    free(block);
}

int main(void)
{
    static const int64_t widths[] = {1, 3, 15, 16, 17, 31, 33, 64, 100, 1000};
    for (size_t es = 2; es <= 4; es += 2)
        for (int64_t j0 = 0; j0 < 8; ++j0)
            for (size_t w = 0; w < sizeof widths / sizeof widths[0]; ++w) {
                int64_t cols = widths[w];
                check_put(es, j0 + cols + 5, 2, j0, 3, cols, cols);
                check_put(es, j0 + cols, 1, j0, 4, cols, cols + 9); /* block rows apart, destination rows adjacent */
            }
    return oc_test_finish();
}
