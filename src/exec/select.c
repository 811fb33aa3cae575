/*
 * select.c - top-k lists and threshold pairs from Gram tiles (see select.h for the data flow,
 * select_key.h for the order, docs/topk.md for the semantics).
 *
 * Top-k on concurrent workers: each row has a list of `kept` keys (best first, 0 = empty)
 * and a floor, the key a candidate must beat once the list is full. A worker scans a tile
 * against the floors it read when the tile started (a stale floor is only lower, so it lets
 * more candidates through, never fewer), collects the survivors per row in its own buffer,
 * trims that buffer to the best `kept` whenever it fills (raising its local floor), and
 * merges the survivors of a batch of rows, and of all its columns (A·Aᵀ) when the tile is
 * done, each batch under one mutex: rows of one row block share a lock stripe, so a tile
 * takes a few locks, not one per row. After a row's first tiles its floor is high and almost
 * every element costs one comparison, which is what keeps selection at the speed of the
 * kernel.
 *
 * Threshold pairs: a tile's pairs form one chunk of its row block, sorted by (row, col)
 * within the tile. A row block is complete when all its tiles have arrived; complete blocks
 * are delivered in row order on the caller's thread by oc_select_drain, which walks each row
 * across the block's chunks in column-tile order: the (row, col) order needs no sort. Chunks
 * beyond buffer_bytes of waiting pairs are written to an unlinked temporary file and read
 * back at delivery.
 *
 * Lock order: a worker holds at most one lock stripe at a time, never with the pairs lock.
 */
#include "exec/select.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/matrix.h"
#include "core/metric.h"
#include "io/sysio.h"
#include "exec/select_simd.h"

#define NLOCKS 1024                     /* lock stripes of the top-k lists ... */
#define LOCK_ROWS 32                    /* ... of this many consecutive rows each (see merge_lists) */
#define EMIT_BATCH 65536                /* pairs per emit call */
#define DEFAULT_BUFFER_BYTES (256LL << 20)
#define SMALL_SORT 24
#define INSERT_WORK 1024                /* survivors x kept up to which a list takes them one by one */
#define SEED_RANK_MAX 32                /* group maxima up to which seeding ranks them directly */
#define ROW_BATCH 64                    /* tile rows pre-tested and merged together */

/* A lock alone on its cache line, so that workers on neighbouring stripes do not share one. */
typedef struct padded_lock {
    _Alignas(64) pthread_mutex_t m;
} padded_lock;

typedef struct sel_worker {
    /* top-k */
    uint64_t *rowbuf;       /* rowcap survivors per tile row of a batch (ROW_BATCH rows) */
    int64_t *rowcount;
    uint64_t *colbuf;       /* A·Aᵀ: colcap survivors per tile column (the mirrored rows) */
    int64_t *colcount;
    uint64_t *colfloor;
    uint32_t *colmin;       /* the pre-test's bounds (select_simd.h): per tile column */
    uint32_t *scorekeys;    /* score keys of a row being seeded */
    uint64_t *rowfloor;     /* a batch's row floors, as the pre-test saw them */
    uint32_t *rowmin;       /* and its bounds for them */
    uint64_t *words;        /* the pre-test's bits, OC_SCAN_WORDS(tile) words per batch row */
    uint32_t *survivors;    /* the columns of one batch row's set bits */
    uint64_t *merge;        /* kept keys: a merged list before it is copied back */
    uint32_t *seedmax;      /* seeding: one list's group maxima (see "Seeding" below) */
    uint64_t *seedkeys;     /* the same as distinct keys, when there are many */
    uint32_t *colmax;       /* A·Aᵀ: the group maxima of every column, group-major */
    uint32_t *colrank;      /* kth_largest's scratch (select_simd.h) */
    float *popr, *gr;       /* jaccard from counts: a batch's row popcounts and factors */
    float *popc, *gc;       /* and the tile columns' */
    /* pairs */
    uint32_t *pcols;
    unsigned char *pvals;
    uint32_t *pcounts;
    char pad[64];           /* workers' fields on separate cache lines */
} sel_worker;

typedef struct pair_chunk {
    int64_t count;
    uint32_t *row_counts;   /* pairs per row of the block; NULL when count == 0 */
    uint32_t *cols;         /* tile-local columns; NULL when spilled */
    unsigned char *values;
    int64_t spill_off;      /* -1: in memory; else cols then values in the spill file */
    int64_t mem_bytes;
} pair_chunk;

typedef struct row_block {
    int64_t expected, done;
    pair_chunk *chunks;     /* one per column tile, allocated when the first arrives */
} row_block;

struct oc_select {
    oc_select_config cfg;
    oc_key_kind kind;
    size_t elem;
    int64_t kept;
    uint64_t min_key;

    uint64_t *keys;                 /* n x kept */
    _Atomic uint64_t *floors;       /* n: the kept-th key once a list is full, else 0 */
    padded_lock locks[NLOCKS];

    int64_t tile, tiles_j, rowcap, colcap;
    oc_select_simd simd;            /* top-k pre-test and insertion of this CPU (select_simd.h) */
    int nworkers;
    sel_worker *workers;

    pthread_mutex_t plock;          /* guards blocks, pending_bytes and the spill file's end */
    row_block *blocks;
    int64_t nblocks, next_block;
    int64_t pending_bytes, buffer_bytes;
    int spill_fd;
    int64_t spill_end;
    oc_context *io_ctx;             /* the job's context: the spill file's system calls ask its fault plan */
    int64_t emitted;
    int64_t *out_rows, *out_cols;
    unsigned char *out_vals;
    uint32_t *read_cols;            /* spilled columns being read back */
    unsigned char *read_vals;

    pthread_mutex_t elock;          /* guards err and errmsg */
    oc_status err;
    char errmsg[256];
};

/* ---------------------------------------------------------------- helpers */
static void set_error(oc_select *s, oc_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_error(oc_select *s, oc_status st, const char *fmt, ...)
{
    pthread_mutex_lock(&s->elock);
    if (s->err == OC_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->errmsg, sizeof s->errmsg, fmt, ap);
        va_end(ap);
        s->err = st;
    }
    pthread_mutex_unlock(&s->elock);
}

oc_status oc_select_check(oc_context *ctx, oc_select *s)
{
    pthread_mutex_lock(&s->elock);
    oc_status st = s->err;
    char msg[sizeof s->errmsg];
    memcpy(msg, s->errmsg, sizeof msg);
    pthread_mutex_unlock(&s->elock);
    return st == OC_OK ? OC_OK : oc_fail(ctx, st, "%s", msg);
}

static void insertion_sort_desc(uint64_t *a, int64_t n)
{
    for (int64_t i = 1; i < n; ++i) {
        uint64_t v = a[i];
        int64_t j = i;
        for (; j > 0 && a[j - 1] < v; --j) a[j] = a[j - 1];
        a[j] = v;
    }
}

/* Hoare partition of a[lo..hi] (descending) around a median-of-three pivot: afterwards
 * a[lo..*pj] >= pivot >= a[*pi..hi], and what lies between equals the pivot. */
static void partition_desc(uint64_t *a, int64_t lo, int64_t hi, int64_t *pi, int64_t *pj)
{
    int64_t mid = lo + (hi - lo) / 2;
    uint64_t x = a[lo], y = a[mid], z = a[hi];
    uint64_t pivot = x > y ? (y > z ? y : (x > z ? z : x)) : (x > z ? x : (y > z ? z : y));
    int64_t i = lo, j = hi;
    while (i <= j) {
        while (a[i] > pivot) i++;
        while (a[j] < pivot) j--;
        if (i <= j) {
            uint64_t t = a[i];
            a[i++] = a[j], a[j--] = t;
        }
    }
    *pi = i, *pj = j;
}

/* Quicksort, descending; no comparison callback (qsort's costs more than the sort here). */
static void sort_desc(uint64_t *a, int64_t n)
{
    int64_t lo = 0, hi = n - 1;
    while (hi - lo > SMALL_SORT) {
        int64_t i, j;
        partition_desc(a, lo, hi, &i, &j);
        /* Recursing into the smaller side keeps the depth below log2(n). */
        if (j - lo < hi - i) {
            sort_desc(a + lo, j - lo + 1);
            lo = i;
        } else {
            sort_desc(a + i, hi - i + 1);
            hi = j;
        }
    }
    insertion_sort_desc(a + lo, hi - lo + 1);
}

/* Rearranges a[0..n) so that a[k-1] is the k-th largest, a[0..k-1) hold larger keys and
 * a[k..n) smaller ones (quickselect; keys are distinct). */
static void select_desc(uint64_t *a, int64_t n, int64_t k)
{
    int64_t lo = 0, hi = n - 1, want = k - 1;
    while (hi - lo > SMALL_SORT) {
        int64_t i, j;
        partition_desc(a, lo, hi, &i, &j);
        if (want <= j) hi = j;
        else if (want >= i) lo = i;
        else return;
    }
    insertion_sort_desc(a + lo, hi - lo + 1);
}

/* Keeps the best `kept` of buf[0..*count) (in no particular order) and returns the kept-th
 * key, the floor the buffer's row now imposes (0 when fewer remain). Linear time. */
static uint64_t trim(uint64_t *buf, int64_t *count, int64_t kept)
{
    if (*count < kept) return 0;
    select_desc(buf, *count, kept);
    *count = kept;
    uint64_t floor = buf[0];
    for (int64_t i = 1; i < kept; ++i)
        if (buf[i] < floor) floor = buf[i];
    return floor;
}

/* Whether a list takes its nc survivors one by one (select_simd.h: a binary search and a
 * move per key, or a few vector min/max), which beats sorting them and merging two runs
 * unless both are long: the moves grow as nc x kept. */
static inline int merge_by_insertion(const oc_select *s, int64_t nc) { return nc * s->kept <= INSERT_WORK; }

/* Readies nc survivors (any order) for merge_locked: as they are when they go in one by
 * one, else the best `kept` of them, sorted best first unless those go in one by one.
 * Returns how many remain. (Comparing them with the list's floor first would save nothing:
 * the insertion starts with that comparison, and the floor's cache line is the one other
 * workers write.) */
static int64_t merge_prepare(const oc_select *s, uint64_t *cand, int64_t nc)
{
    if (merge_by_insertion(s, nc)) return nc;
    if (nc > s->kept) {
        select_desc(cand, nc, s->kept);
        nc = s->kept;
    }
    if (!merge_by_insertion(s, nc)) sort_desc(cand, nc);
    return nc;
}

/* Merges live prepared survivors into list i, whose lock the caller holds; tmp holds
 * `kept` keys. Keys are distinct and empty slots (0) sort last. */
static void merge_locked(oc_select *s, int64_t i, const uint64_t *cand, int64_t live, uint64_t *tmp)
{
    const int64_t kept = s->kept;
    uint64_t *list = s->keys + i * kept;
    const uint64_t last = list[kept - 1];
    if (merge_by_insertion(s, live)) {
        s->simd.insert(list, kept, cand, live);
    } else {
        /* A plain merge of two descending runs gives the best `kept` of their union. */
        int64_t a = 0, b = 0, o = 0;
        while (o < kept) {
            uint64_t x = a < kept ? list[a] : 0, y = b < live ? cand[b] : 0;
            if (x == 0 && y == 0) break;
            if (x > y) tmp[o++] = x, a++;
            else tmp[o++] = y, b++;
        }
        memcpy(list, tmp, (size_t)o * sizeof *list);
    }
    /* Only a change is written: other workers read this cache line. */
    if (list[kept - 1] != last) atomic_store_explicit(&s->floors[i], list[kept - 1], memory_order_relaxed);
}

/* Merges the survivors of lists first .. first + count - 1 (counts[t] keys at bufs + t *
 * cap), taking each lock stripe once for a run of lists that share it. A stripe covers
 * LOCK_ROWS rows, not a tile's: tasks go out in row-major order, so every worker merges
 * rows of the same row block at once, and with one lock per block 16 workers queued on it
 * (n = 16384, m = 2048: top-10 jaccard 0.80-0.83 of counts with a stripe per block,
 * 0.84-0.86 with 32 rows). */
static void merge_lists(oc_select *s, sel_worker *w, int64_t first, int64_t count, uint64_t *bufs, int64_t cap,
                        const int64_t *counts)
{
    pthread_mutex_t *held = NULL;
    int64_t block_end = first; /* the end of the rows whose stripe is held */
    for (int64_t t = 0; t < count; ++t) {
        if (!counts[t]) continue;
        const int64_t i = first + t;
        uint64_t *cand = bufs + t * cap;
        const int64_t live = merge_prepare(s, cand, counts[t]);
        if (!held || i >= block_end) {
            if (held) pthread_mutex_unlock(held);
            held = &s->locks[i / LOCK_ROWS % NLOCKS].m;
            block_end = (i / LOCK_ROWS + 1) * LOCK_ROWS;
            pthread_mutex_lock(held);
        }
        merge_locked(s, i, cand, live, w->merge);
    }
    if (held) pthread_mutex_unlock(held);
}

/* ---------------------------------------------------------------- top-k per tile */
/* Per tile: the floors of its rows and columns as it starts (seeded where a list is not
 * full), the pre-test of select_simd.h over the whole tile (vectorised, one bit per
 * element, every key above a floor passes), then the exact test and bookkeeping for the
 * set bits only, and the merges.
 *
 * Seeding. A list that is not yet full has floor 0, so the first tile a row meets would
 * pass every element through the slow path (and with short rows that costs as much as the
 * kernel). A tile can raise such a floor itself: split the row's eligible elements into
 * g >= kept groups and let S be the kept-th largest of the group maxima. Those kept groups
 * each hold an element scoring S or more, so an element scoring below S is beaten by kept
 * others and can never be listed, while every element scoring S or more has a key above
 * S << 32 (a key's index half is never 0): S << 32 is an exact floor. With g = 2 kept about
 * 1.3 kept elements of a first tile pass instead of all of them (min over kept groups,
 * the simpler choice, lets 2.5 kept through). For columns (A·Aᵀ's mirrored rows) the groups
 * are groups of tile rows, whose maxima for all columns at once are elementwise maxima of
 * whole tile rows, and whose kept-th largest is also found for all columns at once: both
 * in select_simd.c's vector code (a tile's columns seeded one by one cost about half as
 * much as the tile's kernel). */
#define SEED_GROUPS(kept, len) ((len) < 2 * (kept) ? (len) : 2 * (kept))

/* The floor seeded from the maxima gm[0..g) of g >= kept groups; keys holds g keys. */
static uint64_t seed_floor(const uint32_t *gm, int64_t g, int64_t kept, uint64_t *keys)
{
    if (g <= SEED_RANK_MAX) {
        /* The kept-th largest has kept - 1 maxima ahead of it (equal ones ahead when they
         * come first): counted without branches, which the compiler vectorises. */
        const uint32_t n = (uint32_t)g;
        for (uint32_t q = 0; q < n; ++q) {
            const uint32_t v = gm[q];
            uint32_t ahead = 0;
            for (uint32_t x = 0; x < n; ++x) ahead += gm[x] > v;
            for (uint32_t x = 0; x < q; ++x) ahead += gm[x] == v;
            if (ahead == (uint32_t)kept - 1) return (uint64_t)v << 32;
        }
    }
    /* Many groups: select among distinct keys (the group number in the low half). */
    for (int64_t q = 0; q < g; ++q) keys[q] = (uint64_t)gm[q] << 32 | (uint64_t)q;
    select_desc(keys, g, kept);
    return keys[kept - 1] >> 32 << 32;
}

/* The seeded floor of a row whose eligible score keys are sk[c0..cols), cols - c0 >= kept. */
static uint64_t row_seed(sel_worker *w, const uint32_t *sk, int64_t c0, int64_t cols, int64_t kept)
{
    const int64_t len = cols - c0, g = SEED_GROUPS(kept, len);
    for (int64_t q = 0; q < g; ++q) {
        uint32_t gmax = 0;
        for (int64_t c = c0 + q * len / g; c < c0 + (q + 1) * len / g; ++c) gmax = sk[c] > gmax ? sk[c] : gmax;
        w->seedmax[q] = gmax;
    }
    return seed_floor(w->seedmax, g, kept, w->seedkeys);
}

static inline uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* The first tile column that counts in global row i: for A·Aᵀ only columns past the row
 * (the row itself and the mirror's half are excluded), whatever part of a tile this is. */
static inline int64_t first_column(const oc_select *s, int64_t i, int64_t j0, int64_t cols)
{
    if (!s->cfg.symmetric) return 0;
    int64_t f = i + 1 - j0;
    return f < 0 ? 0 : (f > cols ? cols : f);
}

/* The pre-test's bound for a list whose floor is f (select_simd.h): its score half, or the
 * next score when a tie on the score loses for every element of the tile. A tie wins when
 * the element's index half exceeds the floor's: from the tile's first element (index half
 * first_low) on, the index halves only decrease. */
static inline uint32_t scan_bound(uint64_t f, uint32_t first_low)
{
    const uint32_t hi = (uint32_t)(f >> 32);
    return first_low > (uint32_t)f || hi == 0xFFFFFFFFu ? hi : hi + 1;
}

/* A·Aᵀ: the column floors as the tile starts; nonzero when a column's list is not full. */
static int load_column_floors(oc_select *s, sel_worker *w, int64_t j0, int64_t cols)
{
    int empty = 0;
    for (int64_t c = 0; c < cols; ++c) {
        w->colcount[c] = 0;
        w->colfloor[c] = atomic_load_explicit(&s->floors[j0 + c], memory_order_relaxed);
        empty |= w->colfloor[c] == 0;
    }
    return empty;
}

/* What the exact test of one tile reads and writes, copied out of the selection and the
 * worker once: the buffers are written through uint64_t and int64_t pointers, which may
 * alias the fields they come from, so the compiler would reload every field after every
 * store. */
typedef struct topk_scratch {
    int64_t kept, rowcap, colcap;
    uint64_t *colbuf, *colfloor;
    int64_t *colcount;
} topk_scratch;

/* The columns c0 on of a batch row's set pre-test bits, ascending, into out: a loop of
 * its own, so that the bit word stays in a register (inside the exact test's loop, with
 * its many live values, it went through the stack, and each ctz waited on a reload). */
static inline int64_t row_survivors(const uint64_t *words, int64_t wpr, int64_t c0, uint32_t *restrict out)
{
    int64_t n = 0;
    const int64_t first = c0 / OC_SCAN_WORD;
    for (int64_t wd = first; wd < wpr; ++wd) {
        uint64_t m = words[wd];
        if (wd == first) m &= ~0ull << (c0 % OC_SCAN_WORD);
        for (; m; m &= m - 1) out[n++] = (uint32_t)(wd * OC_SCAN_WORD + __builtin_ctzll(m));
    }
    return n;
}

/* The exact test and bookkeeping of a survivor's key in column c's buffer (A·Aᵀ: the
 * mirrored row). As for the rows in TOPK_EXACT_BATCH, the key is written to the end of the
 * buffer whether or not it beats the floor, and the count grows only when it does: which
 * of a row's and a column's tests an element passes is close to a coin toss (the pre-test
 * passed it against the lower of both bounds), so branches on them would be mispredicted
 * about half the time. The slot exists: a buffer is trimmed as soon as it is full, and
 * one that is never trimmed holds a whole tile column. The count is read before the store,
 * which may alias it. */
static inline void column_take(const topk_scratch *x, int64_t c, uint64_t key)
{
    int64_t n = x->colcount[c];
    const uint64_t f = x->colfloor[c];
    uint64_t *cb = x->colbuf + c * x->colcap;
    cb[n] = key;
    n += key > f;
    x->colcount[c] = n;
    if (__builtin_expect(n == x->colcap, 0) && x->colcap > x->kept)
        x->colfloor[c] = max_u64(f, trim(cb, &x->colcount[c], x->kept));
}

/* The exact test of the set bits of batch rows r0 .. r0 + nb - 1, then their merge (one
 * lock per stripe of rows, see merge_lists); SCORE_AT(ARG, r, c) is the score key of tile element (r, c). A
 * row's survivors are listed first (row_survivors), then each key goes to the row's
 * buffer, kept in locals (see column_take for why without branches), and for A·Aᵀ to its
 * column's. The loop is instantiated with the mirror flag as a constant. */
#define TOPK_EXACT_ROWS(SCORE_AT, ARG, MIRROR)                                                             \
    for (int64_t b = 0; b < nb; ++b) {                                                                     \
        const int64_t c0 = first_column(s, i0 + r0 + b, j0, cols);                                         \
        const uint32_t ilow = 0xFFFFFFFFu - (uint32_t)(i0 + r0 + b);                                       \
        const int64_t ns = row_survivors(w->words + b * wpr, wpr, c0, w->survivors);                       \
        const uint32_t *restrict sc = w->survivors; /* declared after they are written */                  \
        uint64_t rf = w->rowfloor[b], *restrict rb = w->rowbuf + b * x.rowcap;                             \
        int64_t nr = 0;                                                                                    \
        for (int64_t q = 0; q < ns; ++q) {                                                                 \
            const int64_t c = sc[q];                                                                       \
            const uint64_t hi = (uint64_t)SCORE_AT(ARG, r0 + b, c) << 32;                                  \
            const uint64_t kr = hi | (uint32_t)(jlow0 - (uint32_t)c);                                      \
            rb[nr] = kr;                                                                                   \
            nr += kr > rf;                                                                                 \
            if (__builtin_expect(nr == x.rowcap, 0) && x.rowcap > x.kept) rf = max_u64(rf, trim(rb, &nr, x.kept)); \
            if (MIRROR) column_take(&x, c, hi | ilow);                                                     \
        }                                                                                                  \
        w->rowcount[b] = nr;                                                                               \
    }

#define TOPK_EXACT_BATCH(SCORE_AT, ARG)                                                                    \
    do {                                                                                                   \
        if (mirror) TOPK_EXACT_ROWS(SCORE_AT, ARG, 1)                                                      \
        else TOPK_EXACT_ROWS(SCORE_AT, ARG, 0)                                                             \
        merge_lists(s, w, i0 + r0, nb, w->rowbuf, s->rowcap, w->rowcount);                                 \
    } while (0)

/* One instance per key kind, so that the key computation has no switch. Column floors
 * (seeded where a list is not full) are read once per tile; then per batch of ROW_BATCH
 * tile rows: their floors (seeded likewise), the pre-test, the exact test of the set bits,
 * and the merge of the batch's rows under one lock. The columns' survivors are merged when
 * the tile is done. Batches bound the worker's buffers whatever the tile edge. */
#define DEFINE_TOPK_TILE(NAME, KIND, T, SCORE)                                                             \
    static void NAME(oc_select *s, sel_worker *w, int64_t i0, int64_t j0, int64_t rows, int64_t cols,     \
                     const T *restrict tile, int64_t ld)                                                   \
    {                                                                                                      \
        const int mirror = s->cfg.symmetric;                                                               \
        const int64_t kept = s->kept, wpr = OC_SCAN_WORDS(cols);                                           \
        const uint32_t jlow0 = 0xFFFFFFFFu - (uint32_t)j0; /* index half of column j0 */                   \
        /* Column seeds where a list is not full, in tiles wholly above the diagonal (every    \
         * tile row is eligible in every column). */                                                       \
        if (mirror && load_column_floors(s, w, j0, cols) && i0 + rows <= j0 && rows >= kept) {             \
            const int64_t g = SEED_GROUPS(kept, rows);                                                     \
            const oc_scan_tile gt = {.kind = KIND, .values = tile, .ld = ld, .rows = rows, .cols = cols};  \
            s->simd.group_max(&gt, g, w->colmax);                                                         \
            if (kept <= OC_SEED_RANK_MAX) {                                                                \
                s->simd.kth_largest(w->colmax, g, cols, kept, w->colrank);                                 \
                for (int64_t c = 0; c < cols; ++c)                                                         \
                    w->colfloor[c] = max_u64(w->colfloor[c], (uint64_t)w->colrank[c] << 32);               \
            } else {                                                                                       \
                for (int64_t c = 0; c < cols; ++c) {                                                       \
                    for (int64_t q = 0; q < g; ++q) w->seedmax[q] = w->colmax[q * cols + c];               \
                    w->colfloor[c] = max_u64(w->colfloor[c], seed_floor(w->seedmax, g, kept, w->seedkeys)); \
                }                                                                                          \
            }                                                                                              \
        }                                                                                                  \
        /* Bounds for the tile's first row hold for every later one (select_simd.h). */                    \
        if (mirror)                                                                                        \
            for (int64_t c = 0; c < cols; ++c) w->colmin[c] = scan_bound(w->colfloor[c], 0xFFFFFFFFu - (uint32_t)i0); \
        const topk_scratch x = {.kept = kept, .rowcap = s->rowcap, .colcap = s->colcap, .colbuf = w->colbuf, \
                                .colfloor = w->colfloor, .colcount = w->colcount};                         \
        for (int64_t r0 = 0; r0 < rows; r0 += ROW_BATCH) {                                                 \
            const int64_t nb = rows - r0 < ROW_BATCH ? rows - r0 : ROW_BATCH;                              \
            for (int64_t b = 0; b < nb; ++b) {                                                             \
                const int64_t c0 = first_column(s, i0 + r0 + b, j0, cols);                                 \
                uint64_t rf = atomic_load_explicit(&s->floors[i0 + r0 + b], memory_order_relaxed);         \
                if (rf == 0 && cols - c0 >= kept) {                                                        \
                    const T *restrict v = tile + (r0 + b) * ld;                                            \
                    for (int64_t c = c0; c < cols; ++c) w->scorekeys[c] = SCORE(v[c]);                     \
                    rf = row_seed(w, w->scorekeys, c0, cols, kept);                                        \
                }                                                                                          \
                w->rowfloor[b] = rf;                                                                       \
                w->rowmin[b] = scan_bound(rf, jlow0);                                                      \
            }                                                                                              \
            const oc_scan_tile st = {.kind = KIND, .values = tile + r0 * ld, .ld = ld, .rows = nb,         \
                                     .cols = cols, .row_min = w->rowmin, .col_min = w->colmin,             \
                                     .mirror = mirror, .words = w->words};                                 \
            s->simd.scan(&st);                                                                             \
            TOPK_EXACT_BATCH(TILE_SCORE_AT, SCORE);                                                        \
        }                                                                                                  \
        if (mirror) merge_lists(s, w, j0, cols, w->colbuf, s->colcap, w->colcount);                        \
    }

#define TILE_SCORE_AT(SCORE, r, c) SCORE(tile[(r) * ld + (c)])
#define SCORE_F32(x) oc_key_f32(x)
#define SCORE_I32(x) oc_key_i32(x)
#define SCORE_U16(x) ((uint32_t)(x))
#define SCORE_I32_REV(x) (~oc_key_i32(x))
#define SCORE_U16_REV(x) (0xFFFFu - (uint32_t)(x))

DEFINE_TOPK_TILE(topk_f32, OC_KEY_F32, float, SCORE_F32)
DEFINE_TOPK_TILE(topk_i32, OC_KEY_I32, int32_t, SCORE_I32)
DEFINE_TOPK_TILE(topk_u16, OC_KEY_U16, uint16_t, SCORE_U16)
DEFINE_TOPK_TILE(topk_i32_rev, OC_KEY_I32_REV, int32_t, SCORE_I32_REV)
DEFINE_TOPK_TILE(topk_u16_rev, OC_KEY_U16_REV, uint16_t, SCORE_U16_REV)
#undef TILE_SCORE_AT

/* ---------------------------------------------------------------- jaccard top-k from counts */
/* Jaccard scores cost a double division each, as much as the whole pre-test; a tile whose
 * lists all have floors skips them: the pre-test reads the counts (select_simd.h) against
 * a bound on the count that a score needs to reach each floor, and only the elements that
 * pass get a score, computed by metric.h as the epilogue would, so the exact test and the
 * results are the same as from the converted tile.
 *
 * The bound. A score key reaching bound key B means s = fl(c / u) >= t, t the float of B,
 * u = |a| + |b| - c > 0 (u = 0 scores 1 and c = 0 passes any bound below). Rounding to
 * float: c / u >= t (1 - 2^-24); and c / u >= t' is c >= (|a| + |b|) t' / (1 + t'), a
 * g(t') that grows with t', so g(t) (1 - 2^-24) is below it. The factor drops 2^-16 more,
 * which covers the float rounding of the factor, of c and of |a| + |b| (2^-24 each) many
 * times over: a superset passes, never fewer. */
#define JACCARD_FACTOR_MARGIN (1.0 - 1.0 / 65536.0)

/* The pre-test's factor g for score key bound B (scan_bound's): c >= (|a| + |b|) g. */
static float jaccard_factor(uint32_t bound)
{
    if (bound <= oc_key_f32(0.0f)) return 0.0f; /* every score, never negative, passes */
    const double t = oc_key_f32_value(bound);
    if (t > 1.0) return 1.0f; /* no score exceeds 1: whatever passes fails the exact test */
    return (float)(t / (1.0 + t) * JACCARD_FACTOR_MARGIN);
}

int oc_select_tile_counts(oc_select *s, int worker, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                          const uint32_t *restrict counts, int64_t ld, const int64_t *restrict pop_a,
                          const int64_t *restrict pop_b)
{
    if (s->cfg.mode != OC_SELECT_TOPK || s->kind != OC_KEY_F32 || s->cfg.metric != OC_METRIC_JACCARD) return 0;
    if (s->kept == 0) return 1;
    sel_worker *w = &s->workers[worker];
    const int mirror = s->cfg.symmetric;
    const int64_t kept = s->kept, wpr = OC_SCAN_WORDS(cols);
    const uint32_t jlow0 = 0xFFFFFFFFu - (uint32_t)j0;
    /* A list that would be seeded (see "Seeding") needs the tile's scores: the converted
     * tile. Floors only rise, so a list with one now keeps it. */
    if (mirror && load_column_floors(s, w, j0, cols) && i0 + rows <= j0 && rows >= kept) return 0;
    for (int64_t r = 0; r < rows; ++r)
        if (atomic_load_explicit(&s->floors[i0 + r], memory_order_relaxed) == 0 &&
            cols - first_column(s, i0 + r, j0, cols) >= kept)
            return 0;
    for (int64_t c = 0; c < cols; ++c) {
        w->popc[c] = (float)pop_b[c];
        if (mirror) w->gc[c] = jaccard_factor(scan_bound(w->colfloor[c], 0xFFFFFFFFu - (uint32_t)i0));
    }
    const topk_scratch x = {.kept = kept, .rowcap = s->rowcap, .colcap = s->colcap, .colbuf = w->colbuf,
                            .colfloor = w->colfloor, .colcount = w->colcount};
    for (int64_t r0 = 0; r0 < rows; r0 += ROW_BATCH) {
        const int64_t nb = rows - r0 < ROW_BATCH ? rows - r0 : ROW_BATCH;
        for (int64_t b = 0; b < nb; ++b) {
            w->rowfloor[b] = atomic_load_explicit(&s->floors[i0 + r0 + b], memory_order_relaxed);
            w->popr[b] = (float)pop_a[r0 + b];
            w->gr[b] = jaccard_factor(scan_bound(w->rowfloor[b], jlow0));
        }
        const oc_scan_counts st = {.counts = counts + r0 * ld, .ld = ld, .rows = nb, .cols = cols, .pop_r = w->popr,
                                   .g_r = w->gr, .pop_c = w->popc, .g_c = w->gc, .mirror = mirror, .words = w->words};
        s->simd.scan_counts(&st);
#define JACCARD_AT(unused, r, c) oc_key_f32(oc_metric_jaccard(counts[(r) * ld + (c)], pop_a[r], pop_b[c]))
        TOPK_EXACT_BATCH(JACCARD_AT, 0);
#undef JACCARD_AT
    }
    if (mirror) merge_lists(s, w, j0, cols, w->colbuf, s->colcap, w->colcount);
    return 1;
}

/* ---------------------------------------------------------------- pairs per tile */
#define DEFINE_PAIRS_TILE(NAME, T, SCORE)                                                                  \
    static int64_t NAME(const oc_select *s, sel_worker *w, int64_t i0, int64_t j0, int64_t rows,          \
                        int64_t cols, const T *tile, int64_t ld)                                           \
    {                                                                                                      \
        const uint32_t mk = (uint32_t)s->min_key;                                                          \
        T *vals = (T *)w->pvals;                                                                           \
        int64_t n = 0;                                                                                     \
        for (int64_t r = 0; r < rows; ++r) {                                                               \
            const T *restrict v = tile + r * ld;                                                           \
            int64_t before = n;                                                                            \
            for (int64_t c = first_column(s, i0 + r, j0, cols); c < cols; ++c)                             \
                if ((uint32_t)(SCORE(v[c])) >= mk) {                                                       \
                    w->pcols[n] = (uint32_t)c;                                                             \
                    vals[n++] = v[c];                                                                      \
                }                                                                                          \
            w->pcounts[r] = (uint32_t)(n - before);                                                        \
        }                                                                                                  \
        return n;                                                                                          \
    }

DEFINE_PAIRS_TILE(pairs_f32, float, SCORE_F32)
DEFINE_PAIRS_TILE(pairs_i32, int32_t, SCORE_I32)
DEFINE_PAIRS_TILE(pairs_u16, uint16_t, SCORE_U16)
DEFINE_PAIRS_TILE(pairs_i32_rev, int32_t, SCORE_I32_REV)
DEFINE_PAIRS_TILE(pairs_u16_rev, uint16_t, SCORE_U16_REV)

/* ---------------------------------------------------------------- set-up */
static oc_key_kind key_kind(oc_metric metric, oc_dtype dtype)
{
    if (dtype == OC_DTYPE_FLOAT32) return OC_KEY_F32;
    int rev = metric == OC_METRIC_HAMMING;
    if (dtype == OC_DTYPE_UINT16) return rev ? OC_KEY_U16_REV : OC_KEY_U16;
    return rev ? OC_KEY_I32_REV : OC_KEY_I32;
}

/* The smallest score key that passes the threshold (see select.h); 2^32 when none can. The
 * test is made in the result dtype: float scores against (float)T, integer scores against
 * ceil(T) (>=) or floor(T) (Hamming, <=). */
static uint64_t threshold_key(oc_key_kind kind, double t)
{
    const uint64_t none = 1ull << 32;
    switch (kind) {
    case OC_KEY_F32: return oc_key_f32((float)t);
    case OC_KEY_I32: {
        double lo = ceil(t);
        if (lo <= (double)INT32_MIN) return 0;
        return lo > (double)INT32_MAX ? none : oc_key_i32((int32_t)lo);
    }
    case OC_KEY_U16: {
        double lo = ceil(t);
        if (lo <= 0) return 0;
        return lo > 65535.0 ? none : (uint64_t)lo;
    }
    case OC_KEY_I32_REV: {
        double hi = floor(t);
        if (hi >= (double)INT32_MAX) return 0;
        return hi < (double)INT32_MIN ? none : ~oc_key_i32((int32_t)hi);
    }
    default: {
        double hi = floor(t);
        if (hi >= 65535.0) return 0;
        return hi < 0 ? none : 0xFFFFu - (uint64_t)hi;
    }
    }
}

oc_status oc_select_create(oc_context *ctx, const oc_select_config *cfg, oc_select **out)
{
    if (cfg->n > OC_KEY_MAX_INDEX || cfg->p > OC_KEY_MAX_INDEX)
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "top-k and threshold outputs index rows and columns in 32 bits: "
                       "%lld x %lld is too large", (long long)cfg->n, (long long)cfg->p);
    /* aligned: the locks are a cache line each (sizeof is a multiple of their alignment) */
    oc_select *s = aligned_alloc(_Alignof(oc_select), sizeof *s);
    if (!s) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the selection state");
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->spill_fd = -1;
    s->io_ctx = ctx;
    s->kind = key_kind(cfg->metric, cfg->dtype);
    s->elem = oc_dtype_size(cfg->dtype);
    s->buffer_bytes = cfg->buffer_bytes > 0 ? cfg->buffer_bytes : DEFAULT_BUFFER_BYTES;
    for (int i = 0; i < NLOCKS; ++i) pthread_mutex_init(&s->locks[i].m, NULL);
    pthread_mutex_init(&s->plock, NULL);
    pthread_mutex_init(&s->elock, NULL);
    *out = s;

    if (cfg->mode == OC_SELECT_PAIRS) {
        s->min_key = threshold_key(s->kind, cfg->threshold);
        return OC_OK;
    }
    /* A row has p candidates (p - 1 for A·Aᵀ); lists never hold more. */
    int64_t candidates = cfg->p - (cfg->symmetric ? 1 : 0);
    s->kept = cfg->k < candidates ? cfg->k : candidates;
    if (s->kept < 0) s->kept = 0;
    int64_t entries;
    if (!oc_mul_i64(cfg->n, s->kept, &entries) || entries > INT64_MAX / 8)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "top-%lld of %lld rows overflows 64-bit sizes", (long long)cfg->k,
                       (long long)cfg->n);
    s->keys = calloc((size_t)(entries ? entries : 1), sizeof *s->keys);
    s->floors = calloc((size_t)(cfg->n ? cfg->n : 1), sizeof *s->floors);
    if (!s->keys || !s->floors)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate top-%lld lists for %lld rows (%.1f MiB)",
                       (long long)s->kept, (long long)cfg->n, (double)entries * 8 / 1048576.0);
    return OC_OK;
}

oc_status oc_select_begin(oc_context *ctx, oc_select *s, int64_t tile, int workers)
{
    s->tile = tile;
    s->tiles_j = (s->cfg.p + tile - 1) / tile;
    s->nworkers = workers;
    s->workers = calloc((size_t)(workers > 0 ? workers : 1), sizeof *s->workers);
    if (!s->workers) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the selection's worker state");
    int64_t tt;
    if (!oc_mul_i64(tile, tile, &tt)) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "tile edge %lld is too large", (long long)tile);
    if (s->cfg.mode == OC_SELECT_TOPK) {
        /* Buffers of 4k + 64 trim rarely (each trim is linear) yet stay small; a buffer that
         * can hold a whole tile row never needs trimming. */
        int64_t cap = 4 * s->kept + 64;
        s->rowcap = s->colcap = cap < tile ? cap : tile;
        const int64_t padded = OC_SCAN_WORDS(tile) * OC_SCAN_WORD;
        s->simd = oc_select_simd_choose();
        for (int i = 0; i < workers; ++i) {
            sel_worker *w = &s->workers[i];
            const int64_t batch = tile < ROW_BATCH ? tile : ROW_BATCH;
            w->rowbuf = malloc((size_t)(batch * s->rowcap) * sizeof *w->rowbuf);
            w->rowcount = malloc((size_t)batch * sizeof *w->rowcount);
            w->merge = malloc((size_t)(s->kept ? s->kept : 1) * sizeof *w->merge);
            if (s->cfg.symmetric) w->colbuf = malloc((size_t)(tile * s->colcap) * sizeof *w->colbuf);
            w->colcount = malloc((size_t)tile * sizeof *w->colcount);
            w->colfloor = malloc((size_t)tile * sizeof *w->colfloor);
            /* The pre-test reads column bounds up to a whole word (select_simd.h): pad, and
             * zero the padding so that it is defined, though its bits are dropped. */
            w->colmin = calloc((size_t)padded, sizeof *w->colmin);
            w->scorekeys = malloc((size_t)tile * sizeof *w->scorekeys);
            w->rowfloor = malloc((size_t)batch * sizeof *w->rowfloor);
            w->rowmin = malloc((size_t)batch * sizeof *w->rowmin);
            w->words = malloc((size_t)(batch * OC_SCAN_WORDS(tile)) * sizeof *w->words);
            w->survivors = malloc((size_t)tile * sizeof *w->survivors);
            const int64_t groups = SEED_GROUPS(s->kept, tile);
            w->seedmax = malloc((size_t)(groups ? groups : 1) * sizeof *w->seedmax);
            w->seedkeys = malloc((size_t)(groups ? groups : 1) * sizeof *w->seedkeys);
            if (s->cfg.symmetric) {
                w->colmax = malloc((size_t)(groups * tile) * sizeof *w->colmax);
                w->colrank = malloc((size_t)((s->kept < OC_SEED_RANK_MAX ? s->kept : OC_SEED_RANK_MAX) * tile + 1) *
                                    sizeof *w->colrank);
            }
            w->popr = malloc((size_t)batch * sizeof *w->popr);
            w->gr = malloc((size_t)batch * sizeof *w->gr);
            w->popc = malloc((size_t)tile * sizeof *w->popc);
            w->gc = malloc((size_t)tile * sizeof *w->gc);
            if (!w->rowbuf || !w->rowcount || !w->merge || (s->cfg.symmetric && !w->colbuf) || !w->colcount || !w->colfloor ||
                !w->colmin || !w->scorekeys || !w->rowfloor || !w->rowmin || !w->words || !w->survivors ||
                !w->seedmax || !w->seedkeys ||
                (s->cfg.symmetric && (!w->colmax || !w->colrank)) || !w->popr || !w->gr || !w->popc || !w->gc)
                return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate top-k buffers for %d workers", workers);
        }
        return OC_OK;
    }
    s->nblocks = (s->cfg.n + tile - 1) / tile;
    s->blocks = calloc((size_t)(s->nblocks ? s->nblocks : 1), sizeof *s->blocks);
    s->out_rows = malloc(EMIT_BATCH * sizeof *s->out_rows);
    s->out_cols = malloc(EMIT_BATCH * sizeof *s->out_cols);
    s->out_vals = malloc(EMIT_BATCH * s->elem);
    s->read_cols = malloc(EMIT_BATCH * sizeof *s->read_cols);
    s->read_vals = malloc(EMIT_BATCH * s->elem);
    if (!s->blocks || !s->out_rows || !s->out_cols || !s->out_vals || !s->read_cols || !s->read_vals)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the threshold pair buffers");
    for (int64_t b = 0; b < s->nblocks; ++b) s->blocks[b].expected = s->cfg.symmetric ? s->tiles_j - b : s->tiles_j;
    for (int i = 0; i < workers; ++i) {
        sel_worker *w = &s->workers[i];
        w->pcols = malloc((size_t)tt * sizeof *w->pcols);
        w->pvals = malloc((size_t)tt * s->elem);
        w->pcounts = malloc((size_t)tile * sizeof *w->pcounts);
        if (!w->pcols || !w->pvals || !w->pcounts)
            return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate threshold buffers for %d workers", workers);
    }
    return OC_OK;
}

static void free_chunk(pair_chunk *c)
{
    free(c->row_counts);
    free(c->cols);
    free(c->values);
    memset(c, 0, sizeof *c);
}

void oc_select_free(oc_select *s)
{
    if (!s) return;
    if (s->workers)
        for (int i = 0; i < s->nworkers; ++i) {
            sel_worker *w = &s->workers[i];
            free(w->rowbuf);
            free(w->rowcount);
            free(w->colbuf);
            free(w->colcount);
            free(w->colfloor);
            free(w->colmin);
            free(w->scorekeys);
            free(w->rowfloor);
            free(w->rowmin);
            free(w->words);
            free(w->survivors);
            free(w->merge);
            free(w->seedmax);
            free(w->seedkeys);
            free(w->colmax);
            free(w->colrank);
            free(w->popr);
            free(w->gr);
            free(w->popc);
            free(w->gc);
            free(w->pcols);
            free(w->pvals);
            free(w->pcounts);
        }
    free(s->workers);
    if (s->blocks)
        for (int64_t b = 0; b < s->nblocks; ++b)
            if (s->blocks[b].chunks) {
                for (int64_t k = 0; k < s->blocks[b].expected; ++k) free_chunk(&s->blocks[b].chunks[k]);
                free(s->blocks[b].chunks);
            }
    free(s->blocks);
    if (s->spill_fd >= 0) close(s->spill_fd);
    free(s->out_rows);
    free(s->out_cols);
    free(s->out_vals);
    free(s->read_cols);
    free(s->read_vals);
    free(s->keys);
    free((void *)s->floors);
    for (int i = 0; i < NLOCKS; ++i) pthread_mutex_destroy(&s->locks[i].m);
    pthread_mutex_destroy(&s->plock);
    pthread_mutex_destroy(&s->elock);
    free(s);
}

oc_select_mode oc_select_get_mode(const oc_select *s) { return s->cfg.mode; }
oc_key_kind oc_select_key_kind(const oc_select *s) { return s->kind; }
int64_t oc_select_kept(const oc_select *s) { return s->kept; }
uint64_t oc_select_min_key(const oc_select *s) { return s->min_key; }
uint64_t *oc_select_topk_keys(oc_select *s) { return s->keys; }
int64_t oc_select_pairs_count(const oc_select *s) { return s->emitted; }

/* ---------------------------------------------------------------- pairs: chunks */
static int read_all(int fd, void *buf, size_t len, int64_t off)
{
    char *p = buf;
    while (len > 0) {
        ssize_t r = pread(fd, p, len, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        p += r, len -= (size_t)r, off += r;
    }
    return 0;
}

static const char *spill_dir(void)
{
    const char *dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

/* Records a failed create or write of the spill file as the selection's error. */
static void spill_failed(oc_select *s, const char *action, int err)
{
    char name[4200], msg[sizeof s->errmsg];
    snprintf(name, sizeof name, "the temporary file of threshold pairs in %s", spill_dir());
    oc_io_describe(msg, sizeof msg, action, name, err, oc_sys_file_size(s->spill_fd), -1, -1);
    set_error(s, OC_ERR_IO, "%s", msg);
}

/* The spill file: unlinked at once, so nothing is left behind whatever happens. Called with
 * plock held. */
static int spill_open(oc_select *s)
{
    if (s->spill_fd >= 0) return 0;
    char path[4096];
    snprintf(path, sizeof path, "%s/outcore-pairs-XXXXXX", spill_dir());
    int fd = oc_sys_mkstemp(s->io_ctx, path);
    if (fd < 0) {
        spill_failed(s, "creating", errno);
        return -1;
    }
    unlink(path);
    s->spill_fd = fd;
    return 0;
}

/* Stores a tile's pairs as a chunk of its row block; copies everything it keeps. */
static oc_status add_chunk(oc_select *s, int64_t i0, int64_t j0, int64_t rows, const uint32_t *row_counts,
                           const uint32_t *cols, const void *values, int64_t count)
{
    const int64_t I = i0 / s->tile, J = j0 / s->tile;
    pair_chunk c = {.count = count, .spill_off = -1};
    if (count > 0) {
        c.row_counts = malloc((size_t)rows * sizeof *c.row_counts);
        if (!c.row_counts) goto no_memory;
        memcpy(c.row_counts, row_counts, (size_t)rows * sizeof *c.row_counts);
        c.mem_bytes = rows * (int64_t)sizeof *c.row_counts;
    }
    pthread_mutex_lock(&s->plock);
    int spill = count > 0 && s->pending_bytes + count * (int64_t)(4 + s->elem) > s->buffer_bytes;
    if (spill) {
        /* The file's end is reserved under the lock; writing at it happens after. */
        if (spill_open(s) != 0) {
            pthread_mutex_unlock(&s->plock);
            free_chunk(&c);
            return OC_ERR_IO;
        }
        c.spill_off = s->spill_end;
        s->spill_end += count * (int64_t)(4 + s->elem);
    }
    pthread_mutex_unlock(&s->plock);
    if (spill) {
        int64_t values_off = c.spill_off + count * 4;
        int err = oc_sys_write_all(s->io_ctx, s->spill_fd, cols, (size_t)count * 4, c.spill_off);
        if (!err) err = oc_sys_write_all(s->io_ctx, s->spill_fd, values, (size_t)count * s->elem, values_off);
        if (err) {
            spill_failed(s, "writing", err);
            free_chunk(&c);
            return OC_ERR_IO;
        }
    } else if (count > 0) {
        c.cols = malloc((size_t)count * sizeof *c.cols);
        c.values = malloc((size_t)count * s->elem);
        if (!c.cols || !c.values) goto no_memory;
        memcpy(c.cols, cols, (size_t)count * sizeof *c.cols);
        memcpy(c.values, values, (size_t)count * s->elem);
        c.mem_bytes += count * (int64_t)(4 + s->elem);
    }

    pthread_mutex_lock(&s->plock);
    row_block *b = &s->blocks[I];
    if (!b->chunks && !(b->chunks = calloc((size_t)b->expected, sizeof *b->chunks))) {
        pthread_mutex_unlock(&s->plock);
        goto no_memory;
    }
    b->chunks[J - (s->cfg.symmetric ? I : 0)] = c;
    b->done++;
    s->pending_bytes += c.mem_bytes;
    pthread_mutex_unlock(&s->plock);
    return OC_OK;

no_memory:
    free_chunk(&c);
    set_error(s, OC_ERR_NO_MEMORY, "cannot allocate %lld threshold pairs of tile rows %lld..", (long long)count,
              (long long)i0);
    return OC_ERR_NO_MEMORY;
}

oc_status oc_select_add_pairs(oc_select *s, int64_t i0, int64_t j0, int64_t rows, const uint32_t *row_counts,
                              const uint32_t *cols, const void *values, int64_t count)
{
    return add_chunk(s, i0, j0, rows, row_counts, cols, values, count);
}

oc_status oc_select_tile(oc_select *s, int worker, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                         const void *tile, int64_t ld)
{
    sel_worker *w = &s->workers[worker];
    if (s->cfg.mode == OC_SELECT_TOPK) {
        if (s->kept == 0) return OC_OK;
        switch (s->kind) {
        case OC_KEY_F32: topk_f32(s, w, i0, j0, rows, cols, tile, ld); break;
        case OC_KEY_I32: topk_i32(s, w, i0, j0, rows, cols, tile, ld); break;
        case OC_KEY_U16: topk_u16(s, w, i0, j0, rows, cols, tile, ld); break;
        case OC_KEY_I32_REV: topk_i32_rev(s, w, i0, j0, rows, cols, tile, ld); break;
        default: topk_u16_rev(s, w, i0, j0, rows, cols, tile, ld); break;
        }
        return OC_OK;
    }
    int64_t n = 0;
    if (s->min_key <= 0xFFFFFFFFu) switch (s->kind) {
        case OC_KEY_F32: n = pairs_f32(s, w, i0, j0, rows, cols, tile, ld); break;
        case OC_KEY_I32: n = pairs_i32(s, w, i0, j0, rows, cols, tile, ld); break;
        case OC_KEY_U16: n = pairs_u16(s, w, i0, j0, rows, cols, tile, ld); break;
        case OC_KEY_I32_REV: n = pairs_i32_rev(s, w, i0, j0, rows, cols, tile, ld); break;
        default: n = pairs_u16_rev(s, w, i0, j0, rows, cols, tile, ld); break;
        }
    return add_chunk(s, i0, j0, rows, w->pcounts, w->pcols, w->pvals, n);
}

/* ---------------------------------------------------------------- pairs: delivery */
static oc_status flush_out(oc_context *ctx, oc_select *s, int64_t *n)
{
    if (*n == 0) return OC_OK;
    if (s->cfg.emit) OC_CHECK(s->cfg.emit(ctx, s->cfg.emit_user, s->out_rows, s->out_cols, s->out_vals, *n));
    s->emitted += *n;
    *n = 0;
    return OC_OK;
}

/* Appends `count` pairs of row `row` whose columns are j0 + cols[i]. */
static oc_status append(oc_context *ctx, oc_select *s, int64_t *n, int64_t row, int64_t j0, const uint32_t *cols,
                        const unsigned char *values, int64_t count)
{
    while (count > 0) {
        int64_t take = EMIT_BATCH - *n < count ? EMIT_BATCH - *n : count;
        for (int64_t i = 0; i < take; ++i) {
            s->out_rows[*n + i] = row;
            s->out_cols[*n + i] = j0 + cols[i];
        }
        memcpy(s->out_vals + *n * s->elem, values, (size_t)take * s->elem);
        *n += take, cols += take, values += take * s->elem, count -= take;
        if (*n == EMIT_BATCH) OC_CHECK(flush_out(ctx, s, n));
    }
    return OC_OK;
}

static oc_status deliver_block(oc_context *ctx, oc_select *s, int64_t I)
{
    row_block *b = &s->blocks[I];
    const int64_t i0 = I * s->tile, rows = s->cfg.n - i0 < s->tile ? s->cfg.n - i0 : s->tile;
    const int64_t first_j = s->cfg.symmetric ? I : 0;
    int64_t *cursor = calloc((size_t)b->expected, sizeof *cursor), n = 0;
    if (!cursor) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the delivery state of %lld tiles", (long long)b->expected);
    oc_status st = OC_OK;
    for (int64_t r = 0; r < rows && st == OC_OK; ++r)
        for (int64_t k = 0; k < b->expected && st == OC_OK; ++k) {
            pair_chunk *c = &b->chunks[k];
            if (c->count == 0 || c->row_counts[r] == 0) continue;
            int64_t cnt = c->row_counts[r], j0 = (first_j + k) * s->tile;
            if (c->spill_off < 0) {
                st = append(ctx, s, &n, i0 + r, j0, c->cols + cursor[k], c->values + cursor[k] * s->elem, cnt);
            } else {
                for (int64_t done = 0; done < cnt && st == OC_OK;) {
                    int64_t part = cnt - done < EMIT_BATCH ? cnt - done : EMIT_BATCH, at = cursor[k] + done;
                    if (read_all(s->spill_fd, s->read_cols, (size_t)part * 4, c->spill_off + at * 4) != 0 ||
                        read_all(s->spill_fd, s->read_vals, (size_t)part * s->elem,
                                 c->spill_off + c->count * 4 + at * (int64_t)s->elem) != 0) {
                        st = oc_fail(ctx, OC_ERR_IO, "reading threshold pairs back from the temporary file failed: %s",
                                     strerror(errno));
                        break;
                    }
                    st = append(ctx, s, &n, i0 + r, j0, s->read_cols, s->read_vals, part);
                    done += part;
                }
            }
            cursor[k] += cnt;
        }
    if (st == OC_OK) st = flush_out(ctx, s, &n);
    free(cursor);
    int64_t freed = 0;
    for (int64_t k = 0; k < b->expected; ++k) {
        freed += b->chunks[k].mem_bytes;
        free_chunk(&b->chunks[k]);
    }
    free(b->chunks);
    b->chunks = NULL;
    pthread_mutex_lock(&s->plock);
    s->pending_bytes -= freed;
    pthread_mutex_unlock(&s->plock);
    return st == OC_OK ? OC_OK : oc_trace_at(ctx, st, __FILE__, __LINE__);
}

oc_status oc_select_drain(oc_context *ctx, oc_select *s)
{
    OC_CHECK(oc_select_check(ctx, s));
    if (s->cfg.mode != OC_SELECT_PAIRS) return OC_OK;
    for (;;) {
        pthread_mutex_lock(&s->plock);
        int ready = s->next_block < s->nblocks && s->blocks[s->next_block].done == s->blocks[s->next_block].expected;
        int64_t I = s->next_block;
        if (ready) s->next_block++;
        pthread_mutex_unlock(&s->plock);
        if (!ready) return OC_OK;
        OC_CHECK(deliver_block(ctx, s, I));
    }
}

oc_status oc_select_pairs_finish(oc_context *ctx, oc_select *s)
{
    OC_CHECK(oc_select_drain(ctx, s));
    if (s->next_block != s->nblocks)
        return oc_fail(ctx, OC_ERR_INTERNAL, "threshold selection: row block %lld of %lld never completed",
                       (long long)s->next_block, (long long)s->nblocks);
    return OC_OK;
}

oc_status oc_select_topk_result(oc_context *ctx, oc_select *s, int64_t *indices, void *scores)
{
    OC_CHECK(oc_select_check(ctx, s));
    const int64_t k = s->cfg.k, kept = s->kept;
    for (int64_t i = 0; i < s->cfg.n; ++i)
        for (int64_t t = 0; t < k; ++t) {
            uint64_t key = t < kept ? s->keys[i * kept + t] : 0;
            int64_t e = i * k + t;
            if (indices) indices[e] = key ? oc_key_index(key) : -1;
            if (!scores) continue;
            if (key) oc_key_store_score(s->kind, (uint32_t)(key >> 32), scores, e);
            else memset((char *)scores + e * (int64_t)s->elem, 0, s->elem); /* padding scores 0 */
        }
    return OC_OK;
}
