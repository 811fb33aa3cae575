/*
 * test_matmul_cuda.c - the CUDA backend of the dense product (oc_mm_backend_cuda) against a
 * reference computed here, through a small job layer of its own: operands in memory,
 * read_panel copying blocks out of them, write_tile storing tiles and counting each element's
 * writes.
 *
 * Every operand type (float64, float32 with and without TF32, float16 and bfloat16 into
 * float32 and into their own type, int8 into int32) on shapes whose edges are not multiples
 * of the tile or of cuBLASLt's int8 alignment; a tiny device and host budget that forces many
 * tiles and K panels gives what a large one gives (within the type's tolerance, int8
 * exactly); the same plan twice gives the same bytes; a symmetric job writes the upper tiles
 * alone; two devices (where there are two) give the bytes of one; a read_panel or write_tile
 * that fails, or a cancel, ends the job with its status and leaves no device or pinned memory
 * behind; and a product cuBLASLt does not compute is refused. Exits 77 when no GPU or no
 * cuBLASLt is usable.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "../harness.h"
#include "outcore.h"
#include "core/context.h"
#include "core/error.h"
#include "engine/cuda/device.h"
/* The GPU tests are built only with CUDA, but their targets do not carry the library's
 * OC_HAVE_CUDA, which declares the CUDA backend's table. */
#ifndef OC_HAVE_CUDA
#define OC_HAVE_CUDA 1
#endif
#include "matmul/matmul_job.h"
#include "matmul/matmul_choice.h"
#include "matmul/matmul_dtype.h"
#include "cost/cost.h"

static oc_context *ctx;

/* ---------------------------------------------------------------- element conversions */
static uint16_t to_half(float f)
{
    /* Exact for the values used here: normal halves whose mantissa fits 10 bits, and 0. */
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    if ((x & 0x7fffffffu) == 0) return (uint16_t)sign;
    const int exp = (int)((x >> 23) & 0xff) - 127 + 15;
    return (uint16_t)(sign | (uint32_t)exp << 10 | (x & 0x7fffffu) >> 13);
}

static float from_half(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    uint32_t x;
    if (exp == 0 && man == 0) x = sign;
    else if (exp == 0) { /* subnormal */ float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    } else if (exp == 31) x = sign | 0x7f800000u | man << 13;
    else x = sign | (exp - 15 + 127) << 23 | man << 13;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return (uint16_t)(x >> 16); /* exact for the values used here */
}

static float from_bf16(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static void store(oc_mm_type t, void *base, int64_t i, double v)
{
    switch (t) {
    case OC_MM_FLOAT64:
        ((double *)base)[i] = v;
        break;
    case OC_MM_FLOAT32:
        ((float *)base)[i] = (float)v;
        break;
    case OC_MM_FLOAT16:
        ((uint16_t *)base)[i] = to_half((float)v);
        break;
    case OC_MM_BFLOAT16:
        ((uint16_t *)base)[i] = to_bf16((float)v);
        break;
    case OC_MM_INT8:
        ((int8_t *)base)[i] = (int8_t)v;
        break;
    default:
        ((int32_t *)base)[i] = (int32_t)v;
        break;
    }
}

static double load(oc_mm_type t, const void *base, int64_t i)
{
    switch (t) {
    case OC_MM_FLOAT64:
        return ((const double *)base)[i];
    case OC_MM_FLOAT32:
        return ((const float *)base)[i];
    case OC_MM_FLOAT16:
        return from_half(((const uint16_t *)base)[i]);
    case OC_MM_BFLOAT16:
        return from_bf16(((const uint16_t *)base)[i]);
    case OC_MM_INT8:
        return ((const int8_t *)base)[i];
    default:
        return ((const int32_t *)base)[i];
    }
}

/* ---------------------------------------------------------------- the job layer of the test */
typedef struct fake_io {
    const void *a, *b;     /* op(A) m x k, op(B) k x n, row-major; b NULL: B is Aᵀ (symmetric) */
    void *c;               /* m x n in out_type */
    unsigned char *writes; /* writes per element of C */
    pthread_mutex_t mu;
    long reads;
    long fail_read_at, fail_write_at; /* > 0: that read_panel / write_tile call fails */
    long cancel_at;                   /* > 0: that read_panel call cancels the job */
    long tiles_written;
    int bad_tile; /* a tile outside C, or below the diagonal of a symmetric job */
    /* panel_memory and tile_memory's memory (NULL: none): A, B and C as above. */
    const void *mem_a, *mem_b;
    void *mem_c;
} fake_io;

static const void *panel_memory(const oc_matmul_job *job, oc_mm_operand which, int64_t row0, int64_t col0, int64_t *ld)
{
    const fake_io *io = job->io;
    const void *base = which == OC_MM_A ? io->mem_a : io->mem_b;
    if (!base) return NULL;
    *ld = which == OC_MM_A ? job->k : job->n;
    return (const char *)base + (row0 * *ld + col0) * (int64_t)oc_mm_type_size(job->in_type);
}

static void *tile_memory(const oc_matmul_job *job, int64_t row0, int64_t col0, int64_t *ld)
{
    const fake_io *io = job->io;
    if (!io->mem_c) return NULL;
    *ld = job->n;
    return (char *)io->mem_c + (row0 * job->n + col0) * (int64_t)oc_mm_type_size(job->out_type);
}

static oc_status read_panel(const oc_matmul_job *job, oc_mm_operand which, int64_t row0, int64_t rows, int64_t col0,
                            int64_t cols, void *dst)
{
    fake_io *io = job->io;
    pthread_mutex_lock(&io->mu);
    const long call = ++io->reads;
    pthread_mutex_unlock(&io->mu);
    if (io->fail_read_at > 0 && call == io->fail_read_at)
        return oc_fail(job->ctx, OC_ERR_IO, "a.npy: injected read failure at panel %ld", call);
    if (io->cancel_at > 0 && call == io->cancel_at) oc_context_cancel(job->ctx);
    const size_t es = oc_mm_type_size(job->in_type);
    const int64_t ld = which == OC_MM_A ? job->k : job->n;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            const char *src;
            if (which == OC_MM_B && !io->b) src = (const char *)io->a + ((col0 + c) * job->k + row0 + r) * es;
            else src = (const char *)(which == OC_MM_A ? io->a : io->b) + ((row0 + r) * ld + col0 + c) * es;
            memcpy((char *)dst + (r * cols + c) * es, src, es);
        }
    return OC_OK;
}

static oc_status write_tile(const oc_matmul_job *job, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                            const void *tile, int64_t ld)
{
    fake_io *io = job->io;
    pthread_mutex_lock(&io->mu);
    const long call = ++io->tiles_written;
    if (row0 < 0 || col0 < 0 || rows <= 0 || cols <= 0 || row0 + rows > job->m || col0 + cols > job->n || ld < cols ||
        (job->symmetric && col0 < row0))
        io->bad_tile = 1;
    pthread_mutex_unlock(&io->mu);
    if (io->bad_tile)
        return oc_fail(job->ctx, OC_ERR_INTERNAL, "bad tile at %lld, %lld", (long long)row0, (long long)col0);
    if (io->fail_write_at > 0 && call == io->fail_write_at)
        return oc_fail(job->ctx, OC_ERR_IO, "c.npy: injected write failure at tile %ld", call);
    const size_t es = oc_mm_type_size(job->out_type);
    for (int64_t r = 0; r < rows; ++r) {
        memcpy((char *)io->c + ((row0 + r) * job->n + col0) * es, (const char *)tile + r * ld * es, (size_t)cols * es);
        for (int64_t c = 0; c < cols; ++c) io->writes[(row0 + r) * job->n + col0 + c]++; /* tiles are disjoint */
    }
    return OC_OK;
}

typedef struct operands {
    int64_t m, n, k;
    oc_mm_type in, out;
    int symmetric;
    void *a, *b;
    double *ref, *mag; /* the exact product and sum |a||b| per element */
} operands;

/* Small values every type holds exactly: integers for int8, multiples of 1/8 in [-2, 2] else. */
static operands make_operands(int64_t m, int64_t n, int64_t k, oc_mm_type in, oc_mm_type out, int symmetric,
                              uint64_t seed)
{
    operands o = {m, n, k, in, out, symmetric, NULL, NULL, NULL, NULL};
    const size_t es = oc_mm_type_size(in);
    o.a = malloc((size_t)(m * k) * es);
    o.b = symmetric ? NULL : malloc((size_t)(k * n) * es);
    o.ref = calloc((size_t)(m * n), sizeof(double));
    o.mag = calloc((size_t)(m * n), sizeof(double));
    double *da = malloc((size_t)(m * k) * sizeof(double)), *db = malloc((size_t)(k * n) * sizeof(double));
    if (!o.a || (!symmetric && !o.b) || !o.ref || !o.mag || !da || !db) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < m * k; ++i) {
        const int64_t r = (int64_t)(oc_test_rand(&seed) % 33) - 16;
        da[i] = in == OC_MM_INT8 ? (double)(r * 8 % 128) : (double)r / 8.0;
        store(in, o.a, i, da[i]);
    }
    for (int64_t i = 0; i < k * n; ++i) {
        if (symmetric) {
            const int64_t kk = i / n, j = i % n;
            db[i] = da[j * k + kk];
            continue;
        }
        const int64_t r = (int64_t)(oc_test_rand(&seed) % 33) - 16;
        db[i] = in == OC_MM_INT8 ? (double)(r * 7 % 128) : (double)r / 8.0;
        store(in, o.b, i, db[i]);
    }
    for (int64_t i = 0; i < m; ++i)
        for (int64_t kk = 0; kk < k; ++kk) {
            const double x = da[i * k + kk];
            if (x == 0) continue;
            for (int64_t j = 0; j < n; ++j) {
                o.ref[i * n + j] += x * db[kk * n + j];
                o.mag[i * n + j] += fabs(x * db[kk * n + j]);
            }
        }
    free(da);
    free(db);
    return o;
}

static void free_operands(operands *o)
{
    free(o->a);
    free(o->b);
    free(o->ref);
    free(o->mag);
}

typedef struct run_opts {
    int64_t gpu_mem, host_mem, tile;
    int tf32;
    const int *devices;
    int ndevices;
    long fail_read_at, fail_write_at, cancel_at;
    const void *mem_a, *mem_b; /* offered through panel_memory (NULL: not offered) */
    void *mem_c;               /* offered through tile_memory */
} run_opts;

/* The job the backend sees for operands o under run options r, its panels and tiles
 * through the fake job layer io. */
static oc_matmul_job make_job(const operands *o, const run_opts *r, fake_io *io)
{
    return (oc_matmul_job){.ctx = ctx,
                           .m = o->m,
                           .n = o->n,
                           .k = o->k,
                           .in_type = o->in,
                           .out_type = o->out,
                           .tf32 = r->tf32,
                           .symmetric = o->symmetric,
                           .read_panel = read_panel,
                           .write_tile = write_tile,
                           .io = io,
                           .host_mem_bytes = r->host_mem,
                           .gpu_mem_bytes = r->gpu_mem,
                           .devices = r->devices,
                           .ndevices = r->ndevices,
                           .tile = r->tile};
}

/* The read_panel and write_tile calls of the last run. */
static long last_reads, last_writes;

/* Runs the product; returns C (m x n in out_type, malloc'd) and the writes per element. */
static void *run(const operands *o, const run_opts *r, oc_status *st, unsigned char **writes, oc_matmul_job *out_job)
{
    const size_t es = oc_mm_type_size(o->out);
    fake_io io = {.a = o->a,
                  .b = o->b,
                  .fail_read_at = r->fail_read_at,
                  .fail_write_at = r->fail_write_at,
                  .cancel_at = r->cancel_at,
                  .mem_a = r->mem_a,
                  .mem_b = r->mem_b,
                  .mem_c = r->mem_c};
    pthread_mutex_init(&io.mu, NULL);
    io.c = malloc((size_t)(o->m * o->n) * es);
    io.writes = calloc((size_t)(o->m * o->n), 1);
    if (!io.c || !io.writes) exit(1);
    memset(io.c, 0xA5, (size_t)(o->m * o->n) * es);
    oc_matmul_job job = make_job(o, r, &io);
    if (r->mem_a || r->mem_b || r->mem_c) job.panel_memory = panel_memory, job.tile_memory = tile_memory;
    oc_context_begin_job(ctx); /* what the job layer does first: clears the error and a cancel */
    *st = oc_mm_backend_cuda.run(&job);
    last_reads = io.reads, last_writes = io.tiles_written;
    CHECK_MSG(!io.bad_tile, "a tile outside C or below the diagonal was written");
    if (out_job) *out_job = job;
    pthread_mutex_destroy(&io.mu);
    *writes = io.writes;
    return io.c;
}

static const char *type_name(oc_mm_type t)
{
    static const char *const names[] = {"float64", "float32", "float16", "bfloat16", "int8", "int32"};
    return (unsigned)t < OC_MM_TYPE_COUNT ? names[t] : "?";
}

/* The relative error allowed against sum |a||b|: the accumulation's and the output's rounding. */
static double tolerance(oc_mm_type in, oc_mm_type out, int tf32)
{
    if (in == OC_MM_INT8) return 0;
    if (out == OC_MM_FLOAT16) return 2e-3;
    if (out == OC_MM_BFLOAT16) return 1e-2;
    if (in == OC_MM_FLOAT64) return 1e-13;
    if (tf32) return 2e-3; /* the values here are exact in TF32; its products are not rounded further */
    return 1e-5;
}

/* Checks C against the reference: every element of the computed part written once, within
 * tolerance (int8: exactly); a symmetric job's lower tiles untouched. Returns the failures. */
static int check_result(const operands *o, const void *c, const unsigned char *writes, int tf32, const char *what)
{
    const double tol = tolerance(o->in, o->out, tf32);
    int bad = 0;
    for (int64_t i = 0; i < o->m; ++i)
        for (int64_t j = 0; j < o->n; ++j) {
            const int64_t e = i * o->n + j;
            if (writes[e] > 1 || (writes[e] == 0 && (!o->symmetric || j >= i))) {
                if (bad++ < 5)
                    fprintf(stderr, "%s: C[%lld][%lld] written %d times\n", what, (long long)i, (long long)j,
                            writes[e]);
                continue;
            }
            if (!writes[e]) continue;
            const double got = load(o->out, c, e), err = fabs(got - o->ref[e]);
            if (!(err <= tol * o->mag[e])) {
                if (bad++ < 5)
                    fprintf(stderr, "%s: C[%lld][%lld] = %.17g, expected %.17g (|error| %.3g > %.3g)\n", what,
                            (long long)i, (long long)j, got, o->ref[e], err, tol * o->mag[e]);
            }
        }
    CHECK_MSG(bad == 0, "%s: %d elements wrong", what, bad);
    return bad;
}

/* Elementwise equal within the type's tolerance (int8: exactly), over the part computed (a
 * symmetric job: the upper triangle, which every plan's tiles cover). */
static void check_close(const operands *o, const void *x, const void *y, int tf32, const char *what)
{
    const double tol = 2 * tolerance(o->in, o->out, tf32);
    int bad = 0;
    for (int64_t i = 0; i < o->m; ++i)
        for (int64_t j = o->symmetric ? i : 0; j < o->n; ++j) {
            const int64_t e = i * o->n + j;
            if (!(fabs(load(o->out, x, e) - load(o->out, y, e)) <= tol * o->mag[e])) bad++;
        }
    CHECK_MSG(bad == 0, "%s: %d elements differ%s", what, bad, tol > 0 ? " beyond tolerance" : "");
}

static void check_clean(const char *what)
{
    oc_context_release_cached_memory(ctx);
    CHECK_MSG(oc_cuda_live_device_bytes() == 0 && oc_cuda_live_pinned_bytes() == 0,
              "%s: %lld device and %lld pinned bytes left allocated", what, (long long)oc_cuda_live_device_bytes(),
              (long long)oc_cuda_live_pinned_bytes());
}

/* The plan as JSON: its number of tiles and K panels. */
static void plan_counts(const operands *o, const run_opts *r, int64_t *tiles, int64_t *panels)
{
    fake_io io = {0};
    oc_matmul_job job = make_job(o, r, &io);
    char *text = NULL;
    *tiles = *panels = -1;
    oc_status st = oc_mm_backend_cuda.plan(&job, 1, &text);
    CHECK_MSG(st == OC_OK, "plan: %s", oc_context_last_error(ctx));
    if (st != OC_OK) return;
    const char *t = strstr(text, "\"tiles\": "), *p = strstr(text, "\"panels\": ");
    CHECK(t && p && text[0] == '{');
    if (t) *tiles = atoll(t + 9);
    if (p) *panels = atoll(p + 10);
    free(text);
    /* The text form names the same plan. */
    CHECK(oc_mm_backend_cuda.plan(&job, 0, &text) == OC_OK && strstr(text, "cuda/cublasLt") != NULL);
    free(text);
}

/* One type: against the reference with a large and a tiny budget, the two against each other,
 * the tiny plan twice for the same bytes. */
static void check_type(oc_mm_type in, oc_mm_type out, int tf32, int symmetric)
{
    char what[128];
    snprintf(what, sizeof what, "%s -> %s%s%s", type_name(in), type_name(out), tf32 ? " (tf32)" : "",
             symmetric ? " symmetric" : "");
    const int64_t m = symmetric ? 203 : 211, n = 203, k = 1101; /* no edge a multiple of 4 or 16 */
    operands o = make_operands(m, n, k, in, out, symmetric, 1234 + (uint64_t)in * 7 + (uint64_t)out);
    oc_status st;
    unsigned char *w_big, *w_tiny, *w_again;
    const run_opts big = {.tf32 = tf32};
    void *c_big = run(&o, &big, &st, &w_big, NULL);
    CHECK_MSG(st == OC_OK, "%s, large budget: %s", what, oc_context_last_error(ctx));
    snprintf(what + strlen(what), sizeof what - strlen(what), ", large budget");
    check_result(&o, c_big, w_big, tf32, what);
    what[strlen(what) - strlen(", large budget")] = '\0';

    /* A budget of a few hundred KiB: tiles of a few dozen rows and K panels of 256 or so. */
    const run_opts tiny = {.tf32 = tf32, .gpu_mem = 640 << 10, .host_mem = 1 << 20};
    int64_t tiles, panels;
    plan_counts(&o, &tiny, &tiles, &panels);
    CHECK_MSG(tiles >= 3 && panels >= 3, "%s: the tiny plan has %lld tiles and %lld K panels", what, (long long)tiles,
              (long long)panels);
    oc_matmul_job job;
    void *c_tiny = run(&o, &tiny, &st, &w_tiny, &job);
    CHECK_MSG(st == OC_OK, "%s, tiny budget: %s", what, oc_context_last_error(ctx));
    CHECK_EQ_I64(job.stats.tiles, tiles);
    CHECK(strcmp(job.stats.backend, "cuda/cublasLt") == 0);
    CHECK(job.stats.peak_device_bytes > 0 && job.stats.peak_device_bytes <= tiny.gpu_mem);
    CHECK(job.stats.peak_host_bytes > 0 && job.stats.peak_host_bytes <= tiny.host_mem);
    CHECK(job.stats.bytes_to_device > 0 && job.stats.bytes_from_device > 0 && job.stats.bytes_read > 0);
    snprintf(what + strlen(what), sizeof what - strlen(what), ", tiny budget");
    check_result(&o, c_tiny, w_tiny, tf32, what);
    check_close(&o, c_big, c_tiny, tf32, what);
    void *c_again = run(&o, &tiny, &st, &w_again, NULL);
    CHECK(st == OC_OK);
    const size_t bytes = (size_t)(m * n) * oc_mm_type_size(out);
    CHECK_MSG(memcmp(c_tiny, c_again, bytes) == 0, "%s: the same plan twice gave different bytes", what);
    free(c_big), free(c_tiny), free(c_again), free(w_big), free(w_tiny), free(w_again);
    free_operands(&o);
    check_clean(what);
}

/* Operands and result in page-locked memory, offered through panel_memory and tile_memory,
 * are uploaded and downloaded straight (no read_panel or write_tile call, no pinned slot) and
 * give the bytes of the copied path under the same plan; memory that is not page-locked is read and written
 * through the callbacks as before; one operand pinned and one not mixes the two. */
static void check_straight(oc_mm_type in, oc_mm_type out)
{
    char what[96];
    snprintf(what, sizeof what, "%s -> %s straight from pinned memory", type_name(in), type_name(out));
    const int64_t m = 211, n = 203, k = 1101;
    operands o = make_operands(m, n, k, in, out, 0, 4321 + (uint64_t)in);
    const size_t ia = (size_t)(m * k) * oc_mm_type_size(in), ib = (size_t)(k * n) * oc_mm_type_size(in),
                 oc = (size_t)(m * n) * oc_mm_type_size(out);
    void *pa = NULL, *pb = NULL, *pc = NULL;
    if (cudaHostAlloc(&pa, ia, cudaHostAllocPortable) != cudaSuccess ||
        cudaHostAlloc(&pb, ib, cudaHostAllocPortable) != cudaSuccess ||
        cudaHostAlloc(&pc, oc, cudaHostAllocPortable) != cudaSuccess) {
        CHECK_MSG(0, "%s: cudaHostAlloc failed", what);
        return;
    }
    memcpy(pa, o.a, ia);
    memcpy(pb, o.b, ib);
    memset(pc, 0xA5, oc);
    oc_status st;
    unsigned char *w;
    const run_opts copied = {.gpu_mem = 640 << 10, .host_mem = 1 << 20};
    void *c_copied = run(&o, &copied, &st, &w, NULL);
    CHECK_MSG(st == OC_OK && last_reads > 0 && last_writes > 0, "%s, copied: %s", what, oc_context_last_error(ctx));
    free(w);

    run_opts straight = copied;
    straight.mem_a = pa, straight.mem_b = pb, straight.mem_c = pc;
    oc_matmul_job job;
    free(run(&o, &straight, &st, &w, &job));
    free(w);
    CHECK_MSG(st == OC_OK, "%s: %s", what, oc_context_last_error(ctx));
    CHECK_MSG(last_reads == 0 && last_writes == 0, "%s: %ld read_panel and %ld write_tile calls", what, last_reads,
              last_writes);
    CHECK_MSG(job.stats.bytes_read == 0 && job.stats.bytes_straight == job.stats.bytes_to_device &&
                  job.stats.bytes_straight > 0,
              "%s: read %lld, straight %lld, uploaded %lld", what, (long long)job.stats.bytes_read,
              (long long)job.stats.bytes_straight, (long long)job.stats.bytes_to_device);
    CHECK_MSG(memcmp(c_copied, pc, oc) == 0, "%s: other bytes than the copied path", what);
    CHECK_MSG(job.stats.peak_host_bytes == 0, "%s: %lld bytes pinned for slots nothing goes through", what,
              (long long)job.stats.peak_host_bytes);

    /* B and C in pageable memory: B is read and C written through the callbacks. */
    unsigned char *c_pageable = malloc(oc);
    memset(c_pageable, 0xA5, oc);
    straight.mem_b = o.b, straight.mem_c = c_pageable;
    void *c_mixed = run(&o, &straight, &st, &w, &job);
    free(w);
    CHECK_MSG(
        st == OC_OK && last_reads > 0 && last_writes > 0 && job.stats.bytes_straight > 0 && job.stats.bytes_read > 0,
        "%s, B and C pageable: %s (%ld reads, %ld writes)", what, oc_context_last_error(ctx), last_reads, last_writes);
    CHECK_MSG(memcmp(c_copied, c_mixed, oc) == 0, "%s, B and C pageable: other bytes", what);
    CHECK(job.stats.peak_host_bytes > 0);
    free(c_pageable), free(c_mixed), free(c_copied);
    cudaFreeHost(pa), cudaFreeHost(pb), cudaFreeHost(pc);
    free_operands(&o);
    check_clean(what);
}

/* A product through oc_matmul with A, B and C where mem gives them (host or device memory;
 * gpu marks device memory), the result downloaded into *c_host; its status. */
static oc_status public_run(const operands *o, void *const mem[3], const int gpu[3], const oc_matmul_options *opts,
                            void *c_host, oc_matmul_stats *stats)
{
    oc_matmul_array arr[3] = {OC_MATMUL_ARRAY_INIT, OC_MATMUL_ARRAY_INIT, OC_MATMUL_ARRAY_INIT};
    const oc_mm_type types[3] = {o->in, o->in, o->out};
    const int64_t rows[3] = {o->m, o->k, o->m}, cols[3] = {o->k, o->n, o->n};
    for (int i = 0; i < 3; ++i) {
        arr[i].data = mem[i], arr[i].dtype = oc_matmul_dtype_of(types[i]);
        arr[i].rows = rows[i], arr[i].cols = cols[i], arr[i].gpu = gpu[i];
    }
    stats->struct_size = sizeof *stats;
    const oc_status st = oc_matmul(ctx, &arr[0], &arr[1], &arr[2], opts, stats);
    const size_t bytes = (size_t)(o->m * o->n) * oc_mm_type_size(o->out);
    if (gpu[2]) CHECK(cudaMemcpy(c_host, mem[2], bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    else memcpy(c_host, mem[2], bytes);
    return st;
}

/* Operands and result in device memory through the public API: all three on the device,
 * rows back to back, run as one product where they are (no copy across PCIe) and match the
 * reference; a forced tile takes the tiled path with panels copied on the device, and gives
 * the bytes of the same plan from host memory; A on the device with B and C on the host
 * mixes the two; a transpose, A·Aᵀ, a conversion or the CPU backend are refused naming the
 * operand, before anything is written. */
static void check_device_memory(oc_mm_type in, oc_mm_type out)
{
    char what[96];
    snprintf(what, sizeof what, "%s -> %s in device memory", type_name(in), type_name(out));
    const int64_t m = 211, n = 204, k = 1101; /* n a multiple of 4: int8's resident plan */
    operands o = make_operands(m, n, k, in, out, 0, 777 + (uint64_t)in);
    const size_t ia = (size_t)(m * k) * oc_mm_type_size(in), ib = (size_t)(k * n) * oc_mm_type_size(in),
                 oc = (size_t)(m * n) * oc_mm_type_size(out);
    void *da = NULL, *db = NULL, *dc = NULL;
    if (cudaMalloc(&da, ia) != cudaSuccess || cudaMalloc(&db, ib) != cudaSuccess ||
        cudaMalloc(&dc, oc) != cudaSuccess) {
        CHECK_MSG(0, "%s: cudaMalloc failed", what);
        return;
    }
    CHECK(cudaMemcpy(da, o.a, ia, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaMemcpy(db, o.b, ib, cudaMemcpyHostToDevice) == cudaSuccess);
    CHECK(cudaMemset(dc, 0xA5, oc) == cudaSuccess);
    unsigned char *c = malloc(oc), *c_host = malloc(oc), *ones = malloc((size_t)(m * n));
    memset(ones, 1, (size_t)(m * n));
    oc_matmul_options opts = OC_MATMUL_OPTIONS_INIT;
    opts.dtype = oc_matmul_dtype_of(out);
    oc_matmul_stats stats;
    void *dev[3] = {da, db, dc};
    const int all[3] = {1, 1, 1};

    /* Resident: one product, nothing across PCIe, nothing pinned. */
    oc_status st = public_run(&o, dev, all, &opts, c, &stats);
    CHECK_MSG(st == OC_OK, "%s: %s", what, oc_context_last_error(ctx));
    CHECK_MSG(stats.backend == OC_BACKEND_CUDA && stats.tiles == 1 && stats.bytes_h2d == 0 && stats.bytes_d2h == 0,
              "%s: backend %d, %lld tiles, %lld bytes up, %lld down", what, (int)stats.backend, (long long)stats.tiles,
              (long long)stats.bytes_h2d, (long long)stats.bytes_d2h);
    check_result(&o, c, ones, 0, what);
    oc_matmul_array pa = OC_MATMUL_ARRAY_INIT, pb = OC_MATMUL_ARRAY_INIT, pc = OC_MATMUL_ARRAY_INIT;
    pa.data = da, pa.dtype = oc_matmul_dtype_of(in), pa.rows = m, pa.cols = k, pa.gpu = 1;
    pb.data = db, pb.dtype = pa.dtype, pb.rows = k, pb.cols = n, pb.gpu = 1;
    pc.data = dc, pc.dtype = opts.dtype, pc.rows = m, pc.cols = n, pc.gpu = 1;
    char *text = NULL;
    CHECK(oc_matmul_plan(ctx, &pa, &pb, &pc, &opts, 0, 0, &text) == OC_OK && text && strstr(text, "resident"));
    free(text);

    /* A forced tile: tiles and K panels copied on the device, the bytes of the same plan from
     * host memory. */
    opts.tile = 64, opts.gpu_mem_bytes = 2 << 20, opts.host_mem_bytes = 64 << 20;
    CHECK(cudaMemset(dc, 0xA5, oc) == cudaSuccess);
    st = public_run(&o, dev, all, &opts, c, &stats);
    CHECK_MSG(st == OC_OK && stats.tiles > 1 && stats.bytes_h2d == 0 && stats.bytes_d2h == 0,
              "%s, tiled: %s (%lld tiles, %lld bytes up)", what, oc_context_last_error(ctx), (long long)stats.tiles,
              (long long)stats.bytes_h2d);
    void *host[3] = {o.a, o.b, c_host};
    const int none[3] = {0, 0, 0};
    opts.backend = OC_BACKEND_CUDA;
    CHECK(public_run(&o, host, none, &opts, c_host, &stats) == OC_OK);
    CHECK_MSG(memcmp(c, c_host, oc) == 0, "%s, tiled: other bytes than the same plan from host memory", what);

    /* A on the device, B and C on the host. */
    void *mixed[3] = {da, o.b, c_host};
    const int a_only[3] = {1, 0, 0};
    opts.backend = OC_BACKEND_AUTO;
    memset(c_host, 0xA5, oc);
    st = public_run(&o, mixed, a_only, &opts, c_host, &stats);
    CHECK_MSG(st == OC_OK && stats.backend == OC_BACKEND_CUDA && stats.bytes_h2d > 0 && stats.bytes_d2h > 0,
              "%s, A alone on the device: %s", what, oc_context_last_error(ctx));
    CHECK_MSG(memcmp(c, c_host, oc) == 0, "%s, A alone on the device: other bytes", what);

    /* Refusals, C untouched. */
    opts.tile = 0, opts.gpu_mem_bytes = 0, opts.host_mem_bytes = 0;
    CHECK(cudaMemset(dc, 0x5A, oc) == cudaSuccess);
    oc_matmul_options o2 = opts;
    o2.backend = OC_BACKEND_CPU;
    CHECK(oc_matmul(ctx, &pa, &pb, &pc, &o2, NULL) == OC_ERR_INVALID_ARGUMENT &&
          strstr(oc_context_last_error(ctx), "GPU memory"));
    /* A transposed operand, or A·Aᵀ, on the device with C on the host: only the resident plan
     * reads operands transposed, and it needs C on the device too. */
    o2 = opts;
    o2.transpose_a = 1;
    oc_matmul_array sq = pa;
    sq.cols = m; /* op(A) = Aᵀ: a square m x m view of A's memory */
    sq.rows = m;
    oc_matmul_array bm = pb, hc = OC_MATMUL_ARRAY_INIT;
    bm.rows = m;
    hc.data = c_host, hc.dtype = pc.dtype, hc.rows = m, hc.cols = n;
    CHECK(oc_matmul(ctx, &sq, &bm, &hc, &o2, NULL) == OC_ERR_INPUT &&
          strstr(oc_context_last_error(ctx), "read transposed") &&
          strstr(oc_context_last_error(ctx), "C is not in that device's memory"));
    o2 = opts;
    o2.gram = 1;
    o2.dtype = OC_MATMUL_DEFAULT;
    hc.cols = m;
    CHECK(oc_matmul(ctx, &pa, NULL, &hc, &o2, NULL) == OC_ERR_INPUT && strstr(oc_context_last_error(ctx), "A·Aᵀ"));
    if (in != OC_MM_FLOAT64) {
        o2 = opts;
        o2.dtype = OC_MATMUL_FLOAT64;
        CHECK(oc_matmul_result(ctx, &pa, &pb, &o2, NULL, NULL, NULL) == OC_ERR_INPUT &&
              strstr(oc_context_last_error(ctx), "convert it on the device"));
    }
    CHECK(cudaMemcpy(c, dc, oc, cudaMemcpyDeviceToHost) == cudaSuccess);
    int untouched = 1;
    for (size_t i = 0; i < oc; ++i) untouched &= c[i] == 0x5A;
    CHECK_MSG(untouched, "%s: a refused product wrote C", what);
    free(c), free(c_host), free(ones);
    cudaFree(da), cudaFree(db), cudaFree(dc);
    free_operands(&o);
    check_clean(what);
}

/* elem-byte elements of the rows x cols row-major x, transposed (cols x rows). */
static void *transposed_copy(const void *x, int64_t rows, int64_t cols, size_t elem)
{
    unsigned char *t = malloc((size_t)(rows * cols) * elem + 1);
    for (int64_t r = 0; t && r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            memcpy(t + (size_t)(c * rows + r) * elem, (const unsigned char *)x + (size_t)(r * cols + c) * elem, elem);
    return t;
}

static void *on_device(const void *x, size_t bytes)
{
    void *d = NULL;
    if (cudaMalloc(&d, bytes ? bytes : 1) != cudaSuccess) return NULL;
    if (bytes && x) CHECK(cudaMemcpy(d, x, bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    return d;
}

/* The resident plan reads transposed operands where they are, through cuBLASLt's transposes
 * (int8: transposed into its K-contiguous layout only where they are not so already):
 * op(A) = Aᵀ, op(B) = Bᵀ and both against the reference, and A·Aᵀ from A alone, the whole
 * product computed and mirrored, exactly symmetric. */
static void check_device_transposes(oc_mm_type in, oc_mm_type out, int64_t k)
{
    char what[96];
    const int64_t m = 211, n = 204; /* int8: k a multiple of 16 takes the operands as stored */
    operands o = make_operands(m, n, k, in, out, 0, 555 + (uint64_t)in);
    const size_t es = oc_mm_type_size(in), ia = (size_t)(m * k) * es, ib = (size_t)(k * n) * es,
                 oc = (size_t)(m * n) * oc_mm_type_size(out);
    void *at = transposed_copy(o.a, m, k, es), *bt = transposed_copy(o.b, k, n, es);
    void *da = on_device(o.a, ia), *db = on_device(o.b, ib), *dat = on_device(at, ia), *dbt = on_device(bt, ib);
    void *dc = on_device(NULL, oc);
    unsigned char *c = malloc(oc), *ones = malloc((size_t)(212 * 212));
    if (!at || !bt || !da || !db || !dat || !dbt || !dc || !c || !ones) {
        CHECK_MSG(0, "%s -> %s transposed in device memory: out of memory", type_name(in), type_name(out));
        return;
    }
    memset(ones, 1, (size_t)(212 * 212));
    const int gpu[3] = {1, 1, 1};
    for (int t = 1; t < 4; ++t) {
        const int ta = t & 1, tb = t >> 1;
        snprintf(what, sizeof what, "%s -> %s in device memory, %s%s", type_name(in), type_name(out),
                 ta ? "op(A) = Aᵀ " : "", tb ? "op(B) = Bᵀ" : "");
        oc_matmul_options opts = OC_MATMUL_OPTIONS_INIT;
        opts.dtype = oc_matmul_dtype_of(out);
        opts.transpose_a = ta, opts.transpose_b = tb;
        oc_matmul_array arr[3] = {OC_MATMUL_ARRAY_INIT, OC_MATMUL_ARRAY_INIT, OC_MATMUL_ARRAY_INIT};
        arr[0].data = ta ? dat : da, arr[0].rows = ta ? k : m, arr[0].cols = ta ? m : k;
        arr[1].data = tb ? dbt : db, arr[1].rows = tb ? n : k, arr[1].cols = tb ? k : n;
        arr[2].data = dc, arr[2].rows = m, arr[2].cols = n;
        for (int i = 0; i < 3; ++i) arr[i].gpu = gpu[i], arr[i].dtype = oc_matmul_dtype_of(i == 2 ? out : in);
        CHECK(cudaMemset(dc, 0xA5, oc) == cudaSuccess);
        oc_matmul_stats stats = {.struct_size = sizeof stats};
        const oc_status st = oc_matmul(ctx, &arr[0], &arr[1], &arr[2], &opts, &stats);
        CHECK_MSG(st == OC_OK && stats.tiles == 1 && stats.bytes_h2d == 0, "%s: %s", what, oc_context_last_error(ctx));
        CHECK(cudaMemcpy(c, dc, oc, cudaMemcpyDeviceToHost) == cudaSuccess);
        check_result(&o, c, ones, 0, what);
    }
    free_operands(&o);

    /* A·Aᵀ from A in device memory into C there. */
    snprintf(what, sizeof what, "%s -> %s A·Aᵀ in device memory", type_name(in), type_name(out));
    const int64_t mg = 212; /* int8: a multiple of 4 */
    operands g = make_operands(mg, mg, k, in, out, 1, 777 + (uint64_t)in);
    const size_t gc = (size_t)(mg * mg) * oc_mm_type_size(out);
    void *dg = on_device(g.a, (size_t)(mg * k) * es), *dgc = on_device(NULL, gc);
    unsigned char *cg = malloc(gc);
    oc_matmul_array A = OC_MATMUL_ARRAY_INIT, C = OC_MATMUL_ARRAY_INIT;
    A.data = dg, A.rows = mg, A.cols = k, A.dtype = oc_matmul_dtype_of(in), A.gpu = 1;
    C.data = dgc, C.rows = mg, C.cols = mg, C.dtype = oc_matmul_dtype_of(out), C.gpu = 1;
    oc_matmul_options opts = OC_MATMUL_OPTIONS_INIT;
    opts.gram = 1, opts.dtype = C.dtype;
    const oc_status st = dg && dgc && cg ? oc_matmul(ctx, &A, NULL, &C, &opts, NULL) : OC_ERR_NO_MEMORY;
    CHECK_MSG(st == OC_OK, "%s: %s", what, oc_context_last_error(ctx));
    if (st == OC_OK && cudaMemcpy(cg, dgc, gc, cudaMemcpyDeviceToHost) == cudaSuccess) {
        check_result(&g, cg, ones, 0, what);
        const size_t e = oc_mm_type_size(out);
        int symmetric = 1;
        for (int64_t i = 0; i < mg; ++i)
            for (int64_t j = 0; j < i; ++j)
                symmetric &= memcmp(cg + (size_t)(i * mg + j) * e, cg + (size_t)(j * mg + i) * e, e) == 0;
        CHECK_MSG(symmetric, "%s: not exactly symmetric", what);
    }
    free_operands(&g);
    free(at), free(bt), free(c), free(ones), free(cg);
    cudaFree(da), cudaFree(db), cudaFree(dat), cudaFree(dbt), cudaFree(dc), cudaFree(dg), cudaFree(dgc);
    check_clean(what);
}

/* k = 0: C is zeros (numpy's empty sum) on the GPU too, in device memory and on the host,
 * A·Aᵀ included. */
static void check_empty_k(void)
{
    const char *what = "k = 0 on the GPU";
    const int64_t m = 37, n = 29;
    float *dc = NULL, *host = malloc((size_t)(m * n) * sizeof(float));
    if (!host || cudaMalloc((void **)&dc, (size_t)(m * n) * sizeof(float)) != cudaSuccess) {
        CHECK_MSG(0, "%s: out of memory", what);
        return;
    }
    float dummy = 1;
    oc_matmul_array A = OC_MATMUL_ARRAY_INIT, B = OC_MATMUL_ARRAY_INIT, C = OC_MATMUL_ARRAY_INIT;
    A.dtype = B.dtype = C.dtype = OC_MATMUL_FLOAT32;
    A.data = B.data = &dummy;
    A.rows = m, A.cols = 0, B.rows = 0, B.cols = n, C.rows = m, C.cols = n;
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.backend = OC_BACKEND_CUDA;
    for (int on_device = 0; on_device < 2; ++on_device) {
        CHECK(cudaMemset(dc, 0x7f, (size_t)(m * n) * sizeof(float)) == cudaSuccess);
        for (int64_t i = 0; i < m * n; ++i) host[i] = 7;
        C.data = on_device ? (void *)dc : (void *)host, C.gpu = on_device;
        CHECK_MSG(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_OK, "%s: %s", what, oc_context_last_error(ctx));
        if (on_device)
            CHECK(cudaMemcpy(host, dc, (size_t)(m * n) * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
        int zeros = 1;
        for (int64_t i = 0; i < m * n; ++i) zeros &= host[i] == 0;
        CHECK_MSG(zeros, "%s: C is not zeros (%s)", what, on_device ? "device memory" : "host memory");
    }
    /* A·Aᵀ of an m x 0 A into host memory: m x m zeros. */
    o.gram = 1;
    C.gpu = 0, C.cols = m;
    float *sq = malloc((size_t)(m * m) * sizeof(float));
    for (int64_t i = 0; sq && i < m * m; ++i) sq[i] = 7;
    C.data = sq;
    CHECK_MSG(sq && oc_matmul(ctx, &A, NULL, &C, &o, NULL) == OC_OK, "%s, A·Aᵀ: %s", what, oc_context_last_error(ctx));
    int zeros = sq != NULL;
    for (int64_t i = 0; sq && i < m * m; ++i) zeros &= sq[i] == 0;
    CHECK_MSG(zeros, "%s, A·Aᵀ: C is not zeros", what);
    free(sq), free(host);
    cudaFree(dc);
    check_clean(what);
}

/* int8's measured choice of algorithm (matmul_gemm.h): a 4096³ product, large enough to be
 * measured, gives the same bytes with the rate cache off (the heuristic's first algorithm)
 * and on (the fastest candidate, measured and stored there), and again from the choice kept. */
static void check_int8_choice(void)
{
    const char *what = "int8's measured algorithm";
    const int64_t e = 4096;
    const size_t in_bytes = (size_t)(e * e), out_bytes = in_bytes * 4;
    int8_t *h = malloc(in_bytes);
    unsigned char *c_off = malloc(out_bytes), *c_on = malloc(out_bytes);
    void *da = NULL, *db = NULL, *dc = NULL;
    if (!h || !c_off || !c_on || cudaMalloc(&da, in_bytes) != cudaSuccess || cudaMalloc(&db, in_bytes) != cudaSuccess ||
        cudaMalloc(&dc, out_bytes) != cudaSuccess) {
        CHECK_MSG(0, "%s: out of memory", what);
        return;
    }
    uint64_t seed = 99;
    for (size_t i = 0; i < in_bytes; ++i) h[i] = (int8_t)((int)(oc_test_rand(&seed) % 255) - 127);
    CHECK(cudaMemcpy(da, h, in_bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    for (size_t i = 0; i < in_bytes; ++i) h[i] = (int8_t)((int)(oc_test_rand(&seed) % 255) - 127);
    CHECK(cudaMemcpy(db, h, in_bytes, cudaMemcpyHostToDevice) == cudaSuccess);
    oc_matmul_array A = OC_MATMUL_ARRAY_INIT, B = OC_MATMUL_ARRAY_INIT, C = OC_MATMUL_ARRAY_INIT;
    A.data = da, B.data = db, C.data = dc, A.dtype = B.dtype = OC_MATMUL_INT8, C.dtype = OC_MATMUL_INT32;
    A.rows = A.cols = B.rows = B.cols = C.rows = C.cols = e;
    A.gpu = B.gpu = C.gpu = 1;
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    char cache[] = "/tmp/oc_int8_choiceXXXXXX";
    const int fd = mkstemp(cache);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    const char *env = getenv("OUTCORE_COST_CACHE");
    char *was = env ? strdup(env) : NULL;
    unsigned char *out[2] = {c_off, c_on};
    for (int on = 0; on < 3; ++on) {
        setenv("OUTCORE_COST_CACHE", on ? cache : "off", 1);
        oc_cost_rates_reset();
        CHECK(cudaMemset(dc, 0x7f, out_bytes) == cudaSuccess);
        CHECK_MSG(oc_matmul(ctx, &A, &B, &C, &o, NULL) == OC_OK, "%s: %s", what, oc_context_last_error(ctx));
        CHECK(cudaMemcpy(out[on ? 1 : 0], dc, out_bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
        if (on) CHECK_MSG(memcmp(c_off, c_on, out_bytes) == 0, "%s: other bytes than the first algorithm's", what);
    }
    char line[4096] = "";
    FILE *f = fopen(cache, "r");
    int stored = 0;
    while (f && fgets(line, sizeof line, f)) stored |= strncmp(line, "gpu_int8_algo.4096x4096x4096.w", 30) == 0;
    if (f) fclose(f);
    CHECK_MSG(stored, "%s: no gpu_int8_algo line in the rate cache", what);
    unlink(cache);
    char lock[sizeof cache + 8];
    snprintf(lock, sizeof lock, "%s.lock", cache);
    unlink(lock);
    if (was) setenv("OUTCORE_COST_CACHE", was, 1);
    else unsetenv("OUTCORE_COST_CACHE");
    free(was);
    oc_cost_rates_reset();
    free(h), free(c_off), free(c_on);
    cudaFree(da), cudaFree(db), cudaFree(dc);
    check_clean(what);
}

/* One injected failure (the read_panel or write_tile call `at`): its status and message, no
 * hang, nothing left allocated. */
static void check_failure(const operands *o, long read_at, long write_at)
{
    const run_opts r = {.gpu_mem = 640 << 10, .host_mem = 1 << 20, .fail_read_at = read_at, .fail_write_at = write_at};
    oc_status st;
    unsigned char *w;
    free(run(o, &r, &st, &w, NULL));
    free(w);
    const char *want = read_at ? "injected read failure" : "injected write failure";
    CHECK_MSG(st == OC_ERR_IO && strstr(oc_context_last_error(ctx), want), "%s at %ld: %s (%s)", want,
              read_at + write_at, oc_status_string(st), oc_context_last_error(ctx));
    check_clean(want);
}

static void check_failures(void)
{
    operands o = make_operands(150, 130, 700, OC_MM_FLOAT32, OC_MM_FLOAT32, 0, 99);
    oc_status st;
    unsigned char *w;
    /* The tiny plan of this shape: 4 tiles of 3 K panels, so 24 reads and 4 writes. */
    for (long at = 1; at <= 9; at += 4) check_failure(&o, at, 0);
    for (long at = 1; at <= 4; at += 3) check_failure(&o, 0, at);
    /* A cancel (from any thread: here read_panel's) stops the job at its next panel. */
    const run_opts cancel = {.gpu_mem = 640 << 10, .host_mem = 1 << 20, .cancel_at = 3};
    free(run(&o, &cancel, &st, &w, NULL));
    free(w);
    CHECK_MSG(st == OC_ERR_CANCELLED, "cancelled: %s (%s)", oc_status_string(st), oc_context_last_error(ctx));
    check_clean("a cancelled job");
    /* A budget no tile fits, and a product cuBLASLt does not compute. */
    run_opts r = {.gpu_mem = 4096};
    free(run(&o, &r, &st, &w, NULL));
    free(w);
    CHECK_MSG(st == OC_ERR_DEVICE_NO_MEMORY, "tiny budget: %s", oc_status_string(st));
    o.out = OC_MM_FLOAT64;
    r.gpu_mem = 0;
    free(run(&o, &r, &st, &w, NULL));
    free(w);
    CHECK_MSG(st == OC_ERR_UNSUPPORTED, "float32 -> float64: %s", oc_status_string(st));
    free_operands(&o);
    check_clean("the refusals");
}

/* Two devices give the bytes of one under the same plan (forced tile and budget). */
static void check_devices(void)
{
    if (oc_cuda_device_usable(1) == 0) {
        printf("one CUDA device: the two-device case is not run\n");
        return;
    }
    static const int one[] = {0}, two[] = {0, 1};
    for (int t = 0; t < 2; ++t) {
        const oc_mm_type in = t ? OC_MM_INT8 : OC_MM_FLOAT32, out = t ? OC_MM_INT32 : OC_MM_FLOAT32;
        operands o = make_operands(333, 301, 900, in, out, 0, 5);
        oc_status st;
        unsigned char *w1, *w2;
        run_opts r = {.gpu_mem = 8 << 20, .tile = 64, .devices = one, .ndevices = 1};
        void *c1 = run(&o, &r, &st, &w1, NULL);
        CHECK(st == OC_OK);
        r.devices = two, r.ndevices = 2;
        void *c2 = run(&o, &r, &st, &w2, NULL);
        CHECK_MSG(st == OC_OK, "two devices: %s", oc_context_last_error(ctx));
        check_result(&o, c2, w2, 0, "two devices");
        CHECK_MSG(memcmp(c1, c2, (size_t)(o.m * o.n) * oc_mm_type_size(out)) == 0,
                  "%s: two devices gave other bytes than one", type_name(in));
        free(c1), free(c2), free(w1), free(w2);
        free_operands(&o);
    }
    check_clean("two devices");
}

/* The GEMM rate auto measures once per machine: every type runs, the tensor cores' types
 * beat plain float32, a device that does not exist gives 0; a large product's choice measures
 * it into the rate cache's GPUs' section and predicts with it, and reads it back; with the
 * cache off the default is used. */
static void check_gemm_rates(void)
{
    static const struct {
        oc_mm_type in;
        int tf32;
    } types[] = {{OC_MM_FLOAT64, 0}, {OC_MM_FLOAT32, 0},  {OC_MM_FLOAT32, 1},
                 {OC_MM_FLOAT16, 0}, {OC_MM_BFLOAT16, 0}, {OC_MM_INT8, 0}};
    double rate[6];
    for (int i = 0; i < 6; ++i) {
        rate[i] = oc_mm_backend_cuda.gemm_rate(types[i].in, types[i].tf32, 0);
        CHECK_MSG(rate[i] > 1e11, "%s%s: GEMM rate %.3g", type_name(types[i].in), types[i].tf32 ? " (tf32)" : "",
                  rate[i]);
        printf("GEMM rate on cuda:0, %s%s: %.1f T/s\n", type_name(types[i].in), types[i].tf32 ? " (tf32)" : "",
               rate[i] / 1e12);
    }
    CHECK(rate[2] > rate[1] && rate[3] > rate[1] && rate[5] > rate[1]);
    CHECK(oc_mm_backend_cuda.gemm_rate(OC_MM_FLOAT32, 0, 999) == 0);

    char cache[512];
    snprintf(cache, sizeof cache, "/tmp/test_matmul_cuda_rates.%d", (int)getpid());
    unlink(cache);
    setenv("OUTCORE_COST_CACHE", cache, 1);
    oc_cost_rates_reset();
    oc_matmul_job job;
    memset(&job, 0, sizeof job);
    job.ctx = ctx, job.m = job.n = job.k = 50000, job.in_type = OC_MM_FLOAT32, job.out_type = OC_MM_FLOAT32;
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    const oc_mm_backend *chosen = NULL;
    char explain[1024];
    for (int round = 0; round < 2; ++round) { /* measured, then read back */
        /* Which backend wins is the rates' business (under compute-sanitizer the GPU's is a
         * hundredth of itself): the prediction uses the measured one. */
        CHECK(oc_mm_choose(ctx, &job, &o, &chosen, explain, sizeof explain) == OC_OK);
        CHECK_MSG(chosen && strstr(explain, "GEMM rate measured"), "%s", explain);
        FILE *f = fopen(cache, "r");
        char text[8192] = "";
        if (f) text[fread(text, 1, sizeof text - 1, f)] = '\0', fclose(f);
        CHECK_MSG(strstr(text, "\n" OC_COST_GPU_GEMM_FIGURE "float32 ") != NULL, "%s", text);
        oc_cost_rates_reset();
    }
    setenv("OUTCORE_COST_CACHE", "off", 1);
    CHECK(oc_mm_choose(ctx, &job, &o, &chosen, explain, sizeof explain) == OC_OK);
    CHECK_MSG(strstr(explain, "GEMM rate a default"), "%s", explain);
    unsetenv("OUTCORE_COST_CACHE");
    oc_cost_rates_reset();
    unlink(cache);
}

int main(void)
{
    if (!oc_mm_backend_cuda.usable(0)) {
        printf("SKIPPED: no usable CUDA device or no cuBLASLt\n");
        oc_test_skip("no usable CUDA device or no cuBLASLt");
        return oc_test_finish();
    }
    if (oc_context_create(&ctx) != OC_OK) return 1;
    check_type(OC_MM_FLOAT64, OC_MM_FLOAT64, 0, 0);
    check_type(OC_MM_FLOAT32, OC_MM_FLOAT32, 0, 0);
    check_type(OC_MM_FLOAT32, OC_MM_FLOAT32, 1, 0);
    check_type(OC_MM_FLOAT16, OC_MM_FLOAT32, 0, 0);
    check_type(OC_MM_FLOAT16, OC_MM_FLOAT16, 0, 0);
    check_type(OC_MM_BFLOAT16, OC_MM_FLOAT32, 0, 0);
    check_type(OC_MM_BFLOAT16, OC_MM_BFLOAT16, 0, 0);
    check_type(OC_MM_INT8, OC_MM_INT32, 0, 0);
    check_type(OC_MM_FLOAT32, OC_MM_FLOAT32, 0, 1);
    check_type(OC_MM_INT8, OC_MM_INT32, 0, 1);
    check_straight(OC_MM_FLOAT32, OC_MM_FLOAT32);
    check_straight(OC_MM_INT8, OC_MM_INT32);
    check_straight(OC_MM_BFLOAT16, OC_MM_BFLOAT16);
    check_device_memory(OC_MM_FLOAT32, OC_MM_FLOAT32);
    check_device_memory(OC_MM_INT8, OC_MM_INT32);
    check_device_memory(OC_MM_BFLOAT16, OC_MM_BFLOAT16);
    check_device_memory(OC_MM_FLOAT64, OC_MM_FLOAT64);
    check_device_transposes(OC_MM_FLOAT32, OC_MM_FLOAT32, 1101);
    check_device_transposes(OC_MM_FLOAT64, OC_MM_FLOAT64, 1104);
    check_device_transposes(OC_MM_BFLOAT16, OC_MM_BFLOAT16, 1101);
    check_device_transposes(OC_MM_INT8, OC_MM_INT32, 1104);
    check_device_transposes(OC_MM_INT8, OC_MM_INT32, 1101);
    check_int8_choice();
    check_empty_k();
    check_failures();
    check_devices();
    check_gemm_rates();
    oc_context_free(ctx);
    return oc_test_finish();
}
