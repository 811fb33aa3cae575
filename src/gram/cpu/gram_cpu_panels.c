/*
 * gram_cpu_panels.c - how the CPU backend splits a job with file-backed inputs into row
 * panels under the host budget, and the order of its tiles (gram_cpu_panels.h).
 */
#include "gram/cpu/gram_cpu_panels.h"

#include "core/error.h"
#include "gram/gram_resume.h"
#include "gram/select/select.h"

/* a + b for sizes, held at INT64_MAX where it would pass it. */
static int64_t add_sat(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

/* What the least budget of a refusal counts beside the panels, for its message. */
static const char *resident_note(int64_t inputs, int64_t lists, int64_t tiles)
{
    static const char *const notes[8] = {
        "",
        ", after the large tiles' buffers",
        ", after the top-k lists",
        ", after the top-k lists and the large tiles' buffers",
        ", after the inputs held in memory",
        ", after the inputs held in memory and the large tiles' buffers",
        ", after the inputs held in memory and the top-k lists",
        ", after the inputs held in memory, the top-k lists and the large tiles' buffers",
    };
    return notes[(inputs > 0) * 4 + (lists > 0) * 2 + (tiles > 0)];
}

int oc_cpu_tile_converts(const oc_gram_job *job)
{
    return !(job->metric == OC_METRIC_COUNTS && job->dtype == OC_DTYPE_INT32);
}

int64_t oc_cpu_tile_buffers_counted(const oc_gram_job *job, int64_t t, int threads)
{
    int64_t one;
    if (__builtin_mul_overflow(t, t, &one) || __builtin_mul_overflow(one, (int64_t)4 * 2, &one)) return INT64_MAX;
    one = (one / 2 + 63) / 64 * 64 * (1 + oc_cpu_tile_converts(job));
    if (one <= OC_CPU_TILE_BUFFERS_FIXED) return 0;
    int64_t all;
    return __builtin_mul_overflow(one - OC_CPU_TILE_BUFFERS_FIXED, (int64_t)threads, &all) ? INT64_MAX : all;
}

oc_status oc_cpu_plan_panels(oc_context *ctx, const oc_gram_job *job, int64_t t, int threads, oc_cpu_panel_plan *pp)
{
    const int64_t row_bytes = job->a->words_per_row * 8;
    /* Lists inputs are packed by oc_gram before the backend runs (matrix.h): resident here. */
    pp->a_file = oc_matrix_file_backed(job->a);
    pp->b_file = !job->symmetric && oc_matrix_file_backed(job->b);
    /* The inputs held in memory, the top-k lists and a large tile's buffers are there for the
     * whole job. */
    const int64_t lists = job->select ? oc_select_lists_bytes(job->select) : 0;
    const int64_t tiles = oc_cpu_tile_buffers_counted(job, t, threads);
    const int64_t inputs =
        (pp->a_file ? 0 : job->a->rows * row_bytes) + (job->symmetric || pp->b_file ? 0 : job->b->rows * row_bytes);
    const int64_t resident = add_sat(add_sat(inputs, lists), tiles);
    int64_t panels = job->symmetric ? 2 * pp->a_file : pp->a_file + pp->b_file;
    int64_t rows = job->n > job->p ? job->n : job->p;
    /* Inputs in memory are the caller's, there whatever the plan: a job without panels answers
     * only for what it allocates itself. With panels, the least budget holds the smallest. */
    int64_t smallest = 0;
    if (panels > 0 && (__builtin_mul_overflow(2 * panels * row_bytes, t, &smallest))) smallest = INT64_MAX;
    const int64_t least = add_sat(panels > 0 ? resident : add_sat(lists, tiles), smallest);
    if (tiles > 0 && least > job->host_budget)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "host memory budget %lld bytes is too small for tiles of %lld x %lld: it needs at least %lld "
                       "bytes (%d worker%s tile buffers, %lld bytes%s%s); raise --host-mem, %s",
                       (long long)job->host_budget, (long long)t, (long long)t, (long long)least, threads,
                       threads == 1 ? "'s" : "s'", (long long)tiles, panels > 0 ? ", beside the smallest panels" : "",
                       resident_note(panels > 0 ? inputs : 0, lists, 0),
                       /* A resumed job keeps its journal's tiles whatever --tile says. */
                       oc_resume_tile_edge(job->resume) > 0 ? "or give fewer --threads (the tiles are the resume "
                                                              "journal's: a resumed job keeps them)"
                                                            : "or give a smaller --tile");
    if (panels > 0) {
        int64_t left = job->host_budget - resident;
        rows = left > 0 ? left / 2 / panels / row_bytes / t * t : 0;
        /* A budget too small for the job is the caller's choice to change (exit 2), and the
         * message gives the least that runs it. */
        if (rows < t)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "host memory budget %lld bytes is too small for this job: it needs at least %lld bytes "
                           "(the smallest panels, %lld of one %lld-row tile of %s, %lld bytes, twice over%s); raise "
                           "--host-mem",
                           (long long)job->host_budget, (long long)(resident + 2 * panels * t * row_bytes),
                           (long long)panels, (long long)t, pp->a_file ? job->a->name : job->b->name,
                           (long long)(panels * t * row_bytes), resident_note(inputs, lists, tiles));
    }
    pp->a_rows = pp->a_file ? (rows < job->n ? rows : job->n) : job->n;
    pp->b_rows = job->symmetric ? pp->a_rows : pp->b_file ? (rows < job->p ? rows : job->p) : job->p;
    pp->a_count = (job->n + pp->a_rows - 1) / pp->a_rows;
    pp->b_count = (job->p + pp->b_rows - 1) / pp->b_rows;
    pp->a_bytes = pp->a_file ? pp->a_rows * row_bytes : 0;
    /* A·Aᵀ with more than one panel holds the column panel beside the row panel. */
    pp->b_bytes = pp->b_file || (job->symmetric && pp->a_count > 1) ? pp->b_rows * row_bytes : 0;
    pp->tile_bytes = tiles;
    return OC_OK;
}

void oc_cpu_order_tasks(const oc_gram_job *job, const oc_cpu_panel_plan *pp, int64_t t, int32_t *task_tiles,
                        int64_t *weights, int64_t *pair_first)
{
    const int64_t tiles_i = (job->n + t - 1) / t, tiles_j = (job->p + t - 1) / t;
    const int64_t ta = pp->a_rows / t + (pp->a_rows % t != 0), tb = pp->b_rows / t + (pp->b_rows % t != 0);
    int64_t task = 0, pair = 0;
    for (int64_t pi = 0; pi < pp->a_count; ++pi)
        for (int64_t pj = job->symmetric ? pi : 0; pj < pp->b_count; ++pj) {
            pair_first[pair++] = task;
            int64_t ti_end = (pi + 1) * ta < tiles_i ? (pi + 1) * ta : tiles_i;
            int64_t tj_end = (pj + 1) * tb < tiles_j ? (pj + 1) * tb : tiles_j;
            for (int64_t ti = pi * ta; ti < ti_end; ++ti)
                for (int64_t tj = job->symmetric && ti > pj * tb ? ti : pj * tb; tj < tj_end; ++tj, ++task) {
                    int64_t rows = job->n - ti * t < t ? job->n - ti * t : t;
                    int64_t cols = job->p - tj * t < t ? job->p - tj * t : t;
                    task_tiles[2 * task] = (int32_t)ti;
                    task_tiles[2 * task + 1] = (int32_t)tj;
                    weights[task] = (job->symmetric && ti == tj) ? rows * (cols + 1) / 2 : rows * cols;
                }
        }
    pair_first[pair] = task;
}
