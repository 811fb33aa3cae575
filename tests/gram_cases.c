/*
 * gram_cases.c - the case table (gram_cases.h says what a row means) and the bits of a row.
 *
 * What the rows reach, besides every metric and dtype in each: one word, K blocks and every
 * word tail of the packed layout (m = 1, 63, 64, 65, 511, 513, ..., 70001 past uint16);
 * n = 1, n != p both ways, n past the CPU's micro-tiles, the GPU's CTAs and the planner's
 * tiles; empty rows, all-ones rows, identical rows, skewed row lengths, density 0, 0.02 and
 * 1; forced tiles from 1 row to more than n, on and off the diagonal; output rows with padding
 * that must stay untouched; top-k with k = 1, small, at the device's limit (128), past it
 * (200, selected on the host) and every column (k = p, past the candidates of A·Aᵀ); thresholds at 0, in the middle and at the
 * top of the range; the pairs spill file; GPU budgets small enough that panels stream.
 *
 * Selection rows use few columns and low densities, so that many scores tie and the tie
 * rules decide much of each answer. Rows marked quick > 0 are the compute-sanitizer grids.
 */
#include "gram_cases.h"

#include <stdlib.h>

const gram_output gram_outputs[GRAM_OUTPUT_COUNT] = {
    {OC_METRIC_COUNTS, OC_DTYPE_INT32},   {OC_METRIC_COUNTS, OC_DTYPE_UINT16},   {OC_METRIC_HAMMING, OC_DTYPE_INT32},
    {OC_METRIC_HAMMING, OC_DTYPE_UINT16}, {OC_METRIC_JACCARD, OC_DTYPE_FLOAT32}, {OC_METRIC_COSINE, OC_DTYPE_FLOAT32},
};

#define KIB 1024
#define MIB (1024 * 1024)

/* clang-format off */
const gram_case gram_cases[] = {
    /* Dense output: shapes and bit patterns. */
    {.name = "n=1 m=1", .n = 1, .m = 1, .density = 1.0, .quick = 2},
    {.name = "n=1 p=1 m=1", .n = 1, .p = 1, .m = 1, .density = 1.0, .quick = 1},
    {.name = "m=63", .n = 5, .m = 63, .density = 0.5, .quick = 2},
    {.name = "one word", .n = 7, .m = 64, .density = 0.5},
    {.name = "m=65", .n = 9, .m = 65, .density = 0.5, .quick = 1},
    {.name = "m=100 n!=p", .n = 17, .p = 9, .m = 100, .density = 0.5, .pattern = GRAM_MIXED, .quick = 1},
    {.name = "m=511 n!=p", .n = 13, .p = 5, .m = 511, .density = 0.5},
    {.name = "m=513", .n = 50, .m = 513, .density = 0.5},
    {.name = "m=513 n!=p", .n = 33, .p = 70, .m = 513, .density = 0.5, .quick = 2},
    {.name = "m=1000 n!=p", .n = 37, .p = 61, .m = 1000, .density = 0.3},
    {.name = "m=1000", .n = 129, .m = 1000, .density = 0.3, .quick = 1},
    {.name = "sparse", .n = 101, .m = 1000, .density = 0.02},
    {.name = "sparse n!=p", .n = 257, .p = 130, .m = 2000, .density = 0.02, .pattern = GRAM_MIXED, .quick = 1},
    {.name = "dense n!=p", .n = 70, .p = 130, .m = 777, .density = 0.95},
    {.name = "dense", .n = 200, .m = 1500, .density = 0.95, .quick = 1},
    {.name = "empty and full rows", .n = 30, .m = 200, .density = 0.5, .pattern = GRAM_MIXED},
    {.name = "empty and full rows n!=p", .n = 23, .p = 17, .m = 129, .density = 0.5, .pattern = GRAM_MIXED},
    {.name = "all empty", .n = 12, .m = 300, .density = 0.0, .quick = 1},
    {.name = "all ones n!=p", .n = 11, .p = 9, .m = 300, .density = 1.0},
    {.name = "identical rows", .n = 60, .m = 300, .density = 0.3, .pattern = GRAM_DUPLICATES},
    {.name = "skewed rows", .n = 300, .m = 2000, .density = 0.05, .pattern = GRAM_SKEWED},
    {.name = "skewed rows n!=p", .n = 200, .p = 150, .m = 5000, .density = 0.02, .pattern = GRAM_SKEWED},
    {.name = "past the default tile", .n = 251, .m = 100, .density = 0.5},
    {.name = "past the default tile n!=p", .n = 243, .p = 247, .m = 70, .density = 0.5, .pattern = GRAM_MIXED},
    {.name = "n=300 past one CTA", .n = 300, .m = 777, .density = 0.5, .quick = 1},
    {.name = "K blocks", .n = 20, .m = 40000, .density = 0.5, .quick = 1},
    {.name = "K blocks n!=p", .n = 6, .p = 11, .m = 33333, .density = 0.5, .pattern = GRAM_MIXED},
    {.name = "m >= 65536", .n = 5, .m = 70001, .density = 0.5},

    /* Dense output: forced tiles (1 row to more than n) and padded output rows. */
    {.name = "tile 1", .n = 31, .m = 130, .density = 0.5, .pattern = GRAM_MIXED, .tile = 1},
    {.name = "tile 5 n!=p", .n = 23, .p = 17, .m = 129, .density = 0.5, .pattern = GRAM_MIXED, .tile = 5},
    {.name = "tile 7 padded", .n = 50, .m = 513, .density = 0.5, .tile = 7, .pad = 3},
    {.name = "tile 7 padded n!=p", .n = 13, .p = 5, .m = 511, .density = 0.5, .tile = 7, .pad = 3},
    {.name = "tile 13 n!=p", .n = 70, .p = 130, .m = 777, .density = 0.95, .tile = 13},
    {.name = "tile 64", .n = 251, .m = 100, .density = 0.5, .tile = 64},
    {.name = "tile 240 padded n!=p", .n = 243, .p = 247, .m = 70, .density = 0.5, .pattern = GRAM_MIXED, .tile = 240,
     .pad = 1},
    {.name = "tile larger than n", .n = 101, .m = 1000, .density = 0.02, .tile = 1000000},
    {.name = "tile 256 n=700", .n = 700, .m = 1100, .density = 0.5, .pattern = GRAM_MIXED, .tile = 256,
     .gpu_tile = 256, .quick = 1},
    {.name = "tile 256 n!=p", .n = 600, .p = 333, .m = 900, .density = 0.5, .pattern = GRAM_MIXED, .tile = 256,
     .gpu_tile = 256, .quick = 2},

    /* Dense output under GPU budgets that hold fewer panels than the job has. On the CPU
     * paths, which have no such budget, 600 rows: still three tiles of 256, the last
     * partial. */
    {.name = "streamed A·Aᵀ", .n = 1500, .m = 3000, .density = 0.5, .pattern = GRAM_MIXED, .tile = 256,
     .gpu_tile = 256, .gpu_mem = 800 * KIB, .quick = 2, .cpu_rows = 600},
    {.name = "streamed A·Bᵀ", .n = 1300, .p = 900, .m = 2500, .density = 0.5, .pattern = GRAM_MIXED, .tile = 256,
     .gpu_tile = 256, .gpu_mem = 800 * KIB, .quick = 2, .cpu_rows = 600},

    /* Top-k: tiny shapes, ties, k = 1, small, the device limit 128, past it, k = p. */
    {.name = "one row", .n = 1, .m = 9, .density = 0.3, .kind = GRAM_TOPK, .k = 1},
    {.name = "one row", .n = 1, .m = 9, .density = 0.3, .kind = GRAM_TOPK, .k = GRAM_K_ALL_COLUMNS},
    {.name = "tiny", .n = 7, .m = 11, .density = 0.2, .kind = GRAM_TOPK, .k = 4},
    {.name = "ties", .n = 53, .m = 13, .density = 0.15, .kind = GRAM_TOPK, .k = 1},
    {.name = "ties", .n = 53, .m = 13, .density = 0.15, .kind = GRAM_TOPK, .k = 4, .tile = 8},
    {.name = "ties", .n = 53, .m = 13, .density = 0.15, .kind = GRAM_TOPK, .k = GRAM_K_ALL_COLUMNS, .tile = 24},
    {.name = "ties A·Bᵀ", .n = 41, .p = 29, .m = 10, .density = 0.2, .kind = GRAM_TOPK, .k = 1, .tile = 8},
    {.name = "ties A·Bᵀ", .n = 41, .p = 29, .m = 10, .density = 0.2, .kind = GRAM_TOPK, .k = 4},
    {.name = "ties A·Bᵀ", .n = 41, .p = 29, .m = 10, .density = 0.2, .kind = GRAM_TOPK, .k = GRAM_K_ALL_COLUMNS, .tile = 24},
    {.name = "empty and full rows", .n = 45, .m = 30, .density = 0.3, .pattern = GRAM_MIXED, .kind = GRAM_TOPK,
     .k = 6},
    {.name = "identical rows", .n = 60, .m = 20, .density = 0.3, .pattern = GRAM_DUPLICATES, .kind = GRAM_TOPK,
     .k = 3, .tile = 8},
    {.name = "several tiles", .n = 131, .m = 40, .density = 0.1, .kind = GRAM_TOPK, .k = 4, .tile = 24},
    {.name = "several tiles A·Bᵀ", .n = 97, .p = 143, .m = 70, .density = 0.12, .kind = GRAM_TOPK, .k = 4, .tile = 8},
    /* Dense rows of equal length: many pairs share a jaccard score through different counts
     * and popcounts, which the pre-test on counts (select_topk.c) must all let through. */
    {.name = "dense jaccard ties", .n = 150, .m = 96, .density = 0.5, .kind = GRAM_TOPK, .k = 4},
    {.name = "dense jaccard ties A·Bᵀ", .n = 90, .p = 120, .m = 64, .density = 0.5, .kind = GRAM_TOPK, .k = 4},
    {.name = "skewed rows", .n = 300, .m = 3000, .density = 0.03, .pattern = GRAM_SKEWED, .kind = GRAM_TOPK, .k = 5},
    /* Lists handed to the caller in blocks of 4096 rows (select_topk.c): two blocks, the last
     * partial. */
    {.name = "past one result block", .n = 4500, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = 3},
    /* Three GPU tiles of 256 (the last partial), A·Bᵀ of unequal sizes, few long rows, each
     * k under the GPU's three settings: tiles of 256, the planner's, tiles of 256 under a
     * budget. Rows that differ only in GPU fields are the GPU's alone: the CPU would repeat
     * a job. */
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = 1, .gpu_tile = 256, .quick = 1},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = 1, .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = 1, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = 10, .tile = 256, .gpu_tile = 256,
     .quick = 2},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = 10, .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = 10, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = 128, .tile = 100, .gpu_tile = 256,
     .quick = 1},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = 128, .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = 128, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = 200, .gpu_tile = 256, .quick = 1},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = 200, .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = 200, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = GRAM_K_ALL_COLUMNS, .tile = 256,
     .gpu_tile = 256, .quick = 1},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = GRAM_K_ALL_COLUMNS,
     .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_TOPK, .k = GRAM_K_ALL_COLUMNS, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = 1, .tile = 256,
     .gpu_tile = 256, .quick = 1},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = 1,
     .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = 1, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = 10, .tile = 100,
     .gpu_tile = 256, .quick = 1},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = 10,
     .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = 10, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = 128, .gpu_tile = 256,
     .quick = 1},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = 128,
     .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = 128, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = 200, .tile = 256,
     .gpu_tile = 256, .quick = 1},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = 200,
     .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = 200, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = GRAM_K_ALL_COLUMNS,
     .tile = 100, .gpu_tile = 256, .quick = 1},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = GRAM_K_ALL_COLUMNS,
     .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_TOPK, .k = GRAM_K_ALL_COLUMNS,
     .gpu_tile = 256, .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_TOPK, .k = 1, .tile = 100,
     .gpu_tile = 256, .quick = 1},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_TOPK, .k = 1, .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_TOPK, .k = 1, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_TOPK, .k = 10, .gpu_tile = 256,
     .quick = 1},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_TOPK, .k = 10, .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_TOPK, .k = 10, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_TOPK, .k = 36, .tile = 256,
     .gpu_tile = 256, .quick = 1},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_TOPK, .k = 36,
     .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_TOPK, .k = 36, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_TOPK, .k = GRAM_K_ALL_COLUMNS,
     .gpu_tile = 256, .quick = 1},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_TOPK, .k = GRAM_K_ALL_COLUMNS,
     .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_TOPK, .k = GRAM_K_ALL_COLUMNS,
     .gpu_tile = 256, .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},

    /* Threshold: 0 (every pair), the middle, the top of the range (identical rows only). */
    {.name = "one row", .n = 1, .m = 9, .density = 0.3, .kind = GRAM_THRESHOLD, .threshold = 0.0},
    {.name = "tiny", .n = 7, .m = 11, .density = 0.2, .kind = GRAM_THRESHOLD, .threshold = 0.25},
    {.name = "ties", .n = 53, .m = 13, .density = 0.15, .kind = GRAM_THRESHOLD, .threshold = 0.0, .tile = 8},
    {.name = "ties", .n = 53, .m = 13, .density = 0.15, .kind = GRAM_THRESHOLD, .threshold = 0.25},
    {.name = "ties", .n = 53, .m = 13, .density = 0.15, .kind = GRAM_THRESHOLD, .threshold = 1.0, .tile = 24},
    {.name = "ties A·Bᵀ", .n = 41, .p = 29, .m = 10, .density = 0.2, .kind = GRAM_THRESHOLD, .threshold = 0.0},
    {.name = "ties A·Bᵀ", .n = 41, .p = 29, .m = 10, .density = 0.2, .kind = GRAM_THRESHOLD, .threshold = 0.25,
     .tile = 8},
    {.name = "ties A·Bᵀ", .n = 41, .p = 29, .m = 10, .density = 0.2, .kind = GRAM_THRESHOLD, .threshold = 1.0},
    {.name = "empty and full rows", .n = 45, .m = 30, .density = 0.3, .pattern = GRAM_MIXED,
     .kind = GRAM_THRESHOLD, .threshold = 0.5, .tile = 8},
    {.name = "identical rows", .n = 60, .m = 20, .density = 0.3, .pattern = GRAM_DUPLICATES,
     .kind = GRAM_THRESHOLD, .threshold = 1.0},
    {.name = "several tiles", .n = 131, .m = 40, .density = 0.1, .kind = GRAM_THRESHOLD, .threshold = 0.25,
     .tile = 24},
    {.name = "several tiles A·Bᵀ", .n = 97, .p = 143, .m = 70, .density = 0.12, .kind = GRAM_THRESHOLD,
     .threshold = 0.1, .tile = 8},
    {.name = "dense jaccard ties", .n = 150, .m = 96, .density = 0.5, .kind = GRAM_THRESHOLD, .threshold = 0.5},
    {.name = "skewed rows", .n = 300, .m = 3000, .density = 0.03, .pattern = GRAM_SKEWED, .kind = GRAM_THRESHOLD,
     .threshold = 0.2},
    /* The same with every pair through the spill file. */
    {.name = "ties spilled", .n = 53, .m = 13, .density = 0.15, .kind = GRAM_THRESHOLD, .threshold = 0.0, .tile = 8,
     .pairs_buffer = 1},
    {.name = "ties A·Bᵀ spilled", .n = 41, .p = 29, .m = 10, .density = 0.2, .kind = GRAM_THRESHOLD,
     .threshold = 0.25, .tile = 8, .pairs_buffer = 1},
    {.name = "several tiles spilled", .n = 131, .m = 40, .density = 0.1, .kind = GRAM_THRESHOLD, .threshold = 0.1,
     .tile = 24, .pairs_buffer = 1},
    {.name = "several tiles A·Bᵀ spilled", .n = 97, .p = 143, .m = 70, .density = 0.12, .kind = GRAM_THRESHOLD,
     .threshold = 0.0, .pairs_buffer = 1},
    {.name = "700 spilled", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_THRESHOLD, .threshold = 0.3, .tile = 100,
     .gpu_tile = 256, .gpu_mem = 24 * MIB, .pairs_buffer = 1},
    /* As for top-k: each threshold under the GPU's three settings. */
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_THRESHOLD, .threshold = 0.0, .gpu_tile = 256,
     .quick = 1},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_THRESHOLD, .threshold = 0.0,
     .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_THRESHOLD, .threshold = 0.0, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_THRESHOLD, .threshold = 0.3, .tile = 256,
     .gpu_tile = 256, .quick = 2},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_THRESHOLD, .threshold = 0.3,
     .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_THRESHOLD, .threshold = 0.3, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_THRESHOLD, .threshold = 1.0, .tile = 100,
     .gpu_tile = 256, .quick = 1},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_THRESHOLD, .threshold = 1.0,
     .backends = GRAM_ON_CUDA},
    {.name = "700", .n = 700, .m = 40, .density = 0.12, .kind = GRAM_THRESHOLD, .threshold = 1.0, .gpu_tile = 256,
     .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_THRESHOLD, .threshold = 0.0,
     .tile = 256, .gpu_tile = 256, .quick = 1},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_THRESHOLD, .threshold = 0.0,
     .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_THRESHOLD, .threshold = 0.0,
     .gpu_tile = 256, .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_THRESHOLD, .threshold = 0.3,
     .tile = 100, .gpu_tile = 256, .quick = 1},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_THRESHOLD, .threshold = 0.3,
     .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_THRESHOLD, .threshold = 0.3,
     .gpu_tile = 256, .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_THRESHOLD, .threshold = 1.0,
     .gpu_tile = 256, .quick = 1},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_THRESHOLD, .threshold = 1.0,
     .backends = GRAM_ON_CUDA},
    {.name = "700x530", .n = 700, .p = 530, .m = 40, .density = 0.13, .kind = GRAM_THRESHOLD, .threshold = 1.0,
     .gpu_tile = 256, .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_THRESHOLD, .threshold = 0.0,
     .tile = 100, .gpu_tile = 256, .quick = 1},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_THRESHOLD, .threshold = 0.0,
     .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_THRESHOLD, .threshold = 0.0,
     .gpu_tile = 256, .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_THRESHOLD, .threshold = 0.3,
     .gpu_tile = 256, .quick = 1},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_THRESHOLD, .threshold = 0.3,
     .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_THRESHOLD, .threshold = 0.3,
     .gpu_tile = 256, .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_THRESHOLD, .threshold = 1.0,
     .tile = 256, .gpu_tile = 256, .quick = 1},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_THRESHOLD, .threshold = 1.0,
     .backends = GRAM_ON_CUDA},
    {.name = "37 long rows", .n = 37, .m = 1100, .density = 0.08, .kind = GRAM_THRESHOLD, .threshold = 1.0,
     .gpu_tile = 256, .gpu_mem = 24 * MIB, .backends = GRAM_ON_CUDA},
};
/* clang-format on */

const int gram_case_count = (int)(sizeof gram_cases / sizeof gram_cases[0]);

/* From the row's name and shape, so that a row's bits do not depend on its place in the
 * table (FNV-1a). */
uint64_t gram_case_seed(const gram_case *row)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *s = row->name; *s; ++s) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    h = (h ^ (uint64_t)(row->n * 131 + row->p * 7 + row->m)) * 0x100000001b3ull;
    return h ? h : 1; /* xorshift's state must not be 0 */
}

static uint64_t next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static int random_bit(double density, uint64_t *seed)
{
    if (density >= 1.0) return 1;
    return (double)(next(seed) >> 11) < density * 9007199254740992.0; /* 53 random bits */
}

unsigned char *gram_case_bytes(const gram_case *row, int64_t rows, uint64_t *seed)
{
    const int64_t m = row->m;
    unsigned char *d = malloc((size_t)(rows * m) + 1);
    if (!d) return NULL;
    for (int64_t i = 0; i < rows; ++i) {
        unsigned char *r = d + i * m;
        double density = row->density;
        int fill = -1; /* -1 random, else every bit */
        switch (row->pattern) {
        case GRAM_MIXED:
            fill = i % 5 == 1 ? 0 : i % 5 == 3 ? 1 : -1;
            break;
        case GRAM_SKEWED:
            if (i % 11 == 0) fill = 0;
            density /= (double)(1 << (i % 8));
            break;
        case GRAM_DUPLICATES:
            if (i % 2 == 1) {
                for (int64_t k = 0; k < m; ++k) r[k] = r[k - m];
                continue;
            }
            break;
        case GRAM_RANDOM:
            break;
        }
        for (int64_t k = 0; k < m; ++k)
            r[k] = fill >= 0 ? (unsigned char)fill : (unsigned char)random_bit(density, seed);
    }
    return d;
}
