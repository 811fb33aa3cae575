/*
 * test_cuda_devices.c - several logical devices on one GPU (--devices 0:N) beyond the case
 * table's results (test_cuda_cases.c runs every row on 0:2 and 0:3 against the reference):
 * the per-device statistics, the same bytes as one device for jobs with many tiles (dense,
 * top-k on the device's lists and past them, threshold pairs; A·Aᵀ and A·Bᵀ), and a
 * device that fails mid-job (OUTCORE_FAULT_DEVICE=d:k), which must end the job with one line
 * naming that logical device, no output file, and no device or pinned memory left behind;
 * and parts whose set-up fails, at every device allocation, after their panel uploads began.
 * Exits 77 when no CUDA device is usable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness.h"
#include "outcore.h"
#include "engine/cuda/device.h"

enum { N = 3000, M = 700 };

static oc_matrix *random_matrix(oc_context *ctx, int64_t rows, int64_t cols, uint64_t seed)
{
    unsigned char *bytes = malloc((size_t)(rows * cols));
    if (!bytes) return NULL;
    for (int64_t i = 0; i < rows * cols; ++i) bytes[i] = (oc_test_rand(&seed) & 7) == 0;
    oc_matrix *m = NULL;
    oc_status st = oc_matrix_from_dense(ctx, bytes, rows, cols, cols, &m);
    free(bytes);
    return st == OC_OK ? m : NULL;
}

/* Dense result of A·Aᵀ (b NULL) or A·Bᵀ on `devices` (NULL: one device), tiles of 256 rows
 * so that the job has many tiles to share. */
static int32_t *dense(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const char *devices, oc_status *st,
                      oc_gram_stats *stats)
{
    const int64_t n = oc_matrix_rows(a), p = b ? oc_matrix_rows(b) : n;
    int32_t *c = malloc((size_t)(n * p) * 4);
    if (!c) return NULL;
    memset(c, 0xAB, (size_t)(n * p) * 4);
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = OC_BACKEND_CUDA;
    o.algorithm = OC_ALGORITHM_DENSE;
    o.tile = 256;
    o.devices = devices;
    oc_output out = OC_OUTPUT_INIT;
    out.data = c;
    *stats = (oc_gram_stats){.struct_size = sizeof *stats};
    *st = oc_gram(ctx, a, b, &o, &out, stats);
    return c;
}

static void check_split_matches_one_device(oc_context *ctx, const oc_matrix *a, const oc_matrix *b)
{
    const int64_t n = oc_matrix_rows(a), p = b ? oc_matrix_rows(b) : n;
    oc_status st;
    oc_gram_stats one, split;
    int32_t *c1 = dense(ctx, a, b, NULL, &st, &one);
    CHECK(st == OC_OK);
    CHECK(one.device_count == 1 && strcmp(one.devices[0].name, "cuda:0") == 0 && one.devices[0].tiles == one.tiles);
    static const char *const specs[] = {"0:2", "0:3"};
    for (int i = 0; i < 2; ++i) {
        int32_t *c2 = dense(ctx, a, b, specs[i], &st, &split);
        CHECK_MSG(st == OC_OK, "%s: %s", specs[i], oc_context_last_error(ctx));
        CHECK_MSG(c1 && c2 && memcmp(c1, c2, (size_t)(n * p) * 4) == 0, "%s: %s differs from one device", specs[i],
                  b ? "A·Bᵀ" : "A·Aᵀ");
        const int parts = i + 2;
        CHECK_EQ_I64(split.device_count, parts);
        int64_t tiles = 0, h2d = 0;
        for (int d = 0; d < split.device_count; ++d) {
            char want[32];
            snprintf(want, sizeof want, "cuda:0.%d/%d", d, parts);
            CHECK_MSG(strcmp(split.devices[d].name, want) == 0, "device %d is '%s'", d, split.devices[d].name);
            CHECK(split.devices[d].busy_seconds > 0);
            CHECK(split.devices[d].peak_bytes <= split.devices[d].budget_bytes);
            tiles += split.devices[d].tiles;
            h2d += split.devices[d].bytes_h2d;
        }
        CHECK_EQ_I64(tiles, one.tiles);
        CHECK_EQ_I64(split.tiles, one.tiles);
        CHECK_EQ_I64(h2d, split.bytes_h2d);
        free(c2);
    }
    free(c1);
}

/* Pairs a threshold job delivers, in order, as one byte string per field. */
typedef struct pairs_seen {
    int64_t count, cap;
    int64_t *rows, *cols;
    float *values;
} pairs_seen;

static int keep_pairs(void *user, const int64_t *rows, const int64_t *cols, const void *scores, int64_t count)
{
    pairs_seen *p = user;
    if (p->count + count > p->cap) {
        int64_t cap = (p->count + count) * 2;
        int64_t *r = realloc(p->rows, (size_t)cap * 8), *c = r ? realloc(p->cols, (size_t)cap * 8) : NULL;
        float *v = c ? realloc(p->values, (size_t)cap * 4) : NULL;
        if (r) p->rows = r;
        if (c) p->cols = c;
        if (!v) return 1;
        p->values = v, p->cap = cap;
    }
    memcpy(p->rows + p->count, rows, (size_t)count * 8);
    memcpy(p->cols + p->count, cols, (size_t)count * 8);
    memcpy(p->values + p->count, scores, (size_t)count * 4);
    p->count += count;
    return 0;
}

/* Jaccard top-k (k on the device's lists, or past them on the host) and threshold pairs on
 * 0:2 and 0:3: the same bytes as on one device. */
static void check_selection_matches_one_device(oc_context *ctx, const oc_matrix *a, const oc_matrix *b,
                                               double threshold)
{
    const int64_t n = oc_matrix_rows(a);
    static const char *const specs[] = {NULL, "0:2", "0:3"};
    static const int64_t ks[] = {10, 200};
    for (int ki = 0; ki < 2; ++ki) {
        const int64_t k = ks[ki];
        int64_t *idx[3] = {0};
        float *sc[3] = {0};
        for (int i = 0; i < 3; ++i) {
            idx[i] = malloc((size_t)(n * k) * 8);
            sc[i] = malloc((size_t)(n * k) * 4);
            oc_gram_options o = OC_GRAM_OPTIONS_INIT;
            o.backend = OC_BACKEND_CUDA, o.algorithm = OC_ALGORITHM_DENSE, o.tile = 256;
            o.metric = OC_METRIC_JACCARD, o.topk = k, o.devices = specs[i];
            oc_output out = OC_OUTPUT_INIT;
            out.kind = OC_OUTPUT_TOPK, out.indices = idx[i], out.scores = sc[i];
            CHECK_MSG(idx[i] && sc[i] && oc_gram(ctx, a, b, &o, &out, NULL) == OC_OK, "top-%lld on %s: %s",
                      (long long)k, specs[i] ? specs[i] : "one device", oc_context_last_error(ctx));
            if (i > 0 && idx[0] && idx[i] && sc[0] && sc[i])
                CHECK_MSG(memcmp(idx[0], idx[i], (size_t)(n * k) * 8) == 0 &&
                              memcmp(sc[0], sc[i], (size_t)(n * k) * 4) == 0,
                          "top-%lld of %s on %s differs from one device", (long long)k, b ? "A·Bᵀ" : "A·Aᵀ", specs[i]);
        }
        for (int i = 0; i < 3; ++i) free(idx[i]), free(sc[i]);
    }
    pairs_seen seen[3] = {{0}};
    for (int i = 0; i < 3; ++i) {
        oc_gram_options o = OC_GRAM_OPTIONS_INIT;
        o.backend = OC_BACKEND_CUDA, o.algorithm = OC_ALGORITHM_DENSE, o.tile = 256;
        o.metric = OC_METRIC_JACCARD, o.use_threshold = 1, o.threshold = threshold, o.devices = specs[i];
        oc_output out = OC_OUTPUT_INIT;
        out.kind = OC_OUTPUT_PAIRS, out.pairs = keep_pairs, out.pairs_user = &seen[i];
        CHECK_MSG(oc_gram(ctx, a, b, &o, &out, NULL) == OC_OK, "threshold on %s: %s",
                  specs[i] ? specs[i] : "one device", oc_context_last_error(ctx));
        if (i > 0)
            CHECK_MSG(seen[i].count == seen[0].count && seen[0].count > 0 &&
                          memcmp(seen[0].rows, seen[i].rows, (size_t)seen[0].count * 8) == 0 &&
                          memcmp(seen[0].cols, seen[i].cols, (size_t)seen[0].count * 8) == 0 &&
                          memcmp(seen[0].values, seen[i].values, (size_t)seen[0].count * 4) == 0,
                      "threshold pairs of %s on %s differ from one device (%lld against %lld)", b ? "A·Bᵀ" : "A·Aᵀ",
                      specs[i], (long long)seen[i].count, (long long)seen[0].count);
    }
    for (int i = 0; i < 3; ++i) free(seen[i].rows), free(seen[i].cols), free(seen[i].values);
}

/* A logical device failing at its k-th tile ends the job naming it; no output file. */
static void check_failing_device(oc_context *ctx, const oc_matrix *a)
{
    static const struct {
        const char *devices, *fault, *name;
    } cases[] = {
        {"0:2", "1:3", "cuda:0.1/2: "}, /* a device on its own thread */
        {"0:3", "0:2", "cuda:0.0/3: "}, /* the device on the caller's thread */
        {"0:2", "1:1", "cuda:0.1/2: "}, /* at its first tile */
    };
    const char *path = oc_test_tmp_path("failed.npy");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        setenv("OUTCORE_FAULT_DEVICE", cases[i].fault, 1);
        oc_gram_options o = OC_GRAM_OPTIONS_INIT;
        o.backend = OC_BACKEND_CUDA;
        o.algorithm = OC_ALGORITHM_DENSE;
        o.tile = 256;
        o.devices = cases[i].devices;
        oc_output out = OC_OUTPUT_INIT;
        out.kind = OC_OUTPUT_FILE;
        out.path = path;
        oc_status st = oc_gram(ctx, a, NULL, &o, &out, NULL);
        const char *msg = oc_context_last_error(ctx);
        CHECK_MSG(st == OC_ERR_DEVICE, "fault %s on %s: status %d (%s)", cases[i].fault, cases[i].devices, (int)st,
                  msg);
        CHECK_MSG(strncmp(msg, cases[i].name, strlen(cases[i].name)) == 0 && strstr(msg, "injected") &&
                      !strchr(msg, '\n'),
                  "fault %s on %s: message '%s'", cases[i].fault, cases[i].devices, msg);
        CHECK_MSG(access(path, F_OK) != 0, "fault %s: an output file was left", cases[i].fault);
        CHECK_EQ_I64(oc_test_dir_entries(oc_test_tmpdir), 0);
    }
    unsetenv("OUTCORE_FAULT_DEVICE");
}

/* Every device allocation of a top-k job on 0:2 and 0:3 fails once in turn (each part's pool
 * fails at the same point): those past the worker's own come after its panel uploads have
 * started (engine.h: oc_engine_worker_give_up), so the job must stop them, fail with one line
 * and leave no memory behind; the first point that is not reached gives one device's result. */
static void check_setup_failures(oc_context *ctx, const oc_matrix *a)
{
    const int64_t n = oc_matrix_rows(a), k = 10;
    static const char *const specs[] = {"0:2", "0:3"};
    int64_t *idx[2] = {malloc((size_t)(n * k) * 8), malloc((size_t)(n * k) * 8)};
    float *sc[2] = {malloc((size_t)(n * k) * 4), malloc((size_t)(n * k) * 4)};
    const int ok = idx[0] && idx[1] && sc[0] && sc[1];
    CHECK(ok);
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = OC_BACKEND_CUDA, o.algorithm = OC_ALGORITHM_DENSE, o.tile = 256;
    o.metric = OC_METRIC_JACCARD, o.topk = k;
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_TOPK, out.indices = idx[0], out.scores = sc[0];
    if (ok)
        CHECK_MSG(oc_gram(ctx, a, NULL, &o, &out, NULL) == OC_OK, "top-k on one device: %s",
                  oc_context_last_error(ctx));
    out.indices = idx[1], out.scores = sc[1];
    for (int i = 0; i < 2 && ok; ++i) {
        o.devices = specs[i];
        int points = 0;
        for (int nth = 1; nth < 100; ++nth) {
            char num[16];
            snprintf(num, sizeof num, "%d", nth);
            setenv("OUTCORE_FAULT_DEVICE_ALLOC", num, 1);
            oc_status st = oc_gram(ctx, a, NULL, &o, &out, NULL);
            unsetenv("OUTCORE_FAULT_DEVICE_ALLOC");
            const char *msg = oc_context_last_error(ctx);
            if (st == OC_OK) {
                CHECK_MSG(memcmp(idx[0], idx[1], (size_t)(n * k) * 8) == 0 &&
                              memcmp(sc[0], sc[1], (size_t)(n * k) * 4) == 0,
                          "%s: top-k after %d failing points differs from one device", specs[i], points);
                break;
            }
            points++;
            CHECK_MSG(st == OC_ERR_DEVICE_NO_MEMORY && strstr(msg, "injected") && !strchr(msg, '\n'),
                      "%s, allocation %d fails: %s: %s", specs[i], nth, oc_status_string(st), msg);
            oc_context_release_cached_memory(ctx);
            CHECK_MSG(oc_cuda_live_device_bytes() == 0 && oc_cuda_live_pinned_bytes() == 0,
                      "%s, allocation %d fails: %lld device and %lld pinned bytes left allocated", specs[i], nth,
                      (long long)oc_cuda_live_device_bytes(), (long long)oc_cuda_live_pinned_bytes());
        }
        printf("  %s: %d device allocation points failed cleanly\n", specs[i], points);
        CHECK_MSG(points >= 3, "%s: only %d allocation points (the selection's come after the uploads start)", specs[i],
                  points);
    }
    for (int i = 0; i < 2; ++i) free(idx[i]), free(sc[i]);
}

/* Tiles split on K run on Hopper's wgmma kernel only (gram_window.h). */
static int hopper(oc_context *ctx)
{
    oc_cuda_device dev;
    if (oc_cuda_device_open(ctx, 0, &dev) != OC_OK) return 0;
    int yes = dev.cc == 90;
    oc_cuda_device_close(&dev);
    if (!yes) printf("  tiles split on K: not Hopper, not run\n");
    return yes;
}

int main(void)
{
    if (oc_cuda_device_count() == 0) {
        oc_test_skip("no usable CUDA device");
        return oc_test_finish();
    }
    if (!oc_test_tmp_create("oc_devices")) return 1;
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    oc_matrix *a = random_matrix(ctx, N, M, 1), *b = random_matrix(ctx, 1700, M, 2);
    CHECK(a && b);
    if (a && b) {
        check_split_matches_one_device(ctx, a, NULL);
        check_split_matches_one_device(ctx, a, b);
        check_selection_matches_one_device(ctx, a, NULL, 0.12);
        check_selection_matches_one_device(ctx, a, b, 0.12);
        check_failing_device(ctx, a);
        check_setup_failures(ctx, a);
    }
    oc_matrix_free(a);
    oc_matrix_free(b);
    /* The same on rows of five 1024-bit K blocks with the tiles among the first six panels
     * split on K in three (gram_window.h, forced on two and three parts; one device keeps
     * whole tiles): the same bytes as one device, a device failing inside the window, and
     * every allocation failing in turn (the window's counts among them). */
    a = random_matrix(ctx, N, 5000, 3), b = random_matrix(ctx, 1700, 5000, 4);
    CHECK(a && b);
    if (a && b && hopper(ctx)) {
        setenv("OUTCORE_CUDA_SPLIT_K", "6:3", 1);
        check_split_matches_one_device(ctx, a, NULL);
        check_split_matches_one_device(ctx, a, b);
        check_selection_matches_one_device(ctx, a, NULL, 0.09); /* rows of 5000 bits: scores nearer their mean */
        check_selection_matches_one_device(ctx, a, b, 0.09);
        check_failing_device(ctx, a);
        check_setup_failures(ctx, a);
        unsetenv("OUTCORE_CUDA_SPLIT_K");
    }
    oc_matrix_free(a);
    oc_matrix_free(b);
    oc_context_release_cached_memory(ctx);
    CHECK_MSG(oc_cuda_live_device_bytes() == 0 && oc_cuda_live_pinned_bytes() == 0,
              "%lld device and %lld pinned bytes left allocated", (long long)oc_cuda_live_device_bytes(),
              (long long)oc_cuda_live_pinned_bytes());
    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
