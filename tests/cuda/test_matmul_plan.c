/*
 * test_matmul_plan.c - the CUDA matmul plan (src/matmul/cuda/matmul_cuda_plan.c), which needs
 * no GPU: over a grid of shapes, types, budgets and device counts every plan fits its
 * budgets, its tiles cover C once, its K panels are even, a pinned panel slot stays within
 * OC_MM_PANEL_MAX when deeper than the shallowest, the tiles share well among the devices,
 * and budgets too small for any tile are refused naming them; a resident int8 plan packs
 * exactly the operands its kernels cannot read as stored; a mixed pair's promoted operand
 * crosses as stored, beside one buffer of its promoted panels.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "matmul/cuda/matmul_cuda_plan.h"
#include "matmul/matmul_dtype.h"

#define MIB (1LL << 20)

static int shares_well(int64_t tiles, int nd, int out_heavy)
{
    if (nd <= 1) return !out_heavy || tiles >= 4;
    return (tiles >= 2LL * nd && tiles % nd == 0) || tiles >= 8LL * nd;
}

static void check_plan(oc_context *ctx, oc_mm_cuda_plan_input in)
{
    oc_mm_cuda_plan p;
    const oc_status st = oc_mm_cuda_plan_make(ctx, &in, &p);
    CHECK_MSG(st == OC_OK, "%lld x %lld x %lld type %d on %d devices, %lld MiB: %s", (long long)in.m, (long long)in.n,
              (long long)in.k, (int)in.in_type, in.ndevices, (long long)(in.device_budget / MIB),
              oc_context_last_error(ctx));
    if (st != OC_OK) return;
    const int nd = in.ndevices > 0 ? in.ndevices : 1;
    CHECK(p.device_bytes <= in.device_budget);
    CHECK(p.pinned_bytes <= p.host_budget);
    CHECK(p.tm >= 1 && p.tn >= 1 && p.tm <= in.m && p.tn <= in.n);
    CHECK(p.tm <= OC_MM_TILE_MAX && p.tn <= OC_MM_TILE_MAX);
    if (in.symmetric) CHECK(p.tm == p.tn);
    /* The tiles cover C exactly once (symmetric: the upper triangle's tiles). */
    int64_t area = 0;
    for (int64_t t = 0; t < p.ntiles; ++t) {
        int64_t r0, rows, c0, cols;
        oc_mm_cuda_plan_tile(&p, t, &r0, &rows, &c0, &cols);
        CHECK(r0 >= 0 && c0 >= 0 && rows >= 1 && cols >= 1 && r0 + rows <= in.m && c0 + cols <= in.n);
        if (in.symmetric) CHECK(c0 >= r0);
        area += rows * cols;
    }
    if (!in.symmetric) CHECK_EQ_I64(area, in.m * in.n);
    /* K panels: all of k, the same depth but the last, which is no deeper. */
    CHECK(p.kp >= 1 && p.kp <= OC_MM_KP_MAX && p.kp_last >= 1 && p.kp_last <= p.kp);
    CHECK_EQ_I64((p.panels - 1) * p.kp + p.kp_last, in.k);
    if (p.panels > 1)
        CHECK_MSG(p.kp_last > p.kp - 16 * p.panels, "a thin last panel: %lld of %lld", (long long)p.kp_last,
                  (long long)p.kp);
    if (p.kp > OC_MM_KP_MIN) CHECK(p.panel_bytes <= OC_MM_PANEL_MAX);
    /* A large product shares well among the devices; the download slots are small. */
    const int64_t whole = in.m > in.n ? in.m : in.n;
    if (whole >= 4 * OC_MM_SHARE_MIN && in.tile == 0)
        CHECK_MSG(shares_well(p.ntiles, nd,
                              (double)in.m * in.n * oc_mm_type_size(in.out_type) >=
                                  (double)(in.m + in.n) * in.k * oc_mm_type_size(in.in_type)),
                  "%lld tiles on %d devices (%lld x %lld)", (long long)p.ntiles, nd, (long long)in.m, (long long)in.n);
    CHECK(p.out_slot_bytes <= OC_MM_OUT_PIECE || p.out_piece_rows == 1);
    CHECK(p.out_piece_rows >= 1 && p.out_piece_rows <= p.tm);
    /* The upload slots: 4 (2 under a small host budget), each holding a row of either
     * panel, no larger than a piece, or a whole panel, or that row. */
    const int64_t row_a = p.kp * p.elem[0], row_b = p.tn * p.elem[1], row = row_a > row_b ? row_a : row_b;
    CHECK(p.up_slots == OC_MM_UP_SLOTS || p.up_slots == 2);
    CHECK_MSG(p.up_slot_bytes >= row && (p.up_slot_bytes <= OC_MM_UP_PIECE || p.up_slot_bytes == row) &&
                  p.up_slot_bytes <= p.panel_bytes,
              "upload slot %lld bytes, rows of %lld and %lld, panel %lld", (long long)p.up_slot_bytes, (long long)row_a,
              (long long)row_b, (long long)p.panel_bytes);
    CHECK_EQ_I64(p.pinned_bytes, p.up_slots * p.up_slot_bytes + OC_MM_OUT_SLOTS * p.out_slot_bytes);
    char *text = NULL;
    CHECK(oc_mm_cuda_plan_render(ctx, &p, "cuda:0 test", 1, &text) == OC_OK && text && strstr(text, "\"tile\""));
    free(text);
}

/* The input of a resident plan on one device with a device budget given (transposes and
 * alignment left to the caller). */
static oc_mm_cuda_plan_input resident_input(int64_t m, int64_t n, int64_t k, oc_mm_type in, oc_mm_type out,
                                            int64_t budget)
{
    return (oc_mm_cuda_plan_input){.m = m,
                                   .n = n,
                                   .k = k,
                                   .in_type = in,
                                   .out_type = out,
                                   .device_budget = budget,
                                   .device_budget_given = 1,
                                   .ndevices = 1,
                                   .resident = 1};
}

/* The resident plan's int8 operands: read as stored only where they are K-contiguous (op(A) =
 * A, op(B) = Bᵀ), K a multiple of 16 and the memory on a 16-byte boundary; else packed, the
 * packing sized for exactly those packed; floats never pack. */
static void check_resident_int8(oc_context *ctx)
{
    const int64_t m = 300, n = 124;
    for (int k16 = 0; k16 < 2; ++k16)
        for (int ta = 0; ta < 2; ++ta)
            for (int tb = 0; tb < 2; ++tb)
                for (int ua = 0; ua < 2; ++ua)
                    for (int ub = 0; ub < 2; ++ub) {
                        const int64_t k = k16 ? 256 : 257;
                        oc_mm_cuda_plan_input in = resident_input(m, n, k, OC_MM_INT8, OC_MM_INT32, 6208 * MIB);
                        in.ta = ta, in.tb = tb, in.a_unaligned = ua, in.b_unaligned = ub;
                        oc_mm_cuda_plan p;
                        CHECK(oc_mm_cuda_plan_make(ctx, &in, &p) == OC_OK && p.in.resident && p.ntiles == 1);
                        const int want_a = ta || !k16 || ua, want_b = !tb || !k16 || ub;
                        CHECK_MSG(p.pack_a == want_a && p.pack_b == want_b,
                                  "k %lld, ta %d, tb %d, unaligned %d %d: packs A %d B %d", (long long)k, ta, tb, ua,
                                  ub, p.pack_a, p.pack_b);
                        CHECK_EQ_I64(p.pack_bytes, (want_a ? m * p.kpad : 0) + (want_b ? n * p.kpad : 0));
                        CHECK(p.kpad == (k16 ? 256 : 272));
                    }
    oc_mm_cuda_plan_input f = resident_input(m, n, 257, OC_MM_FLOAT32, OC_MM_FLOAT32, 6208 * MIB);
    f.a_unaligned = f.b_unaligned = 1;
    oc_mm_cuda_plan p;
    CHECK(oc_mm_cuda_plan_make(ctx, &f, &p) == OC_OK && !p.pack_a && !p.pack_b && p.pack_bytes == 0);
}

/* A large resident int8 product packs B in chunks of columns (a multiple of 256, at least 1024,
 * about an eighth of n) into two buffers, each chunk's product still large enough for its
 * algorithm to be measured; small products, narrow B and a B read as stored do not; the
 * chunks cover n, and the packing holds two chunks, not B. The last column: whether a
 * row-major B is chunked. */
static void check_resident_int8_chunks(oc_context *ctx)
{
    static const int64_t shapes[][4] = {{16384, 16384, 16384, 1}, {8192, 12292, 8192, 1}, {65536, 2048, 16384, 1},
                                        {8192, 4100, 8200, 1},    {4096, 4096, 4096, 0},  {1024, 1024, 1024, 0},
                                        {300, 124, 256, 0},       {20000, 2044, 4000, 0}, {2048, 4100, 8192, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i)
        for (int tb = 0; tb < 2; ++tb) {
            const int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
            oc_mm_cuda_plan_input in = resident_input(m, n, k, OC_MM_INT8, OC_MM_INT32, 64 * 1024 * MIB);
            in.tb = tb;
            oc_mm_cuda_plan p;
            CHECK(oc_mm_cuda_plan_make(ctx, &in, &p) == OC_OK && p.in.resident);
            const int chunked = p.pack_b && shapes[i][3];
            CHECK_MSG((p.b_chunk > 0) == chunked, "%lld x %lld x %lld, tb %d: chunk %lld", (long long)m, (long long)n,
                      (long long)k, tb, (long long)p.b_chunk);
            if (p.b_chunk) {
                CHECK(p.b_chunk % 256 == 0 && p.b_chunk >= 1024 && p.b_chunk < n);
                const int64_t chunks = (n + p.b_chunk - 1) / p.b_chunk;
                CHECK_MSG(chunks >= 2 && chunks <= 8, "%lld columns in %lld chunks of %lld", (long long)n,
                          (long long)chunks, (long long)p.b_chunk);
                CHECK_EQ_I64(p.pack_bytes, p.pack_a ? m * p.kpad : 0);
                CHECK_EQ_I64(p.chunk_bytes, 2 * p.b_chunk * p.kpad);
                CHECK(p.device_bytes >= p.pack_bytes + p.chunk_bytes + p.workspace);
                CHECK(m * p.b_chunk * k >= OC_MM_TUNE_MIN_MACS);
            }
            char *text = NULL;
            CHECK(oc_mm_cuda_plan_render(ctx, &p, "cuda:0 test", 0, &text) == OC_OK && text);
            CHECK_MSG(!text || (strstr(text, "B in chunks of") != NULL) == (p.b_chunk > 0), "%s", text ? text : "");
            free(text);
        }
}

/* The planner's model (matmul_cuda_plan.h) at 65536 x 65536 x 16384 under a quarter of the data
 * (bench/RESULTS.md, "matmul out of core: K panels against tiles"): float32, bound by its
 * products, takes smaller tiles than the largest that fits for deeper K panels; bfloat16 and
 * int8, bound by their copies, keep the largest edge (3 x 3 tiles); the same input twice
 * gives the same plan. */
static void check_model_choice(oc_context *ctx)
{
    static const oc_mm_type types[][2] = {
        {OC_MM_FLOAT32, OC_MM_FLOAT32}, {OC_MM_BFLOAT16, OC_MM_FLOAT32}, {OC_MM_INT8, OC_MM_INT32}};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t) {
        const int64_t m = 65536, k = 16384, in_b = (int64_t)oc_mm_type_size(types[t][0]);
        const int64_t out_b = (int64_t)oc_mm_type_size(types[t][1]);
        oc_mm_cuda_plan_input in = {.m = m,
                                    .n = m,
                                    .k = k,
                                    .in_type = types[t][0],
                                    .out_type = types[t][1],
                                    .device_budget = (2 * m * k * in_b + m * m * out_b) / 4 + 64 * MIB,
                                    .device_budget_given = 1,
                                    .host_budget = 64000 * MIB,
                                    .ndevices = 1};
        oc_mm_cuda_plan p, again;
        CHECK(oc_mm_cuda_plan_make(ctx, &in, &p) == OC_OK && oc_mm_cuda_plan_make(ctx, &in, &again) == OC_OK);
        CHECK(p.tm == again.tm && p.kp == again.kp && p.ntiles == again.ntiles);
        if (types[t][0] == OC_MM_FLOAT32) {
            CHECK_MSG(p.ntiles > 9 && p.kp >= 4096 && strstr(p.bound, "model"),
                      "float32: %lld tiles, K panels of %lld, %s", (long long)p.ntiles, (long long)p.kp, p.bound);
        } else {
            CHECK_MSG(p.ntiles == 9 && !strstr(p.bound, "model"), "type %d: %lld tiles of %lld, %s", (int)types[t][0],
                      (long long)p.ntiles, (long long)p.tm, p.bound);
        }
    }
}

/* Operand bytes a grid of tm x tn tiles reads: each tile its rows of A and columns of B. */
static double reads(const oc_mm_cuda_plan_input *in, int64_t tm, int64_t tn)
{
    const double tiles = (double)((in->m + tm - 1) / tm) * (double)((in->n + tn - 1) / tn);
    return tiles * (double)(tm + tn) * (double)in->k * (double)oc_mm_type_size(in->in_type);
}

/* Several devices where no square shares well and reads few bytes (matmul_cuda_plan.h): on
 * four, 65536 x 65536 takes 8 tiles of 32768 x 16384 (two a device), which read a quarter
 * less of A and B than the 16 squares of 16384 that share; on one and two devices the square
 * tiles stay; a symmetric product stays on squares. */
static void check_rectangles(oc_context *ctx)
{
    const int64_t ks[] = {16384, 196608};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; ++i)
        for (int nd = 1; nd <= 4; nd *= 2)
            for (int sym = 0; sym < 2; ++sym) {
                oc_mm_cuda_plan_input in = {.m = 65536,
                                            .n = 65536,
                                            .k = ks[i],
                                            .in_type = OC_MM_FLOAT32,
                                            .out_type = OC_MM_FLOAT32,
                                            .symmetric = sym,
                                            .device_budget = 120000 * MIB,
                                            .device_budget_given = 1,
                                            .host_budget = 100000 * MIB,
                                            .ndevices = nd};
                oc_mm_cuda_plan p;
                CHECK(oc_mm_cuda_plan_make(ctx, &in, &p) == OC_OK);
                if (nd == 4 && !sym) {
                    CHECK_MSG(p.ntiles == 8 && p.tm != p.tn && p.tm * p.tn == 32768LL * 16384,
                              "k %lld on four devices: %lld tiles of %lld x %lld", (long long)in.k, (long long)p.ntiles,
                              (long long)p.tm, (long long)p.tn);
                    CHECK(reads(&in, p.tm, p.tn) < 0.8 * reads(&in, 16384, 16384));
                } else {
                    CHECK_MSG(p.tm == p.tn, "k %lld on %d devices%s: %lld x %lld tiles", (long long)in.k, nd,
                              sym ? ", symmetric" : "", (long long)p.tm, (long long)p.tn);
                }
            }
}

/* A mixed pair's operand uploaded as stored and promoted on the device: its panel slots hold
 * it as stored, one buffer of promoted panels (the compute type) beside them; the plans over
 * shapes and budgets fit as every plan does; the text and JSON say what is promoted. */
static void check_promoted(oc_context *ctx)
{
    static const int64_t shapes[][3] = {{7, 5, 3}, {3000, 3000, 3000}, {65536, 65536, 16384}, {100003, 257, 65537}};
    static const int64_t budgets[] = {512 * MIB, 6208 * MIB, 120000 * MIB};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; ++b)
            for (int which = 0; which < 3; ++which) { /* A, B, both */
                oc_mm_cuda_plan_input in = {.m = shapes[s][0],
                                            .n = shapes[s][1],
                                            .k = shapes[s][2],
                                            .in_type = which == 2 ? OC_MM_FLOAT64 : OC_MM_FLOAT32,
                                            .out_type = which == 2 ? OC_MM_FLOAT64 : OC_MM_FLOAT32,
                                            .device_budget = budgets[b],
                                            .device_budget_given = 1,
                                            .host_budget = 64 * MIB,
                                            .ndevices = 1,
                                            .from = {which != 1 ? OC_MATMUL_INT8 : OC_MATMUL_DEFAULT,
                                                     which != 0 ? OC_MATMUL_FLOAT16 : OC_MATMUL_DEFAULT}};
                check_plan(ctx, in);
            }
    oc_mm_cuda_plan_input in = {.m = 5000,
                                .n = 3000,
                                .k = 700,
                                .in_type = OC_MM_FLOAT32,
                                .out_type = OC_MM_FLOAT32,
                                .device_budget = 6208 * MIB,
                                .device_budget_given = 1,
                                .ndevices = 1,
                                .tile = 1000,
                                .from = {OC_MATMUL_INT8, OC_MATMUL_DEFAULT}};
    oc_mm_cuda_plan p, q;
    CHECK(oc_mm_cuda_plan_make(ctx, &in, &p) == OC_OK);
    in.from[0] = OC_MATMUL_DEFAULT;
    CHECK(oc_mm_cuda_plan_make(ctx, &in, &q) == OC_OK);
    CHECK(p.tm == q.tm && p.tn == q.tn && p.kp == q.kp && p.elem[0] == 1 && p.elem[1] == 4 && q.elem[0] == 4);
    CHECK_EQ_I64(p.panel_bytes, oc_mm_cuda_b_offset(p.tm * p.kp) + p.kp * p.tn * 4);
    CHECK_EQ_I64(p.promoted_bytes, oc_mm_cuda_b_offset(p.tm * p.kp * 4));
    CHECK(q.promoted_bytes == 0 && q.panel_bytes == oc_mm_cuda_b_offset(q.tm * q.kp * 4) + q.kp * q.tn * 4);
    char *text = NULL, *json = NULL;
    CHECK(oc_mm_cuda_plan_render(ctx, &p, "cuda:0 test", 0, &text) == OC_OK &&
          strstr(text, "A's panels uploaded as int8, converted to float32 on the device") &&
          strstr(text, "promoted panels"));
    CHECK(oc_mm_cuda_plan_render(ctx, &p, "cuda:0 test", 1, &json) == OC_OK &&
          strstr(json, "\"a_uploaded_as\": \"int8\"") && strstr(json, "\"b_uploaded_as\": \"float32\""));
    free(text), free(json);
    CHECK(oc_mm_cuda_plan_render(ctx, &q, "cuda:0 test", 0, &text) == OC_OK && !strstr(text, "promoted"));
    free(text);
}

int main(void)
{
    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    static const int64_t shapes[][3] = {{1, 1, 1},
                                        {7, 5, 3},
                                        {1000, 3, 17},
                                        {3000, 3000, 3000},
                                        {16384, 16384, 16384},
                                        {32768, 32768, 8192},
                                        {65536, 65536, 16384},
                                        {100003, 257, 65537},
                                        {65536, 65536, 196608}};
    static const oc_mm_type types[][2] = {{OC_MM_FLOAT64, OC_MM_FLOAT64},
                                          {OC_MM_FLOAT32, OC_MM_FLOAT32},
                                          {OC_MM_BFLOAT16, OC_MM_FLOAT32},
                                          {OC_MM_FLOAT16, OC_MM_FLOAT16},
                                          {OC_MM_INT8, OC_MM_INT32}};
    static const int64_t budgets[] = {512 * MIB, 6208 * MIB, 120000 * MIB};
    static const int64_t hosts[] = {0, 64 * MIB, 100000 * MIB};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
        for (size_t t = 0; t < sizeof types / sizeof types[0]; ++t)
            for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; ++b)
                for (size_t h = 0; h < sizeof hosts / sizeof hosts[0]; ++h)
                    for (int nd = 1; nd <= 4; nd *= 2)
                        for (int sym = 0; sym < 2; ++sym) {
                            if (sym && shapes[s][0] != shapes[s][1]) continue;
                            oc_mm_cuda_plan_input in = {.m = shapes[s][0],
                                                        .n = shapes[s][1],
                                                        .k = shapes[s][2],
                                                        .in_type = types[t][0],
                                                        .out_type = types[t][1],
                                                        .symmetric = sym,
                                                        .device_budget = budgets[b],
                                                        .device_budget_given = 1,
                                                        .host_budget = hosts[h],
                                                        .ndevices = nd};
                            check_plan(ctx, in);
                        }
    /* A forced tile is the tile. */
    oc_mm_cuda_plan_input in = {.m = 5000,
                                .n = 3000,
                                .k = 700,
                                .in_type = OC_MM_FLOAT32,
                                .out_type = OC_MM_FLOAT32,
                                .device_budget = 6208 * MIB,
                                .device_budget_given = 1,
                                .ndevices = 1,
                                .tile = 1000};
    oc_mm_cuda_plan p;
    CHECK(oc_mm_cuda_plan_make(ctx, &in, &p) == OC_OK && p.tm == 1000 && p.tn == 1000 && p.ntiles == 15);
    /* Budgets below the smallest tile: refused, naming them. */
    in.tile = 0, in.device_budget = 4096;
    CHECK(oc_mm_cuda_plan_make(ctx, &in, &p) == OC_ERR_DEVICE_NO_MEMORY);
    CHECK(strstr(oc_context_last_error(ctx), "--gpu-mem") != NULL);
    /* A symmetric product that is not square is not a plan. */
    in.device_budget = 6208 * MIB, in.symmetric = 1;
    CHECK(oc_mm_cuda_plan_make(ctx, &in, &p) == OC_ERR_INVALID_ARGUMENT);
    check_resident_int8(ctx);
    check_resident_int8_chunks(ctx);
    check_model_choice(ctx);
    check_rectangles(ctx);
    check_promoted(ctx);
    oc_context_free(ctx);
    return oc_test_finish();
}
