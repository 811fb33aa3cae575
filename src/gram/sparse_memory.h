/*
 * sparse_memory.h - what the sparse algorithm holds, known before it builds anything: the
 * index of the rows (gram/cpu/sparse/sparse_index.c) and each worker's row buffers
 * (gram/cpu/sparse/gram_sparse.c), from the sizes the plan counted (gram_choice.c), so that
 * the choice keeps the job within the host budget. The arrays are the CPU backend's, but the
 * choice is made before any backend runs, so their sizes are stated here, and
 * tests/test_sparse_memory.c holds them to the index that backend builds.
 *
 * Every figure is an upper bound: the pair lists as large as they are ever built, the hub
 * groups as many as the rows, a worker's accumulator rounded up to its 2 MiB pages.
 */
#ifndef OC_GRAM_SPARSE_MEMORY_H
#define OC_GRAM_SPARSE_MEMORY_H

#include <stdint.h>

/* Bytes of one entry of the hub word lists (sparse_index.h: oc_hub_entry). */
#define OC_SPARSE_HUB_ENTRY_BYTES 16

typedef struct oc_sparse_sizes {
    int64_t rows_a, rows_b; /* rows_b == 0: A·Aᵀ, B is A */
    int64_t cols, hubs;
    double ones_a, ones_b;         /* set bits of each side (ones_b == ones_a for A·Aᵀ) */
    double hub_ones_a, hub_ones_b; /* ... of them in the hub columns */
    int full_rows;                 /* workers build every element of a row (dense output, hamming) */
    int64_t kept;                  /* top-k: keys per row; else 0 */
    int64_t block_rows;            /* rows of A a worker's task holds */
} oc_sparse_sizes;

/* Bytes the index holds once built. */
double oc_sparse_index_bytes(const oc_sparse_sizes *s);

/* Bytes held beside the index while `threads` threads build it (freed before the rows run). */
double oc_sparse_build_bytes(const oc_sparse_sizes *s, int threads);

/* Bytes of one worker's row buffers. */
double oc_sparse_worker_bytes(const oc_sparse_sizes *s);

/* The peak of a job on `threads` threads: the index, then the larger of its build and the
 * workers' buffers. */
double oc_sparse_peak_bytes(const oc_sparse_sizes *s, int threads);

#endif
