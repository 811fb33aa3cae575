/*
 * test_map_fortran.c - the C API of map on a Fortran-order .npy (docs/map.md, "Fortran-order
 * files"): oc_map_result_fortran_order says so and oc_map_result_shape gives the array's own
 * shape; oc_map_run into out_data is refused without oc_map_options.fortran_out (nothing
 * written to the buffer) and, with it, fills the buffer in Fortran order; into a .npy file
 * the header says Fortran order and the bytes are those of the buffer. A 1-D result (a
 * reduction over an axis) is the same in either order and goes to memory either way.
 *
 * Memory given with oc_map_array.fortran_order is planned as such a file: alone, beside the
 * file, reduced over an axis; beside a C-order array or file, refused in one line naming
 * both; of a shape in both orders, C order. An array of version-1 structs (docs/abi.md),
 * without the field, is read in C order, stepping by its struct_size.
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

/* oc_map_array as version 1 declared it (docs/abi.md): up to shape, without fortran_order. */
typedef struct map_array_v1 {
    size_t struct_size;
    const char *name;
    const char *path;
    const void *data;
    oc_map_dtype dtype;
    int ndim;
    const int64_t *shape;
} map_array_v1;

static const int64_t grid[2] = {ROWS, COLS};

/* x[i][j] = 10 i + j + add in Fortran order (element (i, j) at j * ROWS + i), or in C order. */
static void fill(double *x, int fortran, double add)
{
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < COLS; j++) x[fortran ? j * ROWS + i : i * COLS + j] = 10.0 * i + j + add;
}

/* A float64 ROWS x COLS array in memory. */
static oc_map_array memory(const char *name, const double *data, int fortran)
{
    oc_map_array in = OC_MAP_ARRAY_INIT;
    in.name = name, in.data = data, in.dtype = OC_MAP_FLOAT64, in.ndim = 2, in.shape = grid;
    in.fortran_order = fortran;
    return in;
}

static void test_memory_in_fortran_order(oc_context *ctx, const char *path)
{
    double f[ROWS * COLS], c[ROWS * COLS], out[ROWS * COLS];
    fill(f, 1, 0), fill(c, 0, 0.5);
    oc_map_options o = OC_MAP_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    o.fortran_out = 1;
    oc_map *m = NULL;

    /* Alone: the result in Fortran order, of the array's own shape. */
    oc_map_array in[2] = {memory("a", f, 1), OC_MAP_ARRAY_INIT};
    CHECK_MSG(oc_map_create(ctx, "a * 3 - 1", in, 1, NULL, 0, &o, &m) == OC_OK, "%s", oc_context_last_error(ctx));
    int64_t shape[OC_MAP_MAX_DIMS] = {0};
    CHECK_EQ_I64(oc_map_result_shape(m, shape), 2);
    CHECK(shape[0] == ROWS && shape[1] == COLS);
    CHECK_EQ_I64(oc_map_result_fortran_order(m), 1);
    CHECK_MSG(oc_map_run(ctx, m, NULL, out, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    for (int k = 0; k < ROWS * COLS; k++) CHECK_MSG(out[k] == 3 * f[k] - 1, "%d: %g", k, out[k]);
    oc_map_free(m);

    /* Beside the Fortran-order file (x[i][j] = 10 i + j too) and a single element. */
    in[1] = (oc_map_array)OC_MAP_ARRAY_INIT;
    in[1].name = "b", in[1].path = path;
    const double two = 2;
    oc_map_array both[3] = {in[0], in[1], OC_MAP_ARRAY_INIT};
    both[2].name = "s", both[2].data = &two, both[2].ndim = 2, both[2].shape = (const int64_t[]){1, 1};
    CHECK_MSG(oc_map_create(ctx, "a + b * s", both, 3, NULL, 0, &o, &m) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK_EQ_I64(oc_map_result_fortran_order(m), 1);
    CHECK_MSG(oc_map_run(ctx, m, NULL, out, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    for (int k = 0; k < ROWS * COLS; k++) CHECK_MSG(out[k] == 3 * f[k], "%d: %g", k, out[k]);
    oc_map_free(m);

    /* Reduced over axis 0 and -1, counted as the array's own. */
    oc_map_options r = o;
    r.reduce = OC_MAP_REDUCE_SUM, r.has_axis = 1, r.axis = 0;
    CHECK_MSG(oc_map_create(ctx, "a", in, 1, NULL, 0, &r, &m) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK_EQ_I64(oc_map_result_shape(m, shape), 1);
    CHECK_EQ_I64(shape[0], COLS);
    CHECK_MSG(oc_map_run(ctx, m, NULL, out, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    for (int j = 0; j < COLS; j++) CHECK(out[j] == 10.0 * ROWS * (ROWS - 1) / 2 + ROWS * j);
    oc_map_free(m);
    r.axis = -1, r.reduce = OC_MAP_REDUCE_MAX;
    CHECK_MSG(oc_map_create(ctx, "a", in, 1, NULL, 0, &r, &m) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK_EQ_I64(oc_map_result_shape(m, shape), 1);
    CHECK_EQ_I64(shape[0], ROWS);
    CHECK_MSG(oc_map_run(ctx, m, NULL, out, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    for (int i = 0; i < ROWS; i++) CHECK(out[i] == 10.0 * i + COLS - 1);
    oc_map_free(m);

    /* Beside a C-order array or file: refused, naming both, memory as "input 'NAME'". */
    in[1] = memory("b", c, 0);
    m = NULL;
    CHECK_FAILED(ctx, oc_map_create(ctx, "a + b", in, 2, NULL, 0, &o, &m), OC_ERR_INPUT,
                 "input 'a' is in Fortran order (3 x 4) and input 'b' is an array in memory, read in C order (3 x 4)");
    CHECK(m == NULL);
    in[0] = memory("a", c, 0), in[1] = memory("b", f, 1);
    CHECK_FAILED(ctx, oc_map_create(ctx, "a + b", in, 2, NULL, 0, &o, &m), OC_ERR_INPUT,
                 "input 'b' is in Fortran order (3 x 4) and input 'a' is an array in memory, read in C order (3 x 4)");
    const char *c_path = oc_test_tmp_path("c.npy");
    FILE *fp = fopen(c_path, "wb");
    static const char head[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }";
    char header[128];
    memset(header, ' ', sizeof header);
    memcpy(header, head, sizeof head - 1);
    header[127] = '\n';
    CHECK(fp && fwrite(header, 1, sizeof header, fp) == sizeof header && fwrite(c, sizeof c, 1, fp) == 1);
    if (fp) fclose(fp);
    in[0] = memory("a", f, 1);
    in[1] = (oc_map_array)OC_MAP_ARRAY_INIT;
    in[1].name = "b", in[1].path = c_path;
    CHECK_FAILED(ctx, oc_map_create(ctx, "a + b", in, 2, NULL, 0, &o, &m), OC_ERR_INPUT,
                 "input 'a' is in Fortran order (3 x 4) and ", c_path, " is in C order (3 x 4)");

    /* A shape in both orders is read alike either way: a C-order result. */
    const int64_t row[2] = {1, ROWS * COLS};
    in[0].shape = row;
    in[1] = memory("b", c, 0);
    in[1].shape = row;
    CHECK_MSG(oc_map_create(ctx, "a - b", in, 2, NULL, 0, &o, &m) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK_EQ_I64(oc_map_result_fortran_order(m), 0);
    oc_map_free(m);
}

/* Version-1 structs: read in C order, the array stepped by their struct_size; an element
 * whose struct_size is not the first's is refused. */
static void test_version_1_arrays(oc_context *ctx)
{
    double f[ROWS * COLS], c[ROWS * COLS], out[ROWS * COLS];
    fill(f, 1, 0), fill(c, 0, 0);
    map_array_v1 in[2] = {
        {sizeof in[0], "a", NULL, f, OC_MAP_FLOAT64, 2, grid},
        {sizeof in[1], "b", NULL, c, OC_MAP_FLOAT64, 2, grid},
    };
    CHECK(sizeof in[0] < sizeof(oc_map_array));
    oc_map_options o = OC_MAP_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    oc_map *m = NULL;
    CHECK_MSG(oc_map_create(ctx, "a + 2 * b", (const oc_map_array *)in, 2, NULL, 0, &o, &m) == OC_OK, "%s",
              oc_context_last_error(ctx));
    CHECK_EQ_I64(oc_map_result_fortran_order(m), 0);
    CHECK_MSG(oc_map_run(ctx, m, NULL, out, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    for (int k = 0; k < ROWS * COLS; k++) CHECK_MSG(out[k] == f[k] + 2 * c[k], "%d: %g", k, out[k]);
    oc_map_free(m);
    m = NULL;
    in[1].struct_size = sizeof(oc_map_array);
    char want[96];
    snprintf(want, sizeof want, "input 1's struct_size %zu is not input 0's (%zu)", sizeof(oc_map_array), sizeof in[0]);
    CHECK_FAILED(ctx, oc_map_create(ctx, "a + b", (const oc_map_array *)in, 2, NULL, 0, &o, &m),
                 OC_ERR_INVALID_ARGUMENT, "OC_MAP_ARRAY_INIT", want);
    CHECK(m == NULL);
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

    test_memory_in_fortran_order(ctx, path);
    test_version_1_arrays(ctx);

    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
