/*
 * select_state.h - the state of a selection (select.h), shared by the files that implement
 * it; nothing outside src/gram/select/select*.c includes this.
 *
 *   select.c        the object: creation, set-up, errors, the accessors, and the tile entry
 *                   point that hands a tile to its mode
 *   select_topk.c   top-k: the lists, their floors and locks, seeding, the exact test of a
 *                   tile and of jaccard counts, the result (select_sort.c sorts its keys)
 *   select_pairs.c  threshold pairs: a tile's pairs, the reorder buffer of row blocks with its
 *                   spill file, and the ordered delivery to emit
 *
 * One struct holds the fields of both modes (a selection has one mode: the other's fields
 * stay zero), so the common file creates and frees every selection the same way.
 */
#ifndef OC_GRAM_SELECT_SELECT_STATE_H
#define OC_GRAM_SELECT_SELECT_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gram/select/select_config.h"
#include "gram/select/select_key.h"
#include "gram/select/select_simd.h"

#define NLOCKS 1024 /* lock stripes of the top-k lists (select_topk.c) */

/* A lock alone on its cache line, so that workers on neighbouring stripes do not share one. */
typedef struct padded_lock {
    _Alignas(64) pthread_mutex_t m;
} padded_lock;

/* One worker's buffers: the top-k ones (select_topk.c) or the pairs ones (select_pairs.c). */
typedef struct sel_worker {
    /* top-k */
    uint64_t *rowbuf; /* rowcap survivors per tile row of a batch (ROW_BATCH rows) */
    int64_t *rowcount;
    uint64_t *colbuf; /* A·Aᵀ: colcap survivors per tile column (the mirrored rows) */
    int64_t *colcount;
    uint64_t *colfloor;
    uint32_t *colmin;    /* the pre-test's bounds (select_simd.h): per tile column */
    uint32_t *scorekeys; /* score keys of a row being seeded */
    uint64_t *rowfloor;  /* a batch's row floors, as the pre-test saw them */
    uint32_t *rowmin;    /* and its bounds for them */
    uint64_t *words;     /* the pre-test's bits, OC_SCAN_WORDS(tile) words per batch row */
    uint32_t *survivors; /* the columns of one batch row's set bits */
    uint64_t *merge;     /* kept keys: a merged list before it is copied back */
    uint32_t *seedmax;   /* seeding: one list's group maxima (see "Seeding" in select_topk.c) */
    uint64_t *seedkeys;  /* the same as distinct keys, when there are many */
    uint32_t *colmax;    /* A·Aᵀ: the group maxima of every column, group-major */
    uint32_t *colrank;   /* kth_largest's scratch (select_simd.h) */
    float *popr, *gr;    /* jaccard from counts: a batch's row popcounts and factors */
    float *popc, *gc;    /* and the tile columns' */
    /* pairs */
    uint32_t *pcols;
    unsigned char *pvals;
    uint32_t *pcounts;
    char pad[64]; /* workers' fields on separate cache lines */
} sel_worker;

typedef struct pair_chunk {
    int64_t row0, rows; /* the block's rows it holds: all of them for a tile, a piece of whole rows */
    int64_t count;
    uint32_t *row_counts; /* pairs per row of row0.. ; NULL when count == 0 */
    uint32_t *cols;       /* tile-local columns; NULL when spilled */
    unsigned char *values;
    int64_t spill_off; /* -1: in memory; else cols then values in the spill file */
    int64_t mem_bytes;
} pair_chunk;

typedef struct row_block {
    int64_t expected, done; /* tiles, or with whole rows the block's rows */
    int64_t nchunks, cap;   /* chunks held: one slot per column tile, or the pieces as they came */
    pair_chunk *chunks;     /* allocated when the first arrives */
} row_block;

struct oc_select {
    oc_select_config cfg;
    oc_key_kind kind;
    size_t elem;
    int64_t kept;
    uint64_t min_key;      /* pairs: the threshold's score key (oc_select_score_min_key) */
    uint64_t topk_min_key; /* top-k with a minimum score: its score key; else 0 */

    uint64_t *keys;           /* n x kept */
    _Atomic uint64_t *floors; /* n: the kept-th key once a list is full, else 0 */
    padded_lock locks[NLOCKS];

    int64_t tile, tiles_j, rowcap, colcap;
    int whole_rows;      /* oc_select_begin_rows: pieces of whole rows of a block, at column 0 */
    oc_select_simd simd; /* top-k pre-test and insertion of this CPU (select_simd.h) */
    int nworkers;
    sel_worker *workers;

    pthread_mutex_t plock; /* guards blocks, pending_bytes and the spill file's end */
    row_block *blocks;
    int64_t nblocks, next_block;
    int64_t pending_bytes, buffer_bytes;
    int spill_fd;
    int64_t spill_end;
    oc_context *io_ctx; /* the job's context: the spill file's system calls ask its fault plan */
    int64_t emitted;
    int64_t *out_rows, *out_cols;
    unsigned char *out_vals;
    uint32_t *read_cols; /* spilled columns being read back */
    unsigned char *read_vals;

    pthread_mutex_t elock; /* guards err and errmsg */
    oc_status err;
    char errmsg[256];
};

/* A body written once and instantiated by its callers: forced inline, so that each call with
 * constant arguments (a key kind, the mirror flag) becomes an instance whose inner loops
 * test neither; without it the compiler may keep one general copy that tests them on
 * every element. */
#define OC_SELECT_INSTANCE static inline __attribute__((always_inline))

/* The smallest score key that passes a threshold or minimum score t of this kind (>= t;
 * Hamming <= t); 2^32 when none can. */
uint64_t oc_select_score_min_key(oc_key_kind kind, double t);

/* Records a worker's failure (the first one wins); oc_select_check reports it. Thread-safe. */
void oc_select_set_error(oc_select *s, oc_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The first tile column that counts in global row i: for A·Aᵀ only columns past the row
 * (the row itself and the mirror's half are excluded), whatever part of a tile this is. */
static inline int64_t oc_select_first_column(const oc_select *s, int64_t i, int64_t j0, int64_t cols)
{
    if (!s->cfg.symmetric) return 0;
    int64_t f = i + 1 - j0;
    return f < 0 ? 0 : (f > cols ? cols : f);
}

/* Each mode's part of the object's life (select.c calls them): create (after the common
 * fields are set), begin (after s->tile, tiles_j, nworkers and the zeroed workers are), a
 * tile of worker w, and free (releases what that mode's create and begin took; called for
 * every selection, of either mode, whatever they reached). */
oc_status oc_select_topk_create(oc_context *ctx, oc_select *s);
oc_status oc_select_topk_begin(oc_context *ctx, oc_select *s);
void oc_select_topk_tile(oc_select *s, sel_worker *w, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                         const void *tile, int64_t ld);
void oc_select_topk_free(oc_select *s);

void oc_select_pairs_create(oc_select *s);
oc_status oc_select_pairs_begin(oc_context *ctx, oc_select *s);
oc_status oc_select_pairs_tile(oc_select *s, sel_worker *w, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                               const void *tile, int64_t ld);
void oc_select_pairs_free(oc_select *s);
/* After oc_select_pairs_begin, for oc_select_begin_rows: a row block is complete when each of
 * its rows came in a piece. */
oc_status oc_select_pairs_rows(oc_select *s);

#endif
