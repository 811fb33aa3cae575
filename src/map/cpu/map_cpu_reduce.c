/*
 * map_cpu_reduce.c - sum, mean, min and max of a map expression over all elements or one
 * axis, evaluated block by block: the element-wise result is never materialised.
 *
 * Order of float sums (numpy's, so that results are bit-identical to numpy.sum of the
 * materialised C-contiguous result):
 *   - all elements, or an axis after which every dimension is 1 (the reduced run is
 *     contiguous): 0 + pairwise(run), where pairwise is numpy's pairwise_sum (numpy
 *     umath/loops_utils.h): n < 8: a plain loop from -0.0; n <= 128: eight accumulators
 *     over strides of 8, combined ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the tail;
 *     otherwise split at n2 = n/2 rounded down to a multiple of 8 and add the halves. A
 *     block of OC_MAP_BLOCK elements evaluated at once is a subtree of that recursion,
 *     so evaluating by blocks changes nothing; threads take whole subtrees and their
 *     results are added in the tree's order.
 *   - any other axis: for each output element, 0 + x_0 + x_1 + ... in index order, which is
 *     numpy's order for a C-contiguous input (its inner loop runs along the last axis, over
 *     output elements, and the reduced axis is an outer loop).
 * Integer sums wrap modulo 2^64 (numpy's int64/uint64 accumulators): order-free. min and
 * max propagate NaN as numpy does and return an element (no 0 + v: all -0.0 gives -0.0), the
 * first in index order of those equal to the result (of +0.0 and -0.0 tied, the first; the
 * first NaN), whatever the blocks and the threads' shares (fold_minmax). mean is the sum in
 * the reduction's type divided by the count in that type.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/threads.h"
#include "map/cpu/map_cpu.h"
#include "map/cpu/map_cpu_ops.h"
#include "map/map_reduce.h"

#define PW_BLOCKSIZE 128

/* numpy's pairwise_sum, for float and double. */
#define PAIRWISE(S, T)                                                                 \
    static T pairwise_##S(const T *a, int64_t n)                                       \
    {                                                                                  \
        if (n < 8) {                                                                   \
            T res = -(T)0.0;                                                           \
            for (int64_t i = 0; i < n; i++) res += a[i];                               \
            return res;                                                                \
        }                                                                              \
        if (n <= PW_BLOCKSIZE) {                                                       \
            T r[8];                                                                    \
            for (int j = 0; j < 8; j++) r[j] = a[j];                                   \
            int64_t i;                                                                 \
            for (i = 8; i < n - (n % 8); i += 8)                                       \
                for (int j = 0; j < 8; j++) r[j] += a[i + j];                          \
            T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])); \
            for (; i < n; i++) res += a[i];                                            \
            return res;                                                                \
        }                                                                              \
        int64_t n2 = n / 2;                                                            \
        n2 -= n2 % 8;                                                                  \
        return pairwise_##S(a, n2) + pairwise_##S(a + n2, n - n2);                     \
    }
PAIRWISE(f32, float)
PAIRWISE(f64, double)

/* Per-thread state: the evaluator and a block of the reduction's type. */
typedef struct reducer {
    oc_map_cpu_job *job;
    oc_map_eval *ev;
    oc_map_cast_loop cast; /* expression type -> reduction type, NULL when equal */
    unsigned char *tmp;
    int rt; /* the reduction's type */
    int error;
    int64_t released; /* job->release: the input pages before this element are dropped */
} reducer;

static int reducer_init(reducer *r, oc_map_cpu_job *job)
{
    const oc_map_plan *m = job->m;
    memset(r, 0, sizeof *r);
    r->job = job;
    r->rt = m->reduce_type;
    r->ev = oc_map_eval_create(m);
    r->tmp = malloc(OC_MAP_BLOCK * 8);
    if (r->rt != m->expr_type) r->cast = oc_map_cpu_cast(m->expr_type, r->rt);
    if (!r->ev || !r->tmp) {
        oc_map_eval_free(r->ev);
        free(r->tmp);
        atomic_store(&job->failed, 1);
        return 0;
    }
    return 1;
}

static void reducer_done(reducer *r)
{
    if (r->error) atomic_store(&r->job->failed, 2);
    oc_map_eval_free(r->ev);
    free(r->tmp);
}

/* Elements a sweep reads between two calls that drop the input pages behind it. Only the
 * calls that pass a 2 MiB boundary of an input's address drop anything (oc_map_cpu_release_behind):
 * a thread holds the 2 MiB of each input that it reads in, and at times the 2 MiB before. */
#define SWEEP_RELEASE (16 * OC_MAP_BLOCK)

/* Elements a pass over bands of rows (oc_map_cpu_reduce) reads per part at once. */
#define BAND_PER_PART (64 * OC_MAP_BLOCK)

/* The reducer has read its range up to element `to`, a sweep from r->released on: drops the
 * input pages behind it (job->release), so that a thread holds a few MiB of each input
 * however long its range. */
static void passed(reducer *r, int64_t to)
{
    if (r->job->release && to - r->released >= SWEEP_RELEASE) {
        oc_map_cpu_release_behind(r->job->m, NULL, r->released, to);
        r->released = to;
    }
}

/* The end of a sweep that stops at element `end`: drops the rest of its pages. */
static void passed_all(reducer *r, int64_t end)
{
    if (r->job->release && end > r->released) oc_map_cpu_release(r->job->m, NULL, r->released, end);
    r->released = end;
}

/* Elements [start, start+n) (n <= OC_MAP_BLOCK) in the reduction's type. */
static const void *values(reducer *r, int64_t start, int64_t n)
{
    const void *x = oc_map_eval_block(r->ev, start, n, NULL, &r->error);
    if (!r->cast) return x;
    r->cast(r->tmp, x, (size_t)n);
    return r->tmp;
}

/* ---------------------------------------------------------------- accumulate one value */

/* A running result of any type, 8 bytes. */
typedef union acc {
    int64_t i;
    uint64_t u;
    float f;
    double d;
    unsigned char b[8];
} acc;

/* An X-macro list, laid out by hand: */
/* clang-format off */
#define MINMAX_TYPES(X, ...)                                                                              \
    X(MT_BOOL, uint8_t, 0, __VA_ARGS__) X(MT_I8, int8_t, 0, __VA_ARGS__) X(MT_I16, int16_t, 0, __VA_ARGS__) \
    X(MT_I32, int32_t, 0, __VA_ARGS__) X(MT_I64, int64_t, 0, __VA_ARGS__) X(MT_U8, uint8_t, 0, __VA_ARGS__) \
    X(MT_U16, uint16_t, 0, __VA_ARGS__) X(MT_U32, uint32_t, 0, __VA_ARGS__)                               \
    X(MT_U64, uint64_t, 0, __VA_ARGS__) X(MT_F32, float, 1, __VA_ARGS__) X(MT_F64, double, 1, __VA_ARGS__)
/* clang-format on */

/* *a = op(*a, x[0..n)) for min/max (first = 1: *a starts at x's); NaN wins, as in numpy, and
 * *a is kept on a tie. x's fold (the CPU path's vector loop) is the first in index order of the
 * elements equal to its value, so the result is the first such element of the whole run
 * however it is cut into pieces (blocks, threads' shares). */
static void fold_minmax(int t, int is_max, acc *a, const void *x, int64_t n, int first)
{
    acc f = {0};
    oc_map_cpu_minmax(t, is_max)(f.b, x, (size_t)n);
    if (first) {
        *a = f;
        return;
    }
#define JOIN(TT, CT, FLT, a, f, is_max)                      \
    case TT: {                                               \
        CT r, v;                                             \
        memcpy(&r, a->b, sizeof r);                          \
        memcpy(&v, f.b, sizeof v);                           \
        if (is_max) r = (r >= v || (FLT && r != r)) ? r : v; \
        else r = (r <= v || (FLT && r != r)) ? r : v;        \
        memcpy(a->b, &r, sizeof r);                          \
        break;                                               \
    }
    switch (t) {
        MINMAX_TYPES(JOIN, a, f, is_max) default : break;
    }
#undef JOIN
}

/* acc[i] = op(acc[i], x[i]) elementwise, acc an array of type t. */
static void combine(int t, oc_map_reduce op, void *accs, const void *x, int64_t n)
{
    if (op == OC_MAP_REDUCE_SUM || op == OC_MAP_REDUCE_MEAN) {
        if (t == MT_F32)
            for (int64_t i = 0; i < n; i++) ((float *)accs)[i] += ((const float *)x)[i];
        else if (t == MT_F64)
            for (int64_t i = 0; i < n; i++) ((double *)accs)[i] += ((const double *)x)[i];
        else
            for (int64_t i = 0; i < n; i++) ((uint64_t *)accs)[i] += ((const uint64_t *)x)[i];
        return;
    }
    int is_max = op == OC_MAP_REDUCE_MAX;
#define COMB(TT, CT, FLT, accs, x, n, is_max)                                                             \
    case TT: {                                                                                            \
        CT *r = accs;                                                                                     \
        const CT *v = x;                                                                                  \
        if (is_max)                                                                                       \
            for (int64_t i = 0; i < n; i++) r[i] = (r[i] >= v[i] || (FLT && r[i] != r[i])) ? r[i] : v[i]; \
        else                                                                                              \
            for (int64_t i = 0; i < n; i++) r[i] = (r[i] <= v[i] || (FLT && r[i] != r[i])) ? r[i] : v[i]; \
        break;                                                                                            \
    }
    switch (t) {
        MINMAX_TYPES(COMB, accs, x, n, is_max) default : break;
    }
#undef COMB
}

/* ---------------------------------------------------------------- one contiguous run */

/* numpy's pairwise recursion over elements [start, start+n), evaluated by blocks. */
#define RANGE_PAIRWISE(S, T)                                          \
    static T range_pairwise_##S(reducer *r, int64_t start, int64_t n) \
    {                                                                 \
        if (atomic_load(&r->job->failed)) return 0; /* not used */    \
        if (n <= OC_MAP_BLOCK) {                                      \
            T v = pairwise_##S(values(r, start, n), n);               \
            passed(r, start + n);                                     \
            oc_map_cpu_tick(r->job, n);                               \
            return v;                                                 \
        }                                                             \
        int64_t n2 = n / 2;                                           \
        n2 -= n2 % 8;                                                 \
        T a = range_pairwise_##S(r, start, n2);                       \
        return a + range_pairwise_##S(r, start + n2, n - n2);         \
    }
RANGE_PAIRWISE(f32, float)
RANGE_PAIRWISE(f64, double)

/* The reduction of the run [start, start+n) (n > 0 for min/max), without the identity. The
 * blocks are read in order (the pairwise recursion's left subtree first): one sweep, whose
 * pages passed() drops behind it. */
static acc reduce_run(reducer *r, int64_t start, int64_t n)
{
    acc a = {0};
    oc_map_reduce op = r->job->m->reduce;
    if (op == OC_MAP_REDUCE_SUM || op == OC_MAP_REDUCE_MEAN) {
        if (r->rt == MT_F32) {
            a.f = range_pairwise_f32(r, start, n);
            return a;
        }
        if (r->rt == MT_F64) {
            a.d = range_pairwise_f64(r, start, n);
            return a;
        }
    }
    for (int64_t s = start; s < start + n; s += OC_MAP_BLOCK) {
        int64_t k = start + n - s < OC_MAP_BLOCK ? start + n - s : OC_MAP_BLOCK;
        const void *x = values(r, s, k);
        if (op == OC_MAP_REDUCE_SUM || op == OC_MAP_REDUCE_MEAN)
            for (int64_t i = 0; i < k; i++) a.u += ((const uint64_t *)x)[i];
        else fold_minmax(r->rt, op == OC_MAP_REDUCE_MAX, &a, x, k, s == start);
        passed(r, s + k);
        if (oc_map_cpu_tick(r->job, k)) break;
    }
    return a;
}

/* a = a op b for two partial results, in that order. */
static acc join(int t, oc_map_reduce op, acc a, acc b)
{
    if (op == OC_MAP_REDUCE_SUM || op == OC_MAP_REDUCE_MEAN) {
        if (t == MT_F32) a.f = a.f + b.f;
        else if (t == MT_F64) a.d = a.d + b.d;
        else a.u += b.u;
        return a;
    }
    fold_minmax(t, op == OC_MAP_REDUCE_MAX, &a, b.b, 1, 0);
    return a;
}

/* ---------------------------------------------------------------- a long run on all threads */

/* The subtrees of numpy's recursion no longer than `leaf`, in the tree's order: the same
 * walk lists them (results == NULL) and then joins their results. */
typedef struct run_tasks {
    int64_t leaf;
    int64_t *start, *len;
    acc *results;
    int count, cap, next;
    int pairwise; /* split as numpy's pairwise sum does; else in equal halves */
    int rt;
    oc_map_reduce op;
} run_tasks;

static int tasks_walk(run_tasks *t, int64_t start, int64_t n, acc *out)
{
    if (n <= t->leaf) {
        if (!t->results) {
            if (t->count == t->cap) {
                int cap = t->cap ? t->cap * 2 : 64;
                int64_t *s = realloc(t->start, sizeof *s * (size_t)cap),
                        *l = s ? realloc(t->len, sizeof *l * (size_t)cap) : NULL;
                if (s) t->start = s;
                if (!s || !l) return 0;
                t->len = l;
                t->cap = cap;
            }
            t->start[t->count] = start;
            t->len[t->count++] = n;
        } else {
            *out = t->results[t->next++];
        }
        return 1;
    }
    int64_t n2 = n / 2;
    if (t->pairwise) n2 -= n2 % 8;
    acc a, b;
    if (!tasks_walk(t, start, n2, &a) || !tasks_walk(t, start + n2, n - n2, &b)) return 0;
    if (t->results) *out = join(t->rt, t->op, a, b);
    return 1;
}

typedef struct run_job {
    oc_map_cpu_job *job;
    run_tasks *tasks;
    atomic_int next; /* the next task not taken */
} run_job;

/* One thread's part: it takes the next task not taken until none is left, in order, so that
 * the threads sweep the run together and a thread held up (the calling thread in a progress
 * callback) leaves the tasks it has not begun to the others. Each result lands at its task's
 * place, and the walk joins them in the tree's order, whichever thread computed which. */
static void run_part(void *arg, int part, int parts)
{
    (void)part, (void)parts;
    run_job *rj = arg;
    reducer r;
    if (!reducer_init(&r, rj->job)) return;
    while (!atomic_load(&rj->job->failed)) {
        const int i = atomic_fetch_add(&rj->next, 1);
        if (i >= rj->tasks->count) break;
        r.released = rj->tasks->start[i];
        rj->tasks->results[i] = reduce_run(&r, rj->tasks->start[i], rj->tasks->len[i]);
        passed_all(&r, rj->tasks->start[i] + rj->tasks->len[i]);
    }
    reducer_done(&r);
}

/* Elements of a task at most, 1 Mi (some milliseconds of work): a task that a thread held up
 * has begun then delays the end by little, and the list of tasks (24 bytes a task) stays
 * small. */
#define TASK_MAX (256 * OC_MAP_BLOCK)

/* The reduction of [start, start+n) on all threads, bit-identical to reduce_run's. */
static oc_status reduce_run_parallel(oc_map_cpu_job *job, int64_t start, int64_t n, acc *out)
{
    const oc_map_plan *m = job->m;
    run_tasks t = {.rt = m->reduce_type, .op = m->reduce};
    t.pairwise = (m->reduce == OC_MAP_REDUCE_SUM || m->reduce == OC_MAP_REDUCE_MEAN) && oc_mt_is_float(t.rt);
    t.leaf = n / ((int64_t)job->threads * 8) + 1;
    if (t.leaf > TASK_MAX) t.leaf = TASK_MAX;
    if (t.leaf < OC_MAP_BLOCK) t.leaf = OC_MAP_BLOCK;
    oc_status st = OC_OK;
    acc dummy;
    if (!tasks_walk(&t, start, n, &dummy)) {
        st = oc_fail(job->ctx, OC_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    t.results = calloc((size_t)t.count, sizeof *t.results);
    if (!t.results) {
        st = oc_fail(job->ctx, OC_ERR_NO_MEMORY, "out of memory");
        goto done;
    }
    run_job rj = {.job = job, .tasks = &t};
    atomic_init(&rj.next, 0);
    int parts = t.count < job->threads ? t.count : job->threads;
    if (job->workers && parts > 1) oc_workers_split_max(job->workers, parts, job->threads, run_part, &rj);
    else run_part(&rj, 0, 1);
    tasks_walk(&t, start, n, out);
done:
    free(t.start);
    free(t.len);
    free(t.results);
    return st;
}

/* ---------------------------------------------------------------- axis reductions */

typedef struct axis_job {
    oc_map_cpu_job *job;
    unsigned char *out; /* out_count elements of the reduction's type */
    int64_t outer, len, inner;
    int64_t chunk;  /* inner > 1: elements of an inner run per part */
    int64_t chunks; /* per outer index */
    int64_t o0, o1; /* inner > 1: the outer indices of this pass */
    int64_t j0, j1; /* inner > 1: its rows along the reduced axis (those before j0 are in out) */
    /* Reducers kept from one pass to the next (the passes in bands of rows, a few per thread
     * each, which would otherwise build their evaluators afresh): no more than the threads. */
    pthread_mutex_t lock;
    reducer *idle;
    int nidle;
} axis_job;

static void store(unsigned char *dst, int t, acc a) { memcpy(dst, a.b, oc_mt_size(t)); }

/* Part `part` of `parts`' share of n things: [*first, *last). */
static void share(int64_t n, int part, int parts, int64_t *first, int64_t *last)
{
    int64_t q = n / parts, extra = n % parts;
    *first = part * q + (part < extra ? part : extra);
    *last = *first + q + (part < extra);
}

/* inner == 1: each output element is the reduction of a contiguous run. A part takes
 * consecutive runs: one sweep over its stretch of the inputs, whose pages passed() drops
 * behind it. */
static void runs_part(void *arg, int part, int parts)
{
    axis_job *aj = arg;
    reducer r;
    if (!reducer_init(&r, aj->job)) return;
    size_t size = oc_mt_size(r.rt);
    int64_t first, last;
    share(aj->outer, part, parts, &first, &last);
    r.released = first * aj->len;
    for (int64_t o = first; o < last && !atomic_load(&aj->job->failed); o++) {
        acc a = reduce_run(&r, o * aj->len, aj->len);
        store(aj->out + o * (int64_t)size, r.rt, a);
    }
    passed_all(&r, last * aj->len);
    reducer_done(&r);
}

/* Whether the reduction adds (sum, mean): its result starts at numpy's 0 (+0.0), where min
 * and max start from their first row. */
static int adds(const oc_map_plan *m) { return m->reduce == OC_MAP_REDUCE_SUM || m->reduce == OC_MAP_REDUCE_MEAN; }

/* Folds a row's piece x[base, base + cnt) into dst block by block (the first row copied, for
 * min and max), dropping the pages behind it as it goes when `track`. Nonzero when the part
 * must stop: a cancel, or another part's failure (its result is not used). */
static int add_row(reducer *r, unsigned char *dst, int64_t base, int64_t cnt, int first_row, int track)
{
    const oc_map_plan *m = r->job->m;
    const size_t size = oc_mt_size(r->rt);
    const int copy = first_row && !adds(m);
    for (int64_t s = 0; s < cnt; s += OC_MAP_BLOCK) {
        int64_t k = cnt - s < OC_MAP_BLOCK ? cnt - s : OC_MAP_BLOCK;
        const void *x = values(r, base + s, k);
        if (copy) memcpy(dst + s * (int64_t)size, x, (size_t)k * size);
        else combine(r->rt, m->reduce, dst + s * (int64_t)size, x, k);
        if (track) passed(r, base + s + k);
        if (oc_map_cpu_tick(r->job, k)) return 1;
    }
    return 0;
}

/* inner > 1, whole rows (aj->chunks == 1): out[o, :] = x[o, 0, :] op x[o, 1, :] op ... A part
 * takes consecutive outer indices: one sweep, as runs_part's. */
static void slabs_part(void *arg, int part, int parts)
{
    axis_job *aj = arg;
    reducer r;
    if (!reducer_init(&r, aj->job)) return;
    const size_t size = oc_mt_size(r.rt);
    const int64_t inner = aj->inner;
    int64_t first, last;
    share(aj->outer, part, parts, &first, &last);
    r.released = first * aj->len * inner;
    for (int64_t o = first; o < last && !atomic_load(&aj->job->failed); o++) {
        unsigned char *dst = aj->out + o * inner * (int64_t)size;
        if (adds(aj->job->m)) memset(dst, 0, (size_t)inner * size);
        for (int64_t j = 0; j < aj->len; j++)
            if (add_row(&r, dst, (o * aj->len + j) * inner, inner, j == 0, 1)) goto stopped;
    }
    passed_all(&r, last * aj->len * inner);
stopped:
    reducer_done(&r);
}

/* inner > 1, in chunks of columns: out[o, i] = x[o, 0, i] op x[o, 1, i] op ... for a chunk of
 * i, over the pass's rows j0..j1 of o0..o1. The parts share the rows, whose pages the caller
 * drops after the pass; a part drops its piece of each row itself only when that is long. */
static void strided_part(void *arg, int part, int parts)
{
    axis_job *aj = arg;
    const oc_map_plan *m = aj->job->m;
    reducer r;
    int kept = 0;
    if (aj->idle) {
        pthread_mutex_lock(&aj->lock);
        if ((kept = aj->nidle > 0)) r = aj->idle[--aj->nidle];
        pthread_mutex_unlock(&aj->lock);
    }
    if (!kept && !reducer_init(&r, aj->job)) return;
    const size_t size = oc_mt_size(r.rt);
    for (int64_t w = part; w < (aj->o1 - aj->o0) * aj->chunks && !atomic_load(&aj->job->failed); w += parts) {
        int64_t o = aj->o0 + w / aj->chunks, i0 = w % aj->chunks * aj->chunk;
        int64_t cnt = aj->inner - i0 < aj->chunk ? aj->inner - i0 : aj->chunk;
        unsigned char *dst = aj->out + (o * aj->inner + i0) * (int64_t)size;
        const int each_row = cnt >= BAND_PER_PART;
        if (adds(m) && aj->j0 == 0) memset(dst, 0, (size_t)cnt * size);
        for (int64_t j = aj->j0; j < aj->j1; j++) {
            int64_t base = (o * aj->len + j) * aj->inner + i0;
            r.released = base;
            if (add_row(&r, dst, base, cnt, j == 0, each_row)) goto stopped;
            if (each_row) passed_all(&r, base + cnt);
        }
    }
stopped:
    if (aj->idle) {
        pthread_mutex_lock(&aj->lock);
        aj->idle[aj->nidle++] = r;
        pthread_mutex_unlock(&aj->lock);
    } else {
        reducer_done(&r);
    }
}

/* fn over `work` pieces of aj, in up to four parts a thread, on the job's threads. */
static void run_parts(axis_job *aj, int64_t work, void (*fn)(void *arg, int part, int parts))
{
    oc_map_cpu_job *job = aj->job;
    const int64_t want = (int64_t)job->threads * 4;
    int parts = work < want ? (int)work : (int)want;
    if (job->workers && parts > 1) oc_workers_split_max(job->workers, parts, job->threads, fn, aj);
    else fn(aj, 0, 1);
}

/* The pass aj->o0..o1 x j0..j1 in aj->chunks chunks per outer index, on all threads. */
static void strided_pass(axis_job *aj) { run_parts(aj, (aj->o1 - aj->o0) * aj->chunks, strided_part); }

/* Chunks of the inner run for `outer` outer indices at once: at least a block, enough of
 * them for every thread. */
static void strided_chunks(axis_job *aj, int64_t outer)
{
    int64_t want = (int64_t)aj->job->threads * 4;
    aj->chunks = outer >= want ? 1 : (want + outer - 1) / outer;
    aj->chunk = (aj->inner + aj->chunks - 1) / aj->chunks;
    if (aj->chunk < OC_MAP_BLOCK) aj->chunk = OC_MAP_BLOCK;
    aj->chunks = (aj->inner + aj->chunk - 1) / aj->chunk;
}

static void divide_mean(int t, void *x, int64_t n, int64_t count)
{
    for (int64_t i = 0; i < n; i++) {
        /* numpy divides by the count as an integer: in float64, rounded once to float32 (a
         * count past 2^24 is not a float32) */
        if (t == MT_F32) ((float *)x)[i] = (float)((double)((float *)x)[i] / (double)count);
        else ((double *)x)[i] = ((double *)x)[i] / (double)count;
    }
}

void oc_map_reduce_values(int t, oc_map_reduce op, const void *x, int64_t n, void *out)
{
    acc a = {0};
    if (op == OC_MAP_REDUCE_SUM || op == OC_MAP_REDUCE_MEAN) {
        if (t == MT_F32) a.f = 0.0f + (n ? pairwise_f32(x, n) : 0.0f);
        else if (t == MT_F64) a.d = 0.0 + (n ? pairwise_f64(x, n) : 0.0);
        else
            for (int64_t i = 0; i < n; i++) a.u += ((const uint64_t *)x)[i];
    } else if (n > 0) {
        fold_minmax(t, op == OC_MAP_REDUCE_MAX, &a, x, n, 1);
    }
    store(out, t, a);
}

void oc_map_reduce_finish(const oc_map_plan *m, void *res, void *out)
{
    const int64_t n = m->out_ndim ? m->out_count : 1;
    if (m->reduce == OC_MAP_REDUCE_MEAN)
        divide_mean(m->reduce_type, res, n, m->axis < 0 ? m->count : m->shape[m->axis]);
    if (res != out) oc_map_cpu_cast(m->reduce_type, m->out_type)(out, res, (size_t)n);
}

oc_status oc_map_cpu_reduce(oc_map_cpu_job *job, void *out)
{
    oc_context *ctx = job->ctx;
    const oc_map_plan *m = job->m;
    const int rt = m->reduce_type;
    const size_t rsize = oc_mt_size(rt);
    /* The reduction's own type first; cast to the output type at the end. */
    unsigned char *res = rt == m->out_type ? out : malloc((size_t)(m->out_count ? m->out_count : 1) * rsize);
    if (!res) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory for the reduction's result");
    oc_status st = OC_OK;
    int64_t len = m->axis < 0 ? m->count : m->shape[m->axis];
    if (m->axis < 0) {
        acc a = {0};
        if (m->count > 0) st = reduce_run_parallel(job, 0, m->count, &a);
        /* numpy's sum starts from its identity, 0: 0.0 + (-0.0) is +0.0. min and max have
         * none: their result is an element (an all -0.0 array's min is -0.0). */
        if (m->reduce != OC_MAP_REDUCE_MIN && m->reduce != OC_MAP_REDUCE_MAX) {
            if (rt == MT_F32) a.f = 0.0f + a.f;
            if (rt == MT_F64) a.d = 0.0 + a.d;
        }
        store(res, rt, a);
    } else if (m->out_count > 0) {
        axis_job aj = {.job = job, .out = res, .len = len, .outer = 1, .inner = 1, .lock = PTHREAD_MUTEX_INITIALIZER};
        for (int d = 0; d < m->axis; d++) aj.outer *= m->shape[d];
        for (int d = m->axis + 1; d < m->ndim; d++) aj.inner *= m->shape[d];
        if (len == 0) {
            memset(res, 0, (size_t)m->out_count * rsize); /* an empty sum is 0 */
        } else if (aj.inner == 1 && aj.outer < job->threads) {
            for (int64_t o = 0; o < aj.outer && st == OC_OK; o++) {
                acc a = {0};
                st = reduce_run_parallel(job, o * len, len, &a);
                if (m->reduce != OC_MAP_REDUCE_MIN && m->reduce != OC_MAP_REDUCE_MAX) {
                    if (rt == MT_F32) a.f = 0.0f + a.f;
                    if (rt == MT_F64) a.d = 0.0 + a.d;
                }
                store(res + o * (int64_t)rsize, rt, a);
            }
        } else if (aj.inner == 1) {
            run_parts(&aj, aj.outer, runs_part);
            if (oc_mt_is_float(rt) && m->reduce != OC_MAP_REDUCE_MIN && m->reduce != OC_MAP_REDUCE_MAX)
                for (int64_t o = 0; o < aj.outer; o++) {
                    if (rt == MT_F32) ((float *)res)[o] = 0.0f + ((float *)res)[o];
                    else ((double *)res)[o] = 0.0 + ((double *)res)[o];
                }
        } else {
            strided_chunks(&aj, aj.outer);
            aj.o1 = aj.outer;
            aj.j1 = len;
            if (aj.chunks == 1) {
                run_parts(&aj, aj.outer, slabs_part);
            } else if (!job->release) {
                strided_pass(&aj);
            } else {
                /* Every part reads a piece of every row: a group of outer indices at a time
                 * (enough that every thread has a part where one index has fewer chunks than
                 * threads), in bands of rows of about BAND_PER_PART elements per part that
                 * runs at once, whose pages are dropped after each band. Each output element
                 * still adds its rows in order. */
                strided_chunks(&aj, 1);
                aj.idle = malloc(sizeof *aj.idle * (size_t)job->threads);
                if (!aj.idle) {
                    st = oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
                    goto finish;
                }
                int64_t group = (job->threads + aj.chunks - 1) / aj.chunks;
                if (group > aj.outer) group = aj.outer;
                const int64_t at_once = group * aj.chunks < job->threads ? group * aj.chunks : job->threads;
                int64_t band = at_once * BAND_PER_PART / (group * aj.inner);
                if (band < 1) band = 1;
                for (int64_t o = 0; o < aj.outer && !atomic_load(&job->failed); o += group) {
                    const int64_t o1 = aj.outer - o < group ? aj.outer : o + group;
                    for (int64_t j = 0; j < len && !atomic_load(&job->failed); j += band) {
                        aj.o0 = o;
                        aj.o1 = o1;
                        aj.j0 = j;
                        aj.j1 = len - j < band ? len : j + band;
                        strided_pass(&aj);
                        for (int64_t q = o; q < o1; q++) /* each index's rows are its own stretch */
                            oc_map_cpu_release_behind(m, NULL, (q * len + j) * aj.inner, (q * len + aj.j1) * aj.inner);
                    }
                    for (int64_t q = o; q < o1; q++)
                        oc_map_cpu_release(m, NULL, q * len * aj.inner, (q + 1) * len * aj.inner);
                }
                for (int i = 0; i < aj.nidle; i++) reducer_done(&aj.idle[i]);
                free(aj.idle);
            }
        }
    }
finish:
    if (st == OC_OK) oc_map_reduce_finish(m, res, out);
    if (res != out) free(res);
    return st;
}
