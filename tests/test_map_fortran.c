/*
 * test_map_fortran.c - the C API of map on a Fortran-order .npy (docs/map.md, "Fortran-order
 * files"): oc_map_result_fortran_order says so and oc_map_result_shape gives the array's own
 * shape; oc_map_run into out_data is refused without oc_map_options.fortran_out (nothing
 * written to the buffer) and, with it, fills the buffer in Fortran order; into a .npy file
 * the header says Fortran order and the bytes are those of the buffer. A 1-D result (a
 * reduction over an axis) is the same in either order and goes to memory either way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "outcore.h"

enum { ROWS = 3, COLS = 4 };

/* A float64 (ROWS, COLS) .npy in Fortran order holding x[i][j] = 10 i + j, written as numpy
 * writes it: column after column. */
static const char *write_fortran_npy(void)
{
    char head[128];
    int dict = snprintf(head + 10, sizeof head - 10, "{'descr': '<f8', 'fortran_order': True, 'shape': (%d, %d), }",
                        ROWS, COLS);
    const int total = (10 + dict + 1 + 63) / 64 * 64;
    memcpy(head, "\x93NUMPY\x01\x00", 8);
    head[8] = (char)(total - 10), head[9] = 0;
    memset(head + 10 + dict, ' ', (size_t)(total - 10 - dict - 1));
    head[total - 1] = '\n';
    double data[ROWS * COLS];
    for (int j = 0; j < COLS; j++)
        for (int i = 0; i < ROWS; i++) data[j * ROWS + i] = 10.0 * i + j;
    const char *path = oc_test_tmp_path("f.npy");
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(head, 1, (size_t)total, f) != (size_t)total || fwrite(data, sizeof data, 1, f) != 1 ||
        fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    return path;
}

static oc_map *create(oc_context *ctx, const char *path, const char *expr, const oc_map_options *o)
{
    oc_map_array in = OC_MAP_ARRAY_INIT;
    in.name = "a", in.path = path;
    oc_map *m = NULL;
    CHECK_MSG(oc_map_create(ctx, expr, &in, 1, NULL, 0, o, &m) == OC_OK, "%s", oc_context_last_error(ctx));
    return m;
}

int main(void)
{
    if (!oc_test_tmp_create("oc_map_fortran")) return 1;
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    const char *path = write_fortran_npy();

    oc_map_options o = OC_MAP_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    oc_map *m = create(ctx, path, "a * 2 + 1", &o);
    int64_t shape[OC_MAP_MAX_DIMS] = {0};
    CHECK_EQ_I64(oc_map_result_shape(m, shape), 2);
    CHECK(shape[0] == ROWS && shape[1] == COLS);
    CHECK_EQ_I64(oc_map_result_fortran_order(m), 1);

    /* Without fortran_out: refused, the buffer untouched. */
    double out[ROWS * COLS];
    for (int k = 0; k < ROWS * COLS; k++) out[k] = -7;
    CHECK_FAILED(ctx, oc_map_run(ctx, m, NULL, out, NULL), OC_ERR_INVALID_ARGUMENT, "fortran_out");
    for (int k = 0; k < ROWS * COLS; k++) CHECK(out[k] == -7);
    oc_map_free(m);

    /* With it: Fortran order, element (i, j) at j * ROWS + i. */
    o.fortran_out = 1;
    m = create(ctx, path, "a * 2 + 1", &o);
    CHECK_MSG(oc_map_run(ctx, m, NULL, out, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++)
            CHECK_MSG(out[j * ROWS + i] == 2 * (10.0 * i + j) + 1, "(%d, %d): %g", i, j, out[j * ROWS + i]);

    /* To a file: a Fortran-order header over the same bytes. */
    const char *result = oc_test_tmp_path("r.npy");
    CHECK_MSG(oc_map_run(ctx, m, result, NULL, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    FILE *f = fopen(result, "rb");
    unsigned char bytes[4096];
    size_t got = f ? fread(bytes, 1, sizeof bytes, f) : 0;
    if (f) fclose(f);
    CHECK(got == 128 + sizeof out);
    CHECK(got > 128 && memmem(bytes, 128, "'fortran_order': True", 21) != NULL);
    CHECK(got == 128 + sizeof out && memcmp(bytes + 128, out, sizeof out) == 0);
    oc_map_free(m);

    /* A reduction over axis 1 (counted as the array's own): ROWS sums, 1-D, in memory. */
    o.fortran_out = 0;
    o.reduce = OC_MAP_REDUCE_SUM;
    o.has_axis = 1, o.axis = 1;
    m = create(ctx, path, "a", &o);
    CHECK_EQ_I64(oc_map_result_shape(m, shape), 1);
    CHECK_EQ_I64(shape[0], ROWS);
    CHECK_EQ_I64(oc_map_result_fortran_order(m), 0);
    double sums[ROWS];
    CHECK_MSG(oc_map_run(ctx, m, NULL, sums, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    for (int i = 0; i < ROWS; i++) CHECK(sums[i] == 10.0 * i * COLS + (COLS * (COLS - 1)) / 2);
    oc_map_free(m);

    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
