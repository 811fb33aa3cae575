/*
 * matmul_cuda_plan.c - the CUDA matmul plan (matmul_cuda_plan.h): a tile shape that fits the
 * device and host budgets and shares well among the devices, chosen by the plan's model, then
 * the deepest K panel that still fits beside it within OC_MM_PANEL_MAX a device panel slot.
 * Pure: no device calls.
 */
#include "matmul/cuda/matmul_cuda_plan.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/text_buf.h"
#include "cost/cost_gemm.h"
#include "engine/engine_plan.h"
#include "matmul/matmul_dtype.h"
#include "mem/pool.h"

#define MIB(x) ((double)(x) / 1048576.0)

static int64_t round_up(int64_t x, int64_t q) { return (x + q - 1) / q * q; }

/* int8's B packed in chunks (b_chunk below): the fewest columns a chunk has. */
#define B_CHUNK_MIN 1024
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

oc_status oc_mm_cuda_types(oc_context *ctx, oc_mm_type in, oc_mm_type out, int tf32, oc_mm_type *acc,
                           const char **compute)
{
    int ok = 0;
    switch (in) {
    case OC_MM_FLOAT64:
        ok = out == OC_MM_FLOAT64, *acc = OC_MM_FLOAT64, *compute = "CUBLAS_COMPUTE_64F";
        break;
    case OC_MM_FLOAT32:
        ok = out == OC_MM_FLOAT32, *acc = OC_MM_FLOAT32;
        *compute = tf32 ? "CUBLAS_COMPUTE_32F_FAST_TF32" : "CUBLAS_COMPUTE_32F";
        break;
    case OC_MM_FLOAT16:
    case OC_MM_BFLOAT16:
        ok = out == OC_MM_FLOAT32 || out == OC_MM_FLOAT16 || out == OC_MM_BFLOAT16;
        *acc = OC_MM_FLOAT32, *compute = "CUBLAS_COMPUTE_32F";
        break;
    case OC_MM_INT8:
        ok = out == OC_MM_INT32 || out == OC_MM_BOOL, *acc = OC_MM_INT32, *compute = "CUBLAS_COMPUTE_32I";
        break;
    default:
        break;
    }
    if (!ok)
        return oc_fail(ctx, OC_ERR_UNSUPPORTED,
                       "matmul on the GPU: %s operands with %s output is not a product cuBLASLt computes",
                       oc_mm_type_name(in), oc_mm_type_name(out));
    return OC_OK;
}

/* Bytes of an element of operand `which` as uploaded: as stored where the device promotes it. */
static int64_t upload_elem(const oc_mm_cuda_plan_input *in, int which)
{
    return (int64_t)(in->from[which] != OC_MATMUL_DEFAULT ? oc_matmul_dtype_size(in->from[which])
                                                          : oc_mm_type_size(in->in_type));
}

/* Fills the sizes of plan for tile edges tm x tn and panel depth kp with `slots` pinned
 * upload slots; returns 0 when they fit both budgets, else 1 (device) or 2 (host). */
static int size_plan(oc_mm_cuda_plan *p, int64_t tm, int64_t tn, int64_t kp, int slots)
{
    const int64_t in = (int64_t)oc_mm_type_size(p->in.in_type), acc = (int64_t)oc_mm_type_size(p->acc_type);
    const int64_t out = (int64_t)oc_mm_type_size(p->in.out_type);
    const int i8 = p->in.in_type == OC_MM_INT8;
    p->tm = tm, p->tn = tn, p->kp = kp;
    p->tn_ld = i8 ? round_up(tn, 4) : tn;
    p->kpad = i8 ? round_up(kp, 16) : kp;
    p->elem[0] = upload_elem(&p->in, 0), p->elem[1] = upload_elem(&p->in, 1);
    p->panel_bytes = oc_mm_cuda_b_offset(tm * kp * p->elem[0]) + kp * tn * p->elem[1];
    p->promoted_bytes = (p->in.from[0] != OC_MATMUL_DEFAULT ? oc_mm_cuda_b_offset(tm * kp * in) : 0) +
                        (p->in.from[1] != OC_MATMUL_DEFAULT ? kp * tn * in : 0);
    p->pack_bytes = i8 ? (tm + p->tn_ld) * p->kpad : 0;
    p->acc_bytes = tm * p->tn_ld * acc;
    p->round_bytes = p->acc_type != p->in.out_type ? tm * tn * out : 0;
    /* Each of the (at most 9) buffers rounded up to the pool's alignment, and the pool's
     * budget rounded down to it. */
    p->device_bytes = 2 * p->panel_bytes + p->promoted_bytes + p->pack_bytes + 2 * p->acc_bytes + 2 * p->round_bytes +
                      p->workspace + 10 * OC_POOL_ALIGN;
    p->up_slots = slots;
    /* An upload slot holds at least one row of A's panel (kp elements) and of B's (tn). */
    const int64_t longest_row = kp * p->elem[0] > tn * p->elem[1] ? kp * p->elem[0] : tn * p->elem[1];
    p->up_slot_bytes = min64(OC_MM_UP_PIECE, p->panel_bytes);
    if (p->up_slot_bytes < longest_row) p->up_slot_bytes = longest_row;
    const int64_t row_bytes = (p->round_bytes ? tn : p->tn_ld) * out;
    p->out_piece_rows = OC_MM_OUT_PIECE / row_bytes < 1 ? 1 : min64(tm, OC_MM_OUT_PIECE / row_bytes);
    p->out_slot_bytes = p->out_piece_rows * row_bytes;
    p->pinned_bytes = slots * p->up_slot_bytes + OC_MM_OUT_SLOTS * p->out_slot_bytes;
    if (p->device_bytes > p->in.device_budget) return 1;
    if (p->pinned_bytes > p->host_budget) return 2;
    return 0;
}

/* A tile's edges: tm rows by tn columns of C. */
typedef struct tile_shape {
    int64_t tm, tn;
} tile_shape;

/* A square edge over the product, cut to its rows and columns. */
static tile_shape square(const oc_mm_cuda_plan_input *in, int64_t edge)
{
    return (tile_shape){min64(edge, in->m), min64(edge, in->n)};
}

static int fits(oc_mm_cuda_plan *p, tile_shape s, int64_t kp) { return size_plan(p, s.tm, s.tn, kp, 2); }

/* fits, and a panel slot within OC_MM_PANEL_MAX: the depth of a panel that is not the
 * shallowest. */
static int fits_deep(oc_mm_cuda_plan *p, tile_shape s, int64_t kp)
{
    const int why = fits(p, s, kp);
    return why ? why : p->panel_bytes > OC_MM_PANEL_MAX ? 2 : 0;
}

/* Tiles of shape s over the product (symmetric: the upper ones, s square). */
static int64_t tile_count(const oc_mm_cuda_plan_input *in, tile_shape s)
{
    const int64_t rows = (in->m + s.tm - 1) / s.tm, cols = (in->n + s.tn - 1) / s.tn;
    return in->symmetric ? rows * (rows + 1) / 2 : rows * cols;
}

/* Whether cand[c] is one of the shapes before it (a rectangle cut to the product's side can
 * be the square, or the other rectangle). */
static int tried_before(const tile_shape *cand, int c)
{
    for (int d = 0; d < c; ++d)
        if (cand[d].tm == cand[c].tm && cand[d].tn == cand[c].tn) return 1;
    return 0;
}

/* The bytes of A and B the tiles of shape s read across the product: each tile its rows of A
 * and its columns of B over all of k. */
static double operand_reads(const oc_mm_cuda_plan_input *in, tile_shape s)
{
    return (double)tile_count(in, s) * (double)(s.tm * upload_elem(in, 0) + s.tn * upload_elem(in, 1)) * (double)in->k;
}

/* Whether `tiles` share well among nd devices: on one, when the result outweighs the operands
 * (out_heavy), four or more, so that the output of one tile overlaps the next one's products
 * (otherwise re-reading the operands for more tiles costs more than that hides); on several,
 * the same count for each and at least two each, so that every device's download but the
 * last overlaps its products (one tile each left the devices' whole result to download at
 * once after the products: bench/RESULTS.md, "matmul on four GPUs"), or at least eight each
 * (the last round's imbalance is then at most an eighth of a device's share). */
static int tiles_share(int64_t tiles, int nd, int out_heavy)
{
    if (nd <= 1) return !out_heavy || tiles >= 4;
    return (tiles >= 2LL * nd && tiles % nd == 0) || tiles >= 8LL * nd;
}

/* The deepest K panel beside tiles of shape s (p sized for it): all of k up to OC_MM_KP_MAX,
 * else the most multiples of 16 that fit; then as many panels as that depth needs, made even
 * (no thin last panel of another shape). */
static int64_t deepest_panel(oc_mm_cuda_plan *p, tile_shape s, int64_t kp_min)
{
    const int64_t k = p->in.k;
    int64_t kp = min64(k, OC_MM_KP_MAX);
    if (fits_deep(p, s, kp)) {
        int64_t lo = kp_min / 16, hi = kp / 16; /* lo fits (kp_min is k or a multiple of 16) */
        while (lo < hi) {
            const int64_t mid = (lo + hi + 1) / 2;
            if (fits_deep(p, s, mid * 16)) hi = mid - 1;
            else lo = mid;
        }
        kp = lo > 0 ? lo * 16 : kp_min;
    }
    if (kp < k) {
        const int64_t panels = (k + kp - 1) / kp, even = round_up((k + panels - 1) / panels, 16);
        if (even <= kp) kp = even;
    }
    fits(p, s, kp);
    return kp;
}

static oc_cost_gemm_type gemm_type(const oc_mm_cuda_plan_input *in)
{
    switch (in->in_type) {
    case OC_MM_FLOAT64:
        return OC_COST_GEMM_F64;
    case OC_MM_FLOAT32:
        return in->tf32 ? OC_COST_GEMM_TF32 : OC_COST_GEMM_F32;
    case OC_MM_INT8:
        return OC_COST_GEMM_INT8;
    default:
        return OC_COST_GEMM_F16;
    }
}

/* The model's seconds (matmul_cuda_plan.h) for p sized with tiles of shape s and K panels of
 * kp; *products: the products' share, *copies: the copies'. */
static double model_seconds(const oc_mm_cuda_plan *p, tile_shape s, int64_t kp, double *products, double *copies)
{
    const oc_mm_cuda_plan_input *in = &p->in;
    const double nd = in->ndevices > 0 ? in->ndevices : 1, tiles = (double)tile_count(in, s);
    const double tm = (double)s.tm, tn = (double)s.tn, k = (double)in->k, area = tiles * tm * tn;
    const double panels = (double)((in->k + kp - 1) / kp), rate = oc_cost_gemm_gpu_rate(gemm_type(in), 90);
    const double out = (double)oc_mm_type_size(in->out_type);
    const double up = operand_reads(in, s), down = area * out;
    const double link = (up > down ? up : down) / (OC_MM_MODEL_LINK * nd), host = (up + down) / OC_MM_MODEL_HOST;
    *products = 2.0 * area * (k + panels * OC_MM_MODEL_CALL_K) / (rate * nd);
    *copies = link > host ? link : host;
    const double fill =
        (tm * (double)upload_elem(in, 0) + tn * (double)upload_elem(in, 1)) * (double)kp / OC_MM_MODEL_LINK +
        2.0 * tm * tn * (double)kp / rate;
    const double drain = tm * tn * out * (1.0 / OC_MM_MODEL_LINK + 1.0 / OC_MM_MODEL_HOST);
    return (*products > *copies ? *products : *copies) + fill + drain;
}

/* The next smaller edge to try: about 6% less, in steps of 256 (16 below 2048). */
static int64_t smaller(int64_t t)
{
    const int64_t g = t >= 2048 ? 256 : 16, next = t * 15 / 16 / g * g;
    return next < t ? next : t - g;
}

/* A resident int8 product's chunk of B (oc_mm_cuda_plan.b_chunk): about an eighth of its
 * columns, a multiple of 256 and at least 1024, when each chunk's product is still one whose
 * algorithm is measured (matmul_gemm.c: the heuristic's first guess for Hopper's integer
 * kernels is far from their fastest); 0 otherwise. The packing of a chunk then overlaps the
 * product of the chunk before, and its buffers hold two chunks, not B: small enough, most
 * often, to be kept between products (matmul_resident.c; bench/RESULTS.md, "int8's B packed in
 * chunks", "int8's chunks kept"). */
static int64_t b_chunk(const oc_mm_cuda_plan_input *in)
{
    if (in->n < 2 * B_CHUNK_MIN) return 0;
    int64_t w = round_up((in->n + 7) / 8, 256);
    if (w < B_CHUNK_MIN) w = B_CHUNK_MIN;
    return (double)in->m * (double)w * (double)in->k >= (double)OC_MM_TUNE_MIN_MACS ? w : 0;
}

/* The resident plan (oc_mm_cuda_plan_input.resident): one tile, one panel, no slots; 0 when
 * its buffers fit the device budget. */
static int resident_plan(oc_mm_cuda_plan *p)
{
    const oc_mm_cuda_plan_input *in = &p->in;
    const int i8 = in->in_type == OC_MM_INT8;
    p->tm = in->m, p->tn = in->n, p->kp = p->kp_last = in->k;
    p->tn_ld = in->n;
    p->kpad = i8 ? round_up(in->k, 16) : in->k;
    /* int8 takes both operands K-contiguous, rows a multiple of 16 long, from 16-byte
     * boundaries: op(A) = A and op(B) = Bᵀ are so as stored when k is and their memory is
     * aligned; the others are transposed or re-strided here. */
    p->pack_a = i8 && (in->ta || p->kpad != in->k || in->a_unaligned);
    p->pack_b = i8 && (!in->tb || p->kpad != in->k || in->b_unaligned);
    p->b_chunk = p->pack_b ? b_chunk(in) : 0;
    p->chunk_bytes = 2 * p->b_chunk * p->kpad;
    p->pack_bytes = (p->pack_a ? in->m * p->kpad : 0) + (p->pack_b && !p->b_chunk ? in->n * p->kpad : 0);
    p->acc_bytes = p->acc_type != in->out_type ? in->m * in->n * (int64_t)oc_mm_type_size(p->acc_type) : 0;
    p->device_bytes = p->pack_bytes + p->chunk_bytes + p->acc_bytes + p->workspace + 3 * OC_POOL_ALIGN;
    p->tile_rows = p->tile_cols = p->ntiles = p->panels = 1;
    p->bound = "the operands in device memory";
    return p->device_bytes > in->device_budget;
}

oc_status oc_mm_cuda_plan_make(oc_context *ctx, const oc_mm_cuda_plan_input *in, oc_mm_cuda_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->in = *in;
    if (in->m <= 0 || in->n <= 0 || in->k <= 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "matmul: empty product %lld x %lld (k %lld)", (long long)in->m,
                       (long long)in->n, (long long)in->k);
    if (in->symmetric && in->m != in->n)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "matmul: a symmetric product is square, not %lld x %lld",
                       (long long)in->m, (long long)in->n);
    const char *compute;
    OC_CHECK(ctx, oc_mm_cuda_types(ctx, in->in_type, in->out_type, in->tf32, &plan->acc_type, &compute));
    const int nd = in->ndevices > 0 ? in->ndevices : 1;
    plan->host_budget = (in->host_budget > 0 ? in->host_budget : OC_ENGINE_DEFAULT_STAGING) / nd;
    plan->workspace = in->device_budget / 8 < OC_MM_WORKSPACE ? in->device_budget / 8 / 65536 * 65536 : OC_MM_WORKSPACE;
    if (in->resident && nd == 1 && in->tile <= 0 && (in->in_type != OC_MM_INT8 || in->n % 4 == 0)) {
        if (resident_plan(plan) == 0) return OC_OK; /* else the usual plan, every field of it set below */
    }
    plan->in.resident = plan->in.ta = plan->in.tb = 0;
    const int64_t kp_min = min64(in->k, OC_MM_KP_MIN);

    tile_shape shape = {0, 0};
    int why = 0;
    if (in->tile > 0) {
        shape = square(in, in->tile);
        plan->bound = "the forced tile";
        why = fits(plan, shape, kp_min);
    } else {
        /* Among the tiles that cut the product evenly (squares of whole / j, on a 256 grid;
         * where such a square does not share well among the devices, and the product is not
         * symmetric, also the rectangles of that edge by half of it), share well and fit the
         * budgets with panels of a useful depth: the model's fastest whose copies it hides,
         * else the largest, or one that reads clearly fewer bytes of A and B. Failing all,
         * the largest square that fits with the shallowest panels. */
        const int64_t whole = in->m > in->n ? in->m : in->n;
        const int64_t kp_good = min64(in->k, OC_MM_KP_GOOD);
        const double c_bytes = (double)in->m * (double)in->n * (double)oc_mm_type_size(in->out_type),
                     ab_bytes = (double)(in->m * upload_elem(in, 0) + in->n * upload_elem(in, 1)) * (double)in->k;
        const int out_heavy = c_bytes >= ab_bytes;
        plan->bound = whole <= OC_MM_TILE_MAX ? "the matrix" : "the largest tile planned";
        const char *largest_bound = NULL;
        tile_shape fastest = {0, 0};
        int64_t last = 0;
        double best = 0, fewest = 0;
        for (int64_t j = (whole + OC_MM_TILE_MAX - 1) / OC_MM_TILE_MAX;; ++j) {
            const int64_t e = min64(whole, round_up((whole + j - 1) / j, 256));
            if (e < OC_MM_EVEN_MIN) break;
            if (e == last) continue;
            last = e;
            const int64_t half = round_up((e + 1) / 2, 256);
            tile_shape cand[3] = {
                square(in, e), {min64(e, in->m), min64(half, in->n)}, {min64(half, in->m), min64(e, in->n)}};
            /* The rectangles only where the square does not share well among the devices. */
            const int square_shares = tiles_share(tile_count(in, cand[0]), nd, out_heavy);
            const int ncand = in->symmetric || half < OC_MM_EVEN_MIN || square_shares ? 1 : 3;
            for (int c = 0; c < ncand; ++c) {
                const tile_shape s = cand[c];
                if (tried_before(cand, c)) continue;
                if (!tiles_share(tile_count(in, s), nd, out_heavy) && e > OC_MM_SHARE_MIN) {
                    if (!shape.tm)
                        plan->bound = nd > 1 ? "the same tiles for each device" : "four tiles, to overlap the output";
                    continue;
                }
                if ((why = fits(plan, s, kp_good)) != 0) {
                    if (!shape.tm) plan->bound = why == 1 ? "the device budget" : "the host budget";
                    continue;
                }
                /* The first that fits (the largest), or a later one reading clearly fewer bytes. */
                const double reads = operand_reads(in, s);
                if (!shape.tm) largest_bound = plan->bound;
                if (!shape.tm || reads < OC_MM_FEWER_READS * fewest) shape = s, fewest = reads;
                double products = 0, copies = 0;
                const double t = model_seconds(plan, s, deepest_panel(plan, s, kp_min), &products, &copies);
                if (copies <= OC_MM_MODEL_MARGIN * products && (!fastest.tm || t < best)) fastest = s, best = t;
            }
        }
        why = 0;
        if (fastest.tm && (fastest.tm != shape.tm || fastest.tn != shape.tn)) {
            shape = fastest;
            plan->bound = "the model's fastest: deeper K panels, the copies hidden";
        } else if (shape.tm) {
            plan->bound = largest_bound;
        }
        if (!shape.tm) {
            int64_t edge = min64(min64(whole, OC_MM_TILE_MAX), OC_MM_EVEN_MIN);
            while ((why = fits(plan, shape = square(in, edge), kp_min)) != 0 && edge > 16) {
                plan->bound = why == 1 ? "the device budget" : "the host budget";
                edge = smaller(edge);
                if (edge < 16) edge = 16;
            }
        }
    }
    if (why)
        return oc_fail(
            ctx, OC_ERR_DEVICE_NO_MEMORY,
            "matmul on the GPU: a %lld x %lld tile with K panels of %lld needs %.1f MiB of device memory and "
            "%.1f MiB pinned; the budgets are %.1f MiB per device (%s) and %.1f MiB of host memory per device",
            (long long)plan->tm, (long long)plan->tn, (long long)kp_min, MIB(plan->device_bytes),
            MIB(plan->pinned_bytes), MIB(in->device_budget),
            in->device_budget_given ? "--gpu-mem" : "free memory less headroom", MIB(plan->host_budget));

    /* The deepest panel beside that tile. */
    const int64_t kp = deepest_panel(plan, shape, kp_min);
    /* More pinned upload slots where the host budget has room. */
    if (size_plan(plan, plan->tm, plan->tn, kp, OC_MM_UP_SLOTS) != 0) size_plan(plan, plan->tm, plan->tn, kp, 2);

    plan->panels = (in->k + kp - 1) / kp;
    plan->kp_last = in->k - (plan->panels - 1) * kp;
    plan->tile_rows = (in->m + plan->tm - 1) / plan->tm;
    plan->tile_cols = (in->n + plan->tn - 1) / plan->tn;
    plan->ntiles = in->symmetric ? plan->tile_rows * (plan->tile_rows + 1) / 2 : plan->tile_rows * plan->tile_cols;
    return OC_OK;
}

void oc_mm_cuda_plan_tile(const oc_mm_cuda_plan *plan, int64_t t, int64_t *row0, int64_t *rows, int64_t *col0,
                          int64_t *cols)
{
    int64_t i = 0, j = t;
    if (plan->in.symmetric) {
        /* Row i holds tile_rows - i upper tiles (j >= i). */
        while (j >= plan->tile_rows - i) j -= plan->tile_rows - i, ++i;
        j += i;
    } else {
        i = t / plan->tile_cols, j = t % plan->tile_cols;
    }
    *row0 = i * plan->tm, *col0 = j * plan->tn;
    *rows = min64(plan->tm, plan->in.m - *row0), *cols = min64(plan->tn, plan->in.n - *col0);
}

/* The type operand `which` crosses to the device in: as stored where the device promotes it. */
static const char *uploaded_as(const oc_mm_cuda_plan *p, int which)
{
    return p->in.from[which] != OC_MATMUL_DEFAULT ? oc_matmul_dtype_name(p->in.from[which])
                                                  : oc_mm_type_name(p->in.in_type);
}

oc_status oc_mm_cuda_plan_render(oc_context *ctx, const oc_mm_cuda_plan *p, const char *where, int json, char **out)
{
    oc_text t = {0};
    oc_mm_type acc;
    const char *compute;
    OC_CHECK(ctx, oc_mm_cuda_types(ctx, p->in.in_type, p->in.out_type, p->in.tf32, &acc, &compute));
    const char *budget_from = p->in.device_budget_given ? "--gpu-mem" : "free memory less headroom";
    if (json) {
        oc_text_printf(&t, "{\"backend\": \"cuda/cublasLt\", \"devices\": ");
        oc_text_json_string(&t, where);
        oc_text_printf(&t,
                       ", \"m\": %lld, \"n\": %lld, \"k\": %lld, \"in_type\": \"%s\", \"out_type\": \"%s\", "
                       "\"accumulator\": \"%s\", \"compute\": \"%s\", \"symmetric\": %s, ",
                       (long long)p->in.m, (long long)p->in.n, (long long)p->in.k, oc_mm_type_name(p->in.in_type),
                       oc_mm_type_name(p->in.out_type), oc_mm_type_name(p->acc_type), compute,
                       p->in.symmetric ? "true" : "false");
        oc_text_printf(&t,
                       "\"tile\": [%lld, %lld], \"tile_bound\": \"%s\", \"tiles\": %lld, \"grid\": [%lld, %lld], "
                       "\"kp\": %lld, \"kp_last\": %lld, \"panels\": %lld, ",
                       (long long)p->tm, (long long)p->tn, p->bound, (long long)p->ntiles, (long long)p->tile_rows,
                       (long long)p->tile_cols, (long long)p->kp, (long long)p->kp_last, (long long)p->panels);
        oc_text_printf(&t,
                       "\"device_bytes\": %lld, \"device_budget\": %lld, \"device_budget_from\": \"%s\", "
                       "\"panel_slot_bytes\": %lld, \"pack_bytes\": %lld, \"accumulator_bytes\": %lld, "
                       "\"rounded_bytes\": %lld, \"workspace_bytes\": %lld, ",
                       (long long)p->device_bytes, (long long)p->in.device_budget, budget_from,
                       (long long)p->panel_bytes, (long long)p->pack_bytes, (long long)p->acc_bytes,
                       (long long)p->round_bytes, (long long)p->workspace);
        oc_text_printf(
            &t,
            "\"pinned_bytes\": %lld, \"host_budget\": %lld, \"pinned_upload_slots\": %d, \"upload_slot_bytes\": %lld, "
            "\"pinned_download_slots\": %d, \"download_piece_rows\": %lld, \"resident\": %s, "
            "\"b_chunk_columns\": %lld, \"b_chunk_bytes\": %lld, \"a_uploaded_as\": \"%s\", "
            "\"b_uploaded_as\": \"%s\", \"promoted_bytes\": %lld}\n",
            (long long)p->pinned_bytes, (long long)p->host_budget, p->up_slots, (long long)p->up_slot_bytes,
            p->in.resident ? 0 : OC_MM_OUT_SLOTS, (long long)p->out_piece_rows, p->in.resident ? "true" : "false",
            (long long)p->b_chunk, (long long)p->chunk_bytes, uploaded_as(p, 0), uploaded_as(p, 1),
            (long long)p->promoted_bytes);
        return oc_text_finish(ctx, &t, out);
    }
    oc_text_printf(&t, "matmul on cuda/cublasLt, ");
    oc_text_shown(&t, where);
    oc_text_printf(&t, "\n  product    C %lld x %lld, k %lld: %s -> %s, %s, %s accumulator%s\n", (long long)p->in.m,
                   (long long)p->in.n, (long long)p->in.k, oc_mm_type_name(p->in.in_type),
                   oc_mm_type_name(p->in.out_type), compute, oc_mm_type_name(p->acc_type),
                   p->in.symmetric ? ", symmetric (upper tiles only)" : "");
    if (p->in.resident) {
        oc_text_printf(&t,
                       "  resident   one product from A and B into C where they are: at most %.1f MiB of %.1f MiB "
                       "(%s) beside them",
                       MIB(p->device_bytes), MIB(p->in.device_budget), budget_from);
        if (p->pack_bytes) oc_text_printf(&t, ", int8 packing %.1f MiB", MIB(p->pack_bytes));
        if (p->b_chunk)
            oc_text_printf(&t,
                           ", B in chunks of %lld columns, two at a time (%.1f MiB, kept for the next product with "
                           "the workspace), each packed while the one before runs",
                           (long long)p->b_chunk, MIB(p->chunk_bytes));
        if (p->acc_bytes)
            oc_text_printf(&t, ", a %s accumulator %.1f MiB", oc_mm_type_name(p->acc_type), MIB(p->acc_bytes));
        oc_text_printf(&t, ", workspace up to %.1f MiB (what the algorithm asks); nothing pinned\n", MIB(p->workspace));
        return oc_text_finish(ctx, &t, out);
    }
    oc_text_printf(&t, "  tiles      %lld x %lld (edge bounded by %s): %lld of a %lld x %lld grid\n", (long long)p->tm,
                   (long long)p->tn, p->bound, (long long)p->ntiles, (long long)p->tile_rows, (long long)p->tile_cols);
    oc_text_printf(&t, "  K panels   %lld of %lld (the last %lld), accumulated in place on the device\n",
                   (long long)p->panels, (long long)p->kp, (long long)p->kp_last);
    for (int i = 0; i < 2; ++i)
        if (p->in.from[i] != OC_MATMUL_DEFAULT)
            oc_text_printf(&t, "  promoted   %s's panels uploaded as %s, converted to %s on the device\n",
                           i ? "B" : "A", uploaded_as(p, i), oc_mm_type_name(p->in.in_type));
    oc_text_printf(&t, "  device     %.1f MiB of %.1f MiB (%s): panels 2 x %.1f MiB, accumulators 2 x %.1f MiB",
                   MIB(p->device_bytes), MIB(p->in.device_budget), budget_from, MIB(p->panel_bytes), MIB(p->acc_bytes));
    if (p->pack_bytes) oc_text_printf(&t, ", int8 packing %.1f MiB", MIB(p->pack_bytes));
    if (p->promoted_bytes) oc_text_printf(&t, ", promoted panels %.1f MiB", MIB(p->promoted_bytes));
    if (p->round_bytes) oc_text_printf(&t, ", rounded tiles 2 x %.1f MiB", MIB(p->round_bytes));
    oc_text_printf(&t, ", workspace %.1f MiB\n", MIB(p->workspace));
    oc_text_printf(&t,
                   "  host       %.1f MiB pinned of %.1f MiB per device: %d upload slots of %.1f MiB, %d download "
                   "slots of %lld rows (%.1f MiB)\n",
                   MIB(p->pinned_bytes), MIB(p->host_budget), p->up_slots, MIB(p->up_slot_bytes), OC_MM_OUT_SLOTS,
                   (long long)p->out_piece_rows, MIB(p->out_slot_bytes));
    return oc_text_finish(ctx, &t, out);
}
