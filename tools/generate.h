/*
 * generate.h - random 0/1 matrices with planted near-duplicate rows (gen and demo).
 *
 * Row i is made from its own random stream (gen_rng.h), or, for a planted copy, from its
 * source's stream followed by the flips of its own: the bytes of a row are a function of
 * the parameters and the row index alone, so the file `outcore gen` streams in blocks on
 * many threads and the matrix gen_matrix makes in memory are the same bytes.
 */
#ifndef OC_TOOLS_GENERATE_H
#define OC_TOOLS_GENERATE_H

#include <stdint.h>
#include "gen_pairs.h"
#include "outcore.h"

typedef struct gen_params {
    int64_t rows, cols;
    double density; /* probability of a one, resolved to 1/4096 */
    int64_t plant;  /* near-duplicate pairs to plant */
    double flip;    /* a planted copy differs from its source in round(flip * cols) distinct bits */
    uint64_t seed;
} gen_params;

/* What every row's generation reads, fixed before the first row: shared by the threads. */
typedef struct gen_plan {
    gen_params p;
    unsigned q;    /* density in 1/4096 */
    int64_t flips; /* distinct bits flipped in a planted copy: flip * cols, rounded */
    gen_pairs pairs;
} gen_plan;

/* Returns 0, or -1 when out of memory. gen_plan_free releases it. */
int gen_plan_init(gen_plan *g, const gen_params *p);
void gen_plan_free(gen_plan *g);

/* An oc_rows_fill_fn over a gen_plan (user): rows [row0, row0 + nrows) into bits, row i at
 * bits + i * stride (stride >= ((cols + 63) / 64) * 8, a multiple of 8), MSB first, with the
 * bits past cols zero. Safe to call from several threads at once. Returns 0, or -1 when out
 * of memory for the scratch of a planted copy's flips (stride bytes). */
int gen_fill_rows(void *plan, int64_t row0, int64_t nrows, unsigned char *bits, int64_t stride);

/* Generates the matrix into a new oc_matrix (name "generated"); planted pairs
 * are written to pairs[2*k], pairs[2*k+1] (row of the copy first, then its source) when pairs
 * is not NULL. */
oc_status gen_matrix(oc_context *ctx, const gen_params *p, oc_matrix **out, int64_t *pairs);

#endif
