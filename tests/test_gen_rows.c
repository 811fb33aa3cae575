/*
 * test_gen_rows.c - oc_matrix_write_rows with the generator of outcore gen (tools/generate.c):
 * the streamed file is the bytes oc_matrix_save writes for the matrix gen_matrix makes in
 * memory, header included, for every thread count and block size, packed and unpacked; a
 * fill that fails and a bad path leave no file.
 */
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "harness.h"

static int same_file(const char *a, const char *b)
{
    size_t la, lb;
    unsigned char *x = oc_test_read_file(a, &la), *y = oc_test_read_file(b, &lb);
    int same = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x);
    free(y);
    return same;
}

static int failing_fill(void *user, int64_t row0, int64_t nrows, unsigned char *bits, int64_t stride)
{
    (void)user, (void)nrows, (void)bits, (void)stride;
    return row0 > 0;
}

int main(void)
{
    if (!oc_test_tmp_create("oc_gen_rows")) return 1;
    oc_context *ctx;
    CHECK(oc_context_create(&ctx) == OC_OK);
    /* Odd widths: a padded last byte, a last word partly used, and one byte in all. */
    const gen_params cases[] = {
        {.rows = 300, .cols = 1001, .density = 0.3, .plant = 20, .flip = 0.05, .seed = 5},
        {.rows = 64, .cols = 64, .density = 0.5, .plant = 0, .flip = 0.01, .seed = 1},
        {.rows = 7, .cols = 3, .density = 0.05, .plant = 3, .flip = 0.5, .seed = 9},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
        const gen_params *p = &cases[c];
        oc_matrix *m = NULL;
        CHECK(gen_matrix(ctx, p, &m, NULL) == OC_OK);
        gen_plan plan;
        CHECK(gen_plan_init(&plan, p) == 0);
        for (int packed = 0; packed < 2; ++packed) {
            char want[512];
            snprintf(want, sizeof want, "%s", oc_test_tmp_path(packed ? "want_packed.npy" : "want.npy"));
            CHECK(oc_matrix_save(ctx, m, want, packed) == OC_OK);
            const int threads[] = {1, 3};
            const int64_t blocks[] = {0, 1, 7};
            for (int t = 0; t < 2; ++t)
                for (int b = 0; b < 3; ++b) {
                    oc_write_options o = OC_WRITE_OPTIONS_INIT;
                    o.packed = packed;
                    o.threads = threads[t];
                    o.block_rows = blocks[b];
                    const char *got = oc_test_tmp_path("got.npy");
                    CHECK(oc_matrix_write_rows(ctx, got, p->rows, p->cols, gen_fill_rows, &plan, &o) == OC_OK);
                    CHECK_MSG(same_file(want, got), "case %zu packed %d threads %d block_rows %lld: bytes differ", c,
                              packed, threads[t], (long long)blocks[b]);
                }
        }
        gen_plan_free(&plan);
        oc_matrix_free(m);
    }
    /* Failures leave nothing beside what was there: a fill that fails past the first block,
     * a missing directory, a name that is not .npy. */
    int before = oc_test_dir_entries(oc_test_tmpdir);
    oc_write_options o = OC_WRITE_OPTIONS_INIT;
    o.threads = 2;
    o.block_rows = 4;
    CHECK(oc_matrix_write_rows(ctx, oc_test_tmp_path("fail.npy"), 40, 100, failing_fill, NULL, &o) == OC_ERR_INPUT);
    CHECK(strstr(oc_context_last_error(ctx), "fail.npy") != NULL);
    CHECK(oc_matrix_write_rows(ctx, oc_test_tmp_path("no/such/dir.npy"), 4, 4, failing_fill, NULL, NULL) ==
          OC_ERR_INPUT);
    CHECK(oc_matrix_write_rows(ctx, oc_test_tmp_path("a.txt"), 4, 4, failing_fill, NULL, NULL) ==
          OC_ERR_INVALID_ARGUMENT);
    CHECK_EQ_I64(oc_test_dir_entries(oc_test_tmpdir), before);
    /* Planted pairs whose table no address space holds (its size would wrap): out of memory
     * at once, the plan holding nothing. */
    for (int64_t plant = (int64_t)1 << 60; plant <= (int64_t)1 << 61; plant <<= 1) {
        const gen_params huge = {.rows = (int64_t)1 << 62, .cols = 1, .density = 0.5, .plant = plant, .seed = 1};
        gen_plan plan;
        CHECK(gen_plan_init(&plan, &huge) == -1);
        CHECK(plan.pairs.count == 0 && plan.pairs.pairs == NULL);
    }
    /* A copy differs from its source in flip * cols distinct bits, rounded: every bit at 1,
     * none at 0, and 3 of 5 at 0.5 (2.5 rounds up). */
    const double flip[] = {1, 0, 0.5};
    const int64_t want[] = {5, 0, 3};
    for (int f = 0; f < 3; ++f) {
        const gen_params p = {.rows = 2, .cols = 5, .density = 0.5, .plant = 1, .flip = flip[f], .seed = 3};
        gen_plan plan;
        uint64_t rows[2] = {0, 0}; /* one word a row: a stride of 8 bytes */
        CHECK(gen_plan_init(&plan, &p) == 0);
        CHECK(gen_fill_rows(&plan, 0, 2, (unsigned char *)rows, 8) == 0);
        const int differ = __builtin_popcountll(rows[0] ^ rows[1]);
        CHECK_MSG(differ == want[f], "flip %g: %d bits differ, want %lld", flip[f], differ, (long long)want[f]);
        gen_plan_free(&plan);
    }
    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
