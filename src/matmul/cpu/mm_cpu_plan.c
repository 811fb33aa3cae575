/*
 * mm_cpu_plan.c - the tile and K panel of the CPU product under the host budget, and the
 * plan as text (--plan).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/text_buf.h"
#include "core/threads.h"
#include "matmul/cpu/mm_cpu.h"
#include "matmul/matmul_dtype.h"

/* The largest tile edge of a tile accumulated in a buffer: past it a tile gains little GEMM
 * rate, and a product of one tile reads its panels, multiplies and writes with nothing beside
 * each (bench/RESULTS.md, "The CPU plan under a host budget": one tile of 6144 ran slower than
 * four of 4096). A tile accumulated in its place in C has nothing to write: it may be C whole
 * (TILE_WHOLE, at most what CBLAS's int dimensions take) where the budget holds it. */
#define TILE_MAX 4096
#define TILE_WHOLE (1 << 30)
#define TILE_MIN 16
#define PANEL_MIN 64
#define PANEL_MAX (1 << 30) /* CBLAS takes int dimensions */
/* The planner's weight of an element of a panel read (copied out of its source and converted,
 * then read by the BLAS) against an element of the accumulator read and written by a BLAS
 * call (streamed inside it): r x c tiles over an m x n result with K panels of kp cost
 * READ_WEIGHT (c/n + r/m) + 2/kp such moves per multiply-add (best_tile); an operand
 * multiplied where it lies is not copied, and costs none. */
#define READ_WEIGHT 3.0

size_t oc_mm_kind_size(oc_mm_kind kind) { return kind == OC_MM_KIND_F64 ? 8 : kind == OC_MM_KIND_F32 ? 4 : 1; }

size_t oc_mm_acc_size(oc_mm_kind kind) { return kind == OC_MM_KIND_I8 ? 4 : oc_mm_kind_size(kind); }

int oc_mm_out_separate(oc_mm_kind kind, oc_mm_type out)
{
    return !((kind == OC_MM_KIND_I8 && out == OC_MM_INT32) || (kind == OC_MM_KIND_F64 && out == OC_MM_FLOAT64) ||
             (kind == OC_MM_KIND_F32 && out == OC_MM_FLOAT32));
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Bytes a tile of tm x tn with K panel kp holds: the panels and tiles not in place, and a
 * tile accumulated in the output file's mapping, whose pages it keeps in memory. */
static int64_t need(const oc_matmul_job *job, const oc_mm_cpu_plan *p, int64_t tm, int64_t tn, int64_t kp)
{
    const int64_t in = (int64_t)oc_mm_type_size(job->in_type), mul = (int64_t)oc_mm_kind_size(p->kind);
    const int64_t acc = (int64_t)oc_mm_acc_size(p->kind), out = (int64_t)oc_mm_type_size(job->out_type);
    const int64_t panel = in + (mul != in ? mul : 0); /* as read, then as multiplied */
    const int64_t tile = !p->in_place[2]          ? acc + (oc_mm_out_separate(p->kind, job->out_type) ? out : 0)
                         : job->tile_place_mapped ? acc
                                                  : 0;
    const int64_t sides = (p->in_place[OC_MM_A] ? 0 : tm) + (p->in_place[OC_MM_B] ? 0 : tn);
    return sides * kp * panel + tm * tn * tile;
}

static int64_t ceil_div(int64_t a, int64_t b) { return b > 0 ? (a + b - 1) / b : 0; }

/* The tile edges tried, largest first; those past TILE_MAX only for a tile in its place. */
static const int64_t edges[] = {TILE_WHOLE, 16384, 12288, 8192, 6144, TILE_MAX, 3072, 2048, 1536, 1024, 768,
                                512,        384,   256,   192,  128,  96,       64,   48,   32,   16};

/* A square edge cut to the product's rows and columns (at least 1); A·Aᵀ's n is its m, so its
 * tiles are square. */
static int64_t cut(int64_t edge, int64_t side) { return side < 1 ? 1 : min64(side, edge); }

/* p's tile for a square edge and K panel kp, and what it holds. */
static void shape(const oc_matmul_job *job, oc_mm_cpu_plan *p, int64_t edge, int64_t kp)
{
    p->tm = cut(edge, job->m);
    p->tn = cut(edge, job->n);
    p->kp = kp;
    p->need_bytes = need(job, p, p->tm, p->tn, kp);
}

/* The deepest K panel beside tiles of `edge` within budget, evened out so that the panels
 * have one depth (at most PANEL_MAX) unless that would make them shorter than PANEL_MIN
 * (then only the last is shorter); 0 when not even PANEL_MIN fits. */
static int64_t deepest(const oc_matmul_job *job, const oc_mm_cpu_plan *p, int64_t edge, int64_t budget)
{
    const int64_t k = job->k > 0 ? job->k : 1;
    const int64_t tm = cut(edge, job->m), tn = cut(edge, job->n);
    const int64_t tile = need(job, p, tm, tn, 0), per_k = need(job, p, tm, tn, 1) - tile;
    if (budget < tile || (budget == tile && per_k > 0)) return 0;
    int64_t kp = min64(k, PANEL_MAX);
    if (per_k > 0) kp = min64(kp, (budget - tile) / per_k);
    if (kp < min64(k, PANEL_MIN)) return 0;
    const int64_t even = ceil_div(k, ceil_div(k, kp));
    return even >= min64(k, PANEL_MIN) ? even : kp;
}

/* Among the tile edges, each with the deepest K panel that fits beside it within budget, the
 * one that moves the fewest elements per multiply-add outside the BLAS's own blocking: the
 * panels' reads, tiles_n / n + tiles_m / m (each tile reads its rows of A and columns of B),
 * weighted READ_WEIGHT, and the accumulator's update by each call, 2 / kp. 0 when none fits. */
static int best_tile(const oc_matmul_job *job, const oc_mm_cpu_plan *p, int64_t budget, int64_t *edge, int64_t *kp)
{
    const int64_t n = job->n;
    const double m_ = job->m < 1 ? 1.0 : (double)job->m, n_ = n < 1 ? 1.0 : (double)n;
    double best = 0;
    *edge = *kp = 0;
    for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
        if (edges[e] > TILE_MAX && !p->in_place[2]) continue;
        const int64_t depth = deepest(job, p, edges[e], budget);
        if (depth == 0) continue;
        const double reads = (p->in_place[OC_MM_A] ? 0.0 : (double)ceil_div(n, cut(edges[e], n)) / n_) +
                             (p->in_place[OC_MM_B] ? 0.0 : (double)ceil_div(job->m, cut(edges[e], job->m)) / m_);
        const double cost = READ_WEIGHT * reads + 2.0 / (double)depth;
        if (!*edge || cost < best) best = cost, *edge = edges[e], *kp = depth; /* ties: the larger */
    }
    return *edge != 0;
}

/* Which of A's panels, B's panels and C's tiles the product uses where they lie: with a
 * BLAS, an operand in memory in the multiply's type (panel_memory; read transposed:
 * transposed_memory, which the BLAS's transpose flag reads), and a result in the
 * accumulator's type whose place the job gives (tile_place_ld; not A·Aᵀ, whose tiles
 * write_tile mirrors), each with strides CBLAS's ints take. */
static void find_in_place(const oc_matmul_job *job, oc_mm_cpu_plan *p)
{
    memset(p->in_place, 0, sizeof p->in_place);
    memset(p->transposed, 0, sizeof p->transposed);
    if (!p->blas.sgemm || p->kind == OC_MM_KIND_I8) return;
    const int same = (p->kind == OC_MM_KIND_F64 && job->in_type == OC_MM_FLOAT64) ||
                     (p->kind == OC_MM_KIND_F32 && job->in_type == OC_MM_FLOAT32);
    for (int w = 0; w < 2 && same; w++) {
        int64_t ld = 0;
        const oc_mm_operand x = (oc_mm_operand)w;
        if (job->panel_memory && job->panel_memory(job, x, 0, 0, &ld) && ld <= INT32_MAX) p->in_place[w] = 1;
        else if (job->transposed_memory && job->transposed_memory(job, x, 0, 0, &ld) && ld <= INT32_MAX)
            p->in_place[w] = p->transposed[w] = 1;
    }
    p->in_place[2] = job->tile_place_ld > 0 && job->tile_place_ld <= INT32_MAX && !job->symmetric && job->k > 0 &&
                     !oc_mm_out_separate(p->kind, job->out_type);
}

/* The whole budget is too small even for the smallest plan: the message names it, what that
 * plan needs beside the inputs the budget maps, and the least budget that runs the job (a
 * larger budget maps more of the inputs, so the least is not simply the sum). A budget the
 * caller gave is theirs to raise (exit 2); the default, the machine's (out of memory). */
static oc_status too_small(const oc_matmul_job *job, int64_t tm, int64_t tn, int64_t kp, int64_t need_bytes)
{
    const int64_t whole = job->host_mem_whole > job->host_mem_bytes ? job->host_mem_whole : job->host_mem_bytes;
    const int64_t mapped = whole - job->host_mem_bytes;
    char beside[96] = "";
    if (mapped > 0) snprintf(beside, sizeof beside, " beside the %" PRId64 " of the inputs it maps", mapped);
    return oc_fail(job->ctx, job->host_mem_given ? OC_ERR_INVALID_ARGUMENT : OC_ERR_NO_MEMORY,
                   "the host budget of %" PRId64 " bytes is too small for the product: a tile of %" PRId64 " x %" PRId64
                   " with K panels of %" PRId64 " needs %" PRId64 " bytes%s; the least budget that runs it is %" PRId64
                   " bytes (%s)",
                   whole, tm, tn, kp, need_bytes, beside, oc_mm_least_budget(job, need_bytes),
                   job->tile > 0 ? "raise --host-mem, or give a smaller --tile" : "raise --host-mem");
}

oc_status oc_mm_cpu_plan_make(oc_matmul_job *job, oc_mm_cpu_plan *p)
{
    oc_context *ctx = job->ctx;
    char why[512];
    const int loaded = oc_mm_blas_load(&p->blas, why, sizeof why);
    if (loaded != 0) return oc_fail(ctx, loaded == -2 ? OC_ERR_NO_MEMORY : OC_ERR_INVALID_ARGUMENT, "%s", why);
    const int blas = p->blas.sgemm != NULL;
    switch (job->in_type) {
    case OC_MM_FLOAT64:
        p->kind = OC_MM_KIND_F64;
        break;
    case OC_MM_INT8: /* exact in float32 up to oc_matmul_int8_f32_k_max, in float64 past it */
        p->kind = !blas ? OC_MM_KIND_I8
                  : job->k <= oc_matmul_int8_f32_k_max(job->stored_type[OC_MM_A], job->stored_type[OC_MM_B])
                      ? OC_MM_KIND_F32
                      : OC_MM_KIND_F64;
        break;
    default:
        p->kind = OC_MM_KIND_F32;
        break;
    }
    p->threads = oc_threads_resolve(job->threads);
    find_in_place(job, p);
    const int64_t budget = job->host_mem_bytes, k = job->k > 0 ? job->k : 1;
    p->bound = job->tile > 0 ? "the tile given" : "the matrix size";
    p->tm = 0;
    if (job->tile <= 0) {
        int64_t edge, kp, free_edge, free_kp;
        if (best_tile(job, p, budget, &edge, &kp)) {
            shape(job, p, edge, kp);
            best_tile(job, p, INT64_MAX, &free_edge, &free_kp);
            if (edge != free_edge || kp != free_kp) p->bound = "the host budget";
        }
    }
    if (p->tm == 0) { /* the tile given, or none with such panels: the K panel, then the tile, halved */
        int64_t edge = job->tile > 0 ? job->tile : TILE_MAX;
        int64_t kp = min64(k, PANEL_MAX);
        for (;;) {
            shape(job, p, edge, kp);
            if (p->need_bytes <= budget) break;
            p->bound = "the host budget";
            if (kp > PANEL_MIN && (kp > edge || job->tile > 0 || edge <= TILE_MIN))
                kp = (kp + 1) / 2 > PANEL_MIN ? (kp + 1) / 2 : PANEL_MIN;
            else if (edge > TILE_MIN && job->tile <= 0) edge /= 2;
            else return too_small(job, p->tm, p->tn, kp, p->need_bytes);
        }
    }
    p->tiles_m = ceil_div(job->m, p->tm);
    p->tiles_n = ceil_div(job->n, p->tn);
    p->panels = ceil_div(job->k, p->kp);
    p->tiles = job->symmetric ? p->tiles_m * (p->tiles_m + 1) / 2 : p->tiles_m * p->tiles_n;
    return OC_OK;
}

const char *oc_mm_cpu_kind_text(const oc_mm_cpu_plan *p)
{
    const oc_mm_kind kind = p->kind;
    const oc_mm_blas *b = &p->blas;
    if (kind == OC_MM_KIND_I8) return "int8 panels, int32 accumulator";
    if (kind == OC_MM_KIND_F64) return b->dgemm ? "dgemm, float64 accumulator" : "float64 loops";
    return b->sgemm ? "sgemm, float32 accumulator" : "float32 loops";
}

/* The names of what the plan uses in place ("A, B, C"; "" for none), and the JSON array. */
static void in_place_names(const oc_mm_cpu_plan *p, int json, char *out, size_t size)
{
    static const char *const names[3] = {"A", "B", "C"};
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < 3; i++)
        if (p->in_place[i] && at < size)
            at += (size_t)snprintf(out + at, size - at, json ? "%s\"%s\"" : "%s%s", at ? ", " : "", names[i]);
}

oc_status oc_mm_cpu_plan_text(oc_matmul_job *job, int json, char **out)
{
    oc_context *ctx = job->ctx;
    oc_mm_cpu_plan p;
    OC_CHECK(ctx, oc_mm_cpu_plan_make(job, &p));
    char places[32];
    in_place_names(&p, json, places, sizeof places);
    oc_text t = {0};
    if (json) {
        oc_text_printf(&t, "{\"backend\": \"cpu/%s\", \"blas_library\": ", p.blas.name);
        oc_text_json_string(&t, p.blas.library[0] ? p.blas.library : NULL);
        oc_text_printf(&t,
                       ", \"multiply\": \"%s\", \"threads\": %d, \"m\": %" PRId64 ", \"n\": %" PRId64
                       ", \"k\": %" PRId64 ", \"tile_rows\": %" PRId64 ", \"tile_cols\": %" PRId64
                       ", \"k_panel\": %" PRId64 ", \"tiles\": %" PRId64 ", \"k_panels\": %" PRId64
                       ", \"symmetric\": %s, \"host_budget\": %" PRId64 ", \"need_bytes\": %" PRId64
                       ", \"in_place\": [%s], \"bound\": \"%s\"}\n",
                       oc_mm_cpu_kind_text(&p), p.threads, job->m, job->n, job->k, p.tm, p.tn, p.kp, p.tiles, p.panels,
                       job->symmetric ? "true" : "false", job->host_mem_bytes, p.need_bytes, places, p.bound);
    } else {
        oc_text_printf(&t, "cpu/%s: %s, %d thread%s\n", p.blas.name, oc_mm_cpu_kind_text(&p), p.threads,
                       p.threads == 1 ? "" : "s");
        if (p.blas.note[0]) oc_text_printf(&t, "  blas     %s\n", p.blas.note);
        oc_text_printf(&t,
                       "  tiles    %" PRId64 " x %" PRId64 " of C (%" PRId64 " x %" PRId64 "): %" PRId64 " tile%s%s\n",
                       p.tm, p.tn, job->m, job->n, p.tiles, p.tiles == 1 ? "" : "s",
                       job->symmetric ? ", on and above the diagonal, mirrored" : "");
        oc_text_printf(&t, "  k        %" PRId64 " in %" PRId64 " panel%s of %" PRId64 "\n", job->k, p.panels,
                       p.panels == 1 ? "" : "s", p.kp);
        oc_text_printf(&t, "  host     budget %.1f MiB, the plan holds %.1f MiB; bounded by %s\n",
                       (double)job->host_mem_bytes / 1048576.0, (double)p.need_bytes / 1048576.0, p.bound);
        const int a = p.in_place[OC_MM_A], b = p.in_place[OC_MM_B], c = p.in_place[2];
        if (a || b || c)
            oc_text_printf(&t, "  in place %s%s%s%s\n",
                           a && b ? "A and B read where they lie"
                           : a    ? "A read where it lies"
                           : b    ? "B read where it lies"
                                  : "",
                           p.transposed[0] || p.transposed[1] ? " (transposed by the BLAS)" : "",
                           (a || b) && c ? "; " : "", c ? "C accumulated where it goes" : "");
    }
    OC_CHECK(ctx, oc_text_finish(ctx, &t, out));
    return OC_OK;
}
