// test_select_zeroing.cu - the device selection's set-up zeroing (the output slots' bucket
// counts, the top-k lists, floors and overflow count: select_cuda.c) is done before the job's
// first tile, whatever else the process has enqueued. A thread keeps the legacy default stream
// busy with short spin kernels while fused top-k and threshold jobs (the b1 kernel) run on one
// device and on device 0 split into three logical devices; each result must be the CPU's.
// The zeroing once ran on the legacy stream (cudaMemset), which the pipeline's non-blocking
// streams do not wait for: held back there behind other work, it erased the buckets or lists
// of a device's first tiles (a row's best column missing from its list), rarely and only
// when something else used that stream at the time. Here something always does.
// Exits 77 without a usable GPU of sm_80 or later (the b1 kernel).
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "../gram_cases.h"
#include "../harness.h"
}

enum { N = 700, M = 40, ROUNDS = 8 };
static const long long SPIN_NS = 2000000; // each spin kernel holds the legacy stream this long

// One thread spins until SPIN_NS have passed on the GPU's global timer.
__global__ void spin(long long ns)
{
    long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

// The busy thread: two spin kernels at a time on the legacy stream until `stop`.
struct busy_state {
    int stop; // set by the main thread (atomic builtins)
    int failed;
};

static void *busy_main(void *arg)
{
    busy_state *b = (busy_state *)arg;
    if (cudaSetDevice(0) != cudaSuccess) {
        b->failed = 1;
        return NULL;
    }
    while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) {
        spin<<<1, 1, 0, cudaStreamLegacy>>>(SPIN_NS);
        spin<<<1, 1, 0, cudaStreamLegacy>>>(SPIN_NS);
        if (cudaGetLastError() != cudaSuccess || cudaStreamSynchronize(cudaStreamLegacy) != cudaSuccess) {
            b->failed = 1;
            break;
        }
    }
    return NULL;
}

// 0/1 rows of M bits, each bit set with probability 1/8 (the case table's "700" rows).
static oc_matrix *sparse_rows(oc_context *ctx, uint64_t seed)
{
    unsigned char *bytes = (unsigned char *)malloc((size_t)N * M);
    if (!bytes) return NULL;
    for (int64_t i = 0; i < (int64_t)N * M; ++i) bytes[i] = (oc_test_rand(&seed) & 7) == 0;
    oc_matrix *m = NULL;
    if (oc_matrix_from_dense(ctx, bytes, N, M, M, &m) != OC_OK) m = NULL;
    free(bytes);
    return m;
}

static int keep_pairs(void *user, const int64_t *rows, const int64_t *cols, const void *scores, int64_t count)
{
    gram_pairs_add((gram_pairs *)user, rows, cols, scores, count);
    return 0;
}

// Hamming (int32) on the CPU (devices "cpu") or the CUDA backend (one device, or "0:3"), tiles
// of 256 and a budget of 24 MiB per logical device, as the case table's "700" rows.
static oc_gram_options job_options(const char *devices, char *budgets, size_t size)
{
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.metric = OC_METRIC_HAMMING;
    o.dtype = OC_DTYPE_INT32;
    o.algorithm = OC_ALGORITHM_DENSE;
    if (strcmp(devices, "cpu") == 0) {
        o.backend = OC_BACKEND_CPU;
        return o;
    }
    o.backend = OC_BACKEND_CUDA;
    o.tile = 256;
    o.gpu_mem_bytes = 24LL << 20;
    if (strcmp(devices, "0:3") == 0) {
        snprintf(budgets, size, "0=%lld", 3 * (24LL << 20));
        o.devices = devices, o.gpu_mem_devices = budgets;
    }
    return o;
}

static oc_status topk(oc_context *ctx, const oc_matrix *a, const char *devices, int64_t k, int64_t *idx, int32_t *sc)
{
    char budgets[48];
    oc_gram_options o = job_options(devices, budgets, sizeof budgets);
    o.topk = k;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_TOPK, out.indices = idx, out.scores = sc;
    return oc_gram(ctx, a, NULL, &o, &out, NULL);
}

static oc_status threshold(oc_context *ctx, const oc_matrix *a, const char *devices, gram_pairs *seen)
{
    char budgets[48];
    oc_gram_options o = job_options(devices, budgets, sizeof budgets);
    o.use_threshold = 1, o.threshold = 4;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_PAIRS, out.pairs = keep_pairs, out.pairs_user = seen;
    return oc_gram(ctx, a, NULL, &o, &out, NULL);
}

int main(void)
{
    int count = 0;
    cudaDeviceProp prop;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0 || cudaGetDeviceProperties(&prop, 0) != cudaSuccess ||
        prop.major < 8) {
        oc_test_skip("no usable CUDA device of sm_80 or later");
        return oc_test_finish();
    }
    setenv("OUTCORE_CUDA_KERNEL", "b1", 1); // the mma.sync kernel, every top-k tile fused
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    oc_matrix *a = sparse_rows(ctx, 700);
    CHECK(a != NULL);
    static const int64_t ks[] = {128, 10};
    int64_t *want_idx[2] = {0}, *got_idx = (int64_t *)malloc((size_t)N * 128 * 8);
    int32_t *want_sc[2] = {0}, *got_sc = (int32_t *)malloc((size_t)N * 128 * 4);
    gram_pairs want_pairs = {};
    want_pairs.elem = 4;
    CHECK(got_idx && got_sc);
    for (int i = 0; a && i < 2; ++i) {
        want_idx[i] = (int64_t *)malloc((size_t)(N * ks[i]) * 8);
        want_sc[i] = (int32_t *)malloc((size_t)(N * ks[i]) * 4);
        CHECK_MSG(want_idx[i] && want_sc[i] && topk(ctx, a, "cpu", ks[i], want_idx[i], want_sc[i]) == OC_OK,
                  "top-%lld on the CPU: %s", (long long)ks[i], oc_context_last_error(ctx));
    }
    if (a)
        CHECK_MSG(threshold(ctx, a, "cpu", &want_pairs) == OC_OK && !want_pairs.failed && want_pairs.count > 0,
                  "threshold on the CPU: %s (%lld pairs)", oc_context_last_error(ctx), (long long)want_pairs.count);

    busy_state busy = {0, 0};
    pthread_t thread;
    const int started = pthread_create(&thread, NULL, busy_main, &busy) == 0;
    CHECK(started);
    static const char *const specs[] = {"0", "0:3"};
    for (int round = 0; started && a && got_idx && got_sc && round < ROUNDS; ++round)
        for (int d = 0; d < 2; ++d) {
            for (int i = 0; i < 2; ++i) {
                if (!want_idx[i] || !want_sc[i]) continue;
                const size_t n = (size_t)(N * ks[i]);
                memset(got_idx, 0xAB, n * 8);
                memset(got_sc, 0xAB, n * 4);
                if (topk(ctx, a, specs[d], ks[i], got_idx, got_sc) != OC_OK) {
                    CHECK_MSG(0, "round %d: top-%lld on %s: %s", round, (long long)ks[i], specs[d],
                              oc_context_last_error(ctx));
                    continue;
                }
                size_t at = 0;
                while (at < n && got_idx[at] == want_idx[i][at] && got_sc[at] == want_sc[i][at]) ++at;
                CHECK_MSG(at == n, "round %d: top-%lld on %s: row %lld slot %lld is column %lld, the CPU says %lld",
                          round, (long long)ks[i], specs[d], (long long)(at / ks[i]), (long long)(at % ks[i]),
                          at < n ? (long long)got_idx[at] : 0LL, at < n ? (long long)want_idx[i][at] : 0LL);
            }
            gram_pairs got = {};
            got.elem = 4;
            const oc_status st = threshold(ctx, a, specs[d], &got);
            CHECK_MSG(st == OC_OK && !got.failed && got.count == want_pairs.count &&
                          memcmp(got.rows, want_pairs.rows, (size_t)got.count * 8) == 0 &&
                          memcmp(got.cols, want_pairs.cols, (size_t)got.count * 8) == 0 &&
                          memcmp(got.values, want_pairs.values, (size_t)got.count * 4) == 0,
                      "round %d: threshold on %s: %s; %lld pairs, the CPU's %lld", round, specs[d],
                      st == OC_OK ? "ran" : oc_context_last_error(ctx), (long long)got.count,
                      (long long)want_pairs.count);
            gram_pairs_free(&got);
        }
    if (started) {
        __atomic_store_n(&busy.stop, 1, __ATOMIC_RELEASE);
        pthread_join(thread, NULL);
        CHECK_MSG(!busy.failed, "the spin kernels on the legacy stream failed");
    }
    unsetenv("OUTCORE_CUDA_KERNEL");
    for (int i = 0; i < 2; ++i) free(want_idx[i]), free(want_sc[i]);
    free(got_idx);
    free(got_sc);
    gram_pairs_free(&want_pairs);
    oc_matrix_free(a);
    oc_context_free(ctx);
    return oc_test_finish();
}
