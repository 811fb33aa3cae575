/*
 * test_cuda_gram.c - what the case table does not reach of the CUDA engine.
 *
 * Results of every shape, output, kernel and budget are the case table's, run by
 * test_cuda_cases.c against the reference. Here: the failures (a job that cannot fit its
 * smallest plan, a budget above the card or as a fraction that fits nothing, a device that
 * does not exist, and an injected failure at every device and pinned allocation point, each
 * of which must return a clean status and leave no device or pinned memory behind); reserve
 * mode; a job too large for the reference (n = 20000, m = 100000 under 64 MiB: b1 against
 * popc, and against the CPU on a sample of rows); and the staging a context frees with it.
 *
 * OUTCORE_TEST_QUICK (for compute-sanitizer runs) skips the failures and the large job.
 * Exits 77 when no CUDA device is usable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "outcore.h"
#include "matrix/matrix.h"
#include "engine/cuda/device.h"

static oc_context *ctx;
static int quick;

/* Rows cycle: all zero, all one, then random of the given density. */
static oc_matrix *make_matrix(int64_t rows, int64_t cols, double density, uint64_t *seed)
{
    unsigned char *bytes = malloc((size_t)(rows * cols));
    if (!bytes) return NULL;
    uint64_t thresh = (uint64_t)(density * 4294967296.0);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
            unsigned char v;
            if (i % 7 == 3) v = 0;
            else if (i % 7 == 5) v = 1;
            else v = (oc_test_rand(seed) & 0xffffffffu) < thresh;
            bytes[i * cols + j] = v;
        }
    oc_matrix *m = NULL;
    oc_status st = oc_matrix_from_dense(ctx, bytes, rows, cols, cols, &m);
    free(bytes);
    return st == OC_OK ? m : NULL;
}

static void *gram_into(const oc_matrix *a, const oc_matrix *b, oc_gram_options *o, size_t bytes, oc_status *st,
                       oc_gram_stats *stats)
{
    void *buf = malloc(bytes ? bytes : 1);
    *st = OC_ERR_NO_MEMORY;
    if (!buf) return NULL;
    memset(buf, 0xAB, bytes); /* poison: an element never written shows up as a mismatch */
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_MEMORY;
    out.data = buf;
    *st = oc_gram(ctx, a, b, o, &out, stats);
    return buf;
}

/* n = 20000, m = 100000 under 64 MiB: b1 against popc over the whole result, and against
 * the CPU on a sample of rows (the full CPU reference would take minutes). */
static void run_large_streamed(void)
{
    const int64_t n = 20000, m = 100000, sample = 48;
    uint64_t seed = 42;
    oc_matrix *a = make_matrix(n, m, 0.3, &seed);
    CHECK(a != NULL);
    if (!a) return;
    size_t bytes = (size_t)(n * n) * 4;
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = OC_BACKEND_CUDA;
    o.gpu_mem_bytes = 64ll << 20;
    oc_gram_stats sb = {.struct_size = sizeof sb}, sp = {.struct_size = sizeof sp};
    oc_status st_b, st_p, st_c;
    setenv("OUTCORE_CUDA_KERNEL", "b1", 1);
    int32_t *gb = gram_into(a, NULL, &o, bytes, &st_b, &sb);
    setenv("OUTCORE_CUDA_KERNEL", "popc", 1);
    int32_t *gp = gram_into(a, NULL, &o, bytes, &st_p, &sp);
    CHECK_MSG(st_b == OC_OK && st_p == OC_OK, "large streamed: %s", oc_context_last_error(ctx));
    if (st_b == OC_OK && st_p == OC_OK) {
        CHECK_MSG(memcmp(gb, gp, bytes) == 0, "large streamed: b1 and popc differ");
        CHECK(sb.dev_peak_bytes <= o.gpu_mem_bytes);
        CHECK(sb.bytes_h2d > n * a->words_per_row * 8);
        printf("  large streamed: %lld tiles, %.1f MiB peak of 64, %.0f MiB uploaded (A is %.0f MiB)\n",
               (long long)sb.tiles, sb.dev_peak_bytes / 1048576.0, sb.bytes_h2d / 1048576.0,
               n * a->words_per_row * 8 / 1048576.0);
        /* CPU reference for rows r0 .. r0+sample-1 against all rows. */
        oc_matrix *s = NULL;
        int64_t r0 = 9973;
        CHECK(oc_matrix_alloc(ctx, sample, m, "sample", &s) == OC_OK);
        if (s) {
            memcpy(s->bits, a->bits + r0 * a->words_per_row, (size_t)(sample * a->words_per_row) * 8);
            o.backend = OC_BACKEND_CPU;
            int32_t *ref = gram_into(s, a, &o, (size_t)(sample * n) * 4, &st_c, NULL);
            CHECK(st_c == OC_OK);
            if (st_c == OC_OK && ref)
                CHECK_MSG(memcmp(ref, gb + r0 * n, (size_t)(sample * n) * 4) == 0,
                          "large streamed: rows %lld.. differ from the CPU", (long long)r0);
            free(ref);
            oc_matrix_free(s);
        }
    }
    free(gb);
    free(gp);
    oc_matrix_free(a);
}

/* Jobs keep their pinned staging in their context for the next job (mem/pinned_cache.c);
 * once that is released, nothing the jobs took may be left. */
static void check_clean(const char *what)
{
    oc_context_release_cached_memory(ctx);
    CHECK_MSG(oc_context_cached_memory_bytes(ctx) == 0, "%s: idle staging left after its release", what);
    CHECK_MSG(oc_cuda_live_device_bytes() == 0 && oc_cuda_live_pinned_bytes() == 0,
              "%s: %lld device and %lld pinned bytes left allocated", what, (long long)oc_cuda_live_device_bytes(),
              (long long)oc_cuda_live_pinned_bytes());
}

/* A context that ran a GPU job frees the staging kept for its next job when it is freed. */
static void check_context_free_releases(void)
{
    uint64_t seed = 11;
    oc_context *c2 = NULL;
    oc_matrix *a = make_matrix(300, 4096, 0.5, &seed);
    int32_t *out = malloc((size_t)300 * 300 * 4);
    CHECK(a && out && oc_context_create(&c2) == OC_OK);
    if (a && out && c2) {
        oc_gram_options o = OC_GRAM_OPTIONS_INIT;
        o.backend = OC_BACKEND_CUDA;
        oc_output dst = OC_OUTPUT_INIT;
        dst.data = out;
        CHECK(oc_gram(c2, a, NULL, &o, &dst, NULL) == OC_OK);
        int64_t kept = oc_context_cached_memory_bytes(c2);
        CHECK_MSG(kept > 0, "a finished GPU job keeps its staging for the next one");
        /* The next job on the context takes the kept staging back: nothing new is pinned. */
        int64_t pinned = oc_cuda_live_pinned_bytes();
        CHECK(oc_gram(c2, a, NULL, &o, &dst, NULL) == OC_OK);
        CHECK_MSG(oc_cuda_live_pinned_bytes() == pinned && oc_context_cached_memory_bytes(c2) == kept,
                  "the second job pinned %lld bytes more", (long long)(oc_cuda_live_pinned_bytes() - pinned));
        /* oc_release_cached_memory reaches every live context. */
        oc_release_cached_memory();
        CHECK_EQ_I64(oc_context_cached_memory_bytes(c2), 0);
        CHECK(oc_gram(c2, a, NULL, &o, &dst, NULL) == OC_OK);
        CHECK_EQ_I64(oc_context_cached_memory_bytes(c2), kept);
        oc_context_free(c2);
        c2 = NULL;
        CHECK_MSG(oc_cuda_live_pinned_bytes() == 0, "oc_context_free left %lld pinned bytes",
                  (long long)oc_cuda_live_pinned_bytes());
    }
    oc_context_free(c2);
    oc_matrix_free(a);
    free(out);
}

static void run_failures(void)
{
    uint64_t seed = 7;
    oc_matrix *a = make_matrix(600, 100000, 0.5, &seed);
    CHECK(a != NULL);
    if (!a) return;
    size_t bytes = (size_t)600 * 600 * 4;
    oc_status st;
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = OC_BACKEND_CUDA;
    unsetenv("OUTCORE_CUDA_KERNEL");

    /* Smallest plan: two panels of 256 rows x 12.5 KiB = 6.3 MiB > 4 MiB. */
    o.gpu_mem_bytes = 4 << 20;
    free(gram_into(a, NULL, &o, bytes, &st, NULL));
    CHECK_MSG(st == OC_ERR_INVALID_ARGUMENT, "tiny --gpu-mem: %s", oc_status_string(st));
    CHECK_MSG(strstr(oc_context_last_error(ctx), "smallest plan") && strstr(oc_context_last_error(ctx), "budget"),
              "tiny budget message: %s", oc_context_last_error(ctx));
    check_clean("tiny budget");
    /* A budget taken as a fraction of free memory that no plan fits is a shortage. */
    o.gpu_mem_bytes = 0;
    o.gpu_mem_fraction = 1e-7;
    free(gram_into(a, NULL, &o, bytes, &st, NULL));
    CHECK_MSG(st == OC_ERR_DEVICE_NO_MEMORY, "tiny fraction: %s", oc_status_string(st));
    check_clean("tiny fraction");
    o.gpu_mem_fraction = 0.9;

    o.gpu_mem_bytes = 1ll << 50;
    free(gram_into(a, NULL, &o, bytes, &st, NULL));
    CHECK_MSG(st == OC_ERR_INVALID_ARGUMENT && strstr(oc_context_last_error(ctx), "exceeds"),
              "budget above the card: %s: %s", oc_status_string(st), oc_context_last_error(ctx));
    o.gpu_mem_bytes = -5;
    free(gram_into(a, NULL, &o, bytes, &st, NULL));
    CHECK(st == OC_ERR_INVALID_ARGUMENT);
    o.gpu_mem_bytes = 0;
    o.gpu_mem_fraction = 1.5;
    free(gram_into(a, NULL, &o, bytes, &st, NULL));
    CHECK(st == OC_ERR_INVALID_ARGUMENT);
    o.gpu_mem_fraction = 0.9;

    o.device = 99;
    free(gram_into(a, NULL, &o, bytes, &st, NULL));
    CHECK_MSG(st == OC_ERR_INVALID_ARGUMENT && strstr(oc_context_last_error(ctx), "does not exist"),
              "device 99: %s: %s", oc_status_string(st), oc_context_last_error(ctx));
    o.device = 0;

    /* Reserve mode: the budget taken at start, the same result. */
    o.gpu_mem_bytes = 32 << 20;
    o.gpu_mem_mode = OC_GPU_MEM_RESERVE;
    oc_gram_stats sr = {.struct_size = sizeof sr};
    void *reserved = gram_into(a, NULL, &o, bytes, &st, &sr);
    CHECK_MSG(st == OC_OK, "reserve mode: %s", oc_context_last_error(ctx));
    o.gpu_mem_mode = OC_GPU_MEM_GROW;
    o.backend = OC_BACKEND_CPU;
    void *ref = gram_into(a, NULL, &o, bytes, &st, NULL);
    CHECK(st == OC_OK && reserved && ref && memcmp(reserved, ref, bytes) == 0);
    CHECK(sr.dev_budget_bytes == 32 << 20 && sr.dev_peak_bytes <= sr.dev_budget_bytes);
    free(reserved);
    check_clean("reserve mode");

    /* Every allocation point fails once: the job reports it and frees everything. */
    o.backend = OC_BACKEND_CUDA;
    o.gpu_mem_bytes = 16 << 20; /* streams: several panel slots, two output slots */
    o.tile = 256;
    const char *vars[2] = {"OUTCORE_FAULT_DEVICE_ALLOC", "OUTCORE_FAULT_PINNED_ALLOC"};
    const oc_status expect[2] = {OC_ERR_DEVICE_NO_MEMORY, OC_ERR_NO_MEMORY};
    o.gpu_mem_mode = OC_GPU_MEM_GROW;
    for (int v = 0; v < 2; ++v) {
        int points = 0;
        for (int nth = 1; nth < 200; ++nth) {
            char num[16];
            snprintf(num, sizeof num, "%d", nth);
            setenv(vars[v], num, 1);
            void *got = gram_into(a, NULL, &o, bytes, &st, NULL);
            if (st == OC_OK) {
                CHECK(memcmp(got, ref, bytes) == 0);
                free(got);
                break;
            }
            free(got);
            points++;
            CHECK_MSG(st == expect[v] && strstr(oc_context_last_error(ctx), "injected"), "%s=%d: %s: %s", vars[v], nth,
                      oc_status_string(st), oc_context_last_error(ctx));
            check_clean(vars[v]);
        }
        unsetenv(vars[v]);
        printf("  %s: %d allocation points failed cleanly\n", vars[v], points);
        CHECK(points >= 2);
    }
    free(ref);
    oc_matrix_free(a);
}

int main(void)
{
    if (oc_cuda_device_count() == 0) {
        printf("SKIPPED: no usable CUDA device\n");
        oc_test_skip("no usable CUDA device");
        return oc_test_finish();
    }
    if (oc_context_create(&ctx) != OC_OK) return 1;
    const char *q = getenv("OUTCORE_TEST_QUICK");
    quick = q && atoi(q) > 0;
    if (!quick) {
        run_failures();
        run_large_streamed();
        check_clean("the large case");
    }
    unsetenv("OUTCORE_CUDA_KERNEL");
    oc_context_free(ctx);
    check_context_free_releases();
    return oc_test_finish();
}
