/*
 * gram.c - oc_gram: argument checks, backend choice, destination set-up (gram_dest.h),
 * statistics.
 *
 * Order of work: validate everything that can be validated without computing (shapes,
 * options, the output path) so that bad input fails before any long computation; then
 * compute row popcounts once; then run the backend; then commit the output. Any failure
 * after the output was created removes its temporary file.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/process/bus_signal.h"
#include "core/process/after_job.h"
#include "core/error.h"
#include "core/context.h"
#include "core/dtype.h"
#include "core/gpu_probe.h"
#include "core/metric.h"
#include "core/text_buf.h"
#include "core/threads.h"
#include "core/trace.h"
#include "io/io.h"
#include "io/formats/output_format.h"
#include "io/formats/select_out.h"
#include "matrix/matrix.h"
#include "gram/backend.h"
#include "gram/cost_gram.h"
#include "gram/gram_choice.h"
#include "gram/gram_compat.h"
#include "gram/gram_dest.h"
#include "gram/gram_resume.h"
#include "gram/select/select.h"
#include "mem/host_budget.h"

static const oc_backend_vtbl *backend_for(const oc_gram_options *opts)
{
#ifdef OC_HAVE_CUDA
    if (opts->backend != OC_BACKEND_CPU && oc_backend_cuda.usable(opts->device)) return &oc_backend_cuda;
    if (opts->backend == OC_BACKEND_CUDA) return NULL;
#else
    if (opts->backend == OC_BACKEND_CUDA) return NULL;
#endif
    return &oc_backend_cpu;
}

oc_status oc_gram_check_topk(oc_context *ctx, int64_t topk, int64_t p, const char *b_name)
{
    if (topk <= p) return OC_OK;
    return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                   "top-%lld: the result has %lld column%s (the rows of %s), so K may be at most %lld", (long long)topk,
                   (long long)p, p == 1 ? "" : "s", b_name, (long long)p);
}

oc_status oc_gram_check_dtype(oc_context *ctx, oc_metric metric, oc_dtype dtype, oc_dtype *result)
{
    *result = oc_gram_result_dtype(metric, dtype);
    if (*result != OC_DTYPE_DEFAULT) return OC_OK;
    char allowed[256];
    oc_metric_dtypes_text(allowed, sizeof allowed);
    return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "dtype %s does not hold metric %s (%s)",
                   oc_dtype_name(dtype) ? oc_dtype_name(dtype) : "?", oc_metric_name(metric), allowed);
}

oc_status oc_gram_columns_differ(oc_context *ctx, const char *a, int64_t a_cols, const char *b, int64_t b_cols)
{
    /* One input's row bytes are the other's columns packed eight to a byte. */
    const int64_t wide = a_cols > b_cols ? a_cols : b_cols;
    const char *packed = a_cols > b_cols ? b : a, *other = a_cols > b_cols ? a : b;
    if (wide / 8 + (wide % 8 != 0) == (a_cols > b_cols ? b_cols : a_cols))
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s has %lld columns but %s has %lld: %s looks packed (numpy.packbits rows of %lld bits) and %s "
                       "not; give both as 0/1 columns, or both packed with --bits %lld",
                       b, (long long)b_cols, a, (long long)a_cols, packed, (long long)wide, other, (long long)wide);
    return oc_fail(ctx, OC_ERR_INPUT,
                   "%s has %lld columns but %s has %lld: A and B must have the same number of columns", b,
                   (long long)b_cols, a, (long long)a_cols);
}

oc_status oc_gram_inputs_unchanged(oc_context *ctx, const oc_matrix *a, const oc_matrix *b)
{
    OC_CHECK(ctx, oc_matrix_check_source(ctx, a));
    if (b && b != a) OC_CHECK(ctx, oc_matrix_check_source(ctx, b));
    return OC_OK;
}

/* The range of a threshold or minimum score (what names it) for the metric: [0, 1] for
 * jaccard and cosine, whole numbers in [0, m] for counts and hamming. */
static oc_status check_threshold_range(oc_context *ctx, const char *what, oc_metric metric, double t, int64_t m)
{
    char shown[40];
    switch (oc_metric_info_of(metric)->range) {
    case OC_METRIC_RANGE_UNIT:
        if (!(t >= 0.0 && t <= 1.0))
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s %s: a %s similarity lies in [0, 1]", what,
                           oc_shortest(t, 0, shown), oc_metric_name(metric));
        break;
    case OC_METRIC_RANGE_COLUMNS:
        if (!(t >= 0 && t <= (double)m) || t != floor(t))
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "%s %s: %s are whole numbers from 0 to %lld (the column count)", what,
                           oc_shortest(t, 0, shown), oc_metric_name(metric), (long long)m);
        break;
    }
    return OC_OK;
}

static oc_status check_options(oc_context *ctx, const oc_gram_options *o, const char *a_name, int64_t m,
                               oc_dtype *dtype)
{
    /* Earlier versions were made current (current_options); any other size is no version's. */
    if (o->struct_size != sizeof(oc_gram_options))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "oc_gram_options.struct_size is %zu, expected %zu: start from OC_GRAM_OPTIONS_INIT",
                       o->struct_size, sizeof(oc_gram_options));
    if (!oc_metric_info_of(o->metric))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "unknown metric %d", (int)o->metric);
    if (!oc_dtype_name(o->dtype))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "dtype %d is not an oc_dtype", (int)o->dtype);
    OC_CHECK(ctx, oc_gram_check_dtype(ctx, o->metric, o->dtype, dtype));
    if (*dtype == OC_DTYPE_UINT16 && m >= 65536)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "%s: dtype uint16 needs fewer than 65536 columns so every %s fits; the matrix has %lld", a_name,
                       oc_metric_name(o->metric), (long long)m);
    if (o->threads < 0 || o->threads > OC_MAX_THREADS)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "threads must be from 0 (all cores) to %d, got %d", OC_MAX_THREADS,
                       o->threads);
    char names[64];
    if ((unsigned)o->backend >= OC_BACKEND_COUNT)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "backend %d: expected %s", (int)o->backend,
                       oc_names_text(OC_NAMES_BACKENDS, names, sizeof names));
    if ((unsigned)o->gpu_mem_mode >= OC_GPU_MEM_MODE_COUNT)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "gpu_mem_mode %d: expected %s", (int)o->gpu_mem_mode,
                       oc_names_text(OC_NAMES_GPU_MEM_MODES, names, sizeof names));
    if (o->tile < 0) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "tile must be >= 0, got %lld", (long long)o->tile);
    /* The fraction is read only without a size (outcore.h), as matmul's and map's. */
    if (o->gpu_mem_bytes < 0 || (o->gpu_mem_bytes == 0 && !(o->gpu_mem_fraction > 0.0 && o->gpu_mem_fraction <= 1.0)))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "the GPU memory budget must be a positive size or a fraction in (0, 1]");
    if (o->host_mem_bytes < 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "the host memory budget must be a positive size, got %lld",
                       (long long)o->host_mem_bytes);
    if (o->topk < 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "topk must be positive, got %lld", (long long)o->topk);
    if (o->topk > 0 && o->use_threshold)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "top-k and threshold outputs are exclusive: choose one");
    if (o->use_threshold && isnan(o->threshold))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "the threshold is NaN: give a number");
    if (o->use_threshold) OC_CHECK(ctx, check_threshold_range(ctx, "--threshold", o->metric, o->threshold, m));
    if (o->use_min_score && o->topk <= 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "a minimum score applies to top-k lists: set topk too");
    if (o->use_min_score && isnan(o->min_score))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "the minimum score is NaN: give a number");
    if (o->use_min_score) OC_CHECK(ctx, check_threshold_range(ctx, "--min-score", o->metric, o->min_score, m));
    return OC_OK;
}

/* A resumable job runs the dense algorithm: its journal counts tiles (auto picks dense). */
static oc_status resume_options(oc_context *ctx, const oc_gram_options **opts, oc_gram_options *local)
{
    if (!(*opts)->resume || (*opts)->algorithm == OC_ALGORITHM_DENSE) return OC_OK;
    if ((*opts)->algorithm == OC_ALGORITHM_SPARSE)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "resume: a resumable job runs the dense algorithm; the sparse one "
                       "keeps no journal (use --algorithm dense or auto)");
    *local = **opts;
    local->algorithm = OC_ALGORITHM_DENSE;
    *opts = local;
    return OC_OK;
}

/* opts as the current version of the struct (a copy in *local for version 1, gram_compat.h),
 * or opts itself when it is NULL or of no known size, for job_prepare to refuse by name. */
static const oc_gram_options *current_options(const oc_gram_options *opts, oc_gram_options *local)
{
    const oc_gram_options *current = opts ? oc_gram_options_current(opts, local) : NULL;
    if (!current) return opts;
    /* A device list asks for the GPU: backend auto then means cuda (which also keeps the
     * algorithm choice on the GPU's dense kernels). */
    if (current->devices && *current->devices && current->backend == OC_BACKEND_AUTO) {
        if (current != local) *local = *current;
        local->backend = OC_BACKEND_CUDA;
        current = local;
    }
    return current;
}

/* The sparse path reads rows as lists, and a file-backed input is never given to it as it
 * is (matrix.h): a job that asks for the sparse algorithm gets lists copies of such inputs,
 * built through oc_matrix_load_rows, in lists[] (the caller frees them). Auto never picks
 * the sparse path for a file-backed input (gram_choice.c). */
static oc_status sparse_inputs(oc_context *ctx, oc_gram_job *job, oc_matrix **lists)
{
    if (job->opts->algorithm != OC_ALGORITHM_SPARSE) return OC_OK;
    if (oc_matrix_file_backed(job->a)) {
        OC_CHECK(ctx, oc_matrix_lists_from_rows(ctx, job->a, &lists[0]));
        job->a = lists[0];
    }
    if (job->symmetric) job->b = job->a;
    else if (oc_matrix_file_backed(job->b)) {
        OC_CHECK(ctx, oc_matrix_lists_from_rows(ctx, job->b, &lists[1]));
        job->b = lists[1];
    }
    return OC_OK;
}

/* Adds the time since *mark to *phase (oc_gram_stats.phases) and moves the mark to now. */
static void phase_end(double *mark, double *phase)
{
    const double now = oc_now();
    *phase += now - *mark;
    *mark = now;
}

/* Where a dense job runs (cost_gram.h): auto takes the faster prediction when a GPU is usable. */
static const oc_backend_vtbl *choose_backend(oc_context *ctx, const oc_gram_job *job, const oc_output *out,
                                             const oc_backend_vtbl *usable, oc_gram_backend_choice *choice)
{
    char why[400] = "";
#ifdef OC_HAVE_CUDA
    if (usable == &oc_backend_cpu && job->opts->backend == OC_BACKEND_AUTO)
        oc_gpu_probe_cuda.device_cc(job->opts->device, why, sizeof why);
#else
    snprintf(why, sizeof why, "this outcore was built without CUDA");
#endif
    oc_gram_choose_backend(ctx, job, out->kind, usable != &oc_backend_cpu, why, choice);
    return choice->use_gpu ? usable : &oc_backend_cpu;
}

/* The sizes a job keeps in 64 bits: the n·p result elements (tiles, tasks, resume bitmaps
 * and the n·K top-k lists count up to it), their bytes when the result is dense, and the
 * packed inputs side by side (the GPU's panels). The work, n·p·m bit multiply-adds, is
 * counted in double only (oc_gram_stats, the cost model), so it limits nothing: a sparse
 * top-k job of millions of rows over millions of columns is small though n·p·m is past 2^63. */
static oc_status check_sizes(oc_context *ctx, int64_t n, int64_t p, int64_t m, int symmetric,
                             const oc_gram_options *opts, const oc_output *out, oc_dtype dtype)
{
    int64_t np, a_bytes = oc_matrix_packed_bytes(n, m), b_bytes = symmetric ? 0 : oc_matrix_packed_bytes(p, m);
    if (!oc_mul_i64(n, p, &np))
        return oc_fail(ctx, OC_ERR_INPUT,
                       "the result of %lld x %lld rows overflows 64-bit sizes (more than 2^63 - 1 elements)",
                       (long long)n, (long long)p);
    const int dense = opts->topk <= 0 && !opts->use_threshold && out->kind != OC_OUTPUT_DISCARD;
    if (dense && !oc_mul_i64(np, (int64_t)oc_dtype_size(dtype), &(int64_t){0}))
        return oc_fail(ctx, OC_ERR_INPUT,
                       "the dense result of %lld x %lld rows overflows 64-bit sizes: ask for top-k or a threshold",
                       (long long)n, (long long)p);
    if (a_bytes >= INT64_MAX - b_bytes) /* oc_matrix_packed_bytes says INT64_MAX for one past them */
        return oc_fail(ctx, OC_ERR_INPUT,
                       "the packed inputs of %lld and %lld rows over %lld columns overflow 64-bit sizes", (long long)n,
                       (long long)(symmetric ? 0 : p), (long long)m);
    return OC_OK;
}

/* Everything that can be checked before any work: the structs, the shapes, the options, the
 * device and the backend. Fills the job's shape, metric and dtype. caller: the public function,
 * for messages. */
static oc_status job_prepare(oc_context *ctx, const char *caller, const oc_matrix *a, const oc_matrix *b,
                             const oc_gram_options *opts, const oc_output *out, oc_gram_job *job,
                             const oc_backend_vtbl **backend_out, oc_gram_backend_choice *choice, double *cuda_start)
{
    if (!a || !opts || !out)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: a, opts and out must not be NULL", caller);
    if (out->struct_size != sizeof(oc_output)) /* one version (docs/abi.md) */
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "oc_output.struct_size is %zu, expected %zu: start from OC_OUTPUT_INIT", out->struct_size,
                       sizeof(oc_output));

    int symmetric = (b == NULL || b == a);
    if (symmetric) b = a;
    const char *a_name, *b_name;
    oc_matrix_pair_names(a, b, &a_name, &b_name);
    if (a->cols != b->cols) return oc_gram_columns_differ(ctx, a_name, a->cols, b_name, b->cols);

    oc_dtype dtype = OC_DTYPE_DEFAULT;
    OC_CHECK(ctx, check_options(ctx, opts, a_name, a->cols, &dtype));
    const int64_t n = a->rows, p = b->rows, m = a->cols;
    OC_CHECK(ctx, check_sizes(ctx, n, p, m, symmetric, opts, out, dtype));
    OC_CHECK(ctx, oc_gram_check_topk(ctx, opts->topk, p, b_name));

    /* A device named by the caller must exist when a GPU may run the job. A CPU job asks
     * nothing of CUDA: counting devices would initialise the runtime for nothing. */
    const int several = opts->devices && *opts->devices;
    if (several && opts->backend == OC_BACKEND_CPU)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "devices \"%s\": the cpu backend runs on no device (drop --devices or "
                       "use --backend cuda)",
                       opts->devices);
    *job = (oc_gram_job){.ctx = ctx,
                         .a = a,
                         .b = b,
                         .symmetric = symmetric,
                         .n = n,
                         .p = p,
                         .m = m,
                         .metric = opts->metric,
                         .dtype = dtype,
                         .opts = opts,
                         .host_budget = oc_host_budget_resolve(opts->host_mem_bytes),
                         .out_path = out->kind == OC_OUTPUT_FILE ? out->path : NULL};
#ifdef OC_HAVE_CUDA
    /* An auto job on the default device that the CPU finishes before a GPU could start asks
     * CUDA nothing (cost_gram.h): loading and initialising the driver costs more than it. */
    if (opts->backend == OC_BACKEND_AUTO && !several && opts->device == 0) {
        if (oc_gram_cpu_before_gpu_start(ctx, job, out->kind, choice)) {
            *backend_out = &oc_backend_cpu;
            return OC_OK;
        }
    }
#endif
    double t = oc_now();
    int devices = opts->backend == OC_BACKEND_CPU ? 0 : oc_cuda_device_count();
    if (cuda_start && opts->backend != OC_BACKEND_CPU) *cuda_start = oc_now() - t;
    oc_trace_phase(&t, "gram", "devices"); /* the driver's start, on the first job */
    if (!several && devices > 0 && (opts->device < 0 || opts->device >= devices))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "CUDA device %d does not exist: this machine has %d (0 to %d)",
                       opts->device, devices, devices - 1);
    oc_device_list list = {0};
    if (opts->backend != OC_BACKEND_CPU) OC_CHECK(ctx, oc_device_list_parse(ctx, opts, devices, &list));
    /* Top-k jobs resume on several devices (their lists merge at each checkpoint:
     * gram_resume.h); dense and threshold checkpoints are one device's. */
    if (opts->resume && list.count > 1 && opts->topk <= 0)
        return oc_fail(ctx, OC_ERR_UNSUPPORTED,
                       "resume: a %s job on several devices (%d logical devices) cannot be "
                       "resumed; run it on one device (top-k jobs resume on several)",
                       opts->use_threshold ? "threshold" : "dense", list.count);
    /* The backend is chosen on the first logical device (a list asks for CUDA:
     * current_options). */
    oc_gram_options first = *opts;
    if (list.count > 0) first.device = list.dev[0].physical;
    const oc_backend_vtbl *backend = backend_for(&first);
    if (!backend) {
#ifdef OC_HAVE_CUDA
        char why[400] = "";
        oc_gpu_probe_cuda.device_cc(first.device, why, sizeof why);
        return oc_fail_no_gpu(ctx, "CUDA device %d is not usable: %s", first.device, why);
#else
        return oc_fail_no_gpu(ctx, "%s", OC_NO_CUDA_BUILD);
#endif
    }

    job->devices = list;
    oc_trace_phase(&t, "gram", "backend ok");
    *backend_out = choose_backend(ctx, job, out, backend, choice);
    oc_trace_phase(&t, "gram", "cost model");
    return OC_OK;
}

static oc_status gram_call(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const oc_gram_options *opts,
                           const oc_output *out, oc_gram_stats *stats)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    oc_context_begin_job(ctx);
    double t0 = oc_now();
    oc_gram_job job;
    const oc_backend_vtbl *backend = NULL;
    oc_gram_options current_opts, resume_opts;
    oc_gram_backend_choice where;
    opts = current_options(opts, &current_opts);
    oc_gram_phases phases = {0};
    OC_CHECK(ctx, job_prepare(ctx, "oc_gram", a, b, opts, out, &job, &backend, &where, &phases.cuda_start));
    double t = t0, mark = t0 + phases.cuda_start;
    oc_trace_phase(&t, "gram", "prepare");
    OC_CHECK(ctx, resume_options(ctx, &opts, &resume_opts));
    job.opts = opts;
    /* An auto job that the CPU runs though a warm GPU would be faster: its loss counts towards
     * paying the GPU's start-up (cost.h: gpu_regret). */
    if (opts->backend == OC_BACKEND_AUTO && backend == &oc_backend_cpu) oc_cost_note_cpu_job(where.pred.regret);
    if (stats && !oc_gram_stats_size_known(stats->struct_size))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_gram_stats.struct_size is %zu, expected %zu",
                       stats->struct_size, sizeof(oc_gram_stats));
    b = job.b;
    const int symmetric = job.symmetric;
    const int64_t n = job.n, p = job.p;
    const oc_dtype dtype = job.dtype;
    const oc_metric metric = opts->metric;

    if (out->kind == OC_OUTPUT_FILE) {
        /* The path itself before its extension: an empty one is no path (oc_output_check). */
        if (!out->path) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "output path is NULL");
        if (!*out->path) return oc_fail(ctx, OC_ERR_INPUT, "the output path is empty");
        OC_CHECK(ctx, oc_output_check_not_input(ctx, out->path, a, b));
    }
    oc_resume *resume = NULL;
    OC_CHECK(ctx, oc_resume_start(ctx, &job, out, &resume));
    job.resume = resume;

    /* The job fills its own stats; the caller's get them once it has succeeded (on failure an
     * out-parameter is left untouched: outcore.h). */
    oc_gram_stats local_stats = {.struct_size = sizeof local_stats};
    oc_gram_stats *st_out = &local_stats;
    memset((char *)st_out + sizeof(size_t), 0, sizeof *st_out - sizeof(size_t));
    st_out->phases = phases;
    oc_gram_phases *ph = &st_out->phases;
    phase_end(&mark, &ph->prepare);

    oc_status st = OC_OK;
    oc_npy_out *npy = NULL;
    int64_t *pops = NULL;
    oc_select *sel = NULL;
    oc_gram_dest dest = {0};
    oc_sparse_plan plan = {0};
    oc_matrix *lists[2] = {NULL, NULL}; /* lists copies of file-backed inputs for the sparse path */
    int held = 0;                       /* oc_after_job_hold was called */
    oc_dense_sink sink = {.elem_size = oc_dtype_size(dtype), .symmetric = symmetric};
    job.stats = st_out;
    st_out->host_budget_bytes = job.host_budget;

    if (opts->topk > 0 || opts->use_threshold) {
        OC_CHECK_GOTO(ctx, st, oc_gram_dest_select_setup(ctx, opts, out, &job, &dest, &sel), cleanup);
        job.select = sel;
        OC_CHECK_GOTO(ctx, st, oc_gram_dest_resume_setup(ctx, &dest, resume), cleanup);
    } else switch (out->kind) {
        case OC_OUTPUT_MEMORY:
            if (!out->data) {
                st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "output memory is NULL");
                goto cleanup;
            }
            if (out->ld != 0 && out->ld < p) {
                st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "output ld %lld is smaller than the %lld result columns",
                             (long long)out->ld, (long long)p);
                goto cleanup;
            }
            /* The result's rows must lie within the address space: a stray ld would send their
             * stores anywhere. */
            if (oc_memory_span(out->data, n, p, out->ld ? out->ld : p, oc_dtype_size(dtype)) < 0) {
                st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                             "output ld %lld: %lld rows of it would reach past the end of the address space",
                             (long long)out->ld, (long long)n);
                goto cleanup;
            }
            sink.base = out->data;
            sink.ld = out->ld ? out->ld : p;
            sink.populate = 1;
            job.dense = &sink;
            break;
        case OC_OUTPUT_FILE: { /* out->path checked before the journal started */
            OC_CHECK_GOTO(ctx, st, oc_output_format_check(ctx, out->path, OC_RESULT_DENSE, "dense"), cleanup);
            void *data;
            OC_CHECK_GOTO(ctx, st, oc_gram_dest_dense_open(ctx, &job, out, resume, &npy, &data), cleanup);
            sink.base = data;
            sink.ld = p;
            sink.populate = !oc_npy_out_prefaulted(npy);
            job.dense = &sink;
            break;
        }
        case OC_OUTPUT_DISCARD:
            job.dense = NULL;
            break;
        case OC_OUTPUT_TOPK:
        case OC_OUTPUT_PAIRS:
            st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "output kind %s needs opts.%s",
                         out->kind == OC_OUTPUT_TOPK ? "TOPK" : "PAIRS",
                         out->kind == OC_OUTPUT_TOPK ? "topk > 0" : "use_threshold");
            goto cleanup;
        default:
            st = oc_fail(ctx, OC_ERR_UNSUPPORTED, "output kind %d is not supported by this version", (int)out->kind);
            goto cleanup;
        }

    oc_trace_phase(&t, "gram", "outputs");
    phase_end(&mark, &ph->setup);
    /* Counts need no row popcounts, and a backend that counts them itself (the GPU, from
     * the panels it uploads) needs none from here: either way the pass over A (and B) before
     * the first tile is spared. */
    if (oc_metric_info_of(metric)->popcounts && !backend->own_popcounts) {
        pops = malloc((size_t)(n + (symmetric ? 0 : p)) * sizeof *pops);
        if (!pops) {
            st = oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate row popcounts for %lld rows", (long long)(n + p));
            goto cleanup;
        }
        OC_CHECK_GOTO(ctx, st, oc_matrix_row_popcounts(ctx, a, opts->threads, pops), cleanup);
        if (!symmetric) OC_CHECK_GOTO(ctx, st, oc_matrix_row_popcounts(ctx, b, opts->threads, pops + n), cleanup);
        job.pop_a = pops;
        job.pop_b = symmetric ? pops : pops + n;
    }

    st_out->bit_macs_effective = (double)n * (double)p * (double)job.m;
    OC_CHECK_GOTO(ctx, st, sparse_inputs(ctx, &job, lists), cleanup);
    OC_CHECK_GOTO(ctx, st,
                  oc_gram_choose_algorithm(ctx, &job, &where.rates,
                                           backend != &oc_backend_cpu ? where.pred.gpu_seconds : -1, &plan),
                  cleanup);
    snprintf(st_out->algorithm_desc, sizeof st_out->algorithm_desc, "%s", plan.explain);
    snprintf(st_out->backend_explain, sizeof st_out->backend_explain, "%.590s%s", where.explain,
             plan.use_sparse ? "; the sparse algorithm runs on the CPU" : "");
    st_out->algorithm = plan.use_sparse ? OC_ALGORITHM_SPARSE : OC_ALGORITHM_DENSE;
    {
        const double dense = backend == &oc_backend_cpu ? where.pred.cpu_seconds : where.pred.gpu_seconds;
        /* The sparse prediction is of its compute (what the choice weighs against the dense
         * kernels); the job also pays the fixed costs and the memory it touches (the inputs
         * read, the output written), which the cost model counts as for the dense path. */
        double fixed = 0;
        for (int k = 0; k < OC_COST_FIXED_TERMS; ++k) fixed += where.pred.fixed[k];
        const double predicted = plan.use_sparse ? plan.sparse_seconds + fixed + where.pred.cpu_memory : dense;
        st_out->predicted_seconds = predicted > 0 && isfinite(predicted) ? predicted : 0;
    }
    if (plan.use_sparse) {
        backend = &oc_backend_cpu_sparse;
        job.sparse = &plan;
    } else {
        /* Lists inputs get their bits when a dense job first needs them (matrix.h). */
        OC_CHECK_GOTO(ctx, st, oc_matrix_pack(ctx, job.a), cleanup);
        OC_CHECK_GOTO(ctx, st, oc_matrix_pack(ctx, job.b), cleanup);
    }
    oc_trace_phase(&t, "gram", "algorithm");
    phase_end(&mark, &ph->prepare);
    /* What the backend leaves to run after the job (core/process/after_job.h) starts once the
     * output is written. */
    oc_after_job_hold();
    held = 1;
    const oc_gram_phases before = *ph; /* a backend may count its own set-up and teardown */
    OC_CHECK_GOTO(ctx, st, backend->gram(&job), cleanup);
    oc_trace_phase(&t, "gram", "backend");
    phase_end(&mark, &ph->compute);
    ph->compute -= (ph->setup - before.setup) + (ph->teardown - before.teardown);
    if (ph->compute < 0) ph->compute = 0;
    if (backend != &oc_backend_cpu && backend != &oc_backend_cpu_sparse) oc_cost_note_gpu_job();
    /* Rows read from a file rewritten at another size meanwhile mix its two versions: nothing
     * is committed (a short read failed the backend already). The caller's inputs, not the
     * sparse path's copies of them. */
    OC_CHECK_GOTO(ctx, st, oc_gram_inputs_unchanged(ctx, a, b), cleanup);
    if (sel) OC_CHECK_GOTO(ctx, st, oc_gram_dest_select_commit(ctx, &job, &dest, sel), cleanup);
    const int resumable = resume != NULL;
    if (npy) {
        oc_npy_out *w = npy;
        npy = NULL;
        st = oc_npy_out_commit(ctx, w);
        /* Its temporary file is gone either way: the journal has nothing to resume. */
        oc_resume_finish(resume);
        resume = NULL;
        if (st != OC_OK) goto cleanup;
    }
    oc_resume_finish(resume);
    resume = NULL;
    /* A temporary of an earlier run that the journal no longer named (a damaged journal the
     * run started over from) is owned by none now: removed, as a new job's start does. */
    if (resumable && out->kind == OC_OUTPUT_FILE) oc_stale_temps_remove(ctx, out->path);
    oc_trace_phase(&t, "gram", "commit");
    phase_end(&mark, &ph->output);

cleanup:
    /* A resumable job's temporary file stays for the run that continues it, unless the job
     * had nothing on record yet. */
    if (oc_resume_worth_keeping(resume)) {
        oc_npy_out_keep(npy);
        oc_resume_close(resume);
    } else {
        oc_npy_out_abort(npy);
        oc_resume_finish(resume);
    }
    oc_topk_out_abort(dest.topk_file);
    oc_pairs_out_abort(dest.pairs_file);
    oc_select_free(sel);
    oc_sparse_plan_free(&plan);
    free(pops);
    phase_end(&mark, &st_out->phases.teardown);
    st_out->seconds = mark - t0;
    st_out->host_peak_bytes = oc_host_mem_peak();
    oc_matrix_free(lists[0]);
    oc_matrix_free(lists[1]);
    if (held) oc_after_job_go();
    if (stats && st == OC_OK) /* the fields of the caller's version of the struct */
        memcpy((char *)stats + sizeof(size_t), (char *)st_out + sizeof(size_t), stats->struct_size - sizeof(size_t));
    return st;
}

/* The job reads mapped inputs: SIGBUS deliverable meanwhile (core/process/bus_signal.h). */
oc_status oc_gram(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const oc_gram_options *opts,
                  const oc_output *out, oc_gram_stats *stats)
{
    OC_RETURN_WITH_BUS_SIGNAL(gram_call(ctx, a, b, opts, out, stats));
}

/* The algorithm as oc_gram chooses it, for a plan or an explanation: a file-backed input
 * that the sparse algorithm was asked for is not read into lists for them. */
static oc_status choose_without_running(const oc_gram_job *job, const oc_backend_vtbl *backend,
                                        const oc_gram_backend_choice *where, oc_sparse_plan *choice)
{
    memset(choice, 0, sizeof *choice);
    int in_file = oc_matrix_file_backed(job->a) || oc_matrix_file_backed(job->b);
    if (job->opts->algorithm == OC_ALGORITHM_SPARSE && in_file) {
        /* What the column count decides is decided now; the rest once the ones are read. */
        OC_CHECK(job->ctx, oc_gram_sparse_tables_check(job->ctx, job));
        choice->use_sparse = 1;
        snprintf(choice->explain, sizeof choice->explain,
                 "sparse (asked), after reading the inputs left in their files into row lists; the memory "
                 "it needs, and the threads the host budget holds, follow from their ones");
        return OC_OK;
    }
    return oc_gram_choose_algorithm(job->ctx, job, &where->rates,
                                    backend != &oc_backend_cpu ? where->pred.gpu_seconds : -1, choice);
}

/* --plan of a job the sparse algorithm runs: where, and why (the predictions). */
static oc_status sparse_plan_text(const oc_gram_job *job, const oc_sparse_plan *choice, int json, char **out)
{
    /* The threads that run: at most one per block of rows, and as many as the host budget
     * holds (the choice's, when it planned the job). */
    const int64_t blocks = (job->n + OC_SPARSE_BLOCK_ROWS - 1) / OC_SPARSE_BLOCK_ROWS;
    const int asked = oc_threads_resolve(job->opts->threads);
    const int threads = choice->threads > 0 ? choice->threads : asked > blocks ? (int)blocks : asked;
    oc_text text = {0};
    if (json) {
        oc_text_printf(&text,
                       "{\"where\": \"cpu\", \"algorithm\": \"sparse\", \"threads\": %d, \"hubs\": %lld, "
                       "\"host_bytes\": %.0f, \"algorithm_desc\": ",
                       threads, (long long)choice->hubs, choice->peak_bytes);
        oc_text_json_string(&text, choice->explain);
        oc_text_printf(&text, "}\n");
    } else {
        oc_text_printf(&text, "plan for cpu (sparse algorithm, docs/sparse.md)\n  threads  %d workers", threads);
        if (threads < asked && threads == blocks)
            oc_text_printf(&text, " (one per block of %d rows: %d asked)", OC_SPARSE_BLOCK_ROWS, asked);
        else if (threads < asked)
            oc_text_printf(&text, " (%d asked: the host budget holds %d workers' row buffers beside the index)", asked,
                           threads);
        if (choice->peak_bytes > 0)
            oc_text_printf(&text, "\n  host     %.1f MiB at most: the index of the rows and the workers' row buffers",
                           choice->peak_bytes / 1048576.0);
        oc_text_printf(&text, "\n  why      %s\n", choice->explain);
    }
    return oc_text_finish(job->ctx, &text, out);
}

/* What oc_gram_plan and oc_gram_explain share: everything oc_gram decides before it runs,
 * then the plan (text or JSON) or the explanation of the choices. */
enum describe_what { DESCRIBE_PLAN_TEXT, DESCRIBE_PLAN_JSON, DESCRIBE_EXPLAIN };

static oc_status describe_without_running(oc_context *ctx, const oc_matrix *a, const oc_matrix *b,
                                          const oc_gram_options *opts, const oc_output *out, enum describe_what what,
                                          const char *caller, char **text)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    oc_context_begin_job(ctx);
    if (!text) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: text must not be NULL", caller);
    oc_gram_job job;
    const oc_backend_vtbl *backend = NULL;
    oc_gram_options current_opts;
    oc_gram_backend_choice where;
    opts = current_options(opts, &current_opts);
    OC_CHECK(ctx, job_prepare(ctx, caller, a, b, opts, out, &job, &backend, &where, NULL));
    /* The kinds oc_gram takes, as it takes them (a plan of a job it would refuse is none). */
    if ((unsigned)out->kind > OC_OUTPUT_DISCARD)
        return oc_fail(ctx, OC_ERR_UNSUPPORTED, "output kind %d is not supported by this version", (int)out->kind);
    /* The explanation reads a file's place only for its file system's costs (NULL: a disk's). */
    if (out->kind == OC_OUTPUT_FILE && !out->path && what != DESCRIBE_EXPLAIN)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "output path is NULL");
    oc_gram_stats stats = {.struct_size = sizeof stats};
    job.stats = &stats;
    /* The plan depends on the kind of output, never on its place: nothing is opened. */
    oc_output nowhere = *out;
    nowhere.kind = OC_OUTPUT_DISCARD;
    oc_dense_sink sink = {.elem_size = oc_dtype_size(job.dtype), .symmetric = job.symmetric};
    oc_gram_dest dest = {0};
    oc_select *sel = NULL;
    oc_status st = OC_OK;
    if (opts->topk > 0 || opts->use_threshold) {
        /* Made for the explanation too, which plans without it: the selection refuses what
         * oc_gram would (top-k lists past the host budget). */
        st = oc_gram_dest_select_setup(ctx, opts, &nowhere, &job, &dest, &sel);
        if (st != OC_OK) {
            oc_select_free(sel);
            return oc_trace_at(ctx, st, __FILE__, __LINE__);
        }
        if (what != DESCRIBE_EXPLAIN) job.select = sel;
    } else if (out->kind == OC_OUTPUT_MEMORY || out->kind == OC_OUTPUT_FILE) {
        job.dense = &sink;
    }
    oc_sparse_plan choice = {0};
    st = choose_without_running(&job, backend, &where, &choice);
    if (st == OC_OK && what == DESCRIBE_EXPLAIN) {
        oc_text t = {0};
        oc_text_printf(&t, "backend: %s%s\nalgorithm: %s\n", where.explain,
                       choice.use_sparse ? "; the sparse algorithm runs on the CPU" : "", choice.explain);
        st = oc_text_finish(ctx, &t, text);
    } else if (st == OC_OK) {
        const int json = what == DESCRIBE_PLAN_JSON;
        st = choice.use_sparse ? sparse_plan_text(&job, &choice, json, text) : backend->plan(&job, json, text);
    }
    oc_sparse_plan_free(&choice);
    oc_select_free(sel);
    return st;
}

oc_status oc_gram_plan(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const oc_gram_options *opts,
                       const oc_output *out, int json, char **text)
{
    return describe_without_running(ctx, a, b, opts, out, json ? DESCRIBE_PLAN_JSON : DESCRIBE_PLAN_TEXT,
                                    "oc_gram_plan", text);
}

oc_status oc_gram_explain(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const oc_gram_options *opts,
                          const oc_output *out, char **text)
{
    return describe_without_running(ctx, a, b, opts, out, DESCRIBE_EXPLAIN, "oc_gram_explain", text);
}
