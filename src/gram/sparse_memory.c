/*
 * sparse_memory.c - the sparse algorithm's memory before it runs (see sparse_memory.h). Each
 * term names the array it stands for in gram/cpu/sparse/sparse_index.h or sparse_job.h.
 */
#include "gram/sparse_memory.h"

#define HUGE_PAGE ((double)(2 << 20))

static int hub_words(const oc_sparse_sizes *s) { return (int)((s->hubs + 63) / 64); }

static int64_t rows_b(const oc_sparse_sizes *s) { return s->rows_b > 0 ? s->rows_b : s->rows_a; }

/* One side: ptr, pop, hub words, and the non-hub columns. */
static double side_bytes(int64_t rows, double ones, double hub_ones, int words)
{
    return 8.0 * (double)(rows + 1) + 8.0 * (double)rows + 8.0 * words * (double)rows + 4.0 * (ones - hub_ones);
}

double oc_sparse_index_bytes(const oc_sparse_sizes *s)
{
    const int words = hub_words(s);
    const double p = (double)rows_b(s), cols = (double)s->cols, hubs = (double)s->hubs;
    const double nonhub_b = s->ones_b - s->hub_ones_b;
    double bytes = side_bytes(s->rows_a, s->ones_a, s->hub_ones_a, words);
    if (s->rows_b > 0) bytes += side_bytes(s->rows_b, s->ones_b, s->hub_ones_b, words);
    /* B's lists: post_ptr, post_rows, hub_rows and empty_b, the popcount groups (at most one
     * a row), hub_ptr, and hub_list with hub_nb and hub_hp. */
    const double groups = p < cols + 1 ? p : cols + 1;
    bytes +=
        8.0 * (cols + 1) + 4.0 * nonhub_b + 8.0 * p + 16.0 * (groups + 1) + 8.0 * (hubs + 1) + 12.0 * s->hub_ones_b;
    /* The hub word lists (one hub word): post_hub and post_pop, the single lists, the pair
     * lists' offsets and entries (built only up to PAIR_ENTRIES_PER_ONE per one of B). */
    if (words == 1)
        bytes += 12.0 * nonhub_b + 8.0 * (hubs + 1) + OC_SPARSE_HUB_ENTRY_BYTES * s->hub_ones_b +
                 8.0 * (hubs * hubs + 1) + OC_SPARSE_HUB_ENTRY_BYTES * (2.0 * s->ones_b + 4096);
    return bytes;
}

double oc_sparse_build_bytes(const oc_sparse_sizes *s, int threads)
{
    const double p = (double)rows_b(s), cols = (double)s->cols, hubs = (double)s->hubs;
    /* The sides: the hub map and each thread's row of columns. */
    const double sides = 4.0 * cols + (double)threads * 4.0 * (cols + 1);
    /* B's lists: the fill offsets, the sort keys of the hub rows, their order, the next
     * entry of each list (of each hub pair for the pair lists). */
    const double lists = 8.0 * cols + 8.0 * p + 12.0 * p + 8.0 * (hubs * hubs + 1);
    return sides > lists ? sides : lists;
}

double oc_sparse_worker_bytes(const oc_sparse_sizes *s)
{
    const double p = (double)rows_b(s);
    /* acc in whole 2 MiB pages past one, touched, sortbuf and sortspare, the block's pair
     * counts and the top-k heap. */
    double acc = 4.0 * p;
    if (acc >= HUGE_PAGE) acc = ((int64_t)(acc / HUGE_PAGE) + 1) * HUGE_PAGE;
    double bytes = acc + 4.0 * p + 16.0 * p + 4.0 * (double)s->block_rows + 8.0 * (double)s->kept;
    if (hub_words(s) == 1) bytes += 12.0 * p; /* touched_hub, touched_pop */
    if (s->full_rows) bytes += 8.0 * p;       /* full, out */
    return bytes;
}

double oc_sparse_peak_bytes(const oc_sparse_sizes *s, int threads)
{
    const double build = oc_sparse_build_bytes(s, threads), work = (double)threads * oc_sparse_worker_bytes(s);
    return oc_sparse_index_bytes(s) + (build > work ? build : work);
}
