/*
 * select_topk.c - top-k lists from Gram tiles (see select.h for the data flow, select_key.h
 * for the order, docs/topk.md for the semantics).
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
 * Two paths reach the same exact test (exact_rows): a converted tile, whose values are
 * read as they are (topk_tile, instantiated per key kind), and, for jaccard, a tile of raw
 * counts whose scores are computed only for the elements that pass the pre-test
 * (oc_select_tile_counts). Each is one function body, inlined per key kind and per mirror
 * flag with the kind and the flag as constants, so the inner loops have no switch.
 *
 * Lock order: a worker holds at most one lock stripe at a time.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "matrix/matrix.h"
#include "core/metric.h"
#include "core/threads.h"
#include "gram/select/select_simd.h"
#include "gram/select/select_sort.h"
#include "gram/select/select.h"
#include "gram/select/select_state.h"

#define LOCK_ROWS 32     /* rows of one lock stripe (see merge_lists) */
#define INSERT_WORK 1024 /* survivors x kept up to which a list takes them one by one */
#define SEED_RANK_MAX 32 /* group maxima up to which seeding ranks them directly */
#define ROW_BATCH 64     /* tile rows pre-tested and merged together */

/* ---------------------------------------------------------------- lists */
/* Keeps the best `kept` of buf[0..*count) (in no particular order) and returns the kept-th
 * key, the floor the buffer's row now imposes (0 when fewer remain). Linear time. */
static uint64_t trim(uint64_t *buf, int64_t *count, int64_t kept)
{
    if (*count < kept) return 0;
    oc_keys_select_desc(buf, *count, kept);
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
        oc_keys_select_desc(cand, nc, s->kept);
        nc = s->kept;
    }
    if (!merge_by_insertion(s, nc)) oc_keys_sort_desc(cand, nc);
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

/* ---------------------------------------------------------------- a tile */
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
    oc_keys_select_desc(keys, g, kept);
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
    int64_t i0, j0, cols, wpr; /* the tile (or slice) and its pre-test words per row */
    uint32_t jlow0;            /* the index half of column j0 */
    int mirror;                /* A·Aᵀ: the columns' lists take the mirrored elements */
    int64_t kept, rowcap, colcap;
    uint64_t *colbuf, *colfloor;
    int64_t *colcount;
} topk_scratch;

/* The scratch of a tile (or slice) at (i0, j0), cols wide, from the selection and the
 * worker's buffers. */
static inline topk_scratch scratch_of(const oc_select *s, sel_worker *w, int64_t i0, int64_t j0, int64_t cols,
                                      uint32_t jlow0, int mirror, int64_t kept)
{
    return (topk_scratch){.i0 = i0,
                          .j0 = j0,
                          .cols = cols,
                          .wpr = OC_SCAN_WORDS(cols),
                          .jlow0 = jlow0,
                          .mirror = mirror,
                          .kept = kept,
                          .rowcap = s->rowcap,
                          .colcap = s->colcap,
                          .colbuf = w->colbuf,
                          .colfloor = w->colfloor,
                          .colcount = w->colcount};
}

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
 * mirrored row). As for the rows in exact_rows, the key is written to the end of the
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

/* Where the exact test reads scores: a converted tile of the given oc_key_kind, or
 * (SCORES_JACCARD_COUNTS) the uint32 counts of a jaccard tile, scored only where read. */
#define SCORES_JACCARD_COUNTS (-1)

/* The score key of tile element (r, c), rows ld elements apart; pop_a and pop_b (the
 * popcounts of the tile's rows and columns) are read only for SCORES_JACCARD_COUNTS, whose
 * score is metric.h's, as the epilogue computes it, so both paths give the same keys. */
OC_SELECT_INSTANCE uint32_t score_key_at(const int source, const void *restrict values, int64_t ld,
                                         const int64_t *restrict pop_a, const int64_t *restrict pop_b, int64_t r,
                                         int64_t c)
{
    if (source == SCORES_JACCARD_COUNTS)
        return oc_key_f32(oc_metric_jaccard(((const uint32_t *)values)[r * ld + c], pop_a[r], pop_b[c]));
    return oc_key_score(source, values, r * ld + c);
}

/* The exact test of the set pre-test bits of batch rows r0 .. r0 + nb - 1 (tile rows; the
 * bits are w->words). A row's survivors are listed first (row_survivors), then each key
 * goes to the row's buffer, kept in locals (see column_take for why without branches),
 * and when mirror is set to its column's. */
OC_SELECT_INSTANCE void exact_rows(const oc_select *s, sel_worker *w, const topk_scratch *x, int64_t r0, int64_t nb,
                                   const int source, const void *restrict values, int64_t ld,
                                   const int64_t *restrict pop_a, const int64_t *restrict pop_b, const int mirror)
{
    for (int64_t b = 0; b < nb; ++b) {
        const int64_t c0 = oc_select_first_column(s, x->i0 + r0 + b, x->j0, x->cols);
        const uint32_t ilow = 0xFFFFFFFFu - (uint32_t)(x->i0 + r0 + b);
        const int64_t ns = row_survivors(w->words + b * x->wpr, x->wpr, c0, w->survivors);
        const uint32_t *restrict sc = w->survivors; /* declared after they are written */
        uint64_t rf = w->rowfloor[b], *restrict rb = w->rowbuf + b * x->rowcap;
        int64_t nr = 0;
        for (int64_t q = 0; q < ns; ++q) {
            const int64_t c = sc[q];
            const uint64_t hi = (uint64_t)score_key_at(source, values, ld, pop_a, pop_b, r0 + b, c) << 32;
            const uint64_t kr = hi | (uint32_t)(x->jlow0 - (uint32_t)c);
            rb[nr] = kr;
            nr += kr > rf;
            if (__builtin_expect(nr == x->rowcap, 0) && x->rowcap > x->kept) rf = max_u64(rf, trim(rb, &nr, x->kept));
            if (mirror) column_take(x, c, hi | ilow);
        }
        w->rowcount[b] = nr;
    }
}

/* The exact test of a batch (exact_rows, with the mirror flag as a constant), then the
 * merge of its rows (one lock per stripe of rows, see merge_lists). */
OC_SELECT_INSTANCE void exact_batch(oc_select *s, sel_worker *w, const topk_scratch *x, int64_t r0, int64_t nb,
                                    const int source, const void *restrict values, int64_t ld,
                                    const int64_t *restrict pop_a, const int64_t *restrict pop_b)
{
    if (x->mirror) exact_rows(s, w, x, r0, nb, source, values, ld, pop_a, pop_b, 1);
    else exact_rows(s, w, x, r0, nb, source, values, ld, pop_a, pop_b, 0);
    merge_lists(s, w, x->i0 + r0, nb, w->rowbuf, s->rowcap, w->rowcount);
}

/* Column seeds where a list is not full, in tiles wholly above the diagonal (every tile
 * row is eligible in every column); the caller loaded the column floors. */
OC_SELECT_INSTANCE void seed_columns(oc_select *s, sel_worker *w, int64_t rows, int64_t cols, const oc_key_kind kind,
                                     const void *restrict tile, int64_t ld)
{
    const int64_t kept = s->kept, g = SEED_GROUPS(kept, rows);
    const oc_scan_tile gt = {.kind = kind, .values = tile, .ld = ld, .rows = rows, .cols = cols};
    s->simd.group_max(&gt, g, w->colmax);
    if (kept <= OC_SEED_RANK_MAX) {
        s->simd.kth_largest(w->colmax, g, cols, kept, w->colrank);
        for (int64_t c = 0; c < cols; ++c) w->colfloor[c] = max_u64(w->colfloor[c], (uint64_t)w->colrank[c] << 32);
    } else {
        for (int64_t c = 0; c < cols; ++c) {
            for (int64_t q = 0; q < g; ++q) w->seedmax[q] = w->colmax[q * cols + c];
            w->colfloor[c] = max_u64(w->colfloor[c], seed_floor(w->seedmax, g, kept, w->seedkeys));
        }
    }
}

/* A converted tile of key kind `kind` (a constant in each instance, so that the key
 * computation has no switch). Column floors (seeded where a list is not full) are read
 * once per tile; then per batch of ROW_BATCH tile rows: their floors (seeded likewise),
 * the pre-test, the exact test of the set bits, and the merge of the batch's rows under
 * one lock. The columns' survivors are merged when the tile is done. Batches bound the
 * worker's buffers whatever the tile edge. */
OC_SELECT_INSTANCE void topk_tile(oc_select *s, sel_worker *w, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                                  const void *restrict tile, int64_t ld, const oc_key_kind kind)
{
    const int mirror = s->cfg.symmetric;
    const int64_t kept = s->kept;
    if (mirror && load_column_floors(s, w, j0, cols) && i0 + rows <= j0 && rows >= kept)
        seed_columns(s, w, rows, cols, kind, tile, ld);
    /* Bounds for the tile's first row hold for every later one (select_simd.h). */
    if (mirror)
        for (int64_t c = 0; c < cols; ++c) w->colmin[c] = scan_bound(w->colfloor[c], 0xFFFFFFFFu - (uint32_t)i0);
    const topk_scratch x = scratch_of(s, w, i0, j0, cols, 0xFFFFFFFFu - (uint32_t)j0, mirror, kept);
    for (int64_t r0 = 0; r0 < rows; r0 += ROW_BATCH) {
        const int64_t nb = rows - r0 < ROW_BATCH ? rows - r0 : ROW_BATCH;
        for (int64_t b = 0; b < nb; ++b) {
            const int64_t c0 = oc_select_first_column(s, i0 + r0 + b, j0, cols);
            uint64_t rf = atomic_load_explicit(&s->floors[i0 + r0 + b], memory_order_relaxed);
            if (rf == 0 && cols - c0 >= kept) {
                for (int64_t c = c0; c < cols; ++c) w->scorekeys[c] = oc_key_score(kind, tile, (r0 + b) * ld + c);
                rf = row_seed(w, w->scorekeys, c0, cols, kept);
            }
            w->rowfloor[b] = rf;
            w->rowmin[b] = scan_bound(rf, x.jlow0);
        }
        const oc_scan_tile st = {.kind = kind,
                                 .values = (const char *)tile + r0 * ld * (int64_t)s->elem,
                                 .ld = ld,
                                 .rows = nb,
                                 .cols = cols,
                                 .row_min = w->rowmin,
                                 .col_min = w->colmin,
                                 .mirror = mirror,
                                 .words = w->words};
        s->simd.scan(&st);
        exact_batch(s, w, &x, r0, nb, kind, tile, ld, NULL, NULL);
    }
    if (mirror) merge_lists(s, w, j0, cols, w->colbuf, s->colcap, w->colcount);
}

void oc_select_topk_tile(oc_select *s, sel_worker *w, int64_t i0, int64_t j0, int64_t rows, int64_t cols,
                         const void *tile, int64_t ld)
{
    if (s->kept == 0) return;
    switch (s->kind) {
    case OC_KEY_F32:
        topk_tile(s, w, i0, j0, rows, cols, tile, ld, OC_KEY_F32);
        break;
    case OC_KEY_I32:
        topk_tile(s, w, i0, j0, rows, cols, tile, ld, OC_KEY_I32);
        break;
    case OC_KEY_U16:
        topk_tile(s, w, i0, j0, rows, cols, tile, ld, OC_KEY_U16);
        break;
    case OC_KEY_I32_REV:
        topk_tile(s, w, i0, j0, rows, cols, tile, ld, OC_KEY_I32_REV);
        break;
    default:
        topk_tile(s, w, i0, j0, rows, cols, tile, ld, OC_KEY_U16_REV);
        break;
    }
}

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
    const int64_t kept = s->kept;
    const uint32_t jlow0 = 0xFFFFFFFFu - (uint32_t)j0;
    /* A list that would be seeded (see "Seeding") needs the tile's scores: the converted
     * tile. Floors only rise, so a list with one now keeps it. */
    if (mirror && load_column_floors(s, w, j0, cols) && i0 + rows <= j0 && rows >= kept) return 0;
    for (int64_t r = 0; r < rows; ++r)
        if (atomic_load_explicit(&s->floors[i0 + r], memory_order_relaxed) == 0 &&
            cols - oc_select_first_column(s, i0 + r, j0, cols) >= kept)
            return 0;
    for (int64_t c = 0; c < cols; ++c) {
        w->popc[c] = (float)pop_b[c];
        if (mirror) w->gc[c] = jaccard_factor(scan_bound(w->colfloor[c], 0xFFFFFFFFu - (uint32_t)i0));
    }
    const topk_scratch x = scratch_of(s, w, i0, j0, cols, jlow0, mirror, kept);
    for (int64_t r0 = 0; r0 < rows; r0 += ROW_BATCH) {
        const int64_t nb = rows - r0 < ROW_BATCH ? rows - r0 : ROW_BATCH;
        for (int64_t b = 0; b < nb; ++b) {
            w->rowfloor[b] = atomic_load_explicit(&s->floors[i0 + r0 + b], memory_order_relaxed);
            w->popr[b] = (float)pop_a[r0 + b];
            w->gr[b] = jaccard_factor(scan_bound(w->rowfloor[b], jlow0));
        }
        const oc_scan_counts st = {.counts = counts + r0 * ld,
                                   .ld = ld,
                                   .rows = nb,
                                   .cols = cols,
                                   .pop_r = w->popr,
                                   .g_r = w->gr,
                                   .pop_c = w->popc,
                                   .g_c = w->gc,
                                   .mirror = mirror,
                                   .words = w->words};
        s->simd.scan_counts(&st);
        exact_batch(s, w, &x, r0, nb, SCORES_JACCARD_COUNTS, counts, ld, pop_a, pop_b);
    }
    if (mirror) merge_lists(s, w, j0, cols, w->colbuf, s->colcap, w->colcount);
    return 1;
}

/* ---------------------------------------------------------------- set-up and result */
oc_status oc_select_topk_create(oc_context *ctx, oc_select *s)
{
    const oc_select_config *cfg = &s->cfg;
    /* A row has p candidates (p - 1 for A·Aᵀ); lists never hold more. */
    int64_t candidates = cfg->p - (cfg->symmetric ? 1 : 0);
    s->kept = cfg->k < candidates ? cfg->k : candidates;
    if (s->kept < 0) s->kept = 0;
    int64_t entries;
    if (!oc_mul_i64(cfg->n, s->kept, &entries) || entries > INT64_MAX / 8 - cfg->n)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "top-%lld of %lld rows overflows 64-bit sizes", (long long)cfg->k,
                       (long long)cfg->n);
    /* The lists are held whole, whatever the backend: a budget they do not fit in is the
     * caller's to raise (exit 2, as a budget too small for the smallest panels). */
    const int64_t lists = oc_select_lists_bytes(s);
    if (cfg->host_budget > 0 && lists > cfg->host_budget)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "host memory budget %lld bytes is too small for the top-%lld lists of %lld rows: they take "
                       "%lld bytes (%lld candidates of 8 bytes a row, and its floor); raise --host-mem past that, "
                       "or lower --topk",
                       (long long)cfg->host_budget, (long long)s->kept, (long long)cfg->n, (long long)lists,
                       (long long)s->kept);
    s->keys = calloc((size_t)(entries ? entries : 1), sizeof *s->keys);
    s->floors = calloc((size_t)(cfg->n ? cfg->n : 1), sizeof *s->floors);
    if (!s->keys || !s->floors)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate top-%lld lists for %lld rows (%.1f MiB)",
                       (long long)s->kept, (long long)cfg->n, (double)entries * 8 / 1048576.0);
    return OC_OK;
}

oc_status oc_select_topk_begin(oc_context *ctx, oc_select *s)
{
    const int64_t tile = s->tile;
    const int workers = s->nworkers;
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
        if (!w->rowbuf || !w->rowcount || !w->merge || (s->cfg.symmetric && !w->colbuf) || !w->colcount ||
            !w->colfloor || !w->colmin || !w->scorekeys || !w->rowfloor || !w->rowmin || !w->words || !w->survivors ||
            !w->seedmax || !w->seedkeys || (s->cfg.symmetric && (!w->colmax || !w->colrank)) || !w->popr || !w->gr ||
            !w->popc || !w->gc)
            return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate top-k buffers for %d workers", workers);
    }
    return OC_OK;
}

void oc_select_topk_free(oc_select *s)
{
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
        }
    free(s->keys);
    free((void *)s->floors);
}

uint64_t *oc_select_topk_keys(oc_select *s) { return s->keys; }
