/*
 * test_cost.c - the cost model (cost/cost.h): its decisions on synthetic rate tables, the
 * rate cache's round trip, corrupted and foreign caches ignored with a note, the host's
 * rates measured at a first job and read back by later ones, `--backend auto` on a machine
 * without a GPU, the fixed costs a small job really pays
 * (threads, the output file's creation, pages, fsync) in its prediction and in `--explain`,
 * and the GPU kernel's default rate per architecture.
 *
 * The rate tables are written here, not measured, so every decision is the model's
 * arithmetic on known figures: the expected choice of each case follows from the roofline
 * formulas of cost.h, and the test also checks the times against those formulas.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "outcore.h"
#include "core/abi/struct_version.h"
#include "cost/cost.h"
#include "gram/cost_gram.h"

/* The rate cache the test started with (the build's, from ctest), which cases that set their
 * own give back. */
static char cache_env[4096];
static int cache_env_set;

static void restore_cache_env(void)
{
    if (cache_env_set) setenv("OUTCORE_COST_CACHE", cache_env, 1);
    else unsetenv("OUTCORE_COST_CACHE");
    oc_cost_rates_reset();
}

/* A GPU host like the lent H100: PCIe 55 GB/s pinned, host memory 80 GB/s on 16 cores. */
static oc_cost_rates fast_gpu_host(void)
{
    oc_cost_rates r = {0};
    r.h2d_pinned = r.d2h_pinned = 55e9;
    r.bidir_pinned = 100e9;
    r.h2d_pageable = r.d2h_pageable = 8e9;
    r.host_bw = 80e9;
    r.cpu[OC_COST_BIT_MAC] = 16 * 0.9e12;
    r.gpu[OC_COST_BIT_MAC] = 4.8e15;
    r.gpu_startup = 0.3;
    r.gpu_job_setup = 0.005;
    r.measured = OC_COST_M_PCIE | OC_COST_M_HOST_BW | OC_COST_M_CPU_BITS | OC_COST_M_STARTUP | OC_COST_M_GPU_BITS;
    oc_cost_rates_resolve(&r, 16, "avx512");
    return r;
}

static void gram_job(int64_t n, int64_t m, oc_cost_gram_output output, int64_t k, oc_cost_job *job)
{
    oc_cost_gram_shape g = {.n = n, .p = n, .m = m, .symmetric = 1, .output = output, .elem_bytes = 4, .k = k};
    oc_cost_job_gram(&g, job);
}

static void test_gram_decisions(void)
{
    oc_cost_rates r = fast_gpu_host();
    oc_cost_job job;
    oc_cost_prediction p;

    /* The tiny job: 4627 x 216 is milliseconds on the CPU, start-up on the GPU. */
    gram_job(4627, 216, OC_COST_GRAM_DENSE, 0, &job);
    oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &p);
    CHECK(p.choice == OC_COST_CPU);
    CHECK(p.cpu_seconds < 0.05);
    CHECK(p.gpu_seconds >= r.gpu_startup);
    CHECK_MSG(strstr(p.reason, "cuda:0") && strstr(p.reason, ": cpu"), "reason: %s", p.reason);

    /* A large top-k job: 100000 rows x 200000 bits is 10^15 bit-MACs, minutes on the CPU. */
    gram_job(100000, 200000, OC_COST_GRAM_TOPK, 10, &job);
    oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &p);
    CHECK(p.choice == OC_COST_GPU);
    double pairs = 100000.0 * 100001.0 / 2;
    CHECK(fabs(p.cpu_compute - (pairs * 200000 / r.cpu[OC_COST_BIT_MAC] + pairs / r.cpu[OC_COST_ELEMENT])) <
          1e-9 * p.cpu_compute);
    CHECK_MSG(strstr(p.reason, ": cuda:0"), "reason: %s", p.reason);

    /* No usable GPU: the CPU, whatever the prediction, and the reason says why. */
    oc_cost_predict(&r, &job, 0, "cuda:0", "no driver", &p);
    CHECK(p.choice == OC_COST_CPU);
    CHECK(isinf(p.gpu_seconds));
    CHECK_MSG(strstr(p.reason, "no driver") != NULL, "reason: %s", p.reason);

    /* A job that loses to the start-up of a process's first GPU job but wins once the
     * process has one running: the warm flag drops the context creation. */
    gram_job(20000, 4096, OC_COST_GRAM_TOPK, 10, &job);
    oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &p);
    CHECK_MSG(p.choice == OC_COST_CPU, "cold: %s", p.reason);
    job.gpu_warm = 1;
    oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &p);
    CHECK_MSG(p.choice == OC_COST_GPU, "warm: %s", p.reason);

    /* The same job repeated in a cold process: each CPU run loses what a warm GPU would
     * have saved; once the losses reach the start-up, the GPU is taken. */
    job.gpu_warm = 0;
    job.gpu_regret = 0;
    oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &p);
    CHECK_MSG(p.choice == OC_COST_CPU && p.regret > 0 && p.regret < r.gpu_startup, "first: %s", p.reason);
    const double loss = p.regret;
    int runs = 1;
    while (p.choice == OC_COST_CPU && runs < 1000) {
        job.gpu_regret += p.regret;
        oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &p);
        runs++;
    }
    CHECK_MSG(p.choice == OC_COST_GPU && strstr(p.reason, "start-up's worth"), "repaid: %s", p.reason);
    /* The k-th run takes the GPU when k losses reach the start-up: not one run earlier. */
    CHECK_MSG((runs - 1) * loss < r.gpu_startup + 1e-12 && runs * loss >= r.gpu_startup - 1e-12,
              "%d runs for a start-up of %.3f s at %.4f s lost each", runs, r.gpu_startup, loss);
    /* A job the GPU cannot win even warm loses nothing to the CPU. */
    gram_job(4627, 216, OC_COST_GRAM_DENSE, 0, &job);
    oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &p);
    CHECK(p.choice == OC_COST_CPU && p.regret == 0);
}

static void test_map_decisions(void)
{
    oc_cost_rates r = fast_gpu_host();
    oc_cost_job job;
    oc_cost_prediction p;
    const double elements = 1e6 * 500;
    double mul[OC_COST_OPS] = {[OC_COST_F64] = 1};

    /* a*b of two 1,000,000 x 500 float64 arrays: 24 bytes per flop. On a slow link (PCIe 3.0
     * x4, 3 GB/s) the transfer alone takes 4 s while the host memory moves it in 0.15 s. */
    oc_cost_job_map("a*b", 2 * 8 * elements, 8 * elements, elements, mul, &job);
    oc_cost_rates slow = r;
    slow.h2d_pinned = slow.d2h_pinned = 3e9;
    slow.bidir_pinned = 5e9;
    oc_cost_predict(&slow, &job, 1, "cuda:0", NULL, &p);
    CHECK_MSG(p.choice == OC_COST_CPU, "%s", p.reason);
    CHECK(fabs(p.cpu_memory - 24 * elements / slow.host_bw) < 1e-9);
    CHECK(fabs(p.gpu_transfer - 16 * elements / slow.h2d_pinned) < 1e-9);
    CHECK_MSG(strstr(p.reason, "24 bytes over PCIe per operation") != NULL, "%s", p.reason);

    /* A compute-bound expression: 40 float64 math functions per element of one input. */
    double heavy[OC_COST_OPS] = {[OC_COST_F64_MATH] = 40, [OC_COST_F64] = 20};
    oc_cost_job_map("sin(exp(a))...", 8 * elements, 8 * elements, elements, heavy, &job);
    oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &p);
    CHECK_MSG(p.choice == OC_COST_GPU, "%s", p.reason);
    CHECK(p.cpu_compute > p.cpu_memory);

    /* The same compute-bound job with pageable copies on the slow link: still the GPU? The
     * arithmetic decides: 8 GB each way at 3 GB/s is under the CPU's compute time. */
    oc_cost_predict(&slow, &job, 1, "cuda:0", NULL, &p);
    CHECK(p.gpu_transfer < p.cpu_compute);
    CHECK(p.choice == OC_COST_GPU);
}

static void test_defaults(void)
{
    oc_cost_rates r = {0};
    oc_cost_rates_resolve(&r, 4, "avx2");
    CHECK(r.cpu_cores == 4);
    for (int op = 0; op < OC_COST_OPS; ++op) CHECK(r.cpu[op] > 0 && r.gpu[op] > 0);
    CHECK(r.h2d_pinned > 0 && r.host_bw > 0 && r.gpu_startup > 0);
    oc_cost_job job;
    oc_cost_prediction p;
    gram_job(1000, 1000, OC_COST_GRAM_DENSE, 0, &job);
    oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &p);
    CHECK_MSG(strstr(p.reason, "(default)") != NULL, "defaults are named: %s", p.reason);
}

static void test_cache(void)
{
    if (!oc_test_tmp_create("oc_cost")) return;
    char path[600];
    snprintf(path, sizeof path, "%s", oc_test_tmp_path("sub/dir/rates.txt")); /* directories are created */
    oc_cost_rates r = fast_gpu_host();
    const unsigned all = ~0u;
    CHECK(oc_cost_cache_store(path, "machine-a | cpu", &r, all) == 0);
    oc_cost_rates other = r;
    other.host_bw = 12e9;
    CHECK(oc_cost_cache_store(path, "machine-b | cpu", &other, OC_COST_M_HOST_BW) == 0);

    /* An element-op rate a job kind measured itself (outcore map's evaluator) goes with them. */
    r.cpu[OC_COST_F64] = 3.25e10;
    r.cpu_ops_measured = 1u << OC_COST_F64;
    r.measured |= OC_COST_M_CPU_OPS;
    CHECK(oc_cost_cache_store(path, "machine-a | cpu", &r, all) == 0);
    /* Round trip: machine a's figures come back (printed with 6 digits), marked measured. */
    oc_cost_rates back = {0};
    snprintf(back.cpu_isa, sizeof back.cpu_isa, "avx512");
    CHECK(oc_cost_cache_load(path, "machine-a | cpu", &back) == 1);
    CHECK(back.note[0] == '\0');
    CHECK(fabs(back.host_bw - r.host_bw) < 1e-5 * r.host_bw);
    CHECK(fabs(back.h2d_pinned - r.h2d_pinned) < 1e-5 * r.h2d_pinned);
    CHECK(fabs(back.gpu_startup - r.gpu_startup) < 1e-5);
    CHECK(fabs(back.cpu[OC_COST_BIT_MAC] - r.cpu[OC_COST_BIT_MAC]) < 1e-5 * r.cpu[OC_COST_BIT_MAC]);
    CHECK(back.measured == r.measured);
    CHECK(back.cpu_ops_measured == 1u << OC_COST_F64 && fabs(back.cpu[OC_COST_F64] - 3.25e10) < 1);
    CHECK(back.cpu[OC_COST_F32] == 0); /* not measured, not stored: the default fills it later */
    /* The CPU kernel's rate is per ISA: another ISA's is not taken. */
    oc_cost_rates avx2 = {0};
    snprintf(avx2.cpu_isa, sizeof avx2.cpu_isa, "avx2");
    CHECK(oc_cost_cache_load(path, "machine-a | cpu", &avx2) == 1);
    CHECK(!(avx2.measured & OC_COST_M_CPU_BITS) && avx2.cpu[OC_COST_BIT_MAC] == 0);
    /* Machine b kept its own section; storing a again kept b's. */
    oc_cost_rates b = {0};
    CHECK(oc_cost_cache_load(path, "machine-b | cpu", &b) == 1);
    CHECK(fabs(b.host_bw - 12e9) < 1 && b.measured == OC_COST_M_HOST_BW);

    /* A foreign machine: nothing taken, and a note that says so. */
    oc_cost_rates foreign = {0};
    CHECK(oc_cost_cache_load(path, "machine-c | cpu", &foreign) == 0);
    CHECK(foreign.measured == 0 && foreign.host_bw == 0);
    CHECK_MSG(strstr(foreign.note, "other machines") != NULL, "note: %s", foreign.note);

    /* A corrupted file: ignored as a whole with a note; the next store replaces it. */
    FILE *f = fopen(path, "a");
    CHECK(f != NULL);
    if (f) {
        fputs("host_bw banana\n", f);
        fclose(f);
    }
    oc_cost_rates bad = {0};
    CHECK(oc_cost_cache_load(path, "machine-a | cpu", &bad) == 0);
    CHECK(bad.measured == 0);
    CHECK_MSG(strstr(bad.note, "not a rate") != NULL, "note: %s", bad.note);
    CHECK(oc_cost_cache_store(path, "machine-a | cpu", &r, all) == 0);
    oc_cost_rates again = {0};
    CHECK(oc_cost_cache_load(path, "machine-a | cpu", &again) == 1 && again.note[0] == '\0');

    /* Named figures round trip beside the rates and keep the file valid: a GEMM rate and an
     * int8 algorithm's place (matmul/cuda/matmul_gemm.h). */
    CHECK(oc_cost_cache_store_value(path, "machine-a | cpu", OC_COST_GPU_GEMM_FIGURE "int8", 1.5e15) == 0);
    CHECK(oc_cost_cache_store_value(path, "machine-a | cpu", OC_COST_GPU_INT8_ALGO_FIGURE "4096x4096x4096.w512", 3) ==
          0);
    CHECK(oc_cost_cache_value(path, "machine-a | cpu", OC_COST_GPU_INT8_ALGO_FIGURE "4096x4096x4096.w512") == 3);
    CHECK(oc_cost_cache_value(path, "machine-a | cpu", OC_COST_GPU_GEMM_FIGURE "int8") == 1.5e15);
    CHECK(oc_cost_cache_value(path, "machine-a | cpu", OC_COST_GPU_INT8_ALGO_FIGURE "1x1x1.w512") == 0);
    oc_cost_rates named = {0};
    CHECK(oc_cost_cache_load(path, "machine-a | cpu", &named) == 1 && named.note[0] == '\0');

    /* A file of more machines than are kept (64): the oldest (first) sections are dropped with
     * their lines, which never join another; a machine stored into a full file is read back
     * (its section is written last), and the file keeps 64 sections. */
    const char *many = oc_test_tmp_path("many.txt");
    f = fopen(many, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("# outcore cost-model rates, format 2 (docs/cost-model.md)\n", f);
        for (int i = 0; i < 70; ++i) fprintf(f, "machine m%d\nhost_bw %d\n", i, 1000 + i);
        fclose(f);
    }
    oc_cost_rates last = {0}, first_kept = {0}, dropped = {0}, stored = {0};
    CHECK(oc_cost_cache_load(many, "m69", &last) == 1 && last.host_bw == 1069);
    CHECK(oc_cost_cache_load(many, "m6", &first_kept) == 1 && first_kept.host_bw == 1006);
    CHECK(oc_cost_cache_load(many, "m5", &dropped) == 0 && dropped.host_bw == 0);
    CHECK(oc_cost_cache_store_value(many, "this machine", OC_COST_GPU_GEMM_FIGURE "int8", 2e15) == 0);
    CHECK(oc_cost_cache_value(many, "this machine", OC_COST_GPU_GEMM_FIGURE "int8") == 2e15);
    CHECK(oc_cost_cache_load(many, "m69", &stored) == 1 && stored.host_bw == 1069);
    f = fopen(many, "r");
    int sections = 0;
    char text[256];
    while (f && fgets(text, sizeof text, f)) sections += strncmp(text, "machine ", 8) == 0;
    if (f) fclose(f);
    CHECK(sections == 64);

    /* A link planted under a temporary's name is neither followed nor reused: the file it
     * points to is left as it was. */
    const char *victim = oc_test_tmp_path("victim.txt"), *planted = oc_test_tmp_path("planted.txt");
    f = fopen(victim, "w");
    if (f) fputs("precious\n", f), fclose(f);
    char link_name[4200];
    for (int call = 0; call < 256; ++call) {
        snprintf(link_name, sizeof link_name, "%s.tmp-%ld-%d", planted, (long)getpid(), call);
        CHECK(symlink(victim, link_name) == 0);
    }
    CHECK(oc_cost_cache_store_value(planted, "this machine", OC_COST_GPU_GEMM_FIGURE "int8", 2e15) != 0);
    f = fopen(victim, "r");
    CHECK(f != NULL && fgets(text, sizeof text, f) && strcmp(text, "precious\n") == 0);
    if (f) fclose(f);
    for (int call = 0; call < 256; ++call) {
        snprintf(link_name, sizeof link_name, "%s.tmp-%ld-%d", planted, (long)getpid(), call);
        unlink(link_name);
    }
    CHECK(oc_cost_cache_store_value(planted, "this machine", OC_COST_GPU_GEMM_FIGURE "int8", 2e15) == 0);

    /* A missing file is no warning. */
    oc_cost_rates none = {0};
    CHECK(oc_cost_cache_load(oc_test_tmp_path("absent.txt"), "machine-a | cpu", &none) == 0);
    CHECK(none.note[0] == '\0');
    oc_test_tmp_remove();
}

/* --backend auto through oc_gram: without a GPU it is the CPU, and the explanation is there;
 * a corrupted cache reaches the explanation as a warning. */
static void test_auto_without_gpu(oc_context *ctx)
{
    if (oc_cuda_device_count() > 0) {
        printf("auto without a GPU: not checked, this machine has one\n");
        return;
    }
    if (!oc_test_tmp_create("oc_cost_auto")) return;
    const char *path = oc_test_tmp_path("rates.txt");
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("# outcore cost-model rates, format 2 (docs/cost-model.md)\nmachine x\nnot a line of rates\n", f);
        fclose(f);
    }
    setenv("OUTCORE_COST_CACHE", path, 1);
    oc_cost_rates_reset();
    unsigned char bits[64 * 8];
    for (size_t i = 0; i < sizeof bits; ++i) bits[i] = (unsigned char)(i * 37u);
    oc_matrix *a = NULL;
    CHECK(oc_matrix_from_bits(ctx, bits, 64, 64, 8, OC_BITS_MSB_FIRST, &a) == OC_OK);
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_DISCARD;
    oc_gram_stats stats = {.struct_size = sizeof stats};
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, &stats) == OC_OK);
    CHECK(stats.backend == OC_BACKEND_CPU);
    CHECK_MSG(strstr(stats.backend_explain, ": cpu") != NULL, "explain: %s", stats.backend_explain);
    CHECK_MSG(strstr(stats.backend_explain, "not a rate") != NULL, "the warning: %s", stats.backend_explain);
    /* The job measured the host's rates and replaced the corrupted file with them. */
    size_t len = 0;
    char *text = (char *)oc_test_read_file(path, &len);
    CHECK_MSG(text && strstr(text, "\nhost_bw ") && strstr(text, "\ncpu_bit_macs.") && !strstr(text, "not a line"),
              "the cache after the job: %s", text ? text : "(none)");
    free(text);
    /* A caller built before backend_explain (version 2 of the struct, its size as its
     * compiler made it: the padding after algorithm_desc included) gets its fields only;
     * the offset of backend_explain itself is no version's size. */
    oc_gram_stats v2;
    memset(&v2, 0x5a, sizeof v2);
    v2.struct_size = OC_STRUCT_VERSION_SIZE(oc_gram_stats, backend_explain);
    CHECK(v2.struct_size % 8 == 0 && v2.struct_size > offsetof(oc_gram_stats, backend_explain));
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, &v2) == OC_OK);
    CHECK(v2.backend == OC_BACKEND_CPU && v2.algorithm == OC_ALGORITHM_DENSE);
    const size_t past = v2.struct_size - offsetof(oc_gram_stats, backend_explain);
    CHECK((unsigned char)v2.backend_explain[past] == 0x5a && (unsigned char)v2.backend_explain[639] == 0x5a);
    oc_gram_stats odd = {.struct_size = offsetof(oc_gram_stats, backend_explain)};
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, &odd) == OC_ERR_INVALID_ARGUMENT);
    /* The cache is off: defaults, named as such, and no file is written. */
    setenv("OUTCORE_COST_CACHE", "off", 1);
    oc_cost_rates_reset();
    oc_cost_rates r;
    oc_cost_rates_get(ctx, OC_COST_ROOM_ANY, 0, &r);
    CHECK(r.measured == 0 && r.note[0] == '\0');
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, &stats) == OC_OK);
    CHECK(stats.backend == OC_BACKEND_CPU);
    CHECK_MSG(strstr(stats.backend_explain, "(default)") != NULL, "explain: %s", stats.backend_explain);
    /* A cache that cannot be written (its directory is a file): nothing is measured, the
     * defaults are used and the explanation says why. */
    char bad[4200];
    snprintf(bad, sizeof bad, "%s/rates.txt", path);
    setenv("OUTCORE_COST_CACHE", bad, 1);
    oc_cost_rates_reset();
    CHECK(oc_gram(ctx, a, NULL, &opts, &out, &stats) == OC_OK);
    CHECK_MSG(strstr(stats.backend_explain, "cannot write the rate cache"), "explain: %s", stats.backend_explain);
    oc_cost_rates r2;
    oc_cost_rates_get(ctx, OC_COST_ROOM_ANY, 0, &r2);
    CHECK(!(r2.measured & OC_COST_M_CPU_BITS));
    restore_cache_env();
    oc_matrix_free(a);
    oc_test_tmp_remove();
}

/* The first job that needs a prediction, here a CPU-only one, measures the host's figures
 * and stores them; a later process (here: after a reset) reads them back and measures
 * nothing: the file is not written again. */
static void test_measure_and_store(oc_context *ctx)
{
    if (!oc_test_tmp_create("oc_cost_measure")) return;
    const char *path = oc_test_tmp_path("rates.txt");
    setenv("OUTCORE_COST_CACHE", path, 1);
    oc_cost_rates_reset();
    /* Columns enough that the kernel's bit-MACs outweigh the per-pair stage and the input's
     * reading on any CPU and core count (the explain then names the kernel's rate). */
    oc_matrix *a = oc_test_random01(ctx, 2000, 4000, 7);
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    opts.backend = OC_BACKEND_CPU;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_DISCARD;
    oc_gram_stats stats = {.struct_size = sizeof stats};
    CHECK(a && oc_gram(ctx, a, NULL, &opts, &out, &stats) == OC_OK);
    CHECK_MSG(strstr(stats.backend_explain, "kernel") && !strstr(stats.backend_explain, "bit-MAC/s (default)") &&
                  stats.predicted_seconds > 0,
              "explain: %s", stats.backend_explain);
    size_t len = 0;
    unsigned char *text = oc_test_read_file(path, &len);
    CHECK(text && strstr((char *)text, "\nhost_bw ") && strstr((char *)text, "\ncpu_bit_macs."));
    free(text);
    oc_cost_rates first, again;
    oc_cost_rates_get(ctx, OC_COST_ROOM_ANY, 0, &first);
    const unsigned host = OC_COST_M_HOST_BW | OC_COST_M_CPU_BITS;
    CHECK_MSG((first.measured & host) == host, "measured %#x: %s", first.measured, first.note);
    CHECK(first.host_bw > 0 && first.cpu[OC_COST_BIT_MAC] > 0);
    struct stat before, after;
    CHECK(stat(path, &before) == 0);
    oc_cost_rates_reset();
    CHECK(a && oc_gram(ctx, a, NULL, &opts, &out, &stats) == OC_OK);
    oc_cost_rates_get(ctx, OC_COST_ROOM_ANY, 0, &again);
    CHECK((again.measured & host) == host);
    CHECK(fabs(again.host_bw - first.host_bw) < 1e-5 * first.host_bw);
    /* Stores rename a new file into place: the same inode is the same file. */
    CHECK(stat(path, &after) == 0 && after.st_ino == before.st_ino);
    oc_matrix_free(a);
    restore_cache_env();
    oc_test_tmp_remove();
}

/* The first use's triad takes more memory than a small host budget allows: that job keeps
 * the default host rate, says why, and stores the rest; a later job with room measures it. */
static void test_first_use_within_the_budget(oc_context *ctx)
{
    if (!oc_test_tmp_create("oc_cost_room")) return;
    const char *path = oc_test_tmp_path("rates.txt");
    setenv("OUTCORE_COST_CACHE", path, 1);
    oc_cost_rates_reset();
    oc_matrix *a = oc_test_random01(ctx, 300, 700, 3);
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    opts.backend = OC_BACKEND_CPU;
    opts.host_mem_bytes = oc_cost_triad_bytes(1) - 1;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_DISCARD;
    oc_gram_stats stats = {.struct_size = sizeof stats};
    CHECK(a && oc_gram(ctx, a, NULL, &opts, &out, &stats) == OC_OK);
    CHECK_MSG(strstr(stats.backend_explain, "host memory not measured: the measurement takes") != NULL, "explain: %s",
              stats.backend_explain);
    size_t len = 0;
    char *text = (char *)oc_test_read_file(path, &len);
    CHECK_MSG(text && !strstr(text, "\nhost_bw ") && strstr(text, "\ncpu_bit_macs."), "the cache: %s",
              text ? text : "(none)");
    free(text);
    oc_cost_rates r;
    oc_cost_rates_get(ctx, oc_cost_triad_bytes(1) - 1, 0, &r);
    CHECK(!(r.measured & OC_COST_M_HOST_BW) && (r.measured & OC_COST_M_CPU_BITS));
    /* The note is that job's: a later job that measures nothing does not repeat it. */
    oc_cost_rates_get(ctx, 0, 0, &r);
    CHECK_MSG(!strstr(r.note, "not measured"), "a later job's note: %s", r.note);
    /* Room for the arrays: measured, stored, and the note gone. */
    oc_cost_rates_get(ctx, oc_cost_triad_bytes(1), 0, &r);
    CHECK_MSG((r.measured & OC_COST_M_HOST_BW) && r.host_bw > 0 && r.note[0] == '\0', "measured %#x: %s", r.measured,
              r.note);
    text = (char *)oc_test_read_file(path, &len);
    CHECK(text && strstr(text, "\nhost_bw "));
    free(text);
    oc_matrix_free(a);
    restore_cache_env();
    oc_test_tmp_remove();
}

/* An auto job the CPU finishes before a cold GPU could start is decided without CUDA; a
 * larger one, a job asked for the CPU, and a small one after the CPU time of earlier auto
 * jobs could have paid for the start-up are left to the full choice. Last: it adds to the
 * process's regret, which nothing resets. */
static void test_cpu_before_gpu_start(oc_context *ctx)
{
    setenv("OUTCORE_COST_CACHE", "off", 1);
    oc_cost_rates_reset();
    oc_gram_options opts = OC_GRAM_OPTIONS_INIT;
    oc_gram_job job = {.ctx = ctx,
                       .symmetric = 1,
                       .n = 300,
                       .p = 300,
                       .m = 216,
                       .metric = OC_METRIC_COUNTS,
                       .dtype = OC_DTYPE_INT32,
                       .opts = &opts};
    oc_gram_backend_choice c;
    if (oc_cost_gpu_warm()) {
        printf("auto before the GPU's start-up: not checked, a GPU job ran in this process\n");
        return;
    }
    CHECK(oc_gram_cpu_before_gpu_start(ctx, &job, OC_OUTPUT_FILE, &c) == 1);
    CHECK(c.use_gpu == 0 && c.pred.cpu_seconds > 0 && c.pred.cpu_seconds < c.rates.gpu_startup);
    /* The regret is the CPU's own time: the output file's costs are paid on either backend. */
    const double file =
        c.pred.fixed[OC_COST_FIX_FILE] + c.pred.fixed[OC_COST_FIX_PAGES] + c.pred.fixed[OC_COST_FIX_SYNC];
    CHECK(file > 0 && fabs(c.pred.regret - (c.pred.cpu_seconds - file)) <= 1e-12);
    CHECK_MSG(strstr(c.explain, "gram 300x300x216") && strstr(c.explain, "; cuda:0 not asked: a GPU's start-up") &&
                  strstr(c.explain, "default"),
              "explain: %s", c.explain);
    oc_gram_job big = job;
    big.n = big.p = 100000;
    big.m = 200000;
    CHECK(oc_gram_cpu_before_gpu_start(ctx, &big, OC_OUTPUT_FILE, &c) == 0);
    opts.backend = OC_BACKEND_CPU;
    CHECK(oc_gram_cpu_before_gpu_start(ctx, &job, OC_OUTPUT_FILE, &c) == 0);
    opts.backend = OC_BACKEND_AUTO;
    /* Earlier CPU jobs' time adds up to the start-up: the next small one asks CUDA. */
    oc_cost_note_cpu_job(c.rates.gpu_startup);
    CHECK(oc_gram_cpu_before_gpu_start(ctx, &job, OC_OUTPUT_FILE, &c) == 0);
    restore_cache_env();
}

/* The small job, dense jaccard 4627 x 216 to a .npy on 2 threads: most of its wall
 * time is the output file (pages, fsync), which the prediction must count, term by term. */
static void test_fixed_costs(oc_context *ctx)
{
    oc_cost_rates r = fast_gpu_host();
    oc_cost_gram_shape g = {.n = 4627,
                            .p = 4627,
                            .m = 216,
                            .symmetric = 1,
                            .output = OC_COST_GRAM_DENSE,
                            .elem_bytes = 4,
                            .popcounts = 1,
                            .to_file = 1,
                            .threads = 2};
    oc_cost_job job;
    oc_cost_job_gram(&g, &job);
    const double bytes = 4627.0 * 4627.0 * 4;
    CHECK(job.files == 1 && job.file_bytes == bytes && job.threads == 2);
    oc_cost_prediction p;
    oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &p);
    CHECK(p.fixed[OC_COST_FIX_THREADS] == 2 * r.thread_start);
    CHECK(p.fixed[OC_COST_FIX_FILE] == r.file_create);
    CHECK(p.fixed[OC_COST_FIX_PAGES] == bytes / r.file_pages);
    CHECK(p.fixed[OC_COST_FIX_SYNC] == bytes / r.file_sync);
    double fixed = 0;
    for (int f = 0; f < OC_COST_FIXED_TERMS; ++f) {
        CHECK_MSG(p.fixed[f] > 0, "fixed term %s is 0", oc_cost_fixed_name((oc_cost_fixed_term)f));
        fixed += p.fixed[f];
    }
    /* Both totals hold them (the GPU's without the CPU's threads), over the roofline. */
    CHECK(fabs(p.cpu_seconds - (fixed + fmax(p.cpu_memory, p.cpu_compute))) <= 1e-12 * p.cpu_seconds);
    CHECK(fabs(p.gpu_seconds - (p.gpu_start + fixed - p.fixed[OC_COST_FIX_THREADS] +
                                fmax(p.gpu_transfer, fmax(p.gpu_host, p.gpu_compute)))) <= 1e-12 * p.gpu_seconds);
    /* The file dominates such a job, as it did when measured (bench/RESULTS.md). */
    CHECK(p.fixed[OC_COST_FIX_SYNC] > fmax(p.cpu_memory, p.cpu_compute));
    CHECK_MSG(strstr(p.reason, "fixed") && strstr(p.reason, "fsync") && strstr(p.reason, "pages") &&
                  strstr(p.reason, "threads") && strstr(p.reason, " file "),
              "the breakdown: %s", p.reason);

    /* On a memory file system (tmpfs): the file's fsync flushes nothing to a disk. */
    g.file_in_memory = 1;
    oc_cost_job_gram(&g, &job);
    oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &p);
    CHECK(p.fixed[OC_COST_FIX_SYNC] == 0);
    /* Its pages: zeroed by the reservation on one thread, then mapped in by every core. */
    CHECK(p.fixed[OC_COST_FIX_PAGES] == bytes / r.file_pages + bytes / r.file_faults);
    CHECK(r.file_faults > 0 && p.fixed[OC_COST_FIX_PAGES] > bytes / r.file_pages);
    CHECK_MSG(!strstr(p.reason, "fsync"), "the breakdown: %s", p.reason);
    g.file_in_memory = 0;

    /* Two GPUs: the driver starts each (twice the start-up), and they share the work and
     * the link's bytes; the host's part stays whole. */
    oc_cost_prediction one;
    oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &one);
    job.gpu_devices = 2;
    oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &p);
    CHECK(p.gpu_start == 2 * one.gpu_start && p.gpu_compute == one.gpu_compute / 2 &&
          p.gpu_transfer == one.gpu_transfer / 2 && p.gpu_host == one.gpu_host);
    CHECK_MSG(strstr(p.reason, ", 2 GPUs") && !strstr(one.reason, "GPUs"), "the reason: %s", p.reason);
    job.gpu_devices = 0;

    /* In memory: no file terms, none in the reason. */
    g.to_file = 0;
    oc_cost_job_gram(&g, &job);
    oc_cost_predict(&r, &job, 1, "cuda:0", NULL, &p);
    CHECK(p.fixed[OC_COST_FIX_FILE] == 0 && p.fixed[OC_COST_FIX_SYNC] == 0 && p.fixed[OC_COST_FIX_PAGES] == 0);
    CHECK(p.fixed[OC_COST_FIX_THREADS] > 0 && !strstr(p.reason, "fsync"));

    /* What `--explain` prints for the job (oc_gram_explain, the CPU backend): the same terms. */
    unsigned char *bytes01 = calloc(4627 * 216, 1);
    oc_matrix *a = NULL;
    CHECK(bytes01 && oc_matrix_from_dense(ctx, bytes01, 4627, 216, 216, &a) == OC_OK);
    if (a) {
        oc_gram_options o = OC_GRAM_OPTIONS_INIT;
        o.metric = OC_METRIC_JACCARD;
        o.backend = OC_BACKEND_CPU;
        o.algorithm = OC_ALGORITHM_DENSE;
        o.threads = 2;
        oc_output out = OC_OUTPUT_INIT;
        out.kind = OC_OUTPUT_FILE;
        out.path = "unused.npy";
        char *text = NULL;
        CHECK_MSG(oc_gram_explain(ctx, a, NULL, &o, &out, &text) == OC_OK, "%s", oc_context_last_error(ctx));
        CHECK_MSG(text && strstr(text, "fixed") && strstr(text, "fsync") && strstr(text, "pages") &&
                      strstr(text, "threads"),
                  "--explain: %s", text ? text : "(none)");
        free(text);
    }
    oc_matrix_free(a);
    free(bytes01);
}

/* The GPU kernel's default rate follows the kernel each architecture runs: wgmma on Hopper
 * above mma.sync from Ampere on, far above the CUDA-core fallback; no GPU, no rate. */
/* A result file reserved beside the job (matmul's): its creation and its pages' faults at
 * every core's rate on a memory file system; on a disk one thread's rate and the flush;
 * nothing for a result in memory. And where a file is, by its folder. */
static void test_result_file(void)
{
    oc_cost_rates r = fast_gpu_host();
    r.file_create = 1e-3, r.file_pages = 2e9, r.file_faults = 8e9, r.file_sync = 0.5e9;
    CHECK(oc_cost_result_file_seconds(&r, 0, 1) == 0 && oc_cost_result_file_seconds(&r, 0, 0) == 0);
    CHECK(fabs(oc_cost_result_file_seconds(&r, 4e9, 1) - (1e-3 + 0.5)) < 1e-12);
    CHECK(fabs(oc_cost_result_file_seconds(&r, 4e9, 0) - (1e-3 + 2.0 + 8.0)) < 1e-12);
    struct stat sb;
    if (stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode)) CHECK(oc_cost_in_memory_fs("/dev/shm/C.npy"));
    CHECK(!oc_cost_in_memory_fs("/proc/no/such/folder/C.npy")); /* its folder cannot be asked */
    CHECK(!oc_cost_in_memory_fs(NULL));
}

static void test_gpu_defaults(void)
{
    const char *k90 = NULL, *k80 = NULL, *k75 = NULL, *k0 = "x";
    const double r90 = oc_cost_gpu_default_bit_macs(90, &k90), r100 = oc_cost_gpu_default_bit_macs(100, NULL);
    const double r80 = oc_cost_gpu_default_bit_macs(80, &k80), r86 = oc_cost_gpu_default_bit_macs(86, NULL);
    const double r75 = oc_cost_gpu_default_bit_macs(75, &k75);
    CHECK(r90 > r80 && r80 > 4 * r75 && r75 > 0);
    CHECK(r100 == r90 && r86 == r80);
    CHECK(strstr(k90, "wgmma") && strstr(k80, "mma.sync") && strstr(k75, "popc"));
    CHECK(oc_cost_gpu_default_bit_macs(0, &k0) == 0 && k0[0] == '\0');
}

static double count_and_give(void *arg)
{
    int *calls = arg;
    ++*calls;
    return 2.5e10;
}

/* A named figure is measured once and stored; the process then keeps it (a matmul with the
 * auto backend asks its BLAS's rate at every call): the file is read no more, so the figure
 * stays when the file goes, until oc_cost_rates_reset. Another cache path has figures of
 * its own. */
static void test_figures_kept(void)
{
    if (!oc_test_tmp_create("oc_cost_figures")) return;
    const char *path = oc_test_tmp_path("rates.txt");
    setenv("OUTCORE_COST_CACHE", path, 1);
    oc_cost_rates_reset();
    int calls = 0;
    CHECK(oc_cost_figure(0, OC_COST_GEMM_FIGURE "test_a.f64", "test figure", count_and_give, &calls) == 2.5e10 &&
          calls == 1);
    CHECK(oc_cost_figure(0, OC_COST_GEMM_FIGURE "test_a.f64", "test figure", count_and_give, &calls) == 2.5e10 &&
          calls == 1);
    size_t len = 0;
    char *text = (char *)oc_test_read_file(path, &len);
    CHECK_MSG(text && strstr(text, "\n" OC_COST_GEMM_FIGURE "test_a.f64 2.5e+10"), "the cache: %s",
              text ? text : "(none)");
    free(text);
    CHECK(remove(path) == 0);
    CHECK(oc_cost_figure(0, OC_COST_GEMM_FIGURE "test_a.f64", "test figure", count_and_give, &calls) == 2.5e10 &&
          calls == 1);
    CHECK(oc_cost_figure(0, OC_COST_GEMM_FIGURE "test_b.f64", "test figure", count_and_give, &calls) == 2.5e10 &&
          calls == 2);
    /* Another cache: measured there again. */
    const char *other = oc_test_tmp_path("other.txt");
    setenv("OUTCORE_COST_CACHE", other, 1);
    CHECK(oc_cost_figure(0, OC_COST_GEMM_FIGURE "test_a.f64", "test figure", count_and_give, &calls) == 2.5e10 &&
          calls == 3);
    /* After a reset the file is read again: b, stored there when it was measured, is found
     * without measuring; a, whose file went before b's was written, is measured again. */
    setenv("OUTCORE_COST_CACHE", path, 1);
    oc_cost_rates_reset();
    double v = oc_cost_figure(0, OC_COST_GEMM_FIGURE "test_b.f64", "test figure", count_and_give, &calls);
    CHECK_MSG(v == 2.5e10 && calls == 3, "%g, measured %d times", v, calls);
    CHECK(oc_cost_figure(0, OC_COST_GEMM_FIGURE "test_a.f64", "test figure", count_and_give, &calls) == 2.5e10 &&
          calls == 4);
    restore_cache_env();
    oc_test_tmp_remove();
}

/* Counts its calls in a file (shared by forked processes: O_APPEND, one byte a call), takes
 * a while, as a measurement does, and gives a rate. */
static double slow_count_and_give(void *arg)
{
    const char *calls = arg;
    FILE *f = fopen(calls, "a");
    if (f) fputc('m', f), fclose(f);
    usleep(300 * 1000);
    return 3.5e10;
}

/* Processes that ask for a figure the cache lacks at once measure it one after another: the
 * first measures and stores it, the others, waiting for the cache's lock, find it stored. */
static void test_figure_measured_once_by_processes_at_once(void)
{
    if (!oc_test_tmp_create("oc_cost_once")) return;
    const char *path = oc_test_tmp_path("rates.txt"), *calls = oc_test_tmp_path("calls");
    setenv("OUTCORE_COST_CACHE", path, 1);
    oc_cost_rates_reset();
    enum { PROCESSES = 4 };
    pid_t pids[PROCESSES];
    for (int p = 0; p < PROCESSES; p++) {
        pids[p] = fork();
        if (pids[p] == 0) {
            alarm(60);
            const double v = oc_cost_figure(0, OC_COST_GEMM_FIGURE "test_once.f64", "test figure", slow_count_and_give,
                                            (void *)calls);
            _exit(v == 3.5e10 ? 0 : 1);
        }
    }
    for (int p = 0; p < PROCESSES; p++) {
        int status = 1;
        CHECK(pids[p] > 0 && waitpid(pids[p], &status, 0) == pids[p] && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    size_t len = 0;
    char *text = (char *)oc_test_read_file(calls, &len);
    CHECK_MSG(text && len == 1, "measured %zu times by %d processes", len, PROCESSES);
    free(text);
    restore_cache_env();
    oc_test_tmp_remove();
}

int main(void)
{
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    const char *env = getenv("OUTCORE_COST_CACHE");
    cache_env_set = env != NULL;
    snprintf(cache_env, sizeof cache_env, "%s", env ? env : "");
    test_gram_decisions();
    test_map_decisions();
    test_defaults();
    test_cache();
    test_auto_without_gpu(ctx);
    test_measure_and_store(ctx);
    test_first_use_within_the_budget(ctx);
    test_cpu_before_gpu_start(ctx);
    test_fixed_costs(ctx);
    test_result_file();
    test_gpu_defaults();
    test_figures_kept();
    test_figure_measured_once_by_processes_at_once();
    oc_context_free(ctx);
    return oc_test_finish();
}
