/*
 * generate.c - the rows of a generated matrix, and gen_matrix, the whole matrix in memory.
 * The file writer of `outcore gen` calls gen_fill_rows through oc_matrix_write_rows.
 */
#include "generate.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gen_rng.h"

#define DENSITY_BITS 12

/* A word whose bits are independently 1 with probability q / 2^DENSITY_BITS: walking q's
 * binary digits from the least significant, OR with a fresh random word for a 1 digit and
 * AND for a 0 digit halves-and-shifts the probability exactly. Trailing zero digits are
 * skipped, so density 0.5 costs one random word. */
static uint64_t random_word(gen_rng *r, unsigned q)
{
    if (q == 0) return 0;
    if (q >= (1u << DENSITY_BITS)) return ~0ull;
    int low = __builtin_ctz(q);
    uint64_t x = 0;
    for (int bit = low; bit < DENSITY_BITS; ++bit) x = ((q >> bit) & 1) ? (x | gen_rng_next(r)) : (x & gen_rng_next(r));
    return x;
}

int gen_plan_init(gen_plan *g, const gen_params *p)
{
    g->p = *p;
    g->q = (unsigned)(p->density * (1 << DENSITY_BITS) + 0.5);
    /* flip * cols to the nearest whole number (halves up), at most cols where the double rounds
     * up. The flip was written in decimal: a product that is a half there (0.29 x 50 = 14.5) may
     * land a few units of the last place below it in binary (14.499999999999998), so those
     * few units count as the half. */
    const double product = p->flip * (double)p->cols;
    const double flips = product + 0.5 + product * 8 * DBL_EPSILON;
    g->flips = flips >= (double)p->cols ? p->cols : (int64_t)flips;
    return gen_pairs_pick(&g->pairs, p->rows, p->plant, p->seed);
}

void gen_plan_free(gen_plan *g) { gen_pairs_free(&g->pairs); }

/* Row `row`'s own bits into w: random words stored in memory order, so byte k of the row is
 * byte k % 8 of word k / 8 as this host stores it; bytes past cols are cleared. */
static void own_row(const gen_plan *g, int64_t row, uint64_t *w)
{
    const int64_t cols = g->p.cols, words = (cols + 63) / 64, bytes = (cols + 7) / 8;
    gen_rng r;
    gen_rng_stream(&r, g->p.seed, GEN_STREAM_ROW, (uint64_t)row);
    for (int64_t k = 0; k < words; ++k) w[k] = random_word(&r, g->q);
    unsigned char *b = (unsigned char *)w;
    memset(b + bytes, 0, (size_t)(words * 8 - bytes));
    if (cols % 8) b[bytes - 1] &= (unsigned char)(0xFF00u >> (cols % 8));
}

/* Flips exactly g->flips distinct columns of the planted copy at row `row` (its bits in d),
 * a uniform choice among all sets of that many, from the copy's own stream. Floyd's
 * algorithm draws the set in as many steps as it has members, marking each in `mark` (a
 * row-sized scratch of stride bytes) to tell a column drawn before; past half the columns
 * it draws the columns that stay instead and flips the others, so a copy costs at most
 * cols / 2 draws, and none at --flip 1 (every bit flipped). */
static void flip_columns(const gen_plan *g, int64_t row, unsigned char *d, unsigned char *mark)
{
    const int64_t cols = g->p.cols, bytes = (cols + 7) / 8;
    const int keep = g->flips > cols - g->flips; /* draw the columns that stay */
    const int64_t draws = keep ? cols - g->flips : g->flips;
    memset(mark, 0, (size_t)bytes);
    gen_rng r;
    gen_rng_stream(&r, g->p.seed, GEN_STREAM_FLIP, (uint64_t)row);
    for (int64_t j = cols - draws; j < cols; ++j) {
        int64_t c = (int64_t)gen_rng_below(&r, (uint64_t)j + 1);
        if (mark[c >> 3] & (0x80u >> (c & 7))) c = j; /* drawn before: take j, which cannot have been */
        mark[c >> 3] |= (unsigned char)(0x80u >> (c & 7));
    }
    if (keep) {
        for (int64_t k = 0; k < bytes; ++k) mark[k] = (unsigned char)~mark[k];
        if (cols % 8) mark[bytes - 1] &= (unsigned char)(0xFF00u >> (cols % 8)); /* no bit past cols */
    }
    for (int64_t k = 0; k < bytes; ++k) d[k] ^= mark[k];
}

int gen_fill_rows(void *plan, int64_t row0, int64_t nrows, unsigned char *bits, int64_t stride)
{
    const gen_plan *g = plan;
    unsigned char *mark = NULL; /* the flips' scratch, taken at the block's first planted copy */
    for (int64_t i = 0; i < nrows; ++i) {
        const int64_t row = row0 + i, src = gen_pairs_source(&g->pairs, row);
        unsigned char *d = bits + i * stride;
        own_row(g, src >= 0 ? src : row, (uint64_t *)d);
        if (src < 0 || g->flips == 0) continue;
        /* A planted copy: its source's bits with `flips` distinct columns flipped. */
        if (!mark && !(mark = malloc((size_t)stride))) return -1;
        flip_columns(g, row, d, mark);
    }
    free(mark);
    return 0;
}

oc_status gen_matrix(oc_context *ctx, const gen_params *p, oc_matrix **out, int64_t *pairs)
{
    /* A matrix no address space holds is out of memory: rows x stride would wrap. */
    if (p->cols <= 0 || p->rows <= 0 || p->cols > INT64_MAX - 63 ||
        p->rows > (int64_t)(SIZE_MAX / 2) / ((p->cols + 63) / 64 * 8))
        return OC_ERR_NO_MEMORY;
    const int64_t stride = (p->cols + 63) / 64 * 8;
    gen_plan g;
    if (gen_plan_init(&g, p) != 0) return OC_ERR_NO_MEMORY;
    unsigned char *buf = malloc((size_t)(p->rows * stride));
    if (!buf) {
        gen_plan_free(&g);
        return OC_ERR_NO_MEMORY;
    }
    if (gen_fill_rows(&g, 0, p->rows, buf, stride) != 0) {
        free(buf);
        gen_plan_free(&g);
        return OC_ERR_NO_MEMORY;
    }
    if (pairs)
        for (int64_t k = 0; k < 2 * g.pairs.count; ++k) pairs[k] = g.pairs.pairs[k];
    gen_plan_free(&g);
    oc_status st = oc_matrix_from_bits(ctx, buf, p->rows, p->cols, stride, OC_BITS_MSB_FIRST, out);
    free(buf);
    if (st == OC_OK) st = oc_matrix_set_name(ctx, *out, "generated");
    return st;
}
