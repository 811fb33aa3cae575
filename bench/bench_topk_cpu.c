/*
 * bench_topk_cpu.c - the CPU top-k and threshold rates against the CPU counts rate on the
 * same bits.
 *
 * For each A·Aᵀ case (random bits, density 0.5): counts with the result discarded
 * (OC_OUTPUT_DISCARD: every tile and its epilogue computed, nothing stored: the kernel's
 * rate), then top-10 of counts and of jaccard into caller arrays, then a selective jaccard
 * threshold through a counting callback. Each figure is the median of --runs runs after a
 * warm-up; the modes take turns run by run, so that load from elsewhere on a shared
 * machine falls on all of them alike instead of on whichever ran then. Jaccard runs also
 * compare with jaccard discarded (the epilogue's own cost: a double division per pair,
 * which the counts rate does not pay). Prints one table: case,
 * mode, seconds, effective rate (n·n·m / time), ratio to counts, ratio to the same metric
 * discarded. Target (issue 4): top-k at >= 0.8 of counts.
 *
 * Usage: bench_topk_cpu [--runs N] [--threads N] [--quick] [--n N --m M] [--warmup N] [--topk-only]
 * (--n and --m: that one case instead of the list; m a multiple of 8; --warmup: rounds
 * before the timed ones, default 1; --topk-only: counts discarded and the two top-k modes,
 * e.g. for the n = 100000, m = 200000 on a many-core host, minutes per mode)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outcore.h"

typedef struct topk_case {
    int64_t n, m;
} topk_case;

/* Short rows small and large (n = 4096 at m = 2048 is a short job, where the lists' first
 * tiles weigh most), then longer rows. The row length (m = 200000) is `--n 8192
 * --m 200000`, its whole benchmark `--n 100000 --m 200000 --runs 1 --warmup 0 --topk-only`
 * (both long on a small machine: bench/RESULTS.md says how long they took). */
static const topk_case cases[] = {{4096, 2048}, {16384, 2048}, {4096, 8192}, {4096, 65536}, {8192, 16384}};

static int count_pairs(void *user, const int64_t *rows, const int64_t *cols, const void *scores, int64_t count)
{
    (void)rows, (void)cols, (void)scores;
    *(int64_t *)user += count;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define MODES 5

/* The job of each mode: 0 counts discarded, 1 top-k counts, 2 top-k jaccard, 3 jaccard
 * threshold, 4 jaccard discarded. */
static void mode_job(int mode, int threads, int64_t k, int64_t *idx, float *scores, int64_t *pairs, oc_gram_options *o,
                     oc_output *out)
{
    *o = (oc_gram_options)OC_GRAM_OPTIONS_INIT;
    o->backend = OC_BACKEND_CPU, o->threads = threads;
    *out = (oc_output)OC_OUTPUT_INIT;
    if (mode == 1 || mode == 2) {
        o->topk = k, o->metric = mode == 1 ? OC_METRIC_COUNTS : OC_METRIC_JACCARD;
        out->kind = OC_OUTPUT_TOPK, out->indices = idx, out->scores = scores;
    } else if (mode == 3) {
        /* Random rows of density 0.5 have jaccard near 1/3: 0.36 keeps a few pairs. */
        o->metric = OC_METRIC_JACCARD, o->use_threshold = 1, o->threshold = 0.36;
        out->kind = OC_OUTPUT_PAIRS, out->pairs = count_pairs, out->pairs_user = pairs;
    } else {
        if (mode == 4) o->metric = OC_METRIC_JACCARD;
        out->kind = OC_OUTPUT_DISCARD;
    }
}

/* Median seconds of each mode that is on over `runs` rounds (after `warmup` rounds), the
 * modes taking turns within a round; nonzero on failure. */
static int time_modes(oc_context *ctx, const oc_matrix *a, int threads, int64_t k, int64_t *idx, float *scores,
                      int64_t *pairs, int warmup, int runs, const int *on, double *median)
{
    double t[MODES][32];
    for (int r = -warmup; r < runs; ++r)
        for (int mode = 0; mode < MODES; ++mode) {
            if (!on[mode]) continue;
            oc_gram_options o;
            oc_output out;
            mode_job(mode, threads, k, idx, scores, pairs, &o, &out);
            oc_gram_stats s = {.struct_size = sizeof s};
            if (oc_gram(ctx, a, NULL, &o, &out, &s) != OC_OK) {
                fprintf(stderr, "bench_topk_cpu: %s\n", oc_context_last_error(ctx));
                return 1;
            }
            if (r >= 0) t[mode][r] = s.seconds;
        }
    for (int mode = 0; mode < MODES; ++mode) {
        if (!on[mode]) continue;
        qsort(t[mode], (size_t)runs, sizeof *t[mode], cmp_double);
        median[mode] = t[mode][runs / 2];
    }
    return 0;
}

int main(int argc, char **argv)
{
    int runs = 3, threads = 0, quick = 0, warmup = 1;
    int on[MODES] = {1, 1, 1, 1, 1};
    topk_case custom = {0, 0};
    for (int i = 1; i < argc; ++i) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) custom.n = atoll(argv[++i]);
        else if (strcmp(argv[i], "--m") == 0 && i + 1 < argc) custom.m = atoll(argv[++i]) / 8 * 8;
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (strcmp(argv[i], "--topk-only") == 0) on[3] = on[4] = 0;
        else {
            fprintf(stderr, "usage: bench_topk_cpu [--runs N] [--threads N] [--quick] [--n N --m M] [--warmup N] "
                            "[--topk-only]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 32) runs = 3;
    if (warmup < 0 || warmup > 8) warmup = 1;
    if ((custom.n > 0) != (custom.m > 0)) {
        fprintf(stderr, "bench_topk_cpu: --n and --m go together (one case of n rows and m columns)\n");
        return 2;
    }
    const topk_case *list = custom.n > 0 ? &custom : cases;
    const size_t ncases = custom.n > 0 ? 1 : sizeof cases / sizeof *cases;
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    printf("CPU %s, %d threads; median of %d runs after %d warm-up round%s\n", oc_cpu_isa(),
           threads ? threads : oc_cpu_cores(), runs, warmup, warmup == 1 ? "" : "s");
    printf("%-18s %-22s %9s %14s %9s %9s\n", "case", "mode", "seconds", "bit-MAC/s eff", "vs counts", "vs metric");
    int rc = 0;
    for (size_t c = 0; c < ncases && rc == 0; ++c) {
        if (quick && c > 0) break;
        const int64_t n = list[c].n, m = list[c].m, row_bytes = m / 8, k = 10;
        unsigned char *bits = malloc((size_t)(n * row_bytes));
        uint64_t seed = 0x9E3779B97F4A7C15ull * (c + 1);
        for (int64_t i = 0; i < n * row_bytes; ++i) {
            seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
            bits[i] = (unsigned char)(seed >> 24);
        }
        oc_matrix *a = NULL;
        int64_t *idx = malloc((size_t)(n * k) * sizeof *idx);
        float *scores = malloc((size_t)(n * k) * sizeof *scores);
        if (!bits || !idx || !scores ||
            oc_matrix_from_bits(ctx, bits, n, m, row_bytes, OC_BITS_MSB_FIRST, &a) != OC_OK) {
            fprintf(stderr, "bench_topk_cpu: cannot build case %zu\n", c);
            rc = 1;
        }
        free(bits);
        char name[32];
        snprintf(name, sizeof name, "n=%lld m=%lld", (long long)n, (long long)m);
        double results[MODES] = {0};
        int64_t pairs = 0;
        if (rc == 0) rc = time_modes(ctx, a, threads, k, idx, scores, &pairs, warmup, runs, on, results);
        const double base = results[0], base_jaccard = results[4];
        const int64_t pair_count = pairs / (runs + warmup);
        /* Printed after the jaccard discard run, which the jaccard rows are compared with. */
        static const char *labels[] = {"counts (discard)", "top-10 counts", "top-10 jaccard", "jaccard >= 0.36",
                                       "jaccard (discard)"};
        static const int order[] = {0, 1, 4, 2, 3};
        for (int q = 0; q < MODES && rc == 0; ++q) {
            int mode = order[q];
            if (!on[mode]) continue;
            double t = results[mode], rate = (double)n * (double)n * (double)m / t;
            printf("%-18s %-22s %9.4f %14.4g %9.3f", name, labels[mode], t, rate, base / t);
            if (mode == 1) printf(" %9.3f", base / t);
            else if (mode >= 2 && on[4]) printf(" %9.3f", base_jaccard / t);
            if (mode == 3) printf("  (%lld pairs per run)", (long long)pair_count);
            printf("\n");
        }
        oc_matrix_free(a);
        free(idx);
        free(scores);
    }
    oc_context_free(ctx);
    return rc;
}
