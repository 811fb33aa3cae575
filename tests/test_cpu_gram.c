/*
 * test_cpu_gram.c - the CPU engine against a direct reference, on every kernel path.
 *
 * One table of cases (shapes, bit patterns) runs on every ISA path this CPU supports
 * (ref, avx2, avx512), every output (counts int32/uint16, hamming int32/uint16, jaccard and
 * cosine float32), symmetric (A·Aᵀ) and not (A·Bᵀ), under several thread counts and forced
 * tile edges. Each result is compared bit for bit (memcmp) with a reference the test computes
 * from the 0/1 bytes it built the matrices from. A path the CPU lacks is reported as skipped.
 * A second, smaller check holds every micro-kernel to the contract of kernel.h directly, and
 * a third every tile epilogue: empty rows, empty unions, identical rows, popcounts at both
 * sides of the float path's bound and up to 2^32 - 1, every tail width, and every jaccard
 * quotient of popcounts below 2048.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "outcore.h"
#include "cpu/isa.h"
#include "cpu/kernels/kernel.h"

typedef enum pattern {
    PATTERN_RANDOM = 0, /* independent bits of the given density */
    PATTERN_MIXED = 1   /* rows cycle through all-zero, all-one and random */
} pattern;

typedef struct gram_case {
    const char *name;
    int64_t n, p;   /* p == 0: A·Aᵀ */
    int64_t m;
    double density;
    pattern pattern;
} gram_case;

static const gram_case cases[] = {
    {"n=1 m=1", 1, 0, 1, 1.0, PATTERN_RANDOM},
    {"n=1 p=1 m=1", 1, 1, 1, 1.0, PATTERN_RANDOM},
    {"one word", 7, 0, 64, 0.5, PATTERN_RANDOM},
    {"m=65", 9, 0, 65, 0.5, PATTERN_RANDOM},
    {"m=511 n!=p", 13, 5, 511, 0.5, PATTERN_RANDOM},
    {"m=513", 50, 0, 513, 0.5, PATTERN_RANDOM},
    {"m=1000 n!=p", 37, 61, 1000, 0.3, PATTERN_RANDOM},
    {"sparse", 101, 0, 1000, 0.02, PATTERN_RANDOM},
    {"dense n!=p", 70, 130, 777, 0.95, PATTERN_RANDOM},
    {"zero and one rows", 30, 0, 200, 0.5, PATTERN_MIXED},
    {"zero and one rows n!=p", 23, 17, 129, 0.5, PATTERN_MIXED},
    {"all zero", 12, 0, 300, 0.0, PATTERN_RANDOM},
    {"all one n!=p", 11, 9, 300, 1.0, PATTERN_RANDOM},
    {"past the default tile", 251, 0, 100, 0.5, PATTERN_RANDOM},
    {"past the default tile n!=p", 243, 247, 70, 0.5, PATTERN_MIXED},
    {"K blocks", 9, 0, 40000, 0.5, PATTERN_RANDOM},
    {"K blocks n!=p", 6, 11, 33333, 0.5, PATTERN_MIXED},
    {"m >= 65536", 5, 0, 70001, 0.5, PATTERN_RANDOM},
};

/* Threads (0 = all cores) and tile edge (0 = the planner's choice); pad > 0 gives the output rows that
 * many extra elements, which must stay untouched. */
typedef struct run_config {
    int threads;
    int64_t tile;
    int64_t pad;
} run_config;

static const run_config configs[] = {
    {0, 0, 0}, {1, 0, 0}, {2, 0, 0}, {3, 0, 0}, {1, 5, 0}, {2, 7, 3}, {3, 13, 0}, {2, 64, 0}, {3, 240, 1}, {2, 1, 0}, {1, 1000000, 0},
};

static const char *const isa_names[OC_CPU_ISA_COUNT] = {"ref", "avx2", "avx512"};

static unsigned char *make_bytes(int64_t rows, int64_t cols, double density, pattern pat, uint64_t *seed)
{
    unsigned char *d = malloc((size_t)(rows * cols));
    if (!d) return NULL;
    const uint64_t threshold = (uint64_t)(density * 18446744073709551615.0);
    for (int64_t i = 0; i < rows; ++i) {
        int kind = pat == PATTERN_MIXED ? (int)(i % 3) : 2; /* 0 zero row, 1 one row, 2 random */
        for (int64_t j = 0; j < cols; ++j) {
            unsigned char v = kind == 0 ? 0 : kind == 1 ? 1 : density >= 1.0 ? 1 : oc_test_rand(seed) < threshold;
            d[i * cols + j] = v;
        }
    }
    return d;
}

/* Exact counts and row popcounts from the 0/1 bytes, once per case. */
typedef struct exact_counts {
    int64_t *c;       /* n x p */
    int64_t *pa, *pb;
} exact_counts;

static int count_exactly(const unsigned char *a, const unsigned char *b, int64_t n, int64_t p, int64_t m,
                         exact_counts *e)
{
    e->c = malloc((size_t)(n * p) * sizeof *e->c);
    e->pa = calloc((size_t)n, sizeof *e->pa);
    e->pb = calloc((size_t)p, sizeof *e->pb);
    if (!e->c || !e->pa || !e->pb) return 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t k = 0; k < m; ++k) e->pa[i] += a[i * m + k];
    for (int64_t j = 0; j < p; ++j)
        for (int64_t k = 0; k < m; ++k) e->pb[j] += b[j * m + k];
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < p; ++j) {
            int64_t c = 0;
            for (int64_t k = 0; k < m; ++k) c += a[i * m + k] & b[j * m + k];
            e->c[i * p + j] = c;
        }
    return 1;
}

/* The expected result, from the exact counts with the formulas of the design. */
static void *reference(const exact_counts *e, const oc_test_output *ok, int64_t n, int64_t p, int64_t ld)
{
    size_t es = oc_dtype_size(ok->dtype);
    char *out = calloc((size_t)(n * ld), es);
    if (!out) return NULL;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < p; ++j) {
            const int64_t c = e->c[i * p + j], pa = e->pa[i], pb = e->pb[j];
            void *dst = out + (i * ld + j) * (int64_t)es;
            switch (ok->metric) {
            case OC_METRIC_COUNTS:
            case OC_METRIC_HAMMING: {
                int64_t v = ok->metric == OC_METRIC_COUNTS ? c : pa + pb - 2 * c;
                if (ok->dtype == OC_DTYPE_UINT16) *(uint16_t *)dst = (uint16_t)v;
                else *(int32_t *)dst = (int32_t)v;
                break;
            }
            case OC_METRIC_JACCARD:
                *(float *)dst = pa + pb - c == 0 ? 1.0f : (float)((double)c / (double)(pa + pb - c));
                break;
            case OC_METRIC_COSINE:
                *(float *)dst = (pa == 0 || pb == 0) ? 0.0f : (float)((double)c / sqrt((double)pa * (double)pb));
                break;
            }
        }
    return out;
}

static void run_case(oc_context *ctx, const char *isa, const gram_case *gc)
{
    uint64_t seed = 0x9E3779B97F4A7C15ull ^ (uint64_t)(gc->n * 131 + gc->p * 7 + gc->m);
    const int symmetric = gc->p == 0;
    const int64_t n = gc->n, p = symmetric ? gc->n : gc->p, m = gc->m;
    unsigned char *da = make_bytes(n, m, gc->density, gc->pattern, &seed);
    unsigned char *db = symmetric ? da : make_bytes(p, m, gc->density, gc->pattern, &seed);
    oc_matrix *a = NULL, *b = NULL;
    exact_counts e = {0};
    CHECK(da && db);
    if (!da || !db) goto done;
    CHECK(count_exactly(da, db, n, p, m, &e));
    if (!e.c || !e.pa || !e.pb) goto done;
    CHECK_EQ_I64(oc_matrix_from_dense(ctx, da, n, m, m, &a), OC_OK);
    if (!symmetric) CHECK_EQ_I64(oc_matrix_from_dense(ctx, db, p, m, m, &b), OC_OK);
    if (!a || (!symmetric && !b)) goto done;

    for (size_t o = 0; o < OC_TEST_OUTPUT_COUNT; ++o) {
        const oc_test_output *ok = &oc_test_outputs[o];
        if (ok->dtype == OC_DTYPE_UINT16 && m >= 65536) continue; /* refused by design */
        const size_t es = oc_dtype_size(ok->dtype);
        for (size_t r = 0; r < sizeof configs / sizeof configs[0]; ++r) {
            const run_config *rc = &configs[r];
            const int64_t ld = p + rc->pad;
            void *want = reference(&e, ok, n, p, ld);
            char *got = malloc((size_t)(n * ld) * es);
            CHECK(want && got);
            if (!want || !got) {
                free(want);
                free(got);
                continue;
            }
            /* A sentinel that no result has: untouched padding must keep it. */
            memset(got, 0xA5, (size_t)(n * ld) * es);
            if (rc->pad)
                for (int64_t i = 0; i < n; ++i) memset((char *)want + (i * ld + p) * (int64_t)es, 0xA5, (size_t)rc->pad * es);

            oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
            opts.backend = OC_BACKEND_CPU;
            opts.metric = ok->metric;
            opts.dtype = ok->dtype;
            opts.threads = rc->threads;
            opts.tile = rc->tile;
            oc_output out = OC_OUTPUT_INIT;
            out.kind = OC_OUTPUT_MEMORY;
            out.data = got;
            out.ld = ld;
            oc_gram_stats stats = {.struct_size = sizeof stats};
            oc_status st = oc_gram(ctx, a, symmetric ? NULL : b, &opts, &out, &stats);
            CHECK_MSG(st == OC_OK, "%s [%s] %s/%s threads %d tile %lld: %s", gc->name, isa, oc_metric_name(ok->metric),
                      oc_dtype_name(ok->dtype), rc->threads, (long long)rc->tile, oc_context_last_error(ctx));
            if (st == OC_OK) {
                CHECK_MSG(memcmp(got, want, (size_t)(n * ld) * es) == 0,
                          "%s [%s] %s/%s threads %d tile %lld: result differs from the reference", gc->name, isa,
                          oc_metric_name(ok->metric), oc_dtype_name(ok->dtype), rc->threads, (long long)rc->tile);
                CHECK_EQ_I64(stats.backend, OC_BACKEND_CPU);
                CHECK_MSG(strstr(stats.backend_desc, isa) != NULL, "backend_desc '%s' does not name %s",
                          stats.backend_desc, isa);
                CHECK(stats.tiles > 0);
                /* The kernels do every pair once for A·Bᵀ; for A·Aᵀ at least the upper
                 * triangle and less than everything once a tile holds a skipped micro-tile. */
                double words = (double)((m + 511) / 512 * 8), pairs = stats.bit_macs_computed / (64.0 * words);
                if (symmetric)
                    CHECK_MSG(pairs >= (double)n * (double)(n + 1) / 2 && pairs <= (double)n * (double)n,
                              "%s [%s]: %g pairs computed for n = %lld", gc->name, isa, pairs, (long long)n);
                else
                    CHECK_MSG(pairs == (double)n * (double)p, "%s [%s]: %g pairs computed for %lld x %lld", gc->name,
                              isa, pairs, (long long)n, (long long)p);
            }
            free(want);
            free(got);
        }
    }
done:
    free(e.c);
    free(e.pa);
    free(e.pb);
    oc_matrix_free(a);
    oc_matrix_free(b);
    if (db != da) free(db);
    free(da);
}

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

static const char *const epilogue_names[] = {"counts uint16", "hamming int32", "hamming uint16", "jaccard",
                                              "cosine"};

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
        CHECK_MSG(memcmp(want, got, bytes) == 0, "epilogue %s %s: %s, %lld x %lld, pop_max %lld differs from the reference",
                  k->name, epilogue_names[kind], what, (long long)rows, (long long)cols, (long long)pop_max);
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
        for (int64_t j = 0; j < 256; ++j)
            c[r * 256 + j] = (uint32_t)rand_upto(&seed, pa[r] < pb[j] ? pa[r] : pb[j]);
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
        CHECK_MSG(strstr(stats.backend_desc, "sse9") != NULL, "the fallback is not visible in '%s'", stats.backend_desc);
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
        check_kernel_contract(oc_cpu_kernel_get());
        check_epilogue_contract(oc_cpu_kernel_get());
        int before = oc_test_failures;
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) run_case(ctx, isa_names[i], &cases[c]);
        printf("path %s: %zu cases %s\n", isa_names[i], sizeof cases / sizeof cases[0],
               oc_test_failures == before ? "exact" : "FAILED");
    }
    check_progress(ctx);
    check_fallback(ctx);
    oc_cpu_isa_select(NULL);
    oc_context_free(ctx);
    return oc_test_finish();
}
