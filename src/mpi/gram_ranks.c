/*
 * gram_ranks.c - oc_gram_ranks: one Gram job over the ranks of MPI_COMM_WORLD.
 *
 *   every rank: checks -> its part (dense_ranks.c or select_ranks.c: set-up, compute,
 *               delivery and commit, each ending in oc_mpi_agree) -> figures to rank 0
 *
 * The sub-jobs, the fault injection, the cancel and the per-rank summary live here. A cancel
 * (oc_context_cancel: the CLI's SIGINT/SIGTERM handler, which mpirun's SIGTERM to every rank
 * reaches) holds for the whole rank job: the sub-jobs' oc_gram calls do not clear it
 * (ctx->keep_cancel), no sub-job starts after it, and the phase before the output is
 * committed ends with it as the rank's status (oc_rank_cancelled), so the ranks agree on
 * OC_ERR_CANCELLED and rank 0 removes its temporary file.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/context.h"
#include "core/error.h"
#include "gram/gram_compat.h"
#include "gram/gram_resume.h"
#include "matrix/matrix.h"
#include "core/text_buf.h"
#include "core/threads.h"
#include "mem/host_budget.h"
#include "mpi/comm.h"
#include "mpi/rank_job.h"

static void add_stats(oc_gram_stats *sum, const oc_gram_stats *s)
{
    sum->backend = s->backend;
    memcpy(sum->backend_desc, s->backend_desc, sizeof sum->backend_desc);
    memcpy(sum->select_desc, s->select_desc, sizeof sum->select_desc);
    memcpy(sum->algorithm_desc, s->algorithm_desc, sizeof sum->algorithm_desc);
    sum->algorithm = s->algorithm;
    sum->bit_macs_computed += s->bit_macs_computed;
    sum->tiles += s->tiles;
    sum->bytes_h2d += s->bytes_h2d;
    sum->bytes_d2h += s->bytes_d2h;
    sum->dev_allocations += s->dev_allocations;
    if (s->dev_budget_bytes > sum->dev_budget_bytes) sum->dev_budget_bytes = s->dev_budget_bytes;
    if (s->dev_peak_bytes > sum->dev_peak_bytes) sum->dev_peak_bytes = s->dev_peak_bytes;
    sum->host_budget_bytes = s->host_budget_bytes;
    if (s->threads > sum->threads) sum->threads = s->threads;
    memcpy(sum->backend_explain, s->backend_explain, sizeof sum->backend_explain);
    /* The sub-jobs run one after the other: their phases, and their predictions, add up (the
     * ranks run their shares at once, so rank 0's sum predicts the job). */
    sum->predicted_seconds += s->predicted_seconds;
    sum->phases.cuda_start += s->phases.cuda_start;
    sum->phases.prepare += s->phases.prepare;
    sum->phases.setup += s->phases.setup;
    sum->phases.compute += s->phases.compute;
    sum->phases.output += s->phases.output;
    sum->phases.teardown += s->phases.teardown;
    /* This rank's logical devices (--devices is per rank): the same list in every sub-job. */
    sum->device_count = s->device_count;
    for (int d = 0; d < s->device_count && d < OC_MAX_LOGICAL_DEVICES; ++d) {
        oc_device_stats *to = &sum->devices[d];
        const oc_device_stats *from = &s->devices[d];
        memcpy(to->name, from->name, sizeof to->name);
        to->tiles += from->tiles;
        to->bytes_h2d += from->bytes_h2d;
        to->bytes_d2h += from->bytes_d2h;
        to->busy_seconds += from->busy_seconds;
        to->budget_bytes = from->budget_bytes;
        if (from->peak_bytes > to->peak_bytes) to->peak_bytes = from->peak_bytes;
    }
}

oc_status oc_rank_cancelled(oc_rank_job *j, oc_status st)
{
    if (st != OC_OK || !oc_cancelled(j->ctx)) return st;
    return oc_fail(j->ctx, OC_ERR_CANCELLED, "cancelled");
}

oc_status oc_rank_subjob(oc_rank_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1, const oc_gram_options *o,
                         const oc_output *out)
{
    oc_context *ctx = j->ctx;
    oc_matrix *va = NULL, *vb = NULL;
    oc_status st = oc_rank_cancelled(j, OC_OK);
    if (st != OC_OK) return st;
    OC_CHECK_GOTO(ctx, st, oc_matrix_row_view(ctx, j->a, r0, r1 - r0, &va), cleanup);
    /* The whole of B is passed as it is; a view of A for the columns makes the sub-job an
     * A·Bᵀ one even for A·Aᵀ (b != a), which is what a block off the diagonal is. */
    const oc_matrix *b = j->b;
    if (c0 != 0 || c1 != j->p || j->symmetric) {
        OC_CHECK_GOTO(ctx, st, oc_matrix_row_view(ctx, j->b, c0, c1 - c0, &vb), cleanup);
        b = vb;
    }
    oc_gram_stats s = {.struct_size = sizeof s};
    OC_CHECK_GOTO(ctx, st, oc_gram(ctx, va, b, o, out, &s), cleanup);
    add_stats(&j->stats, &s);
cleanup:
    oc_matrix_free(va);
    oc_matrix_free(vb);
    return st;
}

/* OUTCORE_MPI_FAIL_RANK=r fails rank r; r:kill kills it (SIGKILL), as a node lost would. */
static int fault_mode(int rank)
{
    const char *v = getenv("OUTCORE_MPI_FAIL_RANK");
    if (!v || !*v) return 0;
    char *end = NULL;
    long r = strtol(v, &end, 10);
    if (end == v || r != rank) return 0;
    return strcmp(end, ":kill") == 0 ? 2 : *end == '\0' ? 1 : 0;
}

oc_status oc_rank_fault(oc_rank_job *j, oc_status st)
{
    st = oc_rank_cancelled(j, st);
    if (st != OC_OK || !j->fail_mode) return st;
    if (j->fail_mode == 2) raise(SIGKILL);
    return oc_fail(j->ctx, OC_ERR_IO, "failure injected on this rank (OUTCORE_MPI_FAIL_RANK=%d)", j->rank);
}

/* What each rank tells rank 0 for the summary. */
typedef struct rank_figures {
    char host[64];
    char backend_desc[96];
    int backend;
    int64_t row0, row1, tiles, bytes_written, bytes_h2d, bytes_d2h, host_peak;
    double seconds, bit_macs;
} rank_figures;

static oc_status summarise(oc_rank_job *j, oc_gram_stats *st_out, char **ranks_json)
{
    oc_context *ctx = j->ctx;
    rank_figures mine = {.backend = (int)j->stats.backend,
                         .row0 = j->row0,
                         .row1 = j->row1,
                         .tiles = j->stats.tiles,
                         .bytes_written = j->bytes_written,
                         .bytes_h2d = j->stats.bytes_h2d,
                         .bytes_d2h = j->stats.bytes_d2h,
                         .host_peak = oc_host_mem_peak(),
                         .seconds = j->seconds,
                         .bit_macs = j->stats.bit_macs_computed};
    gethostname(mine.host, sizeof mine.host - 1);
    memcpy(mine.backend_desc, j->stats.backend_desc, sizeof mine.backend_desc);
    rank_figures *all = NULL;
    if (j->rank == 0 && !(all = calloc((size_t)j->size, sizeof *all)))
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the figures of %d ranks", j->size);
    /* Homogeneous ranks (the same build of outcore everywhere), so the struct goes as bytes. */
    MPI_Gather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, 0, MPI_COMM_WORLD);

    /* The job's totals on every rank. */
    double sums[5] = {j->stats.bit_macs_computed, (double)j->stats.tiles, (double)j->stats.bytes_h2d,
                      (double)j->stats.bytes_d2h, (double)j->stats.dev_allocations};
    MPI_Allreduce(MPI_IN_PLACE, sums, 5, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int64_t peaks[3] = {j->stats.dev_peak_bytes, j->stats.dev_budget_bytes, oc_host_mem_peak()};
    MPI_Allreduce(MPI_IN_PLACE, peaks, 3, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    j->stats.bit_macs_computed = sums[0];
    j->stats.tiles = (int64_t)sums[1];
    j->stats.bytes_h2d = (int64_t)sums[2];
    j->stats.bytes_d2h = (int64_t)sums[3];
    j->stats.dev_allocations = (int64_t)sums[4];
    j->stats.dev_peak_bytes = peaks[0];
    j->stats.dev_budget_bytes = peaks[1];
    j->stats.host_peak_bytes = peaks[2];
    *st_out = j->stats;

    if (j->rank != 0 || !ranks_json) {
        free(all);
        return OC_OK;
    }
    oc_text text = {0};
    oc_text_printf(&text, "[");
    for (int r = 0; r < j->size; ++r) {
        const rank_figures *f = &all[r];
        oc_text_printf(&text, "%s{\"rank\": %d, \"host\": ", r ? ", " : "", r);
        oc_text_json_string(&text, f->host);
        oc_text_printf(&text, ", \"rows\": [%lld, %lld], \"backend\": \"%s\", \"backend_desc\": ", (long long)f->row0,
                       (long long)f->row1, oc_backend_name((oc_backend)f->backend));
        oc_text_json_string(&text, f->backend_desc);
        oc_text_printf(&text,
                       ", \"tiles\": %lld, \"seconds\": %.6f, \"bit_macs_computed\": %.0f, "
                       "\"bytes_written\": %lld, \"bytes_h2d\": %lld, \"bytes_d2h\": %lld, \"host_peak_bytes\": %lld}",
                       (long long)f->tiles, f->seconds, f->bit_macs, (long long)f->bytes_written,
                       (long long)f->bytes_h2d, (long long)f->bytes_d2h, (long long)f->host_peak);
    }
    oc_text_printf(&text, "]");
    free(all);
    return oc_text_finish(ctx, &text, ranks_json);
}

/* Defaults shared by the ranks of one node: the host budget's default (a share of the memory
 * available) and the CPU threads (all cores) divided by the ranks on the node, the default GPU
 * fraction (the default or one the caller gave, --gpu-mem 50%) by the ranks on the node that
 * name the same --device. Sizes the caller gave (host memory, threads, a --gpu-mem size) are
 * per rank, as given. Ranks are grouped by opts->device alone: ranks that pick their GPUs
 * through CUDA_VISIBLE_DEVICES or --devices all count as sharing one (docs/scale-out.md says
 * to give them a --gpu-mem size). */
void oc_mpi_node_share(oc_gram_options *o)
{
    if (!o || !oc_mpi_ready()) return;
    MPI_Comm node = MPI_COMM_NULL, device = MPI_COMM_NULL;
    int on_node = 1, on_device = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) != MPI_SUCCESS) return;
    MPI_Comm_size(node, &on_node);
    if (MPI_Comm_split(node, o->device, 0, &device) == MPI_SUCCESS) {
        MPI_Comm_size(device, &on_device);
        MPI_Comm_free(&device);
    }
    MPI_Comm_free(&node);
    if (o->host_mem_bytes == 0 && on_node > 1) o->host_mem_bytes = oc_host_budget_resolve(0) / on_node;
    if (o->threads == 0 && on_node > 1) o->threads = oc_cpu_cores() / on_node > 0 ? oc_cpu_cores() / on_node : 1;
    if (o->gpu_mem_bytes == 0 && on_device > 1) o->gpu_mem_fraction /= on_device;
}

/* The checks every rank makes alike before any output exists. */
static oc_status check_args(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const oc_gram_options *opts,
                            const oc_output *out, const oc_gram_stats *stats)
{
    if (!oc_mpi_ready())
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_gram_ranks: MPI is not initialised (oc_mpi_init)");
    if (!a || !opts || !out)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_gram_ranks: a, opts and out must not be NULL");
    /* Earlier versions of the options were made current (gram_compat.h); any other size is
     * no version's. */
    if (opts->struct_size != sizeof(oc_gram_options))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_gram_ranks: oc_gram_options.struct_size is %zu, expected %zu",
                       opts->struct_size, sizeof(oc_gram_options));
    if (stats && !oc_gram_stats_size_known(stats->struct_size))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_gram_ranks: oc_gram_stats.struct_size is %zu, expected %zu",
                       stats->struct_size, sizeof(oc_gram_stats));
    if (out->struct_size != sizeof(oc_output) || out->kind != OC_OUTPUT_FILE || !out->path)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_gram_ranks writes a file: give OC_OUTPUT_FILE and a path");
    if (b && b != a && oc_matrix_cols(a) != oc_matrix_cols(b)) {
        const char *a_name, *b_name;
        oc_matrix_pair_names(a, b, &a_name, &b_name);
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s has %lld columns but %s has %lld: A and B must have the same number of columns", b_name,
                       (long long)oc_matrix_cols(b), a_name, (long long)oc_matrix_cols(a));
    }
    /* As oc_gram refuses it: each rank's share has fewer rows, never fewer columns. */
    const oc_matrix *cols_of = b ? b : a;
    const char *first, *second;
    oc_matrix_pair_names(a, cols_of, &first, &second);
    OC_CHECK(ctx, oc_gram_check_topk(ctx, opts->topk, oc_matrix_rows(cols_of), b ? second : first));
    if (opts->resume)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "--resume (opts.resume) is not available under MPI ranks: run "
                       "the job in one process to resume it (docs/mpi.md)");
    /* The output's resume journal, left by an interrupted single-process --resume run, is
     * refused as oc_gram refuses it (the same check, without opts.resume it opens nothing). */
    const oc_gram_job job = {.ctx = ctx, .opts = opts};
    oc_resume *resume = NULL;
    OC_CHECK(ctx, oc_resume_start(ctx, &job, out, &resume));
    oc_dtype result;
    return oc_gram_check_dtype(ctx, opts->metric, opts->dtype, &result);
}

static oc_status gram_ranks(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const oc_gram_options *opts,
                            const oc_output *out, oc_gram_stats *stats, char **ranks_json)
{
    double t0 = oc_now();
    oc_gram_options current;
    const oc_gram_options *made_current = opts ? oc_gram_options_current(opts, &current) : NULL;
    if (made_current) opts = made_current;
    oc_status st = check_args(ctx, a, b, opts, out, stats);
    if (!oc_mpi_ready()) return st;
    st = oc_mpi_agree(ctx, st);
    if (st != OC_OK) return st;

    oc_rank_job j = {.ctx = ctx,
                     .a = a,
                     .b = (b && b != a) ? b : a,
                     .symmetric = !b || b == a,
                     .n = oc_matrix_rows(a),
                     .dtype = oc_gram_result_dtype(opts->metric, opts->dtype),
                     .opts = *opts,
                     .path = out->path,
                     .rank = oc_mpi_rank(),
                     .size = oc_mpi_size()};
    j.p = oc_matrix_rows(j.b);
    oc_mpi_node_share(&j.opts);
    j.opts.progress = NULL;
    j.opts.progress_user = NULL;
    j.stats.struct_size = sizeof j.stats;
    j.fail_mode = fault_mode(j.rank);
    int64_t pairs = 0;
    if (opts->topk > 0) st = oc_ranks_topk(&j);
    else if (opts->use_threshold) st = oc_ranks_pairs(&j, &pairs);
    else st = oc_ranks_dense(&j);
    if (st != OC_OK) return st; /* every rank, with the agreed status and message */

    oc_gram_stats total = {0};
    OC_CHECK(ctx, summarise(&j, &total, ranks_json));
    double seconds = oc_now() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    total.seconds = seconds;
    total.pairs = pairs;
    total.bit_macs_effective = (double)j.n * (double)j.p * (double)oc_matrix_cols(a);
    if (stats) /* only the fields of the caller's version (gram_compat.h) */
        memcpy((char *)stats + sizeof(size_t), (char *)&total + sizeof(size_t), stats->struct_size - sizeof(size_t));
    return OC_OK;
}

oc_status oc_gram_ranks(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const oc_gram_options *opts,
                        const oc_output *out, oc_gram_stats *stats, char **ranks_json)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    if (ranks_json) *ranks_json = NULL;
    oc_context_begin_job(ctx);
    /* From here a cancel holds until the job returns (the sub-jobs' begin_job keeps it). */
    ctx->keep_cancel = 1;
    oc_status st = gram_ranks(ctx, a, b, opts, out, stats, ranks_json);
    ctx->keep_cancel = 0;
    return st;
}
