// test_stream.cu - oc_stream_run on a real GPU: user kernels over arrays larger than the
// device budget (three times it), chunked along the first and along an inner axis, with side
// inputs, scratch, in-place and output-only arrays, in pageable memory (through the staging
// rings) and in pinned memory (copied straight); the results equal a CPU loop. Then the
// failures: a callback's nonzero return, cancellation, and (last, since it spoils the CUDA
// context) a kernel that faults. Exits 77 (skipped) without a usable GPU.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "../harness.h"
}

#define MIB (1LL << 20)

// t = 2 x (scratch), then y = t + b[col]
__global__ void twice(const double *x, double *t, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        t[i] = 2.0 * x[i];
}

__global__ void add_cols(const double *t, const double *b, double *y, long long n, int cols)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = t[i] + b[i % cols];
}

__global__ void scale3(float *x, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        x[i] *= 3.0f;
}

__global__ void iota(long long *y, long long start, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        y[i] = start + i;
}

// acc[0] += elements, acc[1] += their sum (integers: exact in any order)
__global__ void accumulate(const long long *y, unsigned long long *acc, long long n)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        atomicAdd(&acc[0], 1ULL);
        atomicAdd(&acc[1], (unsigned long long)y[i]);
    }
}

__global__ void fault(double *y) { y[(long long)1 << 40] = 1.0; }

static long long elems(const oc_stream_chunk *c, int k)
{
    long long n = 1;
    for (int d = 0; d < OC_STREAM_MAX_DIMS && c->shapes[k * OC_STREAM_MAX_DIMS + d] > 0; ++d)
        n *= c->shapes[k * OC_STREAM_MAX_DIMS + d];
    return n;
}

typedef struct first_case {
    int cols;
    long long chunks_seen;
} first_case;

// arrays: x (input), b (side), t (scratch), y (output)
static int launch_first(const oc_stream_chunk *c, void *user)
{
    first_case *fc = (first_case *)user;
    long long n = c->rows * fc->cols;
    if (elems(c, 0) != n || elems(c, 2) != n || elems(c, 1) != fc->cols) return 99;
    cudaStream_t s = (cudaStream_t)c->stream;
    twice<<<256, 256, 0, s>>>((const double *)c->data[0], (double *)c->data[2], n);
    add_cols<<<256, 256, 0, s>>>((const double *)c->data[2], (const double *)c->data[1], (double *)c->data[3], n,
                                 fc->cols);
    fc->chunks_seen++;
    return 0;
}

static void record_progress(void *user, double done, double total)
{
    double *last = (double *)user;
    CHECK(done >= last[0] && done <= total); // never backwards, never past the end
    last[0] = done, last[1] = total;
}

// Host memory for a test's arrays: pageable (malloc) or pinned (oc_pinned_alloc).
static void *host_alloc(oc_context *ctx, size_t bytes, int pinned)
{
    void *p = NULL;
    if (!pinned) p = malloc(bytes);
    else CHECK_MSG(oc_pinned_alloc(ctx, bytes, &p) == OC_OK, "pinned: %s", oc_context_last_error(ctx));
    if (!p) abort();
    return p;
}

static void host_free(void *p, int pinned)
{
    if (pinned) oc_pinned_free(p);
    else free(p);
}

static void test_rows(oc_context *ctx, int pinned)
{
    const int cols = 16;
    const long long rows = 300000, n = rows * cols; // 38.4 MB per array
    const long long budget = 24 * MIB;              // x and y are three times this
    double *x = (double *)host_alloc(ctx, n * 8, pinned), *y = (double *)host_alloc(ctx, n * 8, pinned), b[cols];
    for (long long i = 0; i < n; ++i) x[i] = (double)(i % 1000) * 0.25 - 7.0;
    for (int j = 0; j < cols; ++j) b[j] = j * 1.5;
    memset(y, 0, n * 8);
    oc_stream_array arrays[4] = {
        {"x", OC_STREAM_INPUT, 8, 2, {rows, cols}, 0, x},
        {"b", OC_STREAM_SIDE, 8, 1, {cols}, 0, b},
        {"t", OC_STREAM_SCRATCH, 8, 2, {rows, cols}, 0, NULL},
        {"y", OC_STREAM_OUTPUT, 8, 2, {rows, cols}, 0, y},
    };
    first_case fc = {cols, 0};
    oc_stream_spec spec = OC_STREAM_SPEC_INIT;
    spec.arrays = arrays, spec.narrays = 4, spec.launch = launch_first, spec.user = &fc;
    oc_stream_options opts = OC_STREAM_OPTIONS_INIT;
    opts.gpu_mem_bytes = budget;
    opts.host_mem_bytes = 64 * MIB; // small slots: chunks cross in many pieces
    double progress[2] = {0, 0};
    opts.progress = record_progress, opts.progress_user = progress;
    oc_stream_stats st;
    st.struct_size = sizeof st;
    oc_status s = oc_stream_run(ctx, &spec, &opts, &st);
    CHECK_MSG(s == OC_OK, "rows: %s", oc_context_last_error(ctx));
    long long bad = 0;
    for (long long i = 0; i < n; ++i) bad += y[i] != 2.0 * x[i] + b[i % cols];
    CHECK_EQ_I64(bad, 0);
    CHECK(st.chunks > 3 && st.chunks == fc.chunks_seen);
    CHECK(st.dev_peak_bytes <= budget);
    CHECK_EQ_I64(st.bytes_h2d, n * 8 + cols * 8);
    CHECK_EQ_I64(st.bytes_d2h, n * 8);
    CHECK_EQ_I64(st.bytes_direct, pinned ? 2 * n * 8 : 0);             // b, on the stack, is staged
    CHECK(st.pinned_bytes > 0);                                        // b's upload ring, and y's when pageable
    CHECK(progress[0] == (double)rows && progress[1] == (double)rows); // the last call: all done
    printf("rows (%s): %lld chunks of %lld rows, %d in flight, %.3f s\n", pinned ? "pinned" : "pageable",
           (long long)st.chunks, (long long)st.chunk_rows, st.in_flight, st.seconds);
    host_free(x, pinned);
    host_free(y, pinned);
}

static int launch_scale(const oc_stream_chunk *c, void *user)
{
    (void)user;
    scale3<<<128, 256, 0, (cudaStream_t)c->stream>>>((float *)c->data[0], elems(c, 0));
    return 0;
}

// Chunks along axis 1 of a (5, N, 3) array, changed in place: strided on the host; with
// in_flight chunks at once (0: the planner's) and the budget reserved or grown; pinned, each
// chunk crosses as one strided (2D) copy each way.
static void test_inner_axis(oc_context *ctx, int in_flight, oc_gpu_mem_mode mode, int pinned)
{
    const long long d0 = 5, d1 = 400000, d2 = 3, n = d0 * d1 * d2; // 24 MB
    float *x = (float *)host_alloc(ctx, n * 4, pinned), *want = (float *)malloc(n * 4);
    for (long long i = 0; i < n; ++i) x[i] = (float)(i % 977), want[i] = x[i] * 3.0f;
    oc_stream_array a = {"x", OC_STREAM_INOUT, 4, 3, {d0, d1, d2}, 1, x};
    oc_stream_spec spec = OC_STREAM_SPEC_INIT;
    spec.arrays = &a, spec.narrays = 1, spec.launch = launch_scale;
    oc_stream_options opts = OC_STREAM_OPTIONS_INIT;
    opts.gpu_mem_bytes = 8 * MIB;
    opts.in_flight = in_flight;
    opts.gpu_mem_mode = mode;
    oc_stream_stats st;
    st.struct_size = sizeof st;
    oc_status s = oc_stream_run(ctx, &spec, &opts, &st);
    CHECK_MSG(s == OC_OK, "inner axis, %d in flight: %s", in_flight, oc_context_last_error(ctx));
    CHECK(in_flight == 0 || st.in_flight == in_flight);
    CHECK(st.chunks > 1);
    CHECK(memcmp(x, want, n * 4) == 0);
    CHECK_EQ_I64(st.bytes_direct, pinned ? 2 * n * 4 : 0);
    CHECK(pinned ? st.pinned_bytes == 0 : st.pinned_bytes > 0); // no ring where every array crosses straight
    host_free(x, pinned);
    free(want);
}

typedef struct iota_case {
    int cancel_at, fail_at; // chunk indices, -1: never
    oc_context *ctx;
} iota_case;

static int launch_iota(const oc_stream_chunk *c, void *user)
{
    iota_case *u = (iota_case *)user;
    if (c->index == u->cancel_at) oc_context_cancel(u->ctx); // the job stops before the next chunk
    if (c->index == u->fail_at) return 5;
    iota<<<128, 256, 0, (cudaStream_t)c->stream>>>((long long *)c->data[0], c->start, c->rows);
    if (c->narrays > 1) // the result: kept on the device through every chunk
        accumulate<<<128, 256, 0, (cudaStream_t)c->stream>>>((const long long *)c->data[0],
                                                             (unsigned long long *)c->data[1], c->rows);
    return 0;
}

// Output only, nothing uploaded; then a callback's failure and a cancel, by chunk.
static void test_output_only(oc_context *ctx)
{
    const long long n = 3000000; // 24 MB
    long long *y = (long long *)calloc(n, 8);
    oc_stream_array a = {"y", OC_STREAM_OUTPUT, 8, 1, {n}, 0, y};
    iota_case u = {-1, -1, ctx};
    oc_stream_spec spec = OC_STREAM_SPEC_INIT;
    spec.arrays = &a, spec.narrays = 1, spec.launch = launch_iota, spec.user = &u;
    oc_stream_options opts = OC_STREAM_OPTIONS_INIT;
    opts.gpu_mem_bytes = 8 * MIB;
    oc_stream_stats st;
    st.struct_size = sizeof st;
    CHECK_MSG(oc_stream_run(ctx, &spec, &opts, &st) == OC_OK, "output only: %s", oc_context_last_error(ctx));
    long long bad = 0;
    for (long long i = 0; i < n; ++i) bad += y[i] != i;
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(st.bytes_h2d, 0);

    u.fail_at = 2;
    CHECK(oc_stream_run(ctx, &spec, &opts, NULL) == OC_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "returned 5 for chunk 2") != NULL, "%s", oc_context_last_error(ctx));
    u.fail_at = -1, u.cancel_at = 1;
    CHECK(oc_stream_run(ctx, &spec, &opts, NULL) == OC_ERR_CANCELLED);
    u.cancel_at = -1;
    CHECK(oc_stream_run(ctx, &spec, &opts, NULL) == OC_OK); // the context runs jobs again

    // With a result: uploaded once with its initial value, updated by every chunk, back once.
    unsigned long long acc[2] = {5, 7};
    oc_stream_array two[2] = {a, {"acc", OC_STREAM_RESULT, 8, 1, {2}, 0, acc}};
    spec.arrays = two, spec.narrays = 2;
    CHECK_MSG(oc_stream_run(ctx, &spec, &opts, &st) == OC_OK, "result: %s", oc_context_last_error(ctx));
    CHECK(acc[0] == 5 + (unsigned long long)n && acc[1] == 7 + (unsigned long long)n * (n - 1) / 2);
    CHECK(st.chunks > 1 && st.bytes_d2h == n * 8 + 16 && st.bytes_h2d == 16);
    free(y);
}

static int launch_fault(const oc_stream_chunk *c, void *user)
{
    (void)user;
    if (c->index == 1) fault<<<1, 1, 0, (cudaStream_t)c->stream>>>((double *)c->data[0]);
    return 0;
}

static void test_fault(oc_context *ctx)
{
    const long long n = 1000000;
    double *y = (double *)calloc(n, 8);
    oc_stream_array a = {"y", OC_STREAM_OUTPUT, 8, 1, {n}, 0, y};
    oc_stream_spec spec = OC_STREAM_SPEC_INIT;
    spec.arrays = &a, spec.narrays = 1, spec.launch = launch_fault;
    oc_stream_options opts = OC_STREAM_OPTIONS_INIT;
    opts.chunk_rows = 100000;
    oc_status s = oc_stream_run(ctx, &spec, &opts, NULL);
    CHECK(s == OC_ERR_DEVICE);
    const char *msg = oc_context_last_error(ctx);
    CHECK_MSG(strstr(msg, "illegal") != NULL && !strchr(msg, '\n'), "fault: %s", msg);
    printf("fault: %s\n", msg);
    free(y);
}

int main(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        oc_test_skip("no usable CUDA device");
        return oc_test_finish();
    }
    oc_context *ctx = NULL;
    CHECK(oc_context_create(&ctx) == OC_OK);
    test_rows(ctx, 0);
    test_rows(ctx, 1);
    test_inner_axis(ctx, 0, OC_GPU_MEM_GROW, 0);
    test_inner_axis(ctx, 2, OC_GPU_MEM_GROW, 0);
    test_inner_axis(ctx, 8, OC_GPU_MEM_RESERVE, 0);
    test_inner_axis(ctx, 0, OC_GPU_MEM_GROW, 1);
    test_inner_axis(ctx, 3, OC_GPU_MEM_RESERVE, 1);
    test_output_only(ctx);
    /* Under compute-sanitizer the deliberate fault would be reported as the error it is:
     * OUTCORE_TEST_SKIP_FAULT (gpu_check.sh's sanitize step) leaves it out there. */
    const char *skip_fault = getenv("OUTCORE_TEST_SKIP_FAULT");
    if (!skip_fault || !*skip_fault) test_fault(ctx);
    oc_context_free(ctx);
    return oc_test_finish();
}
