/*
 * test_cpu_gram.c - the CPU engine's parts on every kernel path, and what the case table
 * does not reach.
 *
 * Whole jobs (shapes, outputs, tiles, thread counts) are the case table's, run on every path
 * by test_gram_cases.c. Here, on every ISA path this CPU supports (ref, avx2, avx512; a path
 * the CPU lacks is reported as skipped): every micro-kernel held to the contract of kernel.h
 * directly, and every tile epilogue: empty rows, empty unions, identical rows, popcounts at
 * both sides of the float path's bound and up to 2^32 - 1, every tail width, and every
 * jaccard quotient of popcounts below 2048. Then progress reports and statistics, and the
 * visible fallback when a path is asked for that the CPU lacks.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "outcore.h"
#include "core/isa.h"
#include "gram/cpu/kernels/kernel.h"

static const char *const isa_names[OC_CPU_ISA_COUNT] = {"ref", "avx2", "avx512"};

/* Every micro-kernel against the reference kernel on every tail shape and on strips of
 * several micro-tiles (mr up to 3 MR + 1 and more): the block is added to what c holds,
 * and nothing outside it is written. */
static void check_kernel_contract(const oc_cpu_kernel *k)
{
    enum { ROWS = 14, KW = 1024 + 16, LDC = 11 };
    uint64_t *a = aligned_alloc(64, ROWS * KW * 8), *b = aligned_alloc(64, ROWS * KW * 8);
    CHECK(a && b);
    if (!a || !b) goto done;
    uint64_t seed = 12345;
    for (int64_t w = 0; w < ROWS * KW; ++w) {
        a[w] = oc_test_rand(&seed) & oc_test_rand(&seed);
        b[w] = oc_test_rand(&seed) | oc_test_rand(&seed);
    }
    static const int64_t kws[] = {8, 16, 64, 1024, KW};
    for (size_t q = 0; q < sizeof kws / sizeof kws[0]; ++q)
        for (int mr = 1; mr < ROWS; ++mr)
            for (int nr = 1; nr <= k->nr; ++nr) {
                uint32_t want[ROWS * LDC], got[ROWS * LDC];
                for (int t = 0; t < ROWS * LDC; ++t) want[t] = got[t] = 1000u + (uint32_t)t;
                oc_gram_kernel_ref(a, KW, b, KW, kws[q], mr, nr, want, LDC);
                k->fn(a, KW, b, KW, kws[q], mr, nr, got, LDC);
                CHECK_MSG(memcmp(want, got, sizeof want) == 0, "kernel %s %dx%d kw %lld differs from the reference",
                          k->name, mr, nr, (long long)kws[q]);
            }
done:
    free(a);
    free(b);
}

static const char *const epilogue_names[] = {"counts uint16", "hamming int32", "hamming uint16", "jaccard", "cosine"};

/* One epilogue call against the reference: the same bytes in the block, and nothing written
 * around it (both buffers start with the same filler, which the reference leaves alone). */
static void check_epilogue(const oc_cpu_kernel *k, oc_epilogue_kind kind, const uint32_t *c, int64_t ldc,
                           const int64_t *pa, const int64_t *pb, int64_t rows, int64_t cols, int64_t pop_max,
                           const char *what)
{
    const int64_t ldo = cols + 5;
    const size_t bytes = (size_t)(rows * ldo) * 4;
    unsigned char *want = malloc(bytes), *got = malloc(bytes);
    CHECK(want && got);
    if (want && got) {
        memset(want, 0xA5, bytes);
        memset(got, 0xA5, bytes);
        oc_epilogue_ref(kind, c, ldc, pa, pb, rows, cols, pop_max, want, ldo);
        k->epilogue(kind, c, ldc, pa, pb, rows, cols, pop_max, got, ldo);
        CHECK_MSG(memcmp(want, got, bytes) == 0,
                  "epilogue %s %s: %s, %lld x %lld, pop_max %lld differs from the reference", k->name,
                  epilogue_names[kind], what, (long long)rows, (long long)cols, (long long)pop_max);
    }
    free(want);
    free(got);
}

static uint64_t rand_upto(uint64_t *seed, int64_t max) { return oc_test_rand(seed) % ((uint64_t)max + 1); }

/* Every tile epilogue against the reference epilogue. */
static void check_epilogue_contract(const oc_cpu_kernel *k)
{
    enum { ROWS = 6, MAX_COLS = 1100, GRID = 2048 };
    const int64_t float_max = (int64_t)1 << 23; /* the float path's bound (epilogue_blocks.h) */
    const int64_t pop_maxes[] = {1000, 65535, float_max, float_max + 1, UINT32_MAX};
    static const int64_t widths[] = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 511, 512, 513, 1030, MAX_COLS};
    uint32_t *c = malloc((size_t)GRID * GRID * sizeof *c);
    int64_t *pa = malloc(GRID * sizeof *pa), *pb = malloc(GRID * sizeof *pb);
    CHECK(c && pa && pb);
    if (!c || !pa || !pb) goto done;
    uint64_t seed = 777;

    /* Random blocks with the special cases planted: row 0 and every 7th column empty (an
     * empty union where both are), rows and columns at pop_max, identical rows (c = |a| = |b|)
     * and subsets (c = min). */
    for (size_t q = 0; q < sizeof pop_maxes / sizeof pop_maxes[0]; ++q) {
        const int64_t pm = pop_maxes[q], ldc = MAX_COLS + 3;
        for (int64_t r = 0; r < ROWS; ++r) pa[r] = r == 0 ? 0 : r == 1 ? pm : (int64_t)rand_upto(&seed, pm);
        for (int64_t j = 0; j < MAX_COLS; ++j) {
            pb[j] = j % 7 == 0 ? 0 : j % 7 == 1 ? pm : j % 7 == 2 ? pa[j % ROWS] : (int64_t)rand_upto(&seed, pm);
            for (int64_t r = 0; r < ROWS; ++r) {
                int64_t low = pa[r] < pb[j] ? pa[r] : pb[j];
                c[r * ldc + j] = (uint32_t)(j % 7 == 2 || j % 7 == 3 ? low : (int64_t)rand_upto(&seed, low));
            }
        }
        for (int kind = OC_EPILOGUE_COUNTS_U16; kind <= OC_EPILOGUE_COSINE; ++kind)
            for (size_t w = 0; w < sizeof widths / sizeof widths[0]; ++w)
                check_epilogue(k, (oc_epilogue_kind)kind, c, ldc, pa, pb, ROWS, widths[w], pm, "random");
    }

    /* Rows r and columns j of popcounts r and j with c = min(r, j): the union is max(r, j), so
     * the grid holds every jaccard quotient c / u with c <= u < GRID (cosine gets the grid too,
     * for every pair of popcounts below GRID). */
    for (int64_t i = 0; i < GRID; ++i) pa[i] = pb[i] = i;
    for (int64_t r = 0; r < GRID; ++r)
        for (int64_t j = 0; j < GRID; ++j) c[r * GRID + j] = (uint32_t)(r < j ? r : j);
    check_epilogue(k, OC_EPILOGUE_JACCARD, c, GRID, pa, pb, GRID, GRID, GRID - 1, "all quotients below 2048");
    check_epilogue(k, OC_EPILOGUE_COSINE, c, GRID, pa, pb, GRID, GRID, GRID - 1, "all quotients below 2048");

    /* Unions up to 2^24, where the float path's operands are largest. */
    for (int64_t i = 0; i < 256; ++i) {
        pa[i] = float_max - (int64_t)rand_upto(&seed, float_max / 2);
        pb[i] = float_max - (int64_t)rand_upto(&seed, float_max / 2);
    }
    for (int64_t r = 0; r < 256; ++r)
        for (int64_t j = 0; j < 256; ++j) c[r * 256 + j] = (uint32_t)rand_upto(&seed, pa[r] < pb[j] ? pa[r] : pb[j]);
    check_epilogue(k, OC_EPILOGUE_JACCARD, c, 256, pa, pb, 256, 256, float_max, "unions near 2^24");
done:
    free(c);
    free(pa);
    free(pb);
}

/* A request the CPU cannot honour, or an unknown name, falls back visibly. */
static void check_fallback(oc_context *ctx)
{
    CHECK(!oc_cpu_isa_select("sse9"));
    CHECK(strstr(oc_cpu_isa_note(), "sse9") != NULL);
    oc_cpu_isa_id best = OC_CPU_ISA_REF;
    for (int i = OC_CPU_ISA_COUNT - 1; i > 0; --i)
        if (oc_cpu_isa_supported((oc_cpu_isa_id)i)) {
            best = (oc_cpu_isa_id)i;
            break;
        }
    CHECK(strcmp(oc_cpu_isa(), isa_names[best]) == 0);

    unsigned char bits[3] = {1, 0, 1};
    oc_matrix *a = NULL;
    CHECK_EQ_I64(oc_matrix_from_dense(ctx, bits, 1, 3, 3, &a), OC_OK);
    if (a) {
        int32_t c = -1;
        oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
        opts.backend = OC_BACKEND_CPU;
        oc_output out = OC_OUTPUT_INIT;
        out.data = &c;
        oc_gram_stats stats = {.struct_size = sizeof stats};
        CHECK_EQ_I64(oc_gram(ctx, a, NULL, &opts, &out, &stats), OC_OK);
        CHECK_EQ_I64(c, 2);
        CHECK_MSG(strstr(stats.backend_desc, "sse9") != NULL, "the fallback is not visible in '%s'",
                  stats.backend_desc);
    }
    oc_matrix_free(a);
    for (int i = 0; i < OC_CPU_ISA_COUNT; ++i)
        if (!oc_cpu_isa_supported((oc_cpu_isa_id)i)) {
            CHECK(!oc_cpu_isa_select(isa_names[i]));
            CHECK(strstr(oc_cpu_isa_note(), "not supported") != NULL);
        }
}

typedef struct progress_log {
    int calls;
    double last_done, last_total;
    int monotonic;
} progress_log;

static void record_progress(void *user, double done, double total)
{
    progress_log *log = user;
    if (log->calls && done < log->last_done) log->monotonic = 0;
    log->calls++;
    log->last_done = done;
    log->last_total = total;
}

/* Progress reaches done == total and never goes back; the stats describe the run. */
static void check_progress(oc_context *ctx)
{
    enum { N = 300, M = 3000 };
    unsigned char *d = malloc(N * M);
    oc_matrix *a = NULL;
    int32_t *c = malloc(sizeof(int32_t) * N * N);
    CHECK(d && c);
    if (!d || !c) goto done;
    uint64_t seed = 7;
    for (int i = 0; i < N * M; ++i) d[i] = (unsigned char)(oc_test_rand(&seed) & 1);
    CHECK_EQ_I64(oc_matrix_from_dense(ctx, d, N, M, M, &a), OC_OK);
    if (!a) goto done;
    progress_log log = {.monotonic = 1};
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    opts.backend = OC_BACKEND_CPU;
    opts.threads = 2;
    opts.tile = 16;
    opts.progress = record_progress;
    opts.progress_user = &log;
    oc_output out = OC_OUTPUT_INIT;
    out.data = c;
    oc_gram_stats stats = {.struct_size = sizeof stats};
    CHECK_EQ_I64(oc_gram(ctx, a, NULL, &opts, &out, &stats), OC_OK);
    CHECK(log.calls >= 1 && log.monotonic);
    CHECK(log.last_total > 0 && log.last_done == log.last_total);
    /* 19 tile rows of 16: the upper triangle has 19 * 20 / 2 tiles. */
    CHECK_EQ_I64(stats.tiles, 190);
    CHECK(strstr(stats.backend_desc, "2 threads") != NULL);
done:
    oc_matrix_free(a);
    free(d);
    free(c);
}

int main(void)
{
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    for (int i = 0; i < OC_CPU_ISA_COUNT; ++i) {
        if (!oc_cpu_isa_supported((oc_cpu_isa_id)i)) {
            printf("SKIPPED path %s: this CPU or OS does not support it\n", isa_names[i]);
            continue;
        }
        CHECK(oc_cpu_isa_select(isa_names[i]));
        CHECK(strcmp(oc_cpu_isa(), isa_names[i]) == 0);
        int before = oc_test_failures;
        check_kernel_contract(oc_cpu_kernel_get());
        check_epilogue_contract(oc_cpu_kernel_get());
        printf("path %s: kernel and epilogues %s\n", isa_names[i], oc_test_failures == before ? "exact" : "FAILED");
    }
    check_progress(ctx);
    check_fallback(ctx);
    oc_cpu_isa_select(NULL);
    oc_context_free(ctx);
    return oc_test_finish();
}
