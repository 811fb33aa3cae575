/*
 * bench_cpu.c - the CPU engine's speed on random bits (density 0.5): A·Aᵀ and A·Bᵀ.
 *
 * For each case: one warm-up run, then the median of --runs timed runs with the output
 * discarded (OC_OUTPUT_DISCARD: the engine still computes every tile and its epilogue),
 * and one run into caller memory (int32 counts, so the sink and the mirror are included).
 * Prints one table: case, time, raw rate (bit-MACs the kernels did / time) and effective
 * rate (n·p·m / time, which credits A·Aᵀ's symmetry). On a shared machine other processes
 * take cores away, so each row also gives the process's CPU time and the raw rate per busy
 * core-second times the threads (what the run would reach with its cores to itself) and
 * the load average when the row was printed. bench_cpu.py runs this binary and
 * numpy on the same bits (--dump) and prints the ratio.
 *
 * Usage: bench_cpu [--quick] [--large] [--runs N] [--threads N] [--dump DIR]
 *   --quick  only the n=4096, m=65536 cases, no memory run
 *   --large  adds n=8192, m=131072
 *   --dump   writes each case's A as DIR/A_<n>x<m>.bits (rows of m/8 bytes, numpy.packbits
 *            order) so that another program can time itself on the same data
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "outcore.h"
#include "matrix/matrix.h"
#include "core/threads.h"

typedef struct bench_case {
    int64_t n, p, m; /* p == 0: A·Aᵀ */
    int large;
} bench_case;

static const bench_case cases[] = {
    {4096, 0, 65536, 0},
    {4096, 4096, 65536, 0},
    {8192, 0, 131072, 1},
    {8192, 8192, 131072, 1},
};

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Random bits of density 0.5; bits past column m stay zero as matrix.h requires. */
static oc_status random_matrix(oc_context *ctx, int64_t rows, int64_t m, uint64_t seed, const char *name,
                               oc_matrix **out)
{
    oc_status st = oc_matrix_alloc(ctx, rows, m, name, out);
    if (st != OC_OK) return st;
    oc_matrix *a = *out;
    const int64_t full_words = m / 64;
    for (int64_t i = 0; i < rows; ++i) {
        uint64_t *row = a->bits + i * a->words_per_row;
        for (int64_t w = 0; w < full_words; ++w) row[w] = splitmix64(&seed);
        for (int64_t j = full_words * 64; j < m; ++j)
            if (splitmix64(&seed) & 1) oc_matrix_set(a, i, j);
    }
    return OC_OK;
}

static int dump_bits(const oc_matrix *a, const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/A_%lldx%lld.bits", dir, (long long)a->rows, (long long)a->cols);
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "bench_cpu: cannot create %s\n", path);
        return 0;
    }
    const size_t row_bytes = (size_t)(a->cols + 7) / 8;
    int ok = 1;
    for (int64_t i = 0; i < a->rows && ok; ++i)
        ok = fwrite(a->bits + i * a->words_per_row, 1, row_bytes, f) == row_bytes;
    if (fclose(f) != 0) ok = 0;
    if (!ok) fprintf(stderr, "bench_cpu: writing %s failed\n", path);
    return ok;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double load_average(void)
{
    double load = -1.0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load) != 1) load = -1.0;
        fclose(f);
    }
    return load;
}

/* Wall and CPU time of one run. */
typedef struct run_time {
    double wall, cpu;
} run_time;

/* Runs the job once; returns its wall time (negative on failure) and sets *cpu. */
static double run_once(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, int threads, oc_output *out,
                       oc_gram_stats *stats, double *cpu)
{
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    opts.backend = OC_BACKEND_CPU;
    opts.threads = threads;
    stats->struct_size = sizeof *stats;
    double c0 = cpu_seconds(), t0 = oc_now();
    oc_status st = oc_gram(ctx, a, b, &opts, out, stats);
    double t = oc_now() - t0;
    *cpu = cpu_seconds() - c0;
    if (st != OC_OK) {
        fprintf(stderr, "bench_cpu: %s\n", oc_context_last_error(ctx));
        return -1.0;
    }
    return t;
}

static void print_row(const char *name, const char *output, run_time t, int threads, const oc_gram_stats *s)
{
    printf("%-30s %-8s %8.3f %9.3f %9.3f %8.3f %11.3f %5.1f   %s\n", name, output, t.wall,
           s->bit_macs_computed / t.wall * 1e-12, s->bit_macs_effective / t.wall * 1e-12, t.cpu,
           s->bit_macs_computed / t.cpu * threads * 1e-12, load_average(), s->backend_desc);
    fflush(stdout);
}

static int cmp_run_time(const void *x, const void *y)
{
    double a = ((const run_time *)x)->wall, b = ((const run_time *)y)->wall;
    return (a > b) - (a < b);
}

/* The machine's ceiling for the AVX-512 kernel: the kernel's three operations per word pair
 * (vpandq, vpopcntq, vpaddq) on 8 independent accumulators straight from registers, no
 * loads, on every core at once (the all-core clock under AVX-512 is what the kernel gets).
 * Written in assembly, in a function built for AVX-512 while the rest of this file is built
 * for any x86-64; run only when cpuid said AVX-512 VPOPCNTDQ is usable. */
#define CEILING_ITERATIONS 50000000L
#define CEILING_PAIRS_PER_ITERATION 8

__attribute__((target("avx512f,avx512vpopcntdq"))) static void *ceiling_worker(void *arg)
{
    long n = CEILING_ITERATIONS;
    __asm__ volatile("vpxorq %%zmm20, %%zmm20, %%zmm20\n"
                     "vpternlogq $0xff, %%zmm21, %%zmm21, %%zmm21\n"
                     "1:\n"
                     ".irp r,1,2,3,4,5,6,7,8\n"
                     "vpandq %%zmm21, %%zmm20, %%zmm1\\r\n"
                     "vpopcntq %%zmm1\\r, %%zmm1\\r\n"
                     "vpaddq %%zmm1\\r, %%zmm\\r, %%zmm\\r\n"
                     ".endr\n"
                     "dec %0\n"
                     "jnz 1b\n"
                     "vzeroupper\n"
                     : "+r"(n)
                     :
                     : "memory", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm11", "xmm12",
                       "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm20", "xmm21");
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    *(double *)arg = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    return NULL;
}

/* bit-MACs per second of the ceiling loop on `threads` threads (0 when it cannot run), and
 * in *per_core_second the same per CPU-second of the threads times their number: what the
 * loop reaches with the cores to itself, whatever else the machine runs. */
static double measure_ceiling(int threads, double *per_core_second)
{
    *per_core_second = 0.0;
    if (strcmp(oc_cpu_isa(), "avx512") != 0 || threads < 1 || threads > 256) return 0.0;
    pthread_t tids[256];
    double cpu[256];
    int started = 0;
    double t0 = oc_now();
    for (; started < threads; ++started)
        if (pthread_create(&tids[started], NULL, ceiling_worker, &cpu[started]) != 0) break;
    double cpu_total = 0.0;
    for (int i = 0; i < started; ++i) {
        pthread_join(tids[i], NULL);
        cpu_total += cpu[i];
    }
    double t = oc_now() - t0, macs = (double)started * CEILING_ITERATIONS * CEILING_PAIRS_PER_ITERATION * 512.0;
    if (cpu_total > 0) *per_core_second = macs / cpu_total * started;
    return macs / t;
}

static void print_device(void)
{
    char line[256], model[256] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "model name", 10) == 0) {
                char *colon = strchr(line, ':');
                if (colon) snprintf(model, sizeof model, "%s", colon + 2);
                model[strcspn(model, "\n")] = '\0';
                break;
            }
        fclose(f);
    }
    printf("device: %s, %d cores, kernel path %s\n", model, oc_cpu_cores(), oc_cpu_isa());
}

int main(int argc, char **argv)
{
    int quick = 0, large = 0, runs = 5, threads = 0;
    const char *dump = NULL;
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--large")) large = 1;
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--quick] [--large] [--runs N] [--threads N] [--dump DIR]\n", argv[0]);
            return 2;
        }
    }
    if (runs < 1) runs = 1;
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    print_device();
    const int used_threads = threads > 0 ? threads : oc_cpu_cores();
    double ceiling_core, ceiling = measure_ceiling(used_threads, &ceiling_core);
    if (ceiling > 0)
        printf("ceiling (vpandq+vpopcntq+vpaddq from registers, %d threads): %.3f T bit-MAC/s, %.3f T per "
               "core-second x threads, load %.1f\n",
               used_threads, ceiling * 1e-12, ceiling_core * 1e-12, load_average());
    printf("%-30s %-8s %8s %9s %9s %8s %11s %5s   %s\n", "case", "output", "time s", "raw T/s", "eff T/s", "cpu s",
           "raw/core-s", "load", "backend");
    printf("%-30s %-8s %8s %9s %9s %8s %11s\n", "", "", "", "", "", "", "x threads");

    int status = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0] && status == 0; ++c) {
        const bench_case *bc = &cases[c];
        if (bc->large && !large) continue;
        oc_matrix *a = NULL, *b = NULL;
        char name[64];
        snprintf(name, sizeof name, "%s n=%lld p=%lld m=%lld", bc->p ? "A.Bt" : "A.At", (long long)bc->n,
                 (long long)(bc->p ? bc->p : bc->n), (long long)bc->m);
        if (random_matrix(ctx, bc->n, bc->m, 1, "A", &a) != OC_OK ||
            (bc->p && random_matrix(ctx, bc->p, bc->m, 2, "B", &b) != OC_OK)) {
            fprintf(stderr, "bench_cpu: %s\n", oc_context_last_error(ctx));
            status = 1;
        }
        if (status == 0 && dump && !bc->p && !dump_bits(a, dump)) status = 1;

        const int64_t p = bc->p ? bc->p : bc->n;
        run_time *times = calloc((size_t)runs, sizeof *times);
        oc_gram_stats stats;
        oc_output discard = OC_OUTPUT_INIT;
        discard.kind = OC_OUTPUT_DISCARD;
        double warm_cpu;
        if (status == 0 && times && run_once(ctx, a, b, threads, &discard, &stats, &warm_cpu) >= 0) {
            for (int r = 0; r < runs && status == 0; ++r)
                if ((times[r].wall = run_once(ctx, a, b, threads, &discard, &stats, &times[r].cpu)) < 0) status = 1;
            if (status == 0) {
                qsort(times, (size_t)runs, sizeof *times, cmp_run_time);
                print_row(name, "discard", times[runs / 2], used_threads, &stats);
            }
        } else {
            status = 1;
        }
        free(times);

        if (status == 0 && !quick) {
            oc_output mem = OC_OUTPUT_INIT;
            mem.kind = OC_OUTPUT_MEMORY;
            mem.data = malloc((size_t)(bc->n * p) * sizeof(int32_t));
            run_time t = {-1.0, 0.0};
            if (mem.data) t.wall = run_once(ctx, a, b, threads, &mem, &stats, &t.cpu);
            if (t.wall < 0) status = 1;
            else print_row(name, "memory", t, used_threads, &stats);
            free(mem.data);
        }
        oc_matrix_free(a);
        oc_matrix_free(b);
    }
    oc_context_free(ctx);
    return status;
}
