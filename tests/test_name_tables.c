/*
 * test_name_tables.c - the tables that give names to metrics, to map's operations and to the
 * output formats: every metric has a row whose name parses back to it and whose properties
 * agree with what oc_gram_result_dtype and the messages say; every dtype, and each of the
 * .npy writer's own types, has a row of its name and size; every GPU memory mode has a name
 * that parses back to it; every map op has one row, every
 * function name the list gives is found by the parser's lookup, and the public lists end
 * where the tables do; every output format has a row that its suffix finds again, and every
 * input format a name whose files the reader takes; every map
 * reduction has a name, "none" first; a matmul dtype is a result exactly when the promotion
 * computes a product in it; every type a product computes in is a matmul dtype, whose name
 * and size it has.
 * tests/cli/test_name_lists.py checks the same lists through the CLI and the binding.
 */
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "core/metric.h"
#include "io/formats/output_format.h"
#include "map/map_expr.h"
#include "matmul/matmul_dtype.h"
#include "harness.h"

static void test_metric_rows(void)
{
    for (int i = 0; i < OC_METRIC_COUNT; ++i) {
        const oc_metric_info *info = oc_metric_info_of((oc_metric)i);
        CHECK_MSG(info && info->name, "metric %d has no row", i);
        if (!info) continue;
        CHECK(oc_metric_name((oc_metric)i) == info->name);
        oc_metric parsed = OC_METRIC_COUNT;
        CHECK(oc_metric_parse(info->name, &parsed) == OC_OK && parsed == (oc_metric)i);
        /* The default dtype is one of the allowed ones, and result_dtype follows the mask. */
        CHECK(info->dtypes >> info->default_dtype & 1u);
        CHECK(oc_gram_result_dtype((oc_metric)i, OC_DTYPE_DEFAULT) == info->default_dtype);
        for (int d = OC_DTYPE_INT32; d <= OC_DTYPE_FLOAT32; ++d)
            CHECK_MSG((int)oc_gram_result_dtype((oc_metric)i, (oc_dtype)d) ==
                          ((info->dtypes >> d & 1u) ? d : (int)OC_DTYPE_DEFAULT),
                      "%s in %s", info->name, oc_dtype_name((oc_dtype)d));
        /* A float similarity lies in [0, 1]; a whole-number metric in [0, columns]. */
        CHECK(info->range == (info->is_float ? OC_METRIC_RANGE_UNIT : OC_METRIC_RANGE_COLUMNS));
        CHECK(info->is_float == (info->default_dtype == OC_DTYPE_FLOAT32));
    }
    CHECK(oc_metric_info_of(OC_METRIC_COUNT) == NULL);
    CHECK(oc_metric_info_of((oc_metric)-1) == NULL);
    CHECK(oc_metric_name(OC_METRIC_COUNT) == NULL);
    CHECK(oc_gram_result_dtype(OC_METRIC_COUNT, OC_DTYPE_DEFAULT) == OC_DTYPE_DEFAULT);
    oc_metric m = OC_METRIC_JACCARD;
    CHECK(oc_metric_parse("dice", &m) == OC_ERR_INVALID_ARGUMENT && m == OC_METRIC_JACCARD);
    CHECK(oc_metric_parse(NULL, &m) == OC_ERR_INVALID_ARGUMENT);
    /* Properties the selection and the sparse path rely on. */
    CHECK(oc_metric_info_of(OC_METRIC_HAMMING)->is_distance && !oc_metric_info_of(OC_METRIC_COSINE)->is_distance);
    CHECK(!oc_metric_info_of(OC_METRIC_COUNTS)->popcounts && oc_metric_info_of(OC_METRIC_JACCARD)->popcounts);
    CHECK(!oc_metric_info_of(OC_METRIC_HAMMING)->unshared_worst && oc_metric_info_of(OC_METRIC_COUNTS)->unshared_worst);
}

static void test_metric_dtypes_text(void)
{
    char text[256];
    oc_metric_dtypes_text(text, sizeof text);
    CHECK_MSG(strcmp(text, "counts and hamming: int32 or uint16; jaccard and cosine: float32") == 0, "got '%s'", text);
    char small[12];
    oc_metric_dtypes_text(small, sizeof small);
    CHECK_MSG(strcmp(small, "counts and ") == 0, "truncated to '%s'", small);
    oc_metric_dtypes_text(small, 0); /* public: a size of 0 writes nothing */
    CHECK(strcmp(small, "counts and ") == 0);
    oc_metric_dtypes_text(NULL, 0);
}

static void test_dtype_rows(void)
{
    for (int d = OC_DTYPE_INT32; d < OC_DTYPE_COUNT; ++d) {
        const oc_element *e = oc_element_of(d);
        CHECK_MSG(e && e->name && e->size > 0, "dtype %d has no row", d);
        if (!e) continue;
        CHECK(oc_dtype_name((oc_dtype)d) == e->name && oc_dtype_size((oc_dtype)d) == e->size);
        oc_dtype parsed = OC_DTYPE_DEFAULT;
        CHECK(oc_dtype_parse(e->name, &parsed) == OC_OK && parsed == (oc_dtype)d);
    }
    /* The .npy writer's own types have rows, but are no oc_dtype. */
    CHECK(strcmp(oc_element_of(OC_NPY_UINT8)->name, "uint8") == 0 && oc_element_of(OC_NPY_UINT8)->size == 1);
    CHECK(strcmp(oc_element_of(OC_NPY_INT64)->name, "int64") == 0 && oc_element_of(OC_NPY_INT64)->size == 8);
    CHECK(oc_element_of(OC_DTYPE_DEFAULT) == NULL && oc_element_of(OC_NPY_TYPE_COUNT) == NULL);
    CHECK(oc_dtype_name(OC_DTYPE_COUNT) == NULL && oc_dtype_size(OC_DTYPE_COUNT) == 0);
    oc_dtype d = OC_DTYPE_INT32;
    CHECK(oc_dtype_parse("uint8", &d) == OC_ERR_INVALID_ARGUMENT && d == OC_DTYPE_INT32);
    CHECK(oc_backend_name(OC_BACKEND_COUNT) == NULL && oc_algorithm_name(OC_ALGORITHM_COUNT) == NULL);
    CHECK(strcmp(oc_backend_name(OC_BACKEND_COUNT - 1), "cuda") == 0);
    CHECK(strcmp(oc_algorithm_name(OC_ALGORITHM_COUNT - 1), "sparse") == 0);
}

static void test_gpu_mem_mode_rows(void)
{
    for (int i = 0; i < OC_GPU_MEM_MODE_COUNT; ++i) {
        const char *name = oc_gpu_mem_mode_name((oc_gpu_mem_mode)i);
        CHECK_MSG(name, "GPU memory mode %d has no name", i);
        oc_gpu_mem_mode parsed = OC_GPU_MEM_MODE_COUNT;
        CHECK(oc_gpu_mem_mode_parse(name, &parsed) == OC_OK && parsed == (oc_gpu_mem_mode)i);
    }
    CHECK(oc_gpu_mem_mode_name(OC_GPU_MEM_MODE_COUNT) == NULL && oc_gpu_mem_mode_name((oc_gpu_mem_mode)-1) == NULL);
    CHECK(strcmp(oc_gpu_mem_mode_name(OC_GPU_MEM_GROW), "grow") == 0);
    oc_gpu_mem_mode mode = OC_GPU_MEM_RESERVE;
    CHECK(oc_gpu_mem_mode_parse("pin", &mode) == OC_ERR_INVALID_ARGUMENT && mode == OC_GPU_MEM_RESERVE);
    CHECK(oc_gpu_mem_mode_parse(NULL, &mode) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_gpu_mem_mode_parse("grow", NULL) == OC_ERR_INVALID_ARGUMENT);
}

static void test_map_op_rows(void)
{
    int functions = 0, operators = 0;
    for (int op = 0; op < MOP_COUNT; ++op) {
        const oc_map_op_info *info = oc_map_op_info_of((oc_map_op)op);
        CHECK_MSG(info && (int)info->op == op, "op %d has no row", op);
        if (!info) continue;
        CHECK(strcmp(oc_map_op_name((oc_map_op)op), info->name) == 0);
        CHECK(info->arity >= 0 && info->arity <= 3);
        CHECK((info->kind == MAP_KIND_INTERNAL) == (info->typing == MAP_TYPING_NONE));
        functions += info->kind == MAP_KIND_FUNCTION;
        operators += info->kind == MAP_KIND_OPERATOR;
    }
    CHECK(oc_map_op_info_of(MOP_COUNT) == NULL);
    int listed = 0;
    for (const char *name; (name = oc_map_function_name(listed)) != NULL; ++listed) {
        const oc_map_op_info *fn = oc_map_function(name, (int)strlen(name));
        CHECK_MSG(fn && fn->kind == MAP_KIND_FUNCTION && strcmp(fn->name, name) == 0, "function %s", name);
    }
    CHECK_EQ_I64(listed, functions);
    int ops = 0;
    while (oc_map_operator_name(ops)) ++ops;
    CHECK_EQ_I64(ops, operators);
    CHECK(oc_map_function_name(-1) == NULL && oc_map_operator_name(-1) == NULL);
    CHECK(oc_map_function("sqr", 3) == NULL && oc_map_function("sqrtx", 5) == NULL && oc_map_function("+", 1) == NULL);
    /* The CUDA spelling of the one function whose name numpy and CUDA write differently. */
    CHECK(strcmp(oc_map_function("arctan2", 7)->cuda, "atan2") == 0);
}

static void test_output_format_rows(void)
{
    for (int f = 0; f < OC_OUTPUT_FORMAT_COUNT; ++f) {
        const char *name = oc_output_format_name((oc_output_format)f);
        CHECK_MSG(name && oc_output_format_results((oc_output_format)f) != 0, "format %d has no row", f);
        if (!name) continue;
        char path[32];
        snprintf(path, sizeof path, "dir.npz/OUT.%s", name);
        CHECK_EQ_I64(oc_output_format_of(path), f);
    }
    CHECK(oc_output_format_name(OC_OUTPUT_FORMAT_COUNT) == NULL &&
          oc_output_format_results(OC_OUTPUT_FORMAT_COUNT) == 0);
    CHECK(oc_output_format_name((oc_output_format)-1) == NULL);
    CHECK(oc_output_format_of("OUT.NPZ") == OC_FORMAT_NPZ && oc_output_format_of("OUT.csv") == -1 &&
          oc_output_format_of("npz") == -1);
    char text[64];
    CHECK(strcmp(oc_output_formats_text(text, sizeof text, OC_RESULT_THRESHOLD, 1, " or "), ".npz, .mtx or .tsv") == 0);
    CHECK(strcmp(oc_output_formats_text(text, sizeof text, OC_RESULT_DENSE, 0, " and "), ".npz, .mtx and .tsv") == 0);
    CHECK(strcmp(oc_output_formats_text(text, sizeof text, OC_RESULT_DENSE, 1, " or "), ".npy") == 0);
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    CHECK(oc_output_format_check(ctx, "OUT.tsv", OC_RESULT_TOPK, "top-k") == OC_OK);
    CHECK(oc_output_format_check(ctx, "OUT.mtx", OC_RESULT_TOPK, "top-k") == OC_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strcmp(oc_context_last_error(ctx), "OUT.mtx: a top-k result is written as .npz or .tsv; got '.mtx'") == 0,
              "got '%s'", oc_context_last_error(ctx));
    oc_context_free(ctx);
}

static void test_input_format_rows(void)
{
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    for (int f = 0; f < OC_INPUT_FORMAT_COUNT; ++f) {
        const char *name = oc_input_format_name((oc_input_format)f);
        CHECK_MSG(name, "input format %d has no name", f);
        if (!name) continue;
        /* The reader takes its suffix: a missing file is looked for, not refused by its name. */
        char path[64];
        snprintf(path, sizeof path, "/nonexistent-dir/a.%s", name);
        oc_matrix *m = NULL;
        CHECK(oc_matrix_read(ctx, path, NULL, &m) == OC_ERR_INPUT && !m);
        CHECK_MSG(!strstr(oc_context_last_error(ctx), "unknown file type"), "%s", oc_context_last_error(ctx));
    }
    CHECK(oc_input_format_name(OC_INPUT_FORMAT_COUNT) == NULL && oc_input_format_name((oc_input_format)-1) == NULL);
    oc_context_free(ctx);
}

static void test_map_reduce_rows(void)
{
    CHECK(strcmp(oc_map_reduce_name(OC_MAP_REDUCE_NONE), "none") == 0);
    for (int r = 0; r < OC_MAP_REDUCE_COUNT; ++r) {
        CHECK_MSG(oc_map_reduce_name((oc_map_reduce)r) != NULL, "reduction %d has no name", r);
        for (int q = 0; q < r; ++q)
            CHECK(strcmp(oc_map_reduce_name((oc_map_reduce)q), oc_map_reduce_name((oc_map_reduce)r)) != 0);
    }
    CHECK(oc_map_reduce_name(OC_MAP_REDUCE_COUNT) == NULL && oc_map_reduce_name((oc_map_reduce)-1) == NULL);
    CHECK(strcmp(oc_map_reduce_name(OC_MAP_REDUCE_MAX), "max") == 0);
}

static void test_matmul_dtype_uses(void)
{
    int d = 1;
    for (; oc_matmul_dtype_name((oc_matmul_dtype)d); ++d) {
        const oc_matmul_dtype t = (oc_matmul_dtype)d;
        oc_mm_type in, out;
        oc_matmul_dtype result;
        char why[256];
        /* A result dtype is computed for some inputs (bool x bool: every result's), and a
         * .npy file holds exactly the dtypes with a descr. */
        const int computed =
            oc_matmul_promote(OC_MATMUL_BOOL, OC_MATMUL_BOOL, t, &in, &out, &result, why, sizeof why) == 0;
        CHECK_MSG(computed == !!(oc_matmul_dtype_uses(t) & OC_MATMUL_DTYPE_RESULT), "%s: %s", oc_matmul_dtype_name(t),
                  computed ? "computed" : why);
        CHECK_MSG((oc_matmul_dtype_descr(t) != NULL) == !!(oc_matmul_dtype_uses(t) & OC_MATMUL_DTYPE_NPY), "%s",
                  oc_matmul_dtype_name(t));
        if (!computed)
            CHECK_MSG(strstr(why, "float64, float32, float16, bfloat16, int32 or bool (") != NULL, "%s", why);
    }
    CHECK(d == OC_MATMUL_BOOL + 1);
    CHECK(oc_matmul_dtype_uses(OC_MATMUL_DEFAULT) == 0 && oc_matmul_dtype_uses((oc_matmul_dtype)d) == 0);
}

static void test_matmul_type_rows(void)
{
    /* Every compute and result type is a public dtype, whose name and size it goes by; no two
     * types share one. */
    for (int i = 0; i < OC_MM_TYPE_COUNT; ++i) {
        const oc_matmul_dtype d = oc_matmul_dtype_of((oc_mm_type)i);
        CHECK_MSG(d != OC_MATMUL_DEFAULT, "type %d has no dtype", i);
        CHECK(oc_mm_type_name((oc_mm_type)i) == oc_matmul_dtype_name(d));
        CHECK(oc_mm_type_size((oc_mm_type)i) == oc_matmul_dtype_size(d) && oc_mm_type_size((oc_mm_type)i) > 0);
        for (int j = 0; j < i; ++j) CHECK(oc_matmul_dtype_of((oc_mm_type)j) != d);
    }
    CHECK(strcmp(oc_mm_type_name(OC_MM_BFLOAT16), "bfloat16") == 0 && oc_mm_type_size(OC_MM_FLOAT64) == 8);
    CHECK(oc_matmul_dtype_of(OC_MM_TYPE_COUNT) == OC_MATMUL_DEFAULT && oc_mm_type_size(OC_MM_TYPE_COUNT) == 0);
    CHECK(strcmp(oc_mm_type_name(OC_MM_TYPE_COUNT), "?") == 0 && strcmp(oc_mm_type_name((oc_mm_type)-1), "?") == 0);
}

static void test_names_text(void)
{
    char text[64];
    CHECK(oc_names_text(OC_NAMES_BACKENDS, text, sizeof text) == text && strcmp(text, "auto, cpu or cuda") == 0);
    CHECK(strcmp(oc_names_text(OC_NAMES_ALGORITHMS, text, sizeof text), "auto, dense or sparse") == 0);
    CHECK(strcmp(oc_names_text(OC_NAMES_GPU_MEM_MODES, text, sizeof text), "grow or reserve") == 0);
    /* Every name of the table, whatever it holds. */
    oc_names_text(OC_NAMES_BACKENDS, text, sizeof text);
    for (int i = 0; i < OC_BACKEND_COUNT; ++i) CHECK(strstr(text, oc_backend_name((oc_backend)i)) != NULL);
    oc_names_text(OC_NAMES_ALGORITHMS, text, sizeof text);
    for (int i = 0; i < OC_ALGORITHM_COUNT; ++i) CHECK(strstr(text, oc_algorithm_name((oc_algorithm)i)) != NULL);
    oc_names_text(OC_NAMES_GPU_MEM_MODES, text, sizeof text);
    for (int i = 0; i < OC_GPU_MEM_MODE_COUNT; ++i)
        CHECK(strstr(text, oc_gpu_mem_mode_name((oc_gpu_mem_mode)i)) != NULL);
    char small[8];
    CHECK(strcmp(oc_names_text(OC_NAMES_BACKENDS, small, sizeof small), "auto, c") == 0);
    CHECK(strcmp(oc_names_text(OC_NAME_LIST_COUNT, text, sizeof text), "") == 0);
    CHECK(oc_names_text(OC_NAMES_BACKENDS, NULL, 0) == NULL);
    /* A table kept beside its code: a row left empty is neither listed nor found. */
    static const char *const rows[] = {"one", NULL, "two", "three", NULL};
    CHECK(strcmp(oc_names_join(rows, 5, text, sizeof text), "one, two or three") == 0);
    CHECK(strcmp(oc_names_join(rows, 2, text, sizeof text), "one") == 0);
    CHECK(strcmp(oc_names_join(rows, 0, text, sizeof text), "") == 0);
    CHECK(strcmp(oc_names_join(NULL, 3, text, sizeof text), "") == 0);
    CHECK(oc_names_find(rows, 5, "three") == 3 && oc_names_find(rows, 5, "one") == 0);
    CHECK(oc_names_find(rows, 5, "four") == -1 && oc_names_find(rows, 5, NULL) == -1);
    CHECK(oc_names_find(rows, 3, "three") == -1 && oc_names_find(NULL, 5, "one") == -1);
}

int main(void)
{
    test_metric_rows();
    test_metric_dtypes_text();
    test_dtype_rows();
    test_gpu_mem_mode_rows();
    test_map_op_rows();
    test_output_format_rows();
    test_input_format_rows();
    test_map_reduce_rows();
    test_matmul_dtype_uses();
    test_matmul_type_rows();
    test_names_text();
    return oc_test_finish();
}
