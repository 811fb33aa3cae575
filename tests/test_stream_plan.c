/*
 * test_stream_plan.c - the plan of oc_stream_run jobs (stream/stream_plan.h) and the checks
 * and chunk layout of stream/stream_job.h, without a GPU: chunks fit the budget with every
 * slot in flight, respect forced sizes, and fail with a message naming the need; gathering
 * and scattering any byte range of a chunk along any axis matches an element-wise
 * reference; a bad spec is refused before any device work (also in CPU-only builds).
 */
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "harness.h"
#include "stream/stream_job.h"
#include "stream/stream_plan.h"

#define GIB (1LL << 30)
#define MIB (1LL << 20)

static oc_stream_plan_input big_multiply(int64_t gpu_mem)
{
    /* a * b -> c, 1,000,000 x 500 float64 each, chunked along rows */
    oc_stream_plan_input in = {.extent = 1000000,
                               .up_row_bytes = 2 * 4000,
                               .down_row_bytes = 4000,
                               .dev_row_bytes = 3 * 4000,
                               .chunked_buffers = 3,
                               .device_total = 80 * GIB,
                               .device_free = 79 * GIB,
                               .gpu_mem_bytes = gpu_mem,
                               .gpu_mem_fraction = 0.9,
                               .cores = 16,
                               .device_name = "cuda:0 (test)"};
    return in;
}

static void test_plans(oc_context *ctx)
{
    oc_stream_plan p;
    oc_stream_plan_input in = big_multiply(1 * GIB);
    CHECK(oc_stream_plan_make(ctx, &in, &p) == OC_OK);
    CHECK_EQ_I64(p.in_flight, OC_STREAM_IN_FLIGHT);
    CHECK(p.device_bytes <= p.device_budget);
    CHECK(p.chunk_rows * (in.up_row_bytes + in.down_row_bytes) <= OC_STREAM_CHUNK_TRANSFER);
    CHECK(p.chunk_rows % 256 == 0);
    CHECK_EQ_I64(p.chunks, (in.extent + p.chunk_rows - 1) / p.chunk_rows);
    CHECK(p.h2d_slots > 0 && p.d2h_slots > 0 && p.pinned_bytes <= p.host_budget / 4);
    CHECK(p.h2d_slot_bytes % 4096 == 0 && p.d2h_slot_bytes % 4096 == 0);

    /* A small budget: chunks shrink so that three slots still fit. */
    in = big_multiply(16 * MIB);
    CHECK(oc_stream_plan_make(ctx, &in, &p) == OC_OK);
    CHECK(p.device_bytes <= 16 * MIB && p.chunk_rows > 0);
    CHECK(3 * (p.chunk_rows + 256) * in.dev_row_bytes >
          16 * MIB - 3 * 3 * 256); /* the largest that fits, to 256 rows */

    /* Too small for one row per slot: the message names the need and the budget. */
    in = big_multiply(20000);
    CHECK(oc_stream_plan_make(ctx, &in, &p) == OC_ERR_DEVICE_NO_MEMORY);
    CHECK(strstr(oc_context_last_error(ctx), "raise --gpu-mem") != NULL);

    /* Forced chunk rows: kept when they fit, refused when they do not. */
    in = big_multiply(1 * GIB);
    in.chunk_rows = 1000;
    CHECK(oc_stream_plan_make(ctx, &in, &p) == OC_OK);
    CHECK_EQ_I64(p.chunk_rows, 1000);
    CHECK_EQ_I64(p.chunks, 1000);
    in.chunk_rows = 100000;
    CHECK(oc_stream_plan_make(ctx, &in, &p) == OC_ERR_DEVICE_NO_MEMORY);

    /* Side inputs come off the budget first. */
    in = big_multiply(64 * MIB);
    oc_stream_plan q;
    CHECK(oc_stream_plan_make(ctx, &in, &q) == OC_OK);
    in.side_bytes = 32 * MIB, in.side_buffers = 1;
    CHECK(oc_stream_plan_make(ctx, &in, &p) == OC_OK);
    CHECK(p.chunk_rows < q.chunk_rows && p.device_bytes <= 64 * MIB);
    in.side_bytes = 64 * MIB;
    CHECK(oc_stream_plan_make(ctx, &in, &p) == OC_ERR_DEVICE_NO_MEMORY);

    /* Device-only work (the pricer's paths): only the budget bounds the chunk; nothing is pinned. */
    oc_stream_plan_input dev = {.extent = 100000000,
                                .dev_row_bytes = 201 * 8,
                                .chunked_buffers = 1,
                                .device_total = 80 * GIB,
                                .device_free = 79 * GIB,
                                .gpu_mem_bytes = 2 * GIB,
                                .gpu_mem_fraction = 0.9,
                                .cores = 16};
    CHECK(oc_stream_plan_make(ctx, &dev, &p) == OC_OK);
    CHECK(p.h2d_slots == 0 && p.d2h_slots == 0 && p.pinned_bytes == 0);
    dev.side_bytes = 4096, dev.side_buffers = 1; /* a side input still goes up through the ring */
    CHECK(oc_stream_plan_make(ctx, &dev, &p) == OC_OK);
    CHECK(p.h2d_slots > 0 && p.d2h_slots == 0);
    dev.side_bytes = 16, dev.side_buffers = 1, dev.result_bytes = 16; /* a result comes back once */
    CHECK(oc_stream_plan_make(ctx, &dev, &p) == OC_OK);
    CHECK(p.h2d_slots > 0 && p.d2h_slots > 0 && p.sinks >= 1);
    dev.side_bytes = 0, dev.side_buffers = 0, dev.result_bytes = 0;
    CHECK(oc_stream_plan_make(ctx, &dev, &p) == OC_OK);
    CHECK(p.device_bytes <= 2 * GIB && p.device_bytes > 2 * GIB - 3 * 256 * dev.dev_row_bytes - 3 * 256 - 4096);

    /* Nothing chunked at all (an extent and results): chunks of at most OC_STREAM_MAX_ROWS. */
    oc_stream_plan_input bare = {.extent = 100000000,
                                 .side_bytes = 16,
                                 .side_buffers = 1,
                                 .result_bytes = 16,
                                 .device_total = 80 * GIB,
                                 .device_free = 79 * GIB,
                                 .gpu_mem_bytes = 2 * GIB,
                                 .gpu_mem_fraction = 0.9,
                                 .cores = 16};
    CHECK(oc_stream_plan_make(ctx, &bare, &p) == OC_OK);
    CHECK_EQ_I64(p.chunk_rows, OC_STREAM_MAX_ROWS);
    CHECK_EQ_I64(p.chunks, (bare.extent + OC_STREAM_MAX_ROWS - 1) / OC_STREAM_MAX_ROWS);
    CHECK(p.device_bytes < 4096);

    /* A small extent is still cut into the slots in flight, so copies overlap. */
    in = big_multiply(1 * GIB);
    in.extent = 30;
    CHECK(oc_stream_plan_make(ctx, &in, &p) == OC_OK);
    CHECK_EQ_I64(p.chunk_rows, 10);
    CHECK_EQ_I64(p.chunks, 3);
    in.extent = 1;
    CHECK(oc_stream_plan_make(ctx, &in, &p) == OC_OK);
    CHECK(p.chunks == 1 && p.in_flight == 1);

    /* A host budget smaller than the smallest staging. */
    in = big_multiply(1 * GIB);
    in.host_budget = 8192;
    CHECK(oc_stream_plan_make(ctx, &in, &p) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "--host-mem") != NULL);
}

static int launch_nothing(const oc_stream_chunk *c, void *user)
{
    (void)c, (void)user;
    return 0;
}

/* Element (i0, i1, i2) of a 3-d array of int32 with shape s. */
static int32_t value(int64_t i0, int64_t i1, int64_t i2) { return (int32_t)(i0 * 1000003 + i1 * 1009 + i2); }

static void test_layout(oc_context *ctx)
{
    const int64_t s[3] = {3, 7, 5};
    int32_t *host = malloc(sizeof(int32_t) * 3 * 7 * 5), *back = calloc(3 * 7 * 5, sizeof(int32_t));
    for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 7; ++j)
            for (int64_t k = 0; k < 5; ++k) host[(i * 7 + j) * 5 + k] = value(i, j, k);
    for (int axis = 0; axis < 3; ++axis) {
        oc_stream_array arr = {"x", OC_STREAM_INOUT, 4, 3, {3, 7, 5}, axis, host};
        oc_stream_spec spec = OC_STREAM_SPEC_INIT;
        spec.arrays = &arr, spec.narrays = 1, spec.launch = launch_nothing;
        oc_stream_job job;
        CHECK(oc_stream_job_make(ctx, &spec, NULL, &job) == OC_OK);
        const oc_stream_job_array *a = &job.arrays[0];
        CHECK_EQ_I64(a->extent, s[axis]);
        CHECK_EQ_I64(a->row_bytes * a->extent, 3 * 7 * 5 * 4);
        memset(back, 0, sizeof(int32_t) * 105);
        arr.host = back; /* scatter goes to back */
        oc_stream_job_array b = *a;
        b.a.host = back;
        for (int64_t start = 0; start < s[axis]; start += 2) {
            int64_t rows = start + 2 <= s[axis] ? 2 : s[axis] - start, bytes = rows * a->row_bytes;
            int32_t *dev = malloc((size_t)bytes);
            /* gather in uneven pieces, as slots would cut it */
            for (int64_t off = 0; off < bytes; off += 12) {
                int64_t len = off + 12 <= bytes ? 12 : bytes - off;
                oc_stream_gather(a, start, rows, off, len, (unsigned char *)dev + off);
            }
            /* the device layout is C order with the chunked axis cut to the chunk */
            int64_t d[3] = {3, 7, 5};
            d[axis] = rows;
            int ok = 1;
            for (int64_t i = 0; i < d[0]; ++i)
                for (int64_t j = 0; j < d[1]; ++j)
                    for (int64_t k = 0; k < d[2]; ++k) {
                        int64_t g[3] = {i, j, k};
                        g[axis] += start;
                        ok &= dev[(i * d[1] + j) * d[2] + k] == value(g[0], g[1], g[2]);
                    }
            CHECK_MSG(ok, "gather along axis %d, rows %lld+%lld", axis, (long long)start, (long long)rows);
            for (int64_t off = 0; off < bytes; off += 20) {
                int64_t len = off + 20 <= bytes ? 20 : bytes - off;
                oc_stream_scatter(&b, start, rows, off, len, (unsigned char *)dev + off);
            }
            free(dev);
        }
        CHECK_MSG(memcmp(back, host, sizeof(int32_t) * 105) == 0, "scatter along axis %d", axis);
        oc_stream_job_release(&job);
    }
    free(host);
    free(back);
}

static void test_bad_specs(oc_context *ctx)
{
    double x[10], y[12];
    oc_stream_array arrays[3] = {
        {"x", OC_STREAM_INPUT, 8, 1, {10}, 0, x},
        {"y", OC_STREAM_OUTPUT, 8, 2, {6, 2}, 0, y},
        {"t", OC_STREAM_SCRATCH, 8, 1, {10}, 0, NULL},
    };
    oc_stream_spec spec = OC_STREAM_SPEC_INIT;
    spec.arrays = arrays, spec.narrays = 3, spec.launch = launch_nothing;
    /* y has 6 rows, x 10 */
    CHECK(oc_stream_run(ctx, &spec, NULL, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "'y' has 6 rows") != NULL);
    arrays[1].shape[0] = 10, arrays[1].shape[1] = 1;
    arrays[2].host = x;
    CHECK(oc_stream_run(ctx, &spec, NULL, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "device only") != NULL);
    arrays[2].host = NULL;
    arrays[0].axis = 1;
    CHECK(oc_stream_run(ctx, &spec, NULL, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "chunk axis 1") != NULL);
    arrays[0].axis = 0;
    arrays[0].shape[0] = 0;
    CHECK(oc_stream_run(ctx, &spec, NULL, NULL) == OC_ERR_INVALID_ARGUMENT);
    arrays[0].shape[0] = 10;
    spec.launch = NULL;
    CHECK(oc_stream_run(ctx, &spec, NULL, NULL) == OC_ERR_INVALID_ARGUMENT);
    spec.launch = launch_nothing;
    oc_stream_options opts = OC_STREAM_OPTIONS_INIT;
    opts.in_flight = 1;
    CHECK(oc_stream_run(ctx, &spec, &opts, NULL) == OC_ERR_INVALID_ARGUMENT);
    /* Struct sizes of no version are refused (docs/abi.md). */
    spec.array_struct_size = sizeof(oc_stream_array) + 8;
    CHECK(oc_stream_run(ctx, &spec, NULL, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "OC_STREAM_SPEC_INIT") != NULL);
    spec.array_struct_size = sizeof(oc_stream_array);
    opts = (oc_stream_options)OC_STREAM_OPTIONS_INIT;
    opts.struct_size -= 8;
    CHECK(oc_stream_run(ctx, &spec, &opts, NULL) == OC_ERR_INVALID_ARGUMENT);
    oc_stream_stats stats = {.struct_size = sizeof stats - 4};
    CHECK(oc_stream_run(ctx, &spec, NULL, &stats) == OC_ERR_INVALID_ARGUMENT);
    /* Version 1 of the stats (before bytes_direct) is still taken; where no GPU runs the
     * job, the call fails and leaves them as they were (outcore.h: out-parameters). */
    if (oc_cuda_device_count() == 0) {
        stats.struct_size = offsetof(oc_stream_stats, bytes_direct);
        stats.chunks = 9, stats.bytes_direct = 77;
        CHECK(oc_stream_run(ctx, &spec, NULL, &stats) == OC_ERR_UNSUPPORTED);
        CHECK(stats.chunks == 9 && stats.bytes_direct == 77);
    }
    /* A side input alone does not say how to cut the job. */
    oc_stream_array side = {"k", OC_STREAM_SIDE, 8, 1, {10}, 0, x};
    spec.arrays = &side, spec.narrays = 1;
    CHECK(oc_stream_run(ctx, &spec, NULL, NULL) == OC_ERR_INVALID_ARGUMENT);
    /* A result is not chunked: one alone cannot cut the job either; beside a chunked array it
     * is counted with the whole arrays. */
    double acc[2] = {0, 0};
    oc_stream_array with_result[2] = {{"x", OC_STREAM_INPUT, 8, 1, {10}, 0, x},
                                      {"sums", OC_STREAM_RESULT, 8, 1, {2}, 5, acc}};
    spec.arrays = with_result + 1, spec.narrays = 1;
    CHECK(oc_stream_run(ctx, &spec, NULL, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "no extent") != NULL);
    spec.extent = 1000; /* device-only work: the extent alone says how to cut it */
    {
        oc_stream_job bare;
        CHECK(oc_stream_job_make(ctx, &spec, NULL, &bare) == OC_OK && bare.extent == 1000 && bare.dev_row_bytes == 0);
        oc_stream_job_release(&bare);
    }
    spec.arrays = with_result, spec.narrays = 2; /* x has 10 rows */
    CHECK(oc_stream_run(ctx, &spec, NULL, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK(strstr(oc_context_last_error(ctx), "extent 1000 differs from the 10 rows of 'x'") != NULL);
    spec.extent = 0;
    spec.arrays = with_result, spec.narrays = 2;
    oc_stream_job job;
    CHECK(oc_stream_job_make(ctx, &spec, NULL, &job) == OC_OK); /* its axis is not read */
    CHECK(job.side_bytes == 16 && job.result_bytes == 16 && job.side_buffers == 1 && job.dev_row_bytes == 8);
    CHECK(!job.arrays[1].chunked && job.arrays[1].upload && job.arrays[1].download);
    oc_stream_job_release(&job);
    /* A valid spec without a usable GPU (or CUDA): unsupported, saying why. Where a GPU is
     * usable the spec runs: the GPU tests check what it computes. */
    if (oc_cuda_device_count() == 0) {
        spec.arrays = arrays, spec.narrays = 3;
        CHECK(oc_stream_run(ctx, &spec, NULL, NULL) == OC_ERR_UNSUPPORTED);
    }
}

/* oc_pinned_alloc: refused with one line where there is no GPU; page-locked memory that
 * holds what is written to it where there is one. */
static void test_pinned_alloc(oc_context *ctx)
{
    void *p = (void *)1; /* left as it is by a failed call */
    CHECK(oc_pinned_alloc(ctx, 0, &p) == OC_ERR_INVALID_ARGUMENT && p == (void *)1);
    oc_status st = oc_pinned_alloc(ctx, 1 << 20, &p);
    if (oc_cuda_device_count() == 0) {
        CHECK(st == OC_ERR_UNSUPPORTED && p == (void *)1);
        const char *msg = oc_context_last_error(ctx);
        CHECK_MSG(strncmp(msg, "pinned memory: ", 15) == 0 && !strchr(msg, '\n'), "%s", msg);
    } else {
        CHECK_MSG(st == OC_OK && p != NULL, "%s", oc_context_last_error(ctx));
        if (p) {
            memset(p, 0x5a, 1 << 20);
            CHECK(((unsigned char *)p)[(1 << 20) - 1] == 0x5a);
        }
        oc_pinned_free(p);
    }
    oc_pinned_free(NULL);
}

int main(void)
{
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    test_plans(ctx);
    test_layout(ctx);
    test_bad_specs(ctx);
    test_pinned_alloc(ctx);
    oc_context_free(ctx);
    return oc_test_finish();
}
