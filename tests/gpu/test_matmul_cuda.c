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
 * alone; a plan of tiles that are not square gives the reference's result; two devices
 * (where there are two) give the bytes of one; a read_panel or write_tile
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
#include "matmul_reference.h"
#include "matmul/matmul_job.h"
#include "matmul/matmul_dtype.h"
#include "matmul/matmul_choice.h"
#include "cost/cost.h"

static oc_context *ctx;

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
    int bad_tile; /* a tile outside C */
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
    /* A symmetric job's parts of a diagonal tile may start left of its diagonal, or lie below
     * it (the writer cuts pieces by columns); the count of tiles against the plan's
     * (check_type) finds a lower tile computed. */
    if (row0 < 0 || col0 < 0 || rows <= 0 || cols <= 0 || row0 + rows > job->m || col0 + cols > job->n || ld < cols)
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
    CHECK_MSG(!io.bad_tile, "a tile outside C was written");
    if (out_job) *out_job = job;
    pthread_mutex_destroy(&io.mu);
    *writes = io.writes;
    return io.c;
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

/* The plan's tile edges, from its JSON form. */
static void plan_tile(const operands *o, const run_opts *r, int64_t *tm, int64_t *tn)
{
    fake_io io = {0};
    oc_matmul_job job = make_job(o, r, &io);
    char *text = NULL;
    *tm = *tn = -1;
    CHECK_MSG(oc_mm_backend_cuda.plan(&job, 1, &text) == OC_OK, "plan: %s", oc_context_last_error(ctx));
    const char *t = text ? strstr(text, "\"tile\": [") : NULL;
    CHECK(t != NULL);
    if (t) *tm = strtoll(t + 9, (char **)&t, 10), *tn = strtoll(t + 1, NULL, 10);
    free(text);
}

/* Tiles that are not square (matmul_cuda_plan.h: rectangles where no square shares well): a
 * 8192 x 3000 product with a short k is planned in four tiles of rows by every column; the
 * result against the reference, every element written once, and int8 exactly. */
static void check_rectangles(void)
{
    for (int t = 0; t < 2; ++t) {
        const oc_mm_type in = t ? OC_MM_INT8 : OC_MM_FLOAT32, out = t ? OC_MM_INT32 : OC_MM_FLOAT32;
        operands o = make_operands(8192, 3000, 40, in, out, 0, 77 + (uint64_t)t);
        const run_opts r = {0};
        int64_t tm, tn;
        plan_tile(&o, &r, &tm, &tn);
        CHECK_MSG(tm != tn && tm > 0 && tn > 0, "%s: tiles of %lld x %lld", type_name(in), (long long)tm,
                  (long long)tn);
        oc_status st;
        unsigned char *w;
        void *c = run(&o, &r, &st, &w, NULL);
        CHECK_MSG(st == OC_OK, "%s, rectangular tiles: %s", type_name(in), oc_context_last_error(ctx));
        check_result(&o, c, w, 0, t ? "int8, rectangular tiles" : "float32, rectangular tiles");
        free(c), free(w);
        free_operands(&o);
    }
    check_clean(ctx, "rectangular tiles");
}

/* A·Aᵀ whose downloaded pieces are large enough to be written in parts (by columns: a part
 * of a diagonal tile may lie wholly below the diagonal): one tile of 2051, and 4100 in tiles
 * of 2048 (diagonal, off-diagonal and edge tiles); every element of the upper part written
 * once, against the reference. */
static void check_symmetric_parts(void)
{
    static const struct {
        int64_t n, tile;
    } cases[] = {{2051, 0}, {4100, 2048}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i)
        for (int t = 0; t < 2; ++t) {
            const oc_mm_type in = t ? OC_MM_INT8 : OC_MM_FLOAT32, out = t ? OC_MM_INT32 : OC_MM_FLOAT32;
            operands o = make_operands(cases[i].n, cases[i].n, 40, in, out, 1, 91 + (uint64_t)(2 * i) + (uint64_t)t);
            const run_opts r = {.tile = cases[i].tile};
            oc_status st;
            unsigned char *w;
            char what[96];
            snprintf(what, sizeof what, "%s symmetric %lld, tile %lld", type_name(in), (long long)cases[i].n,
                     (long long)cases[i].tile);
            void *c = run(&o, &r, &st, &w, NULL);
            CHECK_MSG(st == OC_OK, "%s: %s", what, oc_context_last_error(ctx));
            check_result(&o, c, w, 0, what);
            free(c), free(w);
            free_operands(&o);
        }
    check_clean(ctx, "symmetric parts");
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
    check_clean(ctx, what);
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
    check_clean(ctx, what);
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
    check_clean(ctx, want);
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
    check_clean(ctx, "a cancelled job");
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
    check_clean(ctx, "the refusals");
}

/* Every device and pinned allocation of a job fails once in turn (the pool's injected
 * failures; the pinned slots are taken by the reader and the writer as first needed): the job
 * reports it with its status, leaves nothing allocated, and once past the last point gives
 * the bytes of a run without a failure. */
static void check_alloc_failures(void)
{
    operands o = make_operands(150, 130, 700, OC_MM_FLOAT32, OC_MM_FLOAT32, 0, 41);
    const run_opts r = {.gpu_mem = 640 << 10, .host_mem = 1 << 20};
    const size_t bytes = (size_t)(o.m * o.n) * oc_mm_type_size(o.out);
    oc_status st;
    unsigned char *w;
    void *ref = run(&o, &r, &st, &w, NULL);
    free(w);
    CHECK_MSG(st == OC_OK, "without a failure: %s", oc_context_last_error(ctx));
    const char *vars[2] = {"OUTCORE_FAULT_DEVICE_ALLOC", "OUTCORE_FAULT_PINNED_ALLOC"};
    const oc_status expect[2] = {OC_ERR_DEVICE_NO_MEMORY, OC_ERR_NO_MEMORY};
    for (int v = 0; v < 2; ++v) {
        int points = 0, passed = 0;
        for (int nth = 1; nth < 64 && !passed; ++nth) {
            char num[16];
            snprintf(num, sizeof num, "%d", nth);
            setenv(vars[v], num, 1);
            void *got = run(&o, &r, &st, &w, NULL);
            free(w);
            if (st == OC_OK) {
                CHECK_MSG(memcmp(got, ref, bytes) == 0, "%s=%d: other bytes than without a failure", vars[v], nth);
                passed = 1;
            } else {
                points++;
                CHECK_MSG(st == expect[v] && strstr(oc_context_last_error(ctx), "injected"), "%s=%d: %s: %s", vars[v],
                          nth, oc_status_string(st), oc_context_last_error(ctx));
            }
            free(got);
            check_clean(ctx, vars[v]);
        }
        unsetenv(vars[v]);
        printf("  %s: %d allocation points failed cleanly\n", vars[v], points);
        CHECK_MSG(passed && points >= 2, "%s: %d points, passed %d", vars[v], points, passed);
    }
    free(ref);
    free_operands(&o);
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
    check_clean(ctx, "two devices");
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
        rate[i] = oc_mm_backend_cuda.gemm_rate(types[i].in, types[i].tf32, 0, 0);
        CHECK_MSG(rate[i] > 1e11, "%s%s: GEMM rate %.3g", type_name(types[i].in), types[i].tf32 ? " (tf32)" : "",
                  rate[i]);
        printf("GEMM rate on cuda:0, %s%s: %.1f T/s\n", type_name(types[i].in), types[i].tf32 ? " (tf32)" : "",
               rate[i] / 1e12);
    }
    CHECK(rate[2] > rate[1] && rate[3] > rate[1] && rate[5] > rate[1]);
    CHECK(oc_mm_backend_cuda.gemm_rate(OC_MM_FLOAT32, 0, 999, 0) == 0);
    /* Under a device budget smaller than its operands it measures nothing (the default). */
    CHECK(oc_mm_backend_cuda.gemm_rate(OC_MM_FLOAT32, 0, 0, 64 << 20) == 0);

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
    char unusable[256] = "";
    if (!oc_mm_backend_cuda.usable(0, unusable, sizeof unusable)) {
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
    check_failures();
    check_alloc_failures();
    check_rectangles();
    check_symmetric_parts();
    check_devices();
    check_gemm_rates();
    oc_context_free(ctx);
    return oc_test_finish();
}
