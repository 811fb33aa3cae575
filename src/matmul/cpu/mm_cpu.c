/*
 * mm_cpu.c - the CPU backend of the product (oc_mm_backend_cpu): tiles of C one after the
 * other, each from K panels of op(A) and op(B) multiplied by the BLAS on all threads (or
 * the reference loops), the accumulator rounded once to the result type. The panels are
 * read and converted, and the tile rounded and written, in pieces of rows on every thread:
 * on one thread they held a BLAS on many cores up (bench/RESULTS.md, "matmul on the CPU
 * on 16 cores"). What the plan uses in place is neither read nor written: the BLAS reads
 * those panels and accumulates those tiles where they lie.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/threads.h"
#include "core/trace.h"
#include "matmul/cpu/mm_cpu.h"
#include "io/sysio.h"
#include "matmul/matmul_dtype.h"
#include "matmul/mm_half.h"
#include "matmul/mm_half_run.h"

static int cpu_usable(int device, char *why, size_t why_size)
{
    (void)device, (void)why, (void)why_size;
    return 1;
}

/* Panels as read (in_type) to what the multiply takes, in place when they are the same. */
static void to_kind(oc_mm_type in, oc_mm_kind kind, const void *src, void *dst, int64_t n)
{
    if (kind == OC_MM_KIND_F64 && in == OC_MM_INT8)
        for (int64_t i = 0; i < n; i++) ((double *)dst)[i] = ((const int8_t *)src)[i];
    else if (kind == OC_MM_KIND_F32 && in == OC_MM_INT8)
        for (int64_t i = 0; i < n; i++) ((float *)dst)[i] = ((const int8_t *)src)[i];
    else if (kind == OC_MM_KIND_F32 && in == OC_MM_FLOAT16) oc_mm_half_runs_best()->to_float(src, n, dst);
    else if (kind == OC_MM_KIND_F32 && in == OC_MM_BFLOAT16)
        for (int64_t i = 0; i < n; i++) ((float *)dst)[i] = oc_mm_bf16_to_float(((const uint16_t *)src)[i]);
}

/* The accumulator rounded to the result type (in place when they are the same). */
static void to_out(oc_mm_kind kind, oc_mm_type out, const void *acc, void *dst, int64_t n)
{
    if (kind == OC_MM_KIND_F64 && out == OC_MM_INT32) /* exact sums of int8 products */
        for (int64_t i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)((const double *)acc)[i];
    else if (kind == OC_MM_KIND_F32 && out == OC_MM_INT32) /* the same, k <= OC_MM_INT8_F32_K_MAX */
        for (int64_t i = 0; i < n; i++) ((int32_t *)dst)[i] = (int32_t)((const float *)acc)[i];
    else if (out == OC_MM_BOOL && kind == OC_MM_KIND_I8) /* bool x bool: any of the ANDs */
        for (int64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = ((const int32_t *)acc)[i] != 0;
    else if (out == OC_MM_BOOL && kind == OC_MM_KIND_F32) /* sums of products of 0 and 1 */
        for (int64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = ((const float *)acc)[i] != 0;
    else if (out == OC_MM_BOOL)
        for (int64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = ((const double *)acc)[i] != 0;
    else if (out == OC_MM_FLOAT16) oc_mm_half_runs_best()->to_half(acc, n, dst);
    else if (out == OC_MM_BFLOAT16)
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = oc_mm_float_to_bf16(((const float *)acc)[i]);
}

typedef struct cpu_buffers {
    void *a_in, *b_in, *a, *b, *acc, *out;
} cpu_buffers;

static void buffers_free(cpu_buffers *b)
{
    if (b->a != b->a_in) free(b->a);
    if (b->b != b->b_in) free(b->b);
    if (b->out != b->acc) free(b->out);
    free(b->a_in);
    free(b->b_in);
    free(b->acc);
}

/* The buffers of what the plan does not use in place. */
static oc_status buffers_alloc(oc_context *ctx, const oc_matmul_job *job, const oc_mm_cpu_plan *p, cpu_buffers *b)
{
    const size_t in = oc_mm_type_size(job->in_type), mul = oc_mm_kind_size(p->kind);
    const size_t pa = (size_t)(p->tm * p->kp), pb = (size_t)(p->kp * p->tn), pc = (size_t)(p->tm * p->tn);
    memset(b, 0, sizeof *b);
    int failed = 0;
    if (!p->in_place[OC_MM_A]) {
        b->a_in = malloc(pa * in);
        b->a = mul == in ? b->a_in : malloc(pa * mul);
        failed |= !b->a_in || !b->a;
    }
    if (!p->in_place[OC_MM_B]) {
        b->b_in = malloc(pb * in);
        b->b = mul == in ? b->b_in : malloc(pb * mul);
        failed |= !b->b_in || !b->b;
    }
    if (!p->in_place[2]) {
        b->acc = malloc(pc * oc_mm_acc_size(p->kind));
        b->out = oc_mm_out_separate(p->kind, job->out_type) ? malloc(pc * oc_mm_type_size(job->out_type)) : b->acc;
        failed |= !b->acc || !b->out;
    }
    if (failed) {
        buffers_free(b);
        const int64_t limit = oc_address_space_limit();
        if (limit >= 0)
            return oc_fail(ctx, OC_ERR_NO_MEMORY,
                           "out of memory: the product's panels and tile need %lld bytes, past what the address space "
                           "limit (ulimit -v, %lld bytes) leaves; raise ulimit -v or give a smaller --host-mem",
                           (long long)p->need_bytes, (long long)limit);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory: the product's panels and tile need %lld bytes",
                       (long long)p->need_bytes);
    }
    return OC_OK;
}

/* Rows of a panel read and converted, or of a tile rounded and written, per task of
 * oc_parallel_run: PIECE_BYTES of the panel or tile at least, so that a small one stays
 * one task. An A·Aᵀ tile is written in square blocks of BLOCK_ROW_BYTES a row: a block's
 * rows and its mirror's rows are then runs of that length, where a piece of rows would write
 * a narrow strip into every mirror row beside every other piece (and a piece of columns the
 * same into every row). */
#define PIECE_BYTES (1 << 20)
#define BLOCK_ROW_BYTES 4096

typedef enum piece_kind {
    PIECE_READ,       /* rows of a panel read and converted to the multiply's type */
    PIECE_WRITE,      /* rows of a tile rounded and written */
    PIECE_ROUND,      /* rows of a tile rounded only */
    PIECE_WRITE_BLOCK /* a square block of a rounded A·Aᵀ tile written, with its mirror */
} piece_kind;

typedef struct pieces {
    oc_matmul_job *job;
    const oc_mm_cpu_plan *p;
    piece_kind kind;
    oc_mm_operand which;     /* the panel's operand */
    int64_t row0, col0;      /* the panel's or tile's place */
    int64_t rows, cols, per; /* its shape, rows a task (a block's edge) */
    void *in, *conv;         /* read: as read, as multiplied; write: the accumulator, the result */
} pieces;

static oc_status piece_task(void *arg, int64_t task, int worker)
{
    (void)worker;
    const pieces *c = arg;
    oc_matmul_job *job = c->job;
    if (c->kind == PIECE_WRITE_BLOCK) {
        const int64_t across = (c->cols + c->per - 1) / c->per, r0 = task / across * c->per,
                      c0 = task % across * c->per, nr = c->rows - r0 < c->per ? c->rows - r0 : c->per,
                      nc = c->cols - c0 < c->per ? c->cols - c0 : c->per;
        const size_t out = oc_mm_type_size(job->out_type);
        return job->write_tile(job, c->row0 + r0, nr, c->col0 + c0, nc,
                               (const char *)c->conv + (size_t)(r0 * c->cols + c0) * out, c->cols);
    }
    const int64_t r0 = task * c->per, n = c->rows - r0 < c->per ? c->rows - r0 : c->per, cells = r0 * c->cols;
    if (c->kind == PIECE_READ) {
        const size_t in = oc_mm_type_size(job->in_type), mul = oc_mm_kind_size(c->p->kind);
        char *src = (char *)c->in + (size_t)cells * in;
        OC_CHECK(job->ctx, job->read_panel(job, c->which, c->row0 + r0, n, c->col0, c->cols, src));
        to_kind(job->in_type, c->p->kind, src, (char *)c->conv + (size_t)cells * mul, n * c->cols);
        return OC_OK;
    }
    const size_t acc = oc_mm_acc_size(c->p->kind), out = oc_mm_type_size(job->out_type);
    char *dst = (char *)c->conv + (size_t)cells * out;
    to_out(c->p->kind, job->out_type, (const char *)c->in + (size_t)cells * acc, dst, n * c->cols);
    return c->kind == PIECE_WRITE ? job->write_tile(job, c->row0 + r0, n, c->col0, c->cols, dst, c->cols) : OC_OK;
}

/* A panel or tile of rows x cols in pieces of rows of row_bytes each (an A·Aᵀ tile's write:
 * in square blocks) on the plan's threads. */
static oc_status run_pieces(pieces *c, size_t row_bytes)
{
    int64_t tasks;
    if (c->kind == PIECE_WRITE_BLOCK) {
        const int64_t edge = BLOCK_ROW_BYTES / (int64_t)oc_mm_type_size(c->job->out_type);
        c->per = edge < 1 ? 1 : edge;
        tasks = ((c->rows + c->per - 1) / c->per) * ((c->cols + c->per - 1) / c->per);
    } else {
        const int64_t per = row_bytes ? (int64_t)(PIECE_BYTES / row_bytes) : c->rows;
        c->per = per < 1 ? 1 : per;
        tasks = (c->rows + c->per - 1) / c->per;
    }
    if (tasks <= 1) return tasks ? piece_task(c, 0, 0) : OC_OK;
    return oc_parallel_run(c->job->ctx, c->p->threads, tasks, piece_task, c, NULL, NULL);
}

static oc_status read_pieces(oc_matmul_job *job, const oc_mm_cpu_plan *p, oc_mm_operand which, int64_t row0,
                             int64_t rows, int64_t col0, int64_t cols, void *in, void *conv)
{
    pieces c = {.job = job,
                .p = p,
                .kind = PIECE_READ,
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
                .kind = job->symmetric ? PIECE_ROUND : PIECE_WRITE,
                .row0 = row0,
                .col0 = col0,
                .rows = rows,
                .cols = cols,
                .in = acc,
                .conv = out};
    if (!job->symmetric || out != acc) OC_CHECK(job->ctx, run_pieces(&c, (size_t)cols * oc_mm_acc_size(p->kind)));
    if (!job->symmetric) return OC_OK;
    c.kind = PIECE_WRITE_BLOCK;
    return run_pieces(&c, 0);
}

/* CBLAS's flag for an operand: transposed where the plan reads it in place transposed (its
 * panel then lies as the transpose of the panel the product takes). */
static int trans_flag(const oc_mm_cpu_plan *p, oc_mm_operand which)
{
    return p->transposed[which] ? OC_CBLAS_TRANS : OC_CBLAS_NO_TRANS;
}

/* The upper triangle of acc[h x h] += op(a)·op(a)ᵀ (a diagonal tile of A·Aᵀ: half the
 * multiply-adds of a gemm, and no B panel; write_tile reads only the upper triangle of such
 * a tile). */
static void syrk_blas(const oc_mm_cpu_plan *p, int ta, int64_t h, int64_t kw, const void *a, int64_t lda, void *acc,
                      int64_t ldc, int first)
{
    oc_mm_blas_call_begin();
    if (p->kind == OC_MM_KIND_F64)
        p->blas.dsyrk(OC_CBLAS_ROW_MAJOR, OC_CBLAS_UPPER, ta, (int)h, (int)kw, 1.0, a, (int)lda, first ? 0.0 : 1.0, acc,
                      (int)ldc);
    else
        p->blas.ssyrk(OC_CBLAS_ROW_MAJOR, OC_CBLAS_UPPER, ta, (int)h, (int)kw, 1.0f, a, (int)lda, first ? 0.0f : 1.0f,
                      acc, (int)ldc);
    oc_mm_blas_call_end();
}

static void gemm_blas(const oc_mm_cpu_plan *p, int ta, int tb, int64_t h, int64_t w, int64_t kw, const void *a,
                      int64_t lda, const void *b, int64_t ldb, void *acc, int64_t ldc, int first)
{
    oc_mm_blas_call_begin();
    if (p->kind == OC_MM_KIND_F64)
        p->blas.dgemm(OC_CBLAS_ROW_MAJOR, ta, tb, (int)h, (int)w, (int)kw, 1.0, a, (int)lda, b, (int)ldb,
                      first ? 0.0 : 1.0, acc, (int)ldc);
    else
        p->blas.sgemm(OC_CBLAS_ROW_MAJOR, ta, tb, (int)h, (int)w, (int)kw, 1.0f, a, (int)lda, b, (int)ldb,
                      first ? 0.0f : 1.0f, acc, (int)ldc);
    oc_mm_blas_call_end();
}

/* Row r of op(X) for a panel x with ld elements between its stored rows: a stored row, or
 * a stored column where the panel lies transposed (flag OC_CBLAS_TRANS). */
static const void *op_row(const void *x, int flag, int64_t r, int64_t ld, size_t elem)
{
    return (const char *)x + (size_t)(flag == OC_CBLAS_TRANS ? r : r * ld) * elem;
}

/* Rows of a tile per BLAS call: about 2^35 multiply-adds each (a second or two on two
 * cores), and at least 2048 rows, so that a cancel, checked between calls, stops a tile that
 * is the whole product (the one tile of a product that fits) within moments, while the BLAS
 * runs as fast as on the whole tile (shorter bands ran slower: each call packs all of B
 * again). */
static int64_t band_rows(int64_t h, int64_t w, int64_t kw)
{
    const double per_row = (double)w * (double)kw;
    int64_t band = per_row > 0 ? (int64_t)((double)(1LL << 35) / per_row) : h;
    if (band < 2048) band = 2048;
    return band < h ? band : h;
}

/* The product's progress: multiply-adds done of total, reported on one pace (about ten
 * times a second, however short the bands and panels between two looks at it). */
typedef struct cpu_progress {
    double done, total;
    oc_progress_pace pace;
} cpu_progress;

/* Progress reported when due (`last`: the final report), then a cancel honoured, the
 * callback's own included. */
static oc_status report_progress(oc_matmul_job *job, cpu_progress *pr, int last)
{
    oc_progress_report(&pr->pace, pr->done, pr->total, last);
    if (oc_cancelled(job->ctx))
        return oc_fail(job->ctx, OC_ERR_CANCELLED, "cancelled after %.0f of %.0f multiply-adds", pr->done, pr->total);
    return OC_OK;
}

/* acc (h x w, ldc) += op(a)·op(b) over one K panel of depth kw (first: acc = the product),
 * by the BLAS in bands of rows; on a diagonal tile of A·Aᵀ (syrk) the upper triangle of
 * op(a)·op(a)ᵀ, each band's diagonal block by syrk and the rest of its rows by gemm. Between
 * bands the progress is reported when due and a cancel honoured. */
static oc_status multiply_bands(oc_matmul_job *job, const oc_mm_cpu_plan *p, int syrk, int64_t h, int64_t w, int64_t kw,
                                const void *a, int64_t lda, const void *b, int64_t ldb, void *acc, int64_t ldc,
                                int first, cpu_progress *pr)
{
    const size_t elem = oc_mm_kind_size(p->kind), acc_elem = oc_mm_acc_size(p->kind);
    const int ta = trans_flag(p, OC_MM_A), tb = trans_flag(p, OC_MM_B);
    const int64_t band = band_rows(h, w, kw);
    for (int64_t r = 0; r < h; r += band) {
        const int64_t hb = h - r < band ? h - r : band;
        char *c = (char *)acc + (size_t)(r * ldc) * acc_elem;
        if (syrk) {
            /* rows r..r+hb of the upper triangle: their diagonal block, then the columns
             * right of it, op(a)[r..r+hb)·op(a)[r+hb..h)ᵀ */
            syrk_blas(p, ta, hb, kw, op_row(a, ta, r, lda, elem), lda, c + (size_t)r * acc_elem, ldc, first);
            if (r + hb < h)
                gemm_blas(p, ta, ta == OC_CBLAS_TRANS ? OC_CBLAS_NO_TRANS : OC_CBLAS_TRANS, hb, h - r - hb, kw,
                          op_row(a, ta, r, lda, elem), lda, op_row(a, ta, r + hb, lda, elem), lda,
                          c + (size_t)(r + hb) * acc_elem, ldc, first);
            pr->done += (double)hb * (double)(h - r) * (double)kw;
        } else {
            gemm_blas(p, ta, tb, hb, w, kw, op_row(a, ta, r, lda, elem), lda, b, ldb, c, ldc, first);
            pr->done += (double)hb * (double)w * (double)kw;
        }
        OC_CHECK(job->ctx, report_progress(job, pr, 0));
    }
    return OC_OK;
}

/* A panel where it lies (the plan's in_place: the caller's memory or a mapped input, in the
 * multiply's type; transposed where the plan says so), with its elements between rows in *ld. */
static const void *panel_in_place(oc_matmul_job *job, const oc_mm_cpu_plan *p, oc_mm_operand which, int64_t row0,
                                  int64_t col0, int64_t rows, int64_t cols, int64_t *ld)
{
    const void *at = p->transposed[which] ? job->transposed_memory(job, which, row0, col0, ld)
                                          : job->panel_memory(job, which, row0, col0, ld);
    if (at) job->stats.bytes_straight += rows * cols * (int64_t)oc_mm_type_size(job->in_type);
    return at;
}

/* Where the run's time goes, summed over its tiles: what OUTCORE_TRACE prints at its end. */
typedef struct cpu_spans {
    double read, multiply, write;
} cpu_spans;

/* Adds the seconds since *t to *span and sets *t to now. */
static void span_add(double *span, double *t)
{
    const double now = oc_now();
    *span += now - *t;
    *t = now;
}

/* One tile: K panels into the accumulator, rounded, written. *a_key says which A panel
 * buffer a holds (rows ti, panel) so that a row of tiles with one K panel reads A once.
 * Panels and tiles in place (the plan's in_place) are multiplied and accumulated where they
 * lie. */
static oc_status run_tile(oc_matmul_job *job, const oc_mm_cpu_plan *p, cpu_buffers *bf, int64_t ti, int64_t tj,
                          int64_t *a_key, cpu_progress *pr, cpu_spans *spans)
{
    oc_context *ctx = job->ctx;
    double t = oc_now();
    const int64_t i0 = ti * p->tm, j0 = tj * p->tn;
    const int64_t h = job->m - i0 < p->tm ? job->m - i0 : p->tm, w = job->n - j0 < p->tn ? job->n - j0 : p->tn;
    const size_t acc_elem = oc_mm_acc_size(p->kind);
    const int blas = p->blas.sgemm && p->kind != OC_MM_KIND_I8;
    /* A diagonal tile of A·Aᵀ (square: the plan's tiles are) by syrk, its lower triangle
     * zeroed once so that every element stays a number. */
    const int syrk = blas && p->blas.ssyrk && job->symmetric && ti == tj && h == w;
    int64_t ldc = w;
    void *acc = p->in_place[2] ? job->tile_memory(job, i0, j0, &ldc) : bf->acc;
    if (!acc) return oc_fail(ctx, OC_ERR_INTERNAL, "matmul: a tile planned in its place has none");
    if (p->in_place[2] && job->tile_ready) OC_CHECK(ctx, job->tile_ready(job, i0, h));
    if (!blas || syrk || job->k == 0) memset(acc, 0, (size_t)(h * w) * acc_elem); /* never in place */
    span_add(&spans->write, &t); /* a tile in the output's mapping is first touched here */
    for (int64_t q = 0; q < p->panels; q++) {
        const int64_t k0 = q * p->kp, kw = job->k - k0 < p->kp ? job->k - k0 : p->kp;
        const int64_t key = ti * p->panels + q;
        int64_t lda = kw, ldb = w;
        const void *a = bf->a, *b = bf->b;
        if (p->in_place[OC_MM_A]) {
            a = panel_in_place(job, p, OC_MM_A, i0, k0, h, kw, &lda);
        } else if (*a_key != key) {
            *a_key = -1; /* a failed read leaves it partly overwritten */
            OC_CHECK(ctx, read_pieces(job, p, OC_MM_A, i0, h, k0, kw, bf->a_in, bf->a));
            *a_key = key;
        }
        if (!a) return oc_fail(ctx, OC_ERR_INTERNAL, "matmul: a panel of A planned in place is not in memory");
        if (!syrk) {
            if (p->in_place[OC_MM_B]) b = panel_in_place(job, p, OC_MM_B, k0, j0, kw, w, &ldb);
            else OC_CHECK(ctx, read_pieces(job, p, OC_MM_B, k0, kw, j0, w, bf->b_in, bf->b));
            if (!b) return oc_fail(ctx, OC_ERR_INTERNAL, "matmul: a panel of B planned in place is not in memory");
        }
        span_add(&spans->read, &t);
        if (blas) {
            /* a diagonal tile's syrk counts its upper triangle; the tile counts h·w for progress */
            const double before = pr->done;
            OC_CHECK(ctx, multiply_bands(job, p, syrk, h, w, kw, a, lda, b, ldb, acc, ldc, q == 0, pr));
            pr->done = before + (double)h * (double)w * (double)kw;
        } else {
            OC_CHECK(ctx, oc_mm_ref_gemm(ctx, p->kind, p->threads, h, w, kw, bf->a, bf->b, bf->acc));
            pr->done += (double)h * (double)w * (double)kw;
        }
        span_add(&spans->multiply, &t);
        OC_CHECK(ctx, report_progress(job, pr, 0));
    }
    if (p->in_place[2]) OC_CHECK(ctx, job->write_tile(job, i0, h, j0, w, acc, ldc)); /* records it */
    else OC_CHECK(ctx, write_pieces(job, p, i0, h, j0, w, bf->acc, bf->out));
    span_add(&spans->write, &t);
    job->stats.tiles++;
    return OC_OK;
}

/* The multiply-adds of tile (ti, tj): what progress counts. */
static double tile_macs(const oc_matmul_job *job, const oc_mm_cpu_plan *p, int64_t ti, int64_t tj)
{
    return (double)(job->m - ti * p->tm < p->tm ? job->m - ti * p->tm : p->tm) *
           (double)(job->n - tj * p->tn < p->tn ? job->n - tj * p->tn : p->tn) * (double)job->k;
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
    char why[512];
    if (p.blas.sgemm && p.kind != OC_MM_KIND_I8 && oc_mm_blas_room(&p.blas, p.threads, why, sizeof why) != 0)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "matmul on the CPU: %s", why);
    if (p.blas.set_threads) {
        oc_mm_blas_call_begin();
        p.blas.set_threads(p.threads);
        oc_mm_blas_call_end();
    }
    cpu_buffers bf;
    OC_CHECK(ctx, buffers_alloc(ctx, job, &p, &bf));
    cpu_progress pr = {.pace = oc_progress_pace_start(job->progress, job->progress_user)};
    for (int64_t ti = 0; ti < p.tiles_m; ti++)
        for (int64_t tj = job->symmetric ? ti : 0; tj < p.tiles_n; tj++) pr.total += tile_macs(job, &p, ti, tj);
    int64_t a_key = -1;
    cpu_spans spans = {0, 0, 0};
    oc_status st = OC_OK;
    if (job->plan_tiles) {
        /* A BLAS's float result may change with its thread count (OpenBLAS's does): then the
         * count is part of the plan a resumed run must repeat. int8 (exact in either) and the
         * reference loops (each element summed in k order) give the same bytes on any. */
        char how[160];
        if (p.blas.sgemm && job->in_type != OC_MM_INT8)
            snprintf(how, sizeof how, "cpu/%s %s, %d thread%s", p.blas.name, oc_mm_cpu_kind_text(&p), p.threads,
                     p.threads == 1 ? "" : "s");
        else snprintf(how, sizeof how, "cpu/%s %s", p.blas.name, oc_mm_cpu_kind_text(&p));
        st = job->plan_tiles(job, p.tm, p.tn, p.kp, how);
    }
    for (int64_t ti = 0; ti < p.tiles_m && st == OC_OK; ti++)
        for (int64_t tj = job->symmetric ? ti : 0; tj < p.tiles_n && st == OC_OK; tj++) {
            if (job->tile_done && job->tile_done(job, ti * p.tm, tj * p.tn)) {
                /* In the result from an earlier run: counted as done. */
                pr.done += tile_macs(job, &p, ti, tj);
                continue;
            }
            st = run_tile(job, &p, &bf, ti, tj, &a_key, &pr, &spans);
        }
    if (st == OC_OK) st = report_progress(job, &pr, 1);
    buffers_free(&bf);
    if (st == OC_OK && job->stats.tiles > 0 && p.kind != OC_MM_KIND_I8) oc_mm_blas_ran(&p.blas, p.threads);
    if (oc_tracing()) {
        const char *what[] = {"panels read", "multiplied", "tiles written"};
        const double secs[] = {spans.read, spans.multiply, spans.write};
        for (int i = 0; i < 3; i++) fprintf(stderr, "outcore matmul cpu: %-12s %10.6f s\n", what[i], secs[i]);
    }
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

/* float64 for float64 and int8 (as float64: past OC_MM_INT8_F32_K_MAX it is multiplied so),
 * float32 for the others. */
static double cpu_gemm_rate(oc_mm_type in, int tf32, int threads, int64_t room)
{
    (void)tf32;
    oc_mm_blas blas;
    char why[320];
    const int f32 = in != OC_MM_FLOAT64 && in != OC_MM_INT8;
    return oc_mm_blas_load(&blas, why, sizeof why) == 0 ? oc_mm_blas_gemm_rate(&blas, f32, threads, room) : 0;
}

const oc_mm_backend oc_mm_backend_cpu = {"cpu", cpu_usable, cpu_run, cpu_plan, cpu_library, cpu_gemm_rate};
