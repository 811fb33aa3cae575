/*
 * epilogue_blocks.h - the column blocking shared by the ISA tile epilogues (contract:
 * kernel.h), included by each ISA's epilogue file and compiled with that file's flags.
 *
 * A block's popcounts are read once per column, converted to the lanes' type (32-bit
 * integers, or doubles) into a stack buffer of OC_EPILOGUE_CHUNK columns, and reused by
 * every row; the ISA supplies the row loops. Jaccard goes through float lanes when
 * pop_max <= OC_EPILOGUE_FLOAT_POP_MAX: then c and |a| + |b| - c (at most 2^24) are exact
 * in float, and one correctly rounded float division of them equals the double quotient
 * rounded to float, because rounding twice, to p' bits then to p, is innocuous for
 * division when p' >= 2p + 2 (S. A. Figueroa, "When is double rounding innocuous?", SIGNUM
 * Newsletter 30(3), 1995): 53 >= 2 * 24 + 2. Float lanes are twice as many per division
 * as double lanes, which is what lets jaccard keep up with the counts kernel. Cosine has
 * two roundings in the reference (square root, then division) and always uses doubles.
 */
#ifndef OC_GRAM_CPU_KERNELS_EPILOGUE_BLOCKS_H
#define OC_GRAM_CPU_KERNELS_EPILOGUE_BLOCKS_H

#include <stddef.h>

#include "gram/cpu/kernels/kernel.h"

/* 512 columns: 6 KiB of stack for both buffers, a few rows' worth of counts. */
#define OC_EPILOGUE_CHUNK 512
#define OC_EPILOGUE_FLOAT_POP_MAX (1 << 23)

/* An ISA's row loops over one column block of w columns; pb is the block's converted
 * popcounts (uint32: their low 32 bits, exact when pop_max <= FLOAT_POP_MAX; or double). */
typedef struct oc_epilogue_rows {
    void (*hamming)(const uint32_t *c, int64_t ldc, const int64_t *pa, const uint32_t *pb, int64_t rows, int64_t w,
                    int wide, void *out, int64_t ldo);
    void (*jaccard_float)(const uint32_t *c, int64_t ldc, const int64_t *pa, const uint32_t *pb, int64_t rows,
                          int64_t w, float *out, int64_t ldo);
    /* jaccard (cosine == 0) or cosine in double lanes */
    void (*in_double)(const uint32_t *c, int64_t ldc, const int64_t *pa, const double *pb, int64_t rows, int64_t w,
                      int cosine, float *out, int64_t ldo);
} oc_epilogue_rows;

/* Every kind but OC_EPILOGUE_COUNTS_U16 (which needs no popcounts: the caller's own loop),
 * over cols columns. Each kind names its row loop below (a switch without a default, so a
 * new kind does not compile until it has one). */
static inline __attribute__((always_inline)) void oc_epilogue_blocks(const oc_epilogue_rows *f, oc_epilogue_kind kind,
                                                                     const uint32_t *c, int64_t ldc, const int64_t *pa,
                                                                     const int64_t *pb, int64_t rows, int64_t cols,
                                                                     int64_t pop_max, void *out, int64_t ldo)
{
    enum { ROWS_NONE, ROWS_HAMMING, ROWS_JACCARD_FLOAT, ROWS_IN_DOUBLE } loop = ROWS_NONE;
    int flag = 0; /* hamming: int32 (wide); in double: cosine */
    size_t es = sizeof(float);
    switch (kind) {
    case OC_EPILOGUE_COUNTS_U16:
        return;
    case OC_EPILOGUE_HAMMING_I32:
        loop = ROWS_HAMMING, flag = 1;
        break;
    case OC_EPILOGUE_HAMMING_U16:
        loop = ROWS_HAMMING, es = sizeof(uint16_t);
        break;
    case OC_EPILOGUE_JACCARD:
        loop = pop_max <= OC_EPILOGUE_FLOAT_POP_MAX ? ROWS_JACCARD_FLOAT : ROWS_IN_DOUBLE;
        break;
    case OC_EPILOGUE_COSINE:
        loop = ROWS_IN_DOUBLE, flag = 1;
        break;
    }
    uint32_t pb32[OC_EPILOGUE_CHUNK];
    double pbd[OC_EPILOGUE_CHUNK];
    for (int64_t j0 = 0; j0 < cols; j0 += OC_EPILOGUE_CHUNK) {
        const int64_t w = cols - j0 < OC_EPILOGUE_CHUNK ? cols - j0 : OC_EPILOGUE_CHUNK;
        for (int64_t j = 0; j < w; ++j) {
            if (loop == ROWS_IN_DOUBLE) pbd[j] = (double)pb[j0 + j];
            else pb32[j] = (uint32_t)pb[j0 + j];
        }
        const uint32_t *cb = c + j0;
        void *ob = (char *)out + (size_t)j0 * es;
        switch (loop) {
        case ROWS_IN_DOUBLE:
            f->in_double(cb, ldc, pa, pbd, rows, w, flag, ob, ldo);
            break;
        case ROWS_JACCARD_FLOAT:
            f->jaccard_float(cb, ldc, pa, pb32, rows, w, ob, ldo);
            break;
        case ROWS_HAMMING:
            f->hamming(cb, ldc, pa, pb32, rows, w, flag, ob, ldo);
            break;
        case ROWS_NONE:
            return; /* not a kind */
        }
    }
}

#endif
