/*
 * test_resume_topk_parts.c - a resumable top-k job whose lists are kept apart from the job's
 * (a device's, on one or several devices: gram_resume.h, oc_resume_topk_lists), interrupted
 * at every checkpoint in turn and resumed, on another number of parts each time:
 *
 *  - what a resumed run restores is exactly the lists of the tiles on record, and those are
 *    tiles that were finished (the snapshot holds the merged lists of a set of tiles and the
 *    set);
 *  - the parts' final lists merged into the restored ones (oc_select_topk_merge, which keeps a
 *    key in both once) give the bytes of an uninterrupted job, whatever the interruption;
 *  - a damaged snapshot is not loaded: the job starts over and still ends with those bytes.
 *
 * The parts report one after the other (so that a stop lands after a chosen checkpoint), or
 * each on a thread of its own, as devices do, at checkpoints the interval decides.
 * The keys are made up (scores of few values, so ties are common and the column decides);
 * nothing here needs a device: the parts keep their lists on the host.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gram/gram_job.h"
#include "gram/gram_resume.h"
#include "gram/select/select.h"
#include "gram/select/select_key.h"
#include "harness.h"

enum { N = 150, TILE = 16, K = 5, MAX_PARTS = 3 };
#define TILES ((N + TILE - 1) / TILE)
#define NTILES (TILES * TILES)

static oc_context *ctx;

/* The candidate of (i, j): its score takes 6 values, so the column breaks most ties. */
static uint64_t key_of(int64_t i, int64_t j)
{
    uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(j * 40503u);
    h ^= h >> 13;
    return oc_key_make(oc_key_i32((int32_t)(h % 6)), j);
}

/* Offers key to a list of kept keys (best first, 0 past its end). */
static void offer(uint64_t *list, uint64_t key)
{
    if (key <= list[K - 1]) return;
    int at = K - 1;
    while (at > 0 && list[at - 1] < key) {
        list[at] = list[at - 1];
        at--;
    }
    list[at] = key;
}

/* Tile t's candidates into lists (n x K). */
static void add_tile(uint64_t *lists, int64_t t)
{
    const int64_t I = t / TILES, J = t % TILES;
    for (int64_t i = I * TILE; i < N && i < (I + 1) * TILE; ++i)
        for (int64_t j = J * TILE; j < N && j < (J + 1) * TILE; ++j) offer(lists + i * K, key_of(i, j));
}

typedef struct part {
    uint64_t lists[N * K];
    int64_t reported[NTILES * 2]; /* tiles (I, J) since the last report */
    int64_t count;
} part;

static oc_status fetch(void *user, int64_t row0, int64_t rows, uint64_t *dest)
{
    const part *p = user;
    memcpy(dest, p->lists + row0 * K, (size_t)(rows * K) * 8);
    return OC_OK;
}

typedef struct fixture {
    oc_matrix *a;
    oc_gram_options opts;
    oc_output out;
    oc_gram_stats stats;
    uint64_t whole[N * K]; /* every tile's lists: an uninterrupted job's */
} fixture;

static void job_for(fixture *f, oc_gram_job *job, oc_select *s)
{
    *job = (oc_gram_job){.ctx = ctx,
                         .a = f->a,
                         .b = f->a,
                         .n = N,
                         .p = N,
                         .m = 64,
                         .metric = OC_METRIC_COUNTS,
                         .dtype = OC_DTYPE_INT32,
                         .opts = &f->opts,
                         .select = s,
                         .stats = &f->stats};
}

static oc_select *new_select(void)
{
    oc_select_config cfg = {
        .mode = OC_SELECT_TOPK, .n = N, .p = N, .metric = OC_METRIC_COUNTS, .dtype = OC_DTYPE_INT32, .k = K};
    oc_select *s = NULL;
    CHECK(oc_select_create(ctx, &cfg, &s) == OC_OK);
    return s;
}

/* A part on a thread of its own: tiles k = d, d + parts, ... of the order. */
typedef struct part_run {
    oc_resume *r;
    oc_gram_job *job;
    part *p;
    int d, parts;
    const int64_t *order;
    int64_t todo;
    unsigned seed;
    oc_status st;
} part_run;

static void *part_thread(void *arg)
{
    part_run *pr = arg;
    part *p = pr->p;
    for (int64_t k = pr->d; k < pr->todo && pr->st == OC_OK; k += pr->parts) {
        add_tile(p->lists, pr->order[k]);
        p->reported[2 * p->count] = pr->order[k] / TILES, p->reported[2 * p->count + 1] = pr->order[k] % TILES;
        p->count++;
        if (p->count < 1 + (int64_t)(rand_r(&pr->seed) % 4) && k + pr->parts < pr->todo) continue;
        pr->st = oc_resume_topk_lists(ctx, pr->r, pr->job, pr->d, p->reported, p->count, 0, fetch, p);
        p->count = 0;
    }
    return NULL;
}

/* One run on `parts` parts that stops (a kill) after checkpoint `stop` (0: runs to the end;
 * threaded: every part on its own thread, to the end). Returns 1 when the job finished with
 * the lists of an uninterrupted one. */
static int run(fixture *f, int parts, int stop, int threaded, unsigned seed)
{
    oc_select *s = new_select();
    if (!s) return 0;
    oc_gram_job job;
    job_for(f, &job, s);
    oc_resume *r = NULL;
    int finished = 0;
    if (oc_resume_start(ctx, &job, &f->out, &r) != OC_OK || !r || oc_resume_begin(ctx, r, &job, TILE) != OC_OK) {
        CHECK_MSG(0, "resume start: %s", oc_context_last_error(ctx));
        goto done;
    }
    job.resume = r;
    /* What was restored: exactly the lists of the tiles on record. */
    static uint64_t expect[N * K];
    memset(expect, 0, sizeof expect);
    int64_t order[NTILES], todo = 0;
    for (int64_t t = 0; t < NTILES; ++t) {
        if (oc_resume_skip(r, t / TILES, t % TILES)) add_tile(expect, t);
        else order[todo++] = t;
    }
    CHECK_MSG(memcmp(expect, oc_select_topk_keys(s), sizeof expect) == 0,
              "the restored lists are not those of the %lld tiles on record", (long long)(NTILES - todo));
    /* The rest in a shuffled order, dealt round the parts, reported in groups of 1 to 4. */
    srand(seed);
    for (int64_t t = todo - 1; t > 0; --t) {
        int64_t u = rand() % (t + 1), x = order[t];
        order[t] = order[u], order[u] = x;
    }
    static part ps[MAX_PARTS];
    memset(ps, 0, sizeof ps);
    int checkpoints = 0;
    if (threaded) {
        pthread_t threads[MAX_PARTS];
        part_run runs[MAX_PARTS];
        for (int d = 0; d < parts; ++d) {
            runs[d] = (part_run){r, &job, &ps[d], d, parts, order, todo, seed + (unsigned)d, OC_OK};
            CHECK(pthread_create(&threads[d], NULL, part_thread, &runs[d]) == 0);
        }
        for (int d = 0; d < parts; ++d) {
            pthread_join(threads[d], NULL);
            CHECK(runs[d].st == OC_OK);
        }
        todo = 0;
    }
    for (int64_t k = 0; k < todo; ++k) {
        part *p = &ps[k % parts];
        add_tile(p->lists, order[k]);
        p->reported[2 * p->count] = order[k] / TILES, p->reported[2 * p->count + 1] = order[k] % TILES;
        p->count++;
        if (p->count < 1 + rand() % 4 && k + parts < todo) continue;
        CHECK(oc_resume_topk_lists(ctx, r, &job, (int)(k % parts), p->reported, p->count, 1, fetch, p) == OC_OK);
        p->count = 0;
        if (++checkpoints == stop) {
            oc_resume_close(r); /* killed: the journal and snapshot stay */
            r = NULL;
            goto done;
        }
    }
    /* The end: every part's lists merged into the job's, which hold the restored ones and the
     * checkpoints' merges (tiles in both: kept once). */
    const uint64_t *lists[MAX_PARTS];
    for (int d = 0; d < parts; ++d) lists[d] = ps[d].lists;
    CHECK(oc_select_topk_merge(ctx, s, lists, parts, 2) == OC_OK);
    finished = memcmp(oc_select_topk_keys(s), f->whole, sizeof f->whole) == 0;
    CHECK_MSG(finished, "the resumed job's lists differ from an uninterrupted one's (%d parts)", parts);
    oc_resume_finish(r);
    r = NULL;
done:
    oc_resume_close(r);
    oc_select_free(s);
    return finished;
}

int main(void)
{
    CHECK(oc_context_create(&ctx) == OC_OK);
    if (!oc_test_tmp_create("resume_topk")) return 1;
    setenv("OUTCORE_RESUME_INTERVAL", "0", 1); /* the threaded parts' checkpoints */
    static fixture f;
    static unsigned char bits[N * 64];
    for (int i = 0; i < N * 64; ++i) bits[i] = (unsigned char)((i * 7 + i / 64) % 5 == 0);
    CHECK(oc_matrix_from_dense(ctx, bits, N, 64, 64, &f.a) == OC_OK);
    f.opts = (oc_gram_options)OC_GRAM_OPTIONS_INIT;
    f.opts.topk = K;
    f.opts.metric = OC_METRIC_COUNTS;
    f.opts.resume = 1;
    f.out = (oc_output)OC_OUTPUT_INIT;
    f.out.kind = OC_OUTPUT_FILE;
    f.out.path = oc_test_tmp_path("nn.npz");
    for (int64_t t = 0; t < NTILES; ++t) add_tile(f.whole, t);

    /* Killed after checkpoint 1, 2, ... of a run on 2 parts, each followed by runs on 1, 3 and
     * 2 parts killed after a few checkpoints, then one to the end. */
    for (int stop = 1; stop <= 12; stop += 1 + stop / 3) {
        CHECK(!run(&f, 2, stop, 0, 1u + (unsigned)stop));
        CHECK(!run(&f, 1, 2, 0, 100u + (unsigned)stop));
        CHECK(!run(&f, 3, 3, 0, 200u + (unsigned)stop));
        CHECK(run(&f, 2, 0, stop % 2, 300u + (unsigned)stop));
    }
    /* Parts on threads from the start, a checkpoint at each report (interval 0). */
    CHECK(run(&f, 3, 0, 1, 5u));
    /* A damaged snapshot is not loaded: the job starts over, with the same result. */
    CHECK(!run(&f, 2, 4, 0, 7u));
    char snap[300];
    snprintf(snap, sizeof snap, "%s.outcore-journal.topk", f.out.path);
    FILE *fp = fopen(snap, "r+b");
    CHECK(fp != NULL);
    if (fp) {
        fseek(fp, 80, SEEK_SET);
        int c = fgetc(fp);
        fseek(fp, 80, SEEK_SET);
        fputc(c ^ 0x10, fp);
        fclose(fp);
    }
    CHECK(run(&f, 3, 0, 1, 8u));
    oc_matrix_free(f.a);
    oc_test_tmp_remove();
    oc_context_free(ctx);
    return oc_test_finish();
}
