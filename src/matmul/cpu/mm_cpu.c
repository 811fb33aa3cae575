/*
 * mm_cpu.c - the CPU backend of the product (oc_mm_backend_cpu): tiles of C one after the
 * other, each from K panels of op(A) and op(B) multiplied by the BLAS on all threads (or
 * the reference loops), the accumulator rounded once to the result type. The panels are
 * read and converted, and the tile rounded and written, in pieces of rows on every thread:
 * on one thread they held a BLAS on many cores up (bench/RESULTS.md, "matmul on the CPU
 * on 16 cores").
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/threads.h"
#include "matmul/cpu/mm_cpu.h"
#include "matmul/mm_half.h"

static int cpu_usable(int device)
{
    (void)device;
    return 1;
}

/* Panels as read (in_type) to what the multiply takes, in place when they are the same. */
static void to_kind(oc_mm_type in, oc_mm_kind kind, const void *src, void *dst, int64_t n)
{
    if (kind == OC_MM_KIND_F64 && in == OC_MM_INT8)
        for (int64_t i = 0; i < n; i++) ((double *)dst)[i] = ((const int8_t *)src)[i];
    else if (kind == OC_MM_KIND_F32 && in == OC_MM_FLOAT16)
        for (int64_t i = 0; i < n; i++) ((float *)dst)[i] = oc_mm_half_to_float(((const uint16_t *)src)[i]);
    else if (kind == OC_MM_KIND_F32 && in == OC_MM_BFLOAT16)
        for (int64_t i = 0; i < n; i++) ((float *)dst)[i] = oc_mm_bf16_to_float(((const uint16_t *)src)[i]);
}

/* The accumulator rounded to the result type (in place when they are the same). */
static void to_out(oc_mm_kind kind, oc_mm_type out, const void *acc, void *dst, int64_t n)
{
    if (kind == OC_MM_KIND_F64 && out == OC_MM_INT32) /* exact sums of int8 products */
        for (int64_t i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)((const double *)acc)[i];
    else if (out == OC_MM_FLOAT16)
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = oc_mm_float_to_half(((const float *)acc)[i]);
    else if (out == OC_MM_BFLOAT16)
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = oc_mm_float_to_bf16(((const float *)acc)[i]);
}

/* The panels a step multiplies: nbuf sets (2 when the next step's panels are read while
 * this one multiplies), each A buffer remembering which panel it holds. */
typedef struct cpu_buffers {
    int nbuf;
    void *a_in[2], *b_in[2], *a[2], *b[2], *acc, *out;
    int64_t a_key[2];
} cpu_buffers;

static void buffers_free(cpu_buffers *b)
{
    for (int i = 0; i < b->nbuf; i++) {
        if (b->a[i] != b->a_in[i]) free(b->a[i]);
        if (b->b[i] != b->b_in[i]) free(b->b[i]);
        free(b->a_in[i]);
        free(b->b_in[i]);
    }
    if (b->out != b->acc) free(b->out);
    free(b->acc);
}

static oc_status buffers_alloc(oc_context *ctx, const oc_matmul_job *job, const oc_mm_cpu_plan *p, cpu_buffers *b)
{
    const size_t in = oc_mm_type_size(job->in_type), mul = oc_mm_kind_size(p->kind);
    const size_t pa = (size_t)(p->tm * p->kp), pb = (size_t)(p->kp * p->tn), pc = (size_t)(p->tm * p->tn);
    memset(b, 0, sizeof *b);
    b->nbuf = p->read_ahead ? 2 : 1;
    int ok = 1;
    for (int i = 0; i < b->nbuf; i++) {
        b->a_key[i] = -1;
        b->a_in[i] = malloc(pa * in);
        b->b_in[i] = malloc(pb * in);
        b->a[i] = mul == in ? b->a_in[i] : malloc(pa * mul);
        b->b[i] = mul == in ? b->b_in[i] : malloc(pb * mul);
        ok = ok && b->a_in[i] && b->b_in[i] && b->a[i] && b->b[i];
    }
    b->acc = malloc(pc * oc_mm_acc_size(p->kind));
    b->out = oc_mm_out_separate(p->kind, job->out_type) ? malloc(pc * oc_mm_type_size(job->out_type)) : b->acc;
    if (!ok || !b->acc || !b->out) {
        buffers_free(b);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory: the product's panels and tile need %lld bytes",
                       (long long)p->need_bytes);
    }
    return OC_OK;
}

/* Rows of a panel read and converted, or of a tile rounded and written, per task of
 * oc_parallel_run: PIECE_BYTES of the panel or tile at least, so that a small one stays
 * one task. */
#define PIECE_BYTES (1 << 20)

typedef struct pieces {
    oc_matmul_job *job;
    const oc_mm_cpu_plan *p;
    int write;               /* 0: read a panel, 1: write a tile */
    oc_mm_operand which;     /* the panel's operand */
    int64_t row0, col0;      /* the panel's or tile's place */
    int64_t rows, cols, per; /* its shape, rows a task */
    int threads;             /* the threads it runs on */
    void *in, *conv;         /* read: as read, as multiplied; write: the accumulator, the result */
} pieces;

static oc_status piece_task(void *arg, int64_t task, int worker)
{
    (void)worker;
    const pieces *c = arg;
    oc_matmul_job *job = c->job;
    const int64_t r0 = task * c->per, n = c->rows - r0 < c->per ? c->rows - r0 : c->per, cells = r0 * c->cols;
    if (!c->write) {
        const size_t in = oc_mm_type_size(job->in_type), mul = oc_mm_kind_size(c->p->kind);
        char *src = (char *)c->in + (size_t)cells * in;
        OC_CHECK(job->ctx, job->read_panel(job, c->which, c->row0 + r0, n, c->col0, c->cols, src));
        to_kind(job->in_type, c->p->kind, src, (char *)c->conv + (size_t)cells * mul, n * c->cols);
        return OC_OK;
    }
    const size_t acc = oc_mm_acc_size(c->p->kind), out = oc_mm_type_size(job->out_type);
    char *dst = (char *)c->conv + (size_t)cells * out;
    to_out(c->p->kind, job->out_type, (const char *)c->in + (size_t)cells * acc, dst, n * c->cols);
    return job->write_tile(job, c->row0 + r0, n, c->col0, c->cols, dst, c->cols);
}

/* A panel or tile of rows x cols in pieces of rows on the plan's threads. */
static oc_status run_pieces(pieces *c, size_t row_bytes)
{
    const int64_t per = row_bytes ? (int64_t)(PIECE_BYTES / row_bytes) : c->rows;
    c->per = per < 1 ? 1 : per;
    const int64_t tasks = (c->rows + c->per - 1) / c->per;
    if (tasks <= 1) return tasks ? piece_task(c, 0, 0) : OC_OK;
    return oc_parallel_run(c->job->ctx, c->threads, tasks, piece_task, c, NULL, NULL, NULL);
}

static oc_status read_pieces(oc_matmul_job *job, const oc_mm_cpu_plan *p, int threads, oc_mm_operand which,
                             int64_t row0, int64_t rows, int64_t col0, int64_t cols, void *in, void *conv)
{
    pieces c = {.job = job,
                .p = p,
                .threads = threads,
                .which = which,
                .row0 = row0,
                .col0 = col0,
                .rows = rows,
                .cols = cols,
                .in = in,
                .conv = conv};
    return run_pieces(&c, (size_t)cols * oc_mm_type_size(job->in_type));
}

static oc_status write_pieces(oc_matmul_job *job, const oc_mm_cpu_plan *p, int64_t row0, int64_t rows, int64_t col0,
                              int64_t cols, void *acc, void *out)
{
    pieces c = {.job = job,
                .p = p,
                .write = 1,
                .row0 = row0,
                .col0 = col0,
                .rows = rows,
                .cols = cols,
                .in = acc,
                .conv = out,
                .threads = p->threads};
    return run_pieces(&c, (size_t)cols * oc_mm_acc_size(p->kind));
}

/* The upper triangle of acc[h x h] += a·aᵀ (a diagonal tile of A·Aᵀ: half the multiply-adds
 * of a gemm, and no B panel; write_tile reads only the upper triangle of such a tile). */
static void syrk_blas(const oc_mm_cpu_plan *p, int64_t h, int64_t kw, const void *a, void *acc, int first)
{
    if (p->kind == OC_MM_KIND_F64)
        p->blas.dsyrk(OC_CBLAS_ROW_MAJOR, OC_CBLAS_UPPER, OC_CBLAS_NO_TRANS, (int)h, (int)kw, 1.0, a, (int)kw,
                      first ? 0.0 : 1.0, acc, (int)h);
    else
        p->blas.ssyrk(OC_CBLAS_ROW_MAJOR, OC_CBLAS_UPPER, OC_CBLAS_NO_TRANS, (int)h, (int)kw, 1.0f, a, (int)kw,
                      first ? 0.0f : 1.0f, acc, (int)h);
}

static void gemm_blas(const oc_mm_cpu_plan *p, int64_t h, int64_t w, int64_t kw, const void *a, const void *b,
                      void *acc, int first)
{
    if (p->kind == OC_MM_KIND_F64)
        p->blas.dgemm(OC_CBLAS_ROW_MAJOR, OC_CBLAS_NO_TRANS, OC_CBLAS_NO_TRANS, (int)h, (int)w, (int)kw, 1.0, a,
                      (int)kw, b, (int)w, first ? 0.0 : 1.0, acc, (int)w);
    else
        p->blas.sgemm(OC_CBLAS_ROW_MAJOR, OC_CBLAS_NO_TRANS, OC_CBLAS_NO_TRANS, (int)h, (int)w, (int)kw, 1.0f, a,
                      (int)kw, b, (int)w, first ? 0.0f : 1.0f, acc, (int)w);
}

/* A step: K panel q of tile (ti, tj), and the buffers its panels are in. */
typedef struct step {
    int64_t ti, tj, q;
    int64_t i0, j0, h, w, k0, kw; /* the tile's place and shape, the panel's */
    int syrk;                     /* a diagonal tile of A·Aᵀ: no B panel */
    int ai, bi;                   /* its A and B buffers */
} step;

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* The multiply-adds of tile (ti, tj): what progress counts. */
static double tile_macs(const oc_matmul_job *job, const oc_mm_cpu_plan *p, int64_t ti, int64_t tj)
{
    return (double)min64(job->m - ti * p->tm, p->tm) * (double)min64(job->n - tj * p->tn, p->tn) * (double)job->k;
}

/* The step after *s (the first when s->ti < 0) in the order tiles row by row (the upper ones
 * for A·Aᵀ), K panels in order; tiles in the result already are skipped, their multiply-adds
 * added to *done. 0 when there is none. */
static int next_step(const oc_matmul_job *job, const oc_mm_cpu_plan *p, step *s, double *done)
{
    int64_t ti = s->ti, tj = s->tj, q = s->q + 1;
    if (ti < 0) ti = 0, tj = 0, q = 0;
    else if (q >= p->panels) q = 0, ++tj;
    for (;; q = 0, ++tj) {
        if (tj >= p->tiles_n) ti++, tj = job->symmetric ? ti : 0;
        if (ti >= p->tiles_m) return 0;
        if (q > 0 || !job->tile_done || !job->tile_done(job, ti * p->tm, tj * p->tn)) break;
        *done += tile_macs(job, p, ti, tj); /* in the result from an earlier run */
    }
    const int blas = p->blas.sgemm && p->kind != OC_MM_KIND_I8;
    s->ti = ti, s->tj = tj, s->q = q;
    s->i0 = ti * p->tm, s->j0 = tj * p->tn;
    s->h = min64(job->m - s->i0, p->tm), s->w = min64(job->n - s->j0, p->tn);
    s->k0 = q * p->kp, s->kw = min64(job->k - s->k0, p->kp);
    /* A diagonal tile of A·Aᵀ (square: the plan's tiles are) by syrk, its lower triangle
     * zeroed once so that every element stays a number. */
    s->syrk = blas && p->blas.ssyrk && job->symmetric && ti == tj && s->h == s->w;
    return 1;
}

/* Step s's panels into its buffers on `threads` threads: the A panel unless its buffer holds
 * it already (a row of tiles with one K panel reads A once), the B panel. */
static oc_status read_step(oc_matmul_job *job, const oc_mm_cpu_plan *p, cpu_buffers *bf, const step *s, int threads)
{
    const int64_t key = s->ti * p->panels + s->q;
    if (bf->a_key[s->ai] != key) {
        bf->a_key[s->ai] = -1; /* a failed read leaves it partly overwritten */
        OC_CHECK(job->ctx,
                 read_pieces(job, p, threads, OC_MM_A, s->i0, s->h, s->k0, s->kw, bf->a_in[s->ai], bf->a[s->ai]));
        bf->a_key[s->ai] = key;
    }
    if (s->syrk) return OC_OK;
    return read_pieces(job, p, threads, OC_MM_B, s->k0, s->kw, s->j0, s->w, bf->b_in[s->bi], bf->b[s->bi]);
}

/* The buffers of the step after `cur`: the A buffer cur uses when it holds the next A panel
 * already, else the other one; the other B buffer (one set of each without read-ahead). */
static void pick_buffers(const oc_mm_cpu_plan *p, const cpu_buffers *bf, const step *cur, step *next)
{
    const int64_t key = next->ti * p->panels + next->q;
    next->ai = bf->a_key[cur->ai] == key ? cur->ai : (cur->ai + 1) % bf->nbuf;
    next->bi = (cur->bi + 1) % bf->nbuf;
}

/* Step s's product into the accumulator (beta 0 on the tile's first panel). */
static oc_status multiply_step(oc_matmul_job *job, const oc_mm_cpu_plan *p, cpu_buffers *bf, const step *s, int blas)
{
    const void *a = bf->a[s->ai], *b = bf->b[s->bi];
    if (s->syrk) {
        syrk_blas(p, s->h, s->kw, a, bf->acc, s->q == 0);
        return OC_OK;
    }
    if (blas) {
        gemm_blas(p, s->h, s->w, s->kw, a, b, bf->acc, s->q == 0);
        return OC_OK;
    }
    return oc_mm_ref_gemm(job->ctx, p->kind, p->threads, s->h, s->w, s->kw, a, b, bf->acc);
}

/* The read-ahead: the next step's panels read on a thread of their own while the BLAS
 * multiplies the current one. */
typedef struct ahead {
    oc_matmul_job *job;
    const oc_mm_cpu_plan *p;
    cpu_buffers *bf;
    step s;
    oc_status st;
    pthread_t thread;
    int running;
} ahead;

static void *ahead_main(void *arg)
{
    ahead *r = arg;
    r->st = read_step(r->job, r->p, r->bf, &r->s, r->p->read_threads);
    return NULL;
}

/* The read of s begun: on the read-ahead's thread, or here and now when there is none (or
 * it cannot start). */
static oc_status ahead_start(ahead *r, const step *s)
{
    r->s = *s;
    r->st = OC_OK;
    if (r->p->read_ahead && pthread_create(&r->thread, NULL, ahead_main, r) == 0) {
        r->running = 1;
        return OC_OK;
    }
    return read_step(r->job, r->p, r->bf, s, r->p->threads);
}

static oc_status ahead_wait(ahead *r)
{
    if (!r->running) return OC_OK;
    pthread_join(r->thread, NULL);
    r->running = 0;
    return r->st;
}

static oc_status run_steps(oc_matmul_job *job, const oc_mm_cpu_plan *p, cpu_buffers *bf, double total)
{
    oc_context *ctx = job->ctx;
    const size_t acc_elem = oc_mm_acc_size(p->kind);
    const int blas = p->blas.sgemm && p->kind != OC_MM_KIND_I8;
    double done = 0;
    step cur = {.ti = -1}, next;
    if (!next_step(job, p, &cur, &done)) return OC_OK;
    cur.ai = cur.bi = 0;
    /* The first panels on every thread: nothing else runs yet. */
    OC_CHECK(ctx, read_step(job, p, bf, &cur, p->threads));
    ahead r = {.job = job, .p = p, .bf = bf};
    oc_status st = OC_OK;
    for (int more = 1; more && st == OC_OK;) {
        next = cur;
        more = next_step(job, p, &next, &done);
        /* With read-ahead the next panels go into the buffers this step leaves alone, beside
         * its product; without, they are read after it into the same ones. */
        if (more) pick_buffers(p, bf, &cur, &next);
        if (more && p->read_ahead && (st = ahead_start(&r, &next)) != OC_OK) break;
        if (cur.q == 0 && (!blas || cur.syrk || job->k == 0)) memset(bf->acc, 0, (size_t)(cur.h * cur.w) * acc_elem);
        if (job->k > 0) st = multiply_step(job, p, bf, &cur, blas);
        done += (double)cur.h * (double)cur.w * (double)cur.kw;
        if (st == OC_OK && job->progress) job->progress(job->progress_user, done, total);
        if (st == OC_OK && oc_cancelled(ctx))
            st = oc_fail(ctx, OC_ERR_CANCELLED, "cancelled after %.0f of %.0f multiply-adds", done, total);
        if (st == OC_OK && cur.q + 1 >= p->panels) {
            st = write_pieces(job, p, cur.i0, cur.h, cur.j0, cur.w, bf->acc, bf->out);
            if (st == OC_OK) job->stats.tiles++;
        }
        const oc_status read = ahead_wait(&r);
        if (st == OC_OK) st = read;
        if (st == OC_OK && more && !p->read_ahead) st = ahead_start(&r, &next);
        cur = next;
    }
    return st;
}

static oc_status cpu_run(oc_matmul_job *job)
{
    oc_context *ctx = job->ctx;
    const double start = oc_now();
    oc_mm_cpu_plan p;
    OC_CHECK(ctx, oc_mm_cpu_plan_make(job, &p));
    snprintf(job->stats.backend, sizeof job->stats.backend, "cpu/%s", p.blas.name);
    job->stats.peak_host_bytes = p.need_bytes;
    if (job->m == 0 || job->n == 0) return OC_OK;
    if (p.blas.set_threads) p.blas.set_threads(p.blas_threads);
    cpu_buffers bf;
    OC_CHECK(ctx, buffers_alloc(ctx, job, &p, &bf));
    double total = 0;
    for (int64_t ti = 0; ti < p.tiles_m; ti++)
        for (int64_t tj = job->symmetric ? ti : 0; tj < p.tiles_n; tj++) total += tile_macs(job, &p, ti, tj);
    oc_status st = OC_OK;
    if (job->plan_tiles) {
        char how[160];
        snprintf(how, sizeof how, "cpu/%s %s", p.blas.name, oc_mm_cpu_kind_text(&p));
        st = job->plan_tiles(job, p.tm, p.tn, p.kp, how);
    }
    if (st == OC_OK) st = run_steps(job, &p, &bf, total);
    buffers_free(&bf);
    job->stats.seconds = oc_now() - start;
    if (st != OC_OK) return oc_trace_at(ctx, st, __FILE__, __LINE__);
    return OC_OK;
}

static oc_status cpu_plan(oc_matmul_job *job, int json, char **out)
{
    oc_context *ctx = job->ctx;
    OC_CHECK(ctx, oc_mm_cpu_plan_text(job, json, out));
    return OC_OK;
}

static int cpu_library(char *name, size_t size)
{
    oc_mm_blas blas;
    char why[320];
    const int tuned = oc_mm_blas_load(&blas, why, sizeof why) == 0 && blas.sgemm != NULL;
    snprintf(name, size, "%s", blas.name[0] ? blas.name : "reference");
    return tuned;
}

/* float64 for float64 and int8 (multiplied as float64 here), float32 for the others. */
static double cpu_gemm_rate(oc_mm_type in, int tf32, int threads)
{
    (void)tf32;
    oc_mm_blas blas;
    char why[320];
    const int f32 = in != OC_MM_FLOAT64 && in != OC_MM_INT8;
    return oc_mm_blas_load(&blas, why, sizeof why) == 0 ? oc_mm_blas_gemm_rate(&blas, f32, threads) : 0;
}

const oc_mm_backend oc_mm_backend_cpu = {"cpu", cpu_usable, cpu_run, cpu_plan, cpu_library, cpu_gemm_rate};
