/* gen_pairs.h - which rows of a generated matrix are planted near-copies of which. */
#ifndef OC_TOOLS_GEN_PAIRS_H
#define OC_TOOLS_GEN_PAIRS_H

#include <stdint.h>

typedef struct gen_pairs {
    int64_t count;    /* pairs planted: min(plant, rows / 2) */
    int64_t *pairs;   /* pairs[2k], pairs[2k+1]: the copy's row, then its source's, in pick order */
    int64_t *by_copy; /* the same pairs sorted by the copy's row, for gen_pairs_source */
} gen_pairs;

/* Picks min(plant, rows / 2) pairs on 2K distinct rows from seed; no copy is a source.
 * Returns 0, or -1 when out of memory (g then holds nothing). */
int gen_pairs_pick(gen_pairs *g, int64_t rows, int64_t plant, uint64_t seed);
/* The source row of the copy at row, or -1 when row is not a planted copy. */
int64_t gen_pairs_source(const gen_pairs *g, int64_t row);
void gen_pairs_free(gen_pairs *g);

#endif
