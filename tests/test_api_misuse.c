/*
 * test_api_misuse.c - what a careless C caller can get wrong outside matmul
 * (test_matmul_calls.c has its own) is refused with OC_ERR_INVALID_ARGUMENT before any memory is touched: a row
 * stride whose rows reach past the address space, sizes whose sums or byte counts overflow, a
 * NULL context where the call needs its workers, and structs of no version's size; every
 * earlier version of the gram options is still taken where oc_gram takes it; out-parameters
 * are left as they were on failure; and names from outside reach messages escaped.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "outcore.h"

static int fill_nothing(void *user, int64_t row0, int64_t nrows, unsigned char *bits, int64_t stride)
{
    (void)user, (void)row0, (void)nrows, (void)bits, (void)stride;
    return 0;
}

static int refuse_pairs(void *user, const int64_t *rows, const int64_t *cols, const void *values, int64_t count)
{
    (void)user, (void)rows, (void)cols, (void)values, (void)count;
    return 1;
}

static int launch_nothing(const oc_stream_chunk *chunk, void *user)
{
    (void)user, (void)chunk;
    return 0;
}

static void check_gram(oc_context *ctx, const oc_matrix *a)
{
    int32_t c[16];
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    opts.backend = OC_BACKEND_CPU;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_MEMORY;
    out.data = c;
    out.ld = INT64_MAX / 2; /* 4 rows of it pass the address space */
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, NULL) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "past the end of the address space"));
    out.ld = 0;
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, NULL) == OC_OK);
    /* A failed job leaves the caller's stats as they were (outcore.h: out-parameters). */
    oc_gram_options pairs = OC_GRAM_OPTIONS_INIT;
    pairs.backend = OC_BACKEND_CPU;
    pairs.use_threshold = 1;
    pairs.threshold = 0;
    oc_output to_callback = OC_OUTPUT_INIT;
    to_callback.kind = OC_OUTPUT_PAIRS;
    to_callback.pairs = refuse_pairs;
    oc_gram_stats stats;
    memset(&stats, 0x5a, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK(oc_gram(ctx, a, NULL, &pairs, &to_callback, &stats) != OC_OK);
    const unsigned char *bytes = (const unsigned char *)&stats;
    int untouched = 1;
    for (size_t i = sizeof stats.struct_size; i < sizeof stats; ++i) untouched &= bytes[i] == 0x5a;
    CHECK_MSG(untouched, "a failed job wrote the caller's stats");
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, &stats) == OC_OK && stats.seconds >= 0 && stats.seconds < 1e6);
    /* Enum values out of range, refused with a message that lists every name. */
    opts.backend = (oc_backend)OC_BACKEND_COUNT;
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, NULL) == OC_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < OC_BACKEND_COUNT; ++i)
        CHECK_MSG(strstr(oc_context_last_error(ctx), oc_backend_name((oc_backend)i)), "%s", oc_context_last_error(ctx));
    opts.backend = OC_BACKEND_CPU;
    opts.gpu_mem_mode = (oc_gpu_mem_mode)9;
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, NULL) == OC_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < OC_GPU_MEM_MODE_COUNT; ++i)
        CHECK_MSG(strstr(oc_context_last_error(ctx), oc_gpu_mem_mode_name((oc_gpu_mem_mode)i)), "%s",
                  oc_context_last_error(ctx));
    opts.gpu_mem_mode = OC_GPU_MEM_GROW;
    /* Sizes of no version: larger than the library's own. */
    opts.struct_size = 12345;
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, NULL) == OC_ERR_INVALID_ARGUMENT);
    opts.struct_size = sizeof opts;
    out.struct_size = 1000;
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, NULL) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "oc_output.struct_size"));
    out.struct_size = sizeof out;
    /* A size given: the fraction is not read (outcore.h), as matmul and map do not read it. */
    opts.gpu_mem_bytes = 1 << 30;
    opts.gpu_mem_fraction = 0;
    CHECK_MSG(oc_gram(ctx, a, NULL, &opts, &out, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    opts.gpu_mem_bytes = 0;
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, NULL) == OC_ERR_INVALID_ARGUMENT);
    opts.gpu_mem_fraction = 0.9;
    /* The plan and the explanation refuse the outputs oc_gram refuses. */
    char *text = NULL;
    out.kind = (oc_output_kind)42;
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, NULL) == OC_ERR_UNSUPPORTED);
    CHECK(oc_gram_plan(ctx, a, NULL, &opts, &out, 0, &text) == OC_ERR_UNSUPPORTED && text == NULL);
    CHECK(oc_gram_explain(ctx, a, NULL, &opts, &out, &text) == OC_ERR_UNSUPPORTED && text == NULL);
    out.kind = OC_OUTPUT_FILE;
    out.path = NULL;
    CHECK(oc_gram_plan(ctx, a, NULL, &opts, &out, 0, &text) == OC_ERR_INVALID_ARGUMENT && text == NULL);
}

static void check_files(oc_context *ctx, const oc_matrix *a)
{
    if (!oc_test_tmp_create("oc_api_misuse")) return;
    const char *in = oc_test_tmp_path("a.npy"), *res = oc_test_tmp_path("c.npy");
    CHECK(oc_matrix_save(ctx, a, in, 0) == OC_OK);
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_FILE;
    out.path = res;
    CHECK(oc_gram_check_files(ctx, in, NULL, NULL, &opts, &out) == OC_OK);
    /* An earlier version of the options (before use_min_score), as oc_gram takes it. */
    opts.struct_size = offsetof(oc_gram_options, use_min_score);
    CHECK_MSG(oc_gram_check_files(ctx, in, NULL, NULL, &opts, &out) == OC_OK, "%s", oc_context_last_error(ctx));
    opts.struct_size = sizeof opts + 8;
    CHECK(oc_gram_check_files(ctx, in, NULL, NULL, &opts, &out) == OC_ERR_INVALID_ARGUMENT);
    opts.struct_size = sizeof opts;
    out.struct_size = 3;
    CHECK(oc_gram_check_files(ctx, in, NULL, NULL, &opts, &out) == OC_ERR_INVALID_ARGUMENT);
    out.struct_size = sizeof out;
    out.path = NULL; /* as oc_gram refuses it */
    CHECK(oc_gram_check_files(ctx, in, NULL, NULL, &opts, &out) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "output path is NULL"));
    oc_read_options read = OC_READ_OPTIONS_INIT;
    read.struct_size = 9999;
    oc_matrix *m = NULL;
    CHECK(oc_matrix_read(ctx, in, &read, &m) == OC_ERR_INVALID_ARGUMENT && m == NULL);
    CHECK(oc_matrix_read(NULL, in, NULL, &m) == OC_ERR_INVALID_ARGUMENT && m == NULL);
    /* A row count of a column count that would wrap when padded to words. */
    CHECK(oc_matrix_write_rows(ctx, res, 1, INT64_MAX - 10, fill_nothing, NULL, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_matrix_write_rows(NULL, res, 1, 8, fill_nothing, NULL, NULL) == OC_ERR_INVALID_ARGUMENT);
    /* More threads than any job takes, refused as oc_gram refuses them (none started). */
    oc_write_options many = OC_WRITE_OPTIONS_INIT;
    many.threads = OC_MAX_THREADS + 1;
    CHECK(oc_matrix_write_rows(ctx, res, 1, 8, fill_nothing, NULL, &many) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "threads must be from 0"));
    oc_test_tmp_remove();
}

static void check_constructors(void)
{
    /* Large enough that the constructors would hand the packing to the context's workers. */
    static unsigned char bytes[4000 * 64];
    oc_matrix *m = NULL;
    CHECK(oc_matrix_from_dense(NULL, bytes, 4000, 64, 64, &m) == OC_ERR_INVALID_ARGUMENT && m == NULL);
    CHECK(oc_matrix_from_bits(NULL, bytes, 4000, 512, 64, OC_BITS_MSB_FIRST, &m) == OC_ERR_INVALID_ARGUMENT);
    CHECK(oc_matrix_from_values(NULL, bytes, 4000, 64, 64, OC_MAP_UINT8, 0, &m) == OC_ERR_INVALID_ARGUMENT);
    CHECK(m == NULL);
}

static void check_map_and_stream(oc_context *ctx)
{
    /* An input of INT64_MAX float64 elements (nothing of it is read: the result is empty). */
    static const double x[1] = {0};
    const int64_t xs[2] = {0, 1}, ys[2] = {1, INT64_MAX};
    oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
    in[0].name = "x", in[0].data = x, in[0].ndim = 2, in[0].shape = xs;
    in[1].name = "y", in[1].data = x, in[1].ndim = 2, in[1].shape = ys;
    oc_map *m = NULL;
    CHECK(oc_map_create(ctx, "x + y", in, 2, NULL, 0, NULL, &m) == OC_ERR_INVALID_ARGUMENT && m == NULL &&
          strstr(oc_context_last_error(ctx), "more than 2^63 - 1 bytes"));
    /* Options out of range. */
    oc_map_options mo = OC_MAP_OPTIONS_INIT;
    mo.threads = -4;
    CHECK(oc_map_create(ctx, "x * 2", in, 1, NULL, 0, &mo, &m) == OC_ERR_INVALID_ARGUMENT && m == NULL);
    mo.threads = 0;
    mo.gpu_mem_fraction = 0.0 / 0.0;
    CHECK(oc_map_create(ctx, "x * 2", in, 1, NULL, 0, &mo, &m) == OC_ERR_INVALID_ARGUMENT && m == NULL);
    /* Two side arrays whose bytes together pass 2^63. */
    oc_stream_array arrays[2];
    memset(arrays, 0, sizeof arrays);
    for (int i = 0; i < 2; ++i) {
        arrays[i].name = i ? "t" : "s";
        arrays[i].role = OC_STREAM_SIDE;
        arrays[i].elem_size = 1;
        arrays[i].ndim = 1;
        arrays[i].shape[0] = INT64_MAX / 2 + 1;
        arrays[i].host = (void *)x;
    }
    oc_stream_spec spec = OC_STREAM_SPEC_INIT;
    spec.arrays = arrays;
    spec.narrays = 2;
    spec.launch = launch_nothing;
    spec.extent = 1;
    CHECK_MSG(oc_stream_run(ctx, &spec, NULL, NULL) == OC_ERR_INVALID_ARGUMENT, "%s", oc_context_last_error(ctx));
    /* A failed run, and a run this build or host cannot make, leave the caller's stats and
     * pointers as they were. */
    oc_stream_stats stats;
    memset(&stats, 0x5a, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK(oc_stream_run(ctx, &spec, NULL, &stats) != OC_OK);
    arrays[0].shape[0] = arrays[1].shape[0] = 1;
    if (oc_stream_run(ctx, &spec, NULL, &stats) != OC_OK) { /* no usable GPU: refused */
        const unsigned char *bytes = (const unsigned char *)&stats;
        int untouched = 1;
        for (size_t i = sizeof stats.struct_size; i < sizeof stats; ++i) untouched &= bytes[i] == 0x5a;
        CHECK_MSG(untouched, "oc_stream_run wrote its stats on failure: %s", oc_context_last_error(ctx));
    }
    void *block = (void *)&stats;
    CHECK(oc_pinned_alloc(ctx, 0, &block) == OC_ERR_INVALID_ARGUMENT && block == (void *)&stats);
    if (oc_pinned_alloc(ctx, 4096, &block) == OC_OK) oc_pinned_free(block);
    else CHECK(block == (void *)&stats);
    CHECK(oc_pinned_alloc(ctx, 16, NULL) == OC_ERR_INVALID_ARGUMENT && strstr(oc_context_last_error(ctx), "NULL"));
    /* Out-parameters are left as they were on failure. */
    int64_t removed = 7;
    CHECK(oc_output_clean(ctx, NULL, NULL, NULL, &removed) == OC_ERR_INVALID_ARGUMENT && removed == 7);
    CHECK(oc_output_clean(ctx, "", NULL, NULL, &removed) == OC_ERR_INPUT && removed == 7);
}

/* A name from outside (a file or a matrix name) reaches a message as text a terminal shows
 * and does not act on: its control bytes as \xNN, valid UTF-8 kept, and one line. */
static void check_message_names(oc_context *ctx, oc_matrix *a)
{
    unsigned char bits[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    oc_matrix *b = NULL;
    CHECK(oc_matrix_from_bits(ctx, bits, 1, 32, 8, OC_BITS_MSB_FIRST, &b) == OC_OK);
    CHECK(oc_matrix_set_name(ctx, b, "evil\x1b[2J\u00e9\nname\x9b") == OC_OK);
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    opts.backend = OC_BACKEND_CPU;
    oc_output out = OC_OUTPUT_INIT;
    int32_t c[4];
    out.kind = OC_OUTPUT_MEMORY;
    out.data = c;
    CHECK(oc_gram(ctx, a, b, &opts, &out, NULL) == OC_ERR_INPUT);
    const char *msg = oc_context_last_error(ctx);
    int plain = 1;
    for (const unsigned char *p = (const unsigned char *)msg; *p; ++p) plain &= *p >= 0x20 && *p != 0x7f;
    CHECK_MSG(plain && strstr(msg, "evil\\x1B[2J\u00e9 name\\x9B"), "%s", msg);
    oc_matrix_free(b);
}

int main(void)
{
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    unsigned char bits[4 * 8] = {0xf0, 0, 0, 0, 0, 0, 0, 0, 0x0f, 0, 0, 0, 0, 0, 0, 0,
                                 0xff, 0, 0, 0, 0, 0, 0, 0, 0x81, 0, 0, 0, 0, 0, 0, 0};
    oc_matrix *a = NULL;
    CHECK(oc_matrix_from_bits(ctx, bits, 4, 64, 8, OC_BITS_MSB_FIRST, &a) == OC_OK);
    check_gram(ctx, a);
    check_files(ctx, a);
    check_constructors();
    check_map_and_stream(ctx);
    check_message_names(ctx, a);
    oc_matrix_free(a);
    oc_context_free(ctx);
    return oc_test_finish();
}
