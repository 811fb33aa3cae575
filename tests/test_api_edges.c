/*
 * test_api_edges.c - the edges of the public API that outcore.h's conventions cover: a NULL
 * out-parameter is refused (never written through), out-parameters are left as they were on
 * failure, an output file is a .npy named so and an empty path is refused as oc_output_check
 * refuses it, a device that no build or machine can give is OC_ERR_UNSUPPORTED, messages name
 * what they are about (the function called, unnamed matrices as A and B, a bad enum by its
 * number, an unnamed map input), and oc_gram_check_files refuses inputs of different columns
 * before they are read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "outcore.h"

static int has(const oc_context *ctx, const char *text)
{
    const char *msg = oc_context_last_error(ctx);
    return msg && strstr(msg, text) != NULL && !strchr(msg, '\n');
}

#define CHECK_FAILS(call, status, text)                                                                                \
    do {                                                                                                               \
        oc_status st_ = (call);                                                                                        \
        CHECK_MSG(st_ == (status) && has(ctx, text), "%s: status %d, \"%s\"; expected %d and \"%s\"", #call, (int)st_, \
                  oc_context_last_error(ctx), (int)(status), text);                                                    \
    } while (0)

/* The parsers with a NULL out: OC_ERR_INVALID_ARGUMENT, as for an unknown name. */
static void check_parsers(void)
{
    CHECK(oc_metric_parse("counts", NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_dtype_parse("int32", NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_dtype_parse("i32", NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_backend_parse("cpu", NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_algorithm_parse("dense", NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_map_dtype_parse("float32", NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_matmul_dtype_parse("float32", NULL) == OC_ERR_INVALID_ARGUMENT);
    /* ... and the good names still parse. */
    oc_metric metric = OC_METRIC_COUNTS;
    oc_dtype dtype = OC_DTYPE_DEFAULT;
    oc_backend backend = OC_BACKEND_AUTO;
    oc_algorithm algorithm = OC_ALGORITHM_AUTO;
    CHECK(oc_metric_parse("jaccard", &metric) == OC_OK && metric == OC_METRIC_JACCARD);
    CHECK(oc_dtype_parse("u16", &dtype) == OC_OK && dtype == OC_DTYPE_UINT16);
    CHECK(oc_backend_parse("cuda", &backend) == OC_OK && backend == OC_BACKEND_CUDA);
    CHECK(oc_algorithm_parse("sparse", &algorithm) == OC_OK && algorithm == OC_ALGORITHM_SPARSE);

    /* A budget: each out is needed, and nothing is set on a refusal. */
    int64_t bytes = 7;
    double fraction = 0.25;
    CHECK(oc_size_parse("2G", &bytes, NULL) == OC_ERR_INVALID_ARGUMENT && bytes == 7);
    CHECK(oc_size_parse("50%", NULL, &fraction) == OC_ERR_INVALID_ARGUMENT && fraction == 0.25);
    CHECK(oc_size_parse("50%", &bytes, &fraction) == OC_OK && bytes == 0 && fraction == 0.5);
}

/* The map getters without a map: no dimensions (-1) and no dtype (-1, which has no name). */
static void check_map_getters(void)
{
    int64_t shape[OC_MAP_MAX_DIMS] = {42};
    CHECK(oc_map_result_shape(NULL, shape) == -1 && shape[0] == 42);
    CHECK(oc_map_result_shape(NULL, NULL) == -1);
    CHECK((int)oc_map_result_dtype(NULL) == -1 && oc_map_result_dtype(NULL) == OC_MAP_DTYPE_NONE);
    CHECK(oc_map_result_dtype(NULL) < 0); /* signed as documented, in C as in C++ */
    CHECK(oc_map_dtype_name((int)oc_map_result_dtype(NULL)) == NULL);
}

static int fill_ones(void *user, int64_t row0, int64_t nrows, unsigned char *bits, int64_t stride)
{
    (void)user, (void)row0;
    for (int64_t r = 0; r < nrows; ++r) memset(bits + r * stride, 0x55, (size_t)stride);
    return 0;
}

/* A rows x cols .npy of 0/1 in the scratch folder. */
static const char *write_npy(oc_context *ctx, const char *name, int64_t rows, int64_t cols)
{
    const char *path = oc_test_tmp_path(name);
    CHECK(oc_matrix_write_rows(ctx, path, rows, cols, fill_ones, NULL, NULL) == OC_OK);
    return path;
}

/* oc_matmul_plan leaves *text as it was when it fails, as oc_gram_plan does. */
static void check_plan_text(oc_context *ctx, const oc_matrix *a)
{
    char sentinel = 0;
    char *text = &sentinel;
    double x[4] = {1, 2, 3, 4};
    oc_matmul_array ma = OC_MATMUL_ARRAY_INIT;
    ma.data = x, ma.rows = 2, ma.cols = 2;
    CHECK(oc_matmul_plan(ctx, &ma, &ma, NULL, NULL, 0, 0, &text) == OC_ERR_INVALID_ARGUMENT && text == &sentinel);
    oc_matmul_options mo = OC_MATMUL_OPTIONS_INIT;
    mo.threads = -1;
    CHECK(oc_matmul_plan(ctx, &ma, &ma, NULL, &mo, 0, 0, &text) == OC_ERR_INVALID_ARGUMENT && text == &sentinel);
    mo.threads = 1;
    mo.backend = OC_BACKEND_CPU;
    CHECK(oc_matmul_plan(ctx, &ma, &ma, NULL, &mo, 0, 0, &text) == OC_OK && text != &sentinel && text);
    if (text != &sentinel) free(text);

    oc_gram_options go = OC_GRAM_OPTIONS_INIT;
    go.threads = -1;
    oc_output out = OC_OUTPUT_INIT;
    text = &sentinel;
    CHECK(oc_gram_plan(ctx, a, NULL, &go, &out, 0, &text) == OC_ERR_INVALID_ARGUMENT && text == &sentinel);
}

/* File outputs of matmul and map are .npy files named so; an empty path is refused as
 * oc_output_check refuses it, and as oc_gram does. Nothing is left in the folder. */
static void check_output_names(oc_context *ctx, const oc_matrix *a)
{
    const int before = oc_test_dir_entries(oc_test_tmpdir);
    double x[4] = {1, 2, 3, 4};
    oc_matmul_array ma = OC_MATMUL_ARRAY_INIT, mc = OC_MATMUL_ARRAY_INIT;
    ma.data = x, ma.rows = 2, ma.cols = 2;
    oc_matmul_options mo = OC_MATMUL_OPTIONS_INIT;
    mo.backend = OC_BACKEND_CPU;
    mo.threads = 1;

    oc_map_array in = OC_MAP_ARRAY_INIT;
    const int64_t shape[1] = {4};
    in.name = "a", in.data = x, in.dtype = OC_MAP_FLOAT64, in.ndim = 1, in.shape = shape;
    oc_map *m = NULL;
    CHECK(oc_map_create(ctx, "a * 2", &in, 1, NULL, 0, NULL, &m) == OC_OK);

    const char *bad[] = {"mc.txt", "mc", ".npy", "..npy", "mc.npy.tmp", "mc.npz"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        mc.path = oc_test_tmp_path(bad[i]);
        CHECK_FAILS(oc_matmul(ctx, &ma, &ma, &mc, &mo, NULL), OC_ERR_INVALID_ARGUMENT, "the name must end in .npy");
        CHECK_FAILS(oc_map_run(ctx, m, mc.path, NULL, NULL), OC_ERR_INVALID_ARGUMENT, "the name must end in .npy");
    }
    CHECK_EQ_I64(oc_test_dir_entries(oc_test_tmpdir), before);

    /* The empty path: the same status and words as oc_output_check, from every job. */
    CHECK_FAILS(oc_output_check(ctx, ""), OC_ERR_INPUT, "the output path is empty");
    mc.path = "";
    CHECK_FAILS(oc_matmul(ctx, &ma, &ma, &mc, &mo, NULL), OC_ERR_INPUT, "the output path is empty");
    CHECK_FAILS(oc_map_run(ctx, m, "", NULL, NULL), OC_ERR_INPUT, "the output path is empty");
    oc_gram_options go = OC_GRAM_OPTIONS_INIT;
    go.backend = OC_BACKEND_CPU;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_FILE;
    out.path = "";
    CHECK_FAILS(oc_gram(ctx, a, NULL, &go, &out, NULL), OC_ERR_INPUT, "the output path is empty");
    go.topk = 2;
    CHECK_FAILS(oc_gram(ctx, a, NULL, &go, &out, NULL), OC_ERR_INPUT, "the output path is empty");
    CHECK_EQ_I64(oc_test_dir_entries(oc_test_tmpdir), before);

    /* A .npy name in any case is taken, as the CLI takes it. */
    mc.path = oc_test_tmp_path("mc.NPY");
    CHECK(oc_matmul(ctx, &ma, &ma, &mc, &mo, NULL) == OC_OK && access(mc.path, F_OK) == 0);
    CHECK(oc_map_run(ctx, m, oc_test_tmp_path("mo.npy"), NULL, NULL) == OC_OK);
    unlink(mc.path);
    unlink(oc_test_tmp_path("mo.npy"));
    oc_map_free(m);
}

/* A device that no CUDA device can give (a build without CUDA, a machine without a usable
 * GPU) is OC_ERR_UNSUPPORTED from gram as from matmul; past the count of a machine that has
 * devices, a bad argument. */
static void check_devices(oc_context *ctx, const oc_matrix *a)
{
    const int count = oc_cuda_device_count();
    oc_gram_options go = OC_GRAM_OPTIONS_INIT;
    int32_t c[64];
    oc_output out = OC_OUTPUT_INIT;
    out.data = c;
    double x[4] = {1, 2, 3, 4}, y[4];
    oc_matmul_array ma = OC_MATMUL_ARRAY_INIT, mc = OC_MATMUL_ARRAY_INIT;
    ma.data = x, ma.rows = 2, ma.cols = 2;
    mc.data = y, mc.rows = 2, mc.cols = 2;
    oc_matmul_options mo = OC_MATMUL_OPTIONS_INIT;
    if (count == 0) {
        /* each with the device it names first */
        const char *lists[][2] = {{"0", "\"0\""}, {"all", "\"all\""}, {"0:2", "\"0\""}};
        for (size_t i = 0; i < sizeof lists / sizeof lists[0]; ++i) {
            go.devices = mo.devices = lists[i][0];
            go.backend = OC_BACKEND_AUTO;
            CHECK_FAILS(oc_gram(ctx, a, NULL, &go, &out, NULL), OC_ERR_UNSUPPORTED, lists[i][1]);
            go.backend = OC_BACKEND_CUDA;
            CHECK_FAILS(oc_gram(ctx, a, NULL, &go, &out, NULL), OC_ERR_UNSUPPORTED, lists[i][1]);
            if (strcmp(lists[i][0], "0:2") != 0) /* matmul does not split devices */
                CHECK(oc_matmul(ctx, &ma, &ma, &mc, &mo, NULL) == OC_ERR_UNSUPPORTED);
        }
        go.devices = NULL;
        go.backend = OC_BACKEND_CUDA;
        CHECK(oc_gram(ctx, a, NULL, &go, &out, NULL) == OC_ERR_UNSUPPORTED);
    } else {
        char past[16];
        snprintf(past, sizeof past, "%d", count);
        go.devices = past;
        CHECK_FAILS(oc_gram(ctx, a, NULL, &go, &out, NULL), OC_ERR_INVALID_ARGUMENT, "does not exist");
    }
    /* A typo is named before a device, whatever the machine. */
    go.devices = "0,x";
    go.backend = OC_BACKEND_AUTO;
    CHECK_FAILS(oc_gram(ctx, a, NULL, &go, &out, NULL), OC_ERR_INVALID_ARGUMENT, "\"x\"");
}

static void check_messages(oc_context *ctx, const oc_matrix *a)
{
    /* Two matrices left unnamed (both "A"): A and B. */
    unsigned char bits[4] = {1, 0, 0, 1};
    oc_matrix *b = NULL;
    CHECK(oc_matrix_from_dense(ctx, bits, 2, 2, 2, &b) == OC_OK);
    oc_gram_options go = OC_GRAM_OPTIONS_INIT;
    go.backend = OC_BACKEND_CPU;
    int32_t c[64];
    oc_output out = OC_OUTPUT_INIT;
    out.data = c;
    CHECK_FAILS(oc_gram(ctx, a, b, &go, &out, NULL), OC_ERR_INPUT, "B has 2 columns but A has 3: A and B must");
    /* A B named by the caller keeps its name. */
    CHECK(oc_matrix_set_name(ctx, b, "left") == OC_OK);
    CHECK_FAILS(oc_gram(ctx, a, b, &go, &out, NULL), OC_ERR_INPUT, "left has 2 columns but A has 3");
    /* Top-k past the rows of an unnamed B names it B. */
    CHECK(oc_matrix_set_name(ctx, b, "A") == OC_OK);
    oc_matrix *b3 = NULL;
    unsigned char bits3[6] = {1, 0, 1, 0, 1, 1};
    CHECK(oc_matrix_from_dense(ctx, bits3, 2, 3, 3, &b3) == OC_OK);
    go.topk = 5;
    int64_t idx[20];
    int32_t scores[20];
    oc_output topk = OC_OUTPUT_INIT;
    topk.kind = OC_OUTPUT_TOPK, topk.indices = idx, topk.scores = scores;
    CHECK_FAILS(oc_gram(ctx, a, b3, &go, &topk, NULL), OC_ERR_INVALID_ARGUMENT, "(the rows of B)");
    go.topk = 0;

    /* The function called, by its name. */
    char *text = NULL;
    CHECK_FAILS(oc_gram_plan(ctx, NULL, NULL, &go, &out, 0, &text), OC_ERR_INVALID_ARGUMENT,
                "oc_gram_plan: a, opts and out must not be NULL");
    CHECK_FAILS(oc_gram_explain(ctx, a, NULL, NULL, &out, &text), OC_ERR_INVALID_ARGUMENT,
                "oc_gram_explain: a, opts and out must not be NULL");
    CHECK_FAILS(oc_gram(ctx, a, NULL, &go, NULL, NULL), OC_ERR_INVALID_ARGUMENT,
                "oc_gram: a, opts and out must not be NULL");
    CHECK(text == NULL);
    /* A file output without a path: the explanation takes it (only the kind is read), the
     * plan and the job refuse it. */
    oc_output nameless = OC_OUTPUT_INIT;
    nameless.kind = OC_OUTPUT_FILE;
    CHECK_MSG(oc_gram_explain(ctx, a, NULL, &go, &nameless, &text) == OC_OK && text && strstr(text, "backend: "), "%s",
              oc_context_last_error(ctx));
    free(text);
    text = NULL;
    go.topk = 1;
    CHECK_MSG(oc_gram_explain(ctx, a, NULL, &go, &nameless, &text) == OC_OK && text, "%s", oc_context_last_error(ctx));
    free(text);
    text = NULL;
    go.topk = 0;
    CHECK_FAILS(oc_gram_plan(ctx, a, NULL, &go, &nameless, 0, &text), OC_ERR_INVALID_ARGUMENT, "output path is NULL");

    /* An enum value that is none: its number. */
    go.dtype = (oc_dtype)99;
    CHECK_FAILS(oc_gram(ctx, a, NULL, &go, &out, NULL), OC_ERR_INVALID_ARGUMENT, "dtype 99 is not an oc_dtype");
    go.dtype = (oc_dtype)-1;
    CHECK_FAILS(oc_gram(ctx, a, NULL, &go, &out, NULL), OC_ERR_INVALID_ARGUMENT, "dtype -1 is not an oc_dtype");
    go.dtype = OC_DTYPE_FLOAT32; /* a dtype, but not one of counts */
    CHECK_FAILS(oc_gram(ctx, a, NULL, &go, &out, NULL), OC_ERR_INVALID_ARGUMENT,
                "dtype float32 does not hold metric counts");

    /* Map inputs and scalars without a name, and a scalar without a value. */
    double x[2] = {1, 2};
    const int64_t shape[1] = {2};
    oc_map_array in = OC_MAP_ARRAY_INIT;
    in.data = x, in.dtype = OC_MAP_FLOAT64, in.ndim = 1, in.shape = shape;
    oc_map *m = NULL;
    CHECK_FAILS(oc_map_create(ctx, "a", &in, 1, NULL, 0, NULL, &m), OC_ERR_INVALID_ARGUMENT, "input 0 has no name");
    CHECK(m == NULL);
    in.name = "a";
    oc_map_scalar s[2] = {{"k", "2"}, {NULL, "3"}};
    CHECK_FAILS(oc_map_create(ctx, "a * k", &in, 1, s, 2, NULL, &m), OC_ERR_INVALID_ARGUMENT, "scalar 1 has no name");
    s[1].name = "j", s[1].value = NULL;
    CHECK_FAILS(oc_map_create(ctx, "a * k * j", &in, 1, s, 2, NULL, &m), OC_ERR_INPUT,
                "--set j=: the value is not a number");
    CHECK(!has(ctx, "null"));
    CHECK(m == NULL);
    oc_matrix_free(b);
    oc_matrix_free(b3);
}

/* Inputs whose headers declare different columns: refused before they are read, as oc_gram
 * refuses the matrices, naming both files. */
static void check_files_columns(oc_context *ctx)
{
    const char *big = write_npy(ctx, "big.npy", 300, 512);
    char big_path[512];
    snprintf(big_path, sizeof big_path, "%s", big);
    const char *b40 = write_npy(ctx, "b40.npy", 20, 40);
    oc_gram_options go = OC_GRAM_OPTIONS_INIT;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_FILE;
    out.path = oc_test_tmp_path("C.npy");
    CHECK_FAILS(oc_gram_check_files(ctx, big_path, b40, NULL, &go, &out), OC_ERR_INPUT, "has 40 columns but ");
    CHECK(has(ctx, big_path) && has(ctx, "has 512: A and B must have the same number of columns"));
    out.kind = OC_OUTPUT_MEMORY;
    CHECK(oc_gram_check_files(ctx, big_path, b40, NULL, &go, &out) == OC_ERR_INPUT);
    /* The same columns, or A alone, pass. */
    const char *b512 = write_npy(ctx, "b512.npy", 20, 512);
    CHECK(oc_gram_check_files(ctx, big_path, b512, NULL, &go, &out) == OC_OK);
    CHECK(oc_gram_check_files(ctx, big_path, NULL, NULL, &go, &out) == OC_OK);
    /* The job refuses the matrices read from them in the same words. */
    oc_matrix *a = NULL, *b = NULL;
    CHECK(oc_matrix_open(ctx, big_path, 0, &a) == OC_OK);
    CHECK(oc_matrix_open(ctx, b40, 0, &b) == OC_OK);
    go.backend = OC_BACKEND_CPU;
    CHECK_FAILS(oc_gram(ctx, a, b, &go, &out, NULL), OC_ERR_INPUT, "b40.npy has 40 columns but ");
    oc_matrix_free(a);
    oc_matrix_free(b);
}

int main(void)
{
    if (!oc_test_tmp_create("oc_api_edges")) return 1;
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    oc_matrix *a = oc_test_random01(ctx, 4, 3, 11);
    CHECK(a != NULL);
    check_parsers();
    check_map_getters();
    if (a) {
        check_plan_text(ctx, a);
        check_output_names(ctx, a);
        check_devices(ctx, a);
        check_messages(ctx, a);
    }
    check_files_columns(ctx);
    oc_matrix_free(a);
    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
