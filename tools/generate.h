/* generate.h - random 0/1 matrices with planted near-duplicate rows (gen and demo). */
#ifndef OC_TOOLS_GENERATE_H
#define OC_TOOLS_GENERATE_H

#include <stdint.h>
#include "outcore.h"

typedef struct gen_params {
    int64_t rows, cols;
    double density;     /* probability of a one, resolved to 1/4096 */
    int64_t plant;      /* near-duplicate pairs to plant */
    double flip;        /* fraction of a planted row's bits flipped (default 0.01) */
    uint64_t seed;
} gen_params;

/* Generates the matrix into a new oc_matrix (name "generated"); planted pairs are written to
 * pairs[2*k], pairs[2*k+1] (row of the copy first, then its source) when pairs is not NULL. */
oc_status gen_matrix(oc_context *ctx, const gen_params *p, oc_matrix **out, int64_t *pairs);

#endif
