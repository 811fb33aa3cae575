/*
 * matmul.c - oc_matmul: the job layer of the dense product (matmul_job.h). It checks the
 * options, opens the operands (matmul_source.h) and checks their shapes and dtypes, promotes
 * the dtypes (matmul_dtype.h), resolves the budgets, opens the result (matmul_dest.c), picks
 * the backend (matmul_choice.h), runs it through read_panel and write_tile, and commits the
 * result. Everything that can be checked is checked before the output is created; a failure
 * after that removes it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/process/bus_signal.h"
#include "core/context.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/abi/struct_version.h"
#include "core/text_buf.h"
#include "core/threads.h"
#include "core/trace.h"
#include "cost/cost.h"
#include "engine/device_spec.h"
#include "io/io.h"
#include "io/journal.h"
#include "matmul/matmul_choice.h"
#include "matmul/matmul_dtype.h"
#include "matmul/matmul_io.h"
#include "matmul/matmul_resume.h"
#include "mem/host_budget.h"

/* A job being set up: its operands, and the pieces oc_matmul_job points to. */
typedef struct mm_setup {
    oc_mm_source a, b;
    int has_b;
    int transpose[2]; /* of the stored operands: the options' flags, flipped for Fortran order */
    oc_matmul_dtype result;
    int64_t host_budget; /* the job's (the panels get what mapped inputs leave of it) */
    int devices[OC_MAX_LOGICAL_DEVICES];
    int parts[OC_MAX_LOGICAL_DEVICES]; /* of each one's physical device (device_spec.h) */
    int c_device;                      /* C's CUDA device when C is GPU memory, else -1 */
    int64_t c_ld;                      /* and then its leading dimension */
    oc_matmul_job job;
} mm_setup;

/* opts->devices (device_spec.h's list: "0,1,3", "0:2" for device 0 split in two, or "all";
 * NULL or "": opts->device) into s->devices and s->parts. */
static oc_status parse_devices(oc_context *ctx, const oc_matmul_options *o, mm_setup *s)
{
    oc_matmul_job *job = &s->job;
    job->devices = s->devices;
    job->device_parts = s->parts;
    job->ndevices = 1;
    s->devices[0] = o->device;
    s->parts[0] = 1;
    const char *p = o->devices;
    if (!p || !*p) return OC_OK;
    if (o->backend == OC_BACKEND_CPU)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "devices: \"%s\": the CPU backend runs on no device", p);
    /* The one parser of device lists takes gram's options: the list and the device alone. */
    oc_gram_options g = OC_GRAM_OPTIONS_INIT;
    g.devices = p;
    g.device = o->device;
    oc_device_list list;
    OC_CHECK(ctx, oc_device_list_parse(ctx, &g, strstr(p, "all") ? oc_cuda_device_count() : -1, &list));
    job->ndevices = list.count;
    for (int d = 0; d < list.count; d++) s->devices[d] = list.dev[d].physical, s->parts[d] = list.dev[d].parts;
    return OC_OK;
}

/* oc_matmul_options of version 1 (before `resume`: docs/abi.md) as the current version in
 * *local, resume 0; the current version, NULL or a size of no version's (check_options
 * refuses it) as it is. */
static const oc_matmul_options *options_current(const oc_matmul_options *o, oc_matmul_options *local)
{
    if (!o || o->struct_size != OC_STRUCT_VERSION_SIZE(oc_matmul_options, resume)) return o;
    *local = (oc_matmul_options)OC_MATMUL_OPTIONS_INIT;
    memcpy(local, o, o->struct_size);
    local->struct_size = sizeof *local;
    return local;
}

static oc_status check_options(oc_context *ctx, const oc_matmul_options *o, const oc_matmul_array *b)
{
    if (!o)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_matmul_options is NULL: start from OC_MATMUL_OPTIONS_INIT");
    if (o->struct_size != sizeof(oc_matmul_options))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "oc_matmul_options.struct_size is %zu, expected %zu: start from "
                       "OC_MATMUL_OPTIONS_INIT",
                       o->struct_size, sizeof(oc_matmul_options));
    /* The flags are 0 or 1: they are combined (a Fortran-order file's flip, A·Aᵀ recognised
     * from its transposes), where another true value would give another product. */
    const struct {
        const char *name;
        int value;
    } flags[] = {{"transpose_a", o->transpose_a},
                 {"transpose_b", o->transpose_b},
                 {"gram", o->gram},
                 {"tf32", o->tf32},
                 {"resume", o->resume}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; ++i)
        if (flags[i].value != 0 && flags[i].value != 1)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s %d: expected 0 or 1", flags[i].name, flags[i].value);
    if (o->gram && b)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "gram: the product A·Aᵀ takes A alone (B must be NULL)");
    if (!o->gram && !b) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "no B: give B, or gram for A·Aᵀ");
    if (o->gram && o->transpose_b)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "gram (A·Aᵀ) has no B to transpose: drop transpose_b (--transpose-b); "
                       "transpose_a (--transpose-a) gives Aᵀ·A");
    char names[64];
    if ((unsigned)o->backend >= OC_BACKEND_COUNT)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "backend %d: expected %s", (int)o->backend,
                       oc_names_text(OC_NAMES_BACKENDS, names, sizeof names));
    if (o->threads < 0 || o->threads > OC_MAX_THREADS)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "threads %d: expected 0 (all cores) to %d", o->threads,
                       OC_MAX_THREADS);
    if (o->tile < 0 || o->host_mem_bytes < 0 || o->gpu_mem_bytes < 0 || o->device < 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "tile, host_mem_bytes, gpu_mem_bytes and device must not be negative");
    if (!(o->gpu_mem_fraction >= 0 && o->gpu_mem_fraction <= 1))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "gpu_mem_fraction %g: expected 0 to 1", o->gpu_mem_fraction);
    if (o->dtype != OC_MATMUL_DEFAULT && !oc_matmul_dtype_name(o->dtype))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "dtype %d is not a matmul dtype", (int)o->dtype);
    return OC_OK;
}

/* Memory on CUDA device `device` takes part in the job: it runs on a GPU, on the first such
 * memory's device unless the options name devices. */
static void uses_gpu_memory(const oc_matmul_options *o, mm_setup *s, int device)
{
    if (!s->job.gpu_memory && (!o->devices || !*o->devices)) s->devices[0] = device;
    s->job.gpu_memory = 1;
}

/* Operands in GPU memory are read where they are: in the compute type, or in a type the
 * device promotes to it (oc_matmul_widens) when its panels are read as stored (not
 * transposed, not A·Aᵀ, which only the resident plan runs); one read transposed (A·Aᵀ's B is
 * Aᵀ) is checked with the result (gpu_resident). The job runs on a GPU, on their device
 * unless the options name devices. */
static oc_status gpu_operands(oc_context *ctx, const oc_matmul_options *o, mm_setup *s)
{
    const oc_mm_source *src[2] = {&s->a, s->has_b ? &s->b : &s->a};
    const char *label[2] = {"A", "B"};
    for (int i = 0; i < 2; i++) {
        const oc_mm_source *x = src[i];
        if (x->gpu_device < 0) continue;
        const oc_matmul_dtype want = oc_matmul_dtype_of(s->job.in_type);
        const int widens = oc_matmul_widens(x->dtype, s->job.in_type);
        if (x->dtype != want && !(widens && !s->transpose[i] && !s->job.symmetric))
            return oc_fail(ctx, OC_ERR_INPUT,
                           "%s: in GPU memory as %s, but the product is computed in %s%s: convert it on the device "
                           "first",
                           label[i], oc_matmul_dtype_name(x->dtype), oc_matmul_dtype_name(want),
                           widens ? (s->job.symmetric ? " as A·Aᵀ, which runs where the operands are"
                                                      : " from the operand read transposed, where it is")
                                  : "");
        uses_gpu_memory(o, s, x->gpu_device);
    }
    return OC_OK;
}

/* A product that only the resident plan can run (matmul_job.h's gpu_resident_only): an
 * operand in GPU memory read transposed, or A·Aᵀ with GPU memory, since the tiled plan reads
 * panels as stored and mirrors A·Aᵀ on the host. It needs A, B and C in one device's memory,
 * rows back to back, and that device alone. */
static oc_status gpu_resident(oc_context *ctx, const oc_matmul_options *o, mm_setup *s)
{
    const oc_mm_source *src[2] = {&s->a, s->has_b ? &s->b : &s->a};
    const int transposed = (src[0]->gpu_device >= 0 && s->transpose[0]) || (src[1]->gpu_device >= 0 && s->transpose[1]);
    if (!s->job.gpu_memory || (!transposed && !s->job.symmetric)) return OC_OK;
    /* k = 0 reads no operand: C is zeros, which every plan writes. */
    if (s->job.k == 0) return OC_OK;
    const char *what = s->job.symmetric ? "A·Aᵀ with GPU memory" : "an operand in GPU memory read transposed";
    const int device = s->c_device >= 0 ? s->c_device : src[0]->gpu_device;
    const char *why = NULL;
    for (int i = 0; i < 2 && !why; i++)
        if (src[i]->gpu_device < 0 || src[i]->gpu_device != device)
            why = i ? "B is not in that device's memory" : "A is not in that device's memory";
        else if (src[i]->ld != src[i]->cols)
            why = i ? "B's rows are not back to back" : "A's rows are not back to back";
    if (!why && s->c_device < 0) why = "C is not in that device's memory";
    else if (!why && s->c_ld != s->job.n) why = "C's rows are not back to back";
    else if (!why && s->job.ndevices != 1) why = "several devices are named";
    else if (!why && s->devices[0] != device) why = "the device named is not theirs";
    else if (!why && o->tile > 0) why = "a tile is forced";
    if (!why) {
        s->job.gpu_resident_only = 1;
        return OC_OK;
    }
    return oc_fail(ctx, OC_ERR_INPUT,
                   "%s runs as one product on A, B and C where they are, in one device's memory with rows back to "
                   "back, but %s: transpose the operand on the device first, or give A, B and C so",
                   what, why);
}

/* A result that goes to a .npy file: its bytes and file system, which the predictions count
 * (matmul_job.h's out_file_bytes). Here and below, a C given has a version's size: oc_matmul
 * and oc_matmul_plan check it (oc_mm_array_check_size) before any of its fields is read. */
static void result_file(const oc_matmul_array *c, mm_setup *s)
{
    if (!c || !c->path) return;
    s->job.out_file_bytes = (double)oc_mm_type_size(s->job.out_type) * (double)s->job.m * (double)s->job.n;
    s->job.out_file_in_memory = oc_cost_in_memory_fs(c->path);
}

/* A result file its file system cannot hold is refused before any work (exit 2), as gram's;
 * a resumed job's temporary holds blocks already, which its writer credits when it sizes it
 * (a resumable job without a journal yet starts afresh, and is checked). */
static oc_status result_room(oc_context *ctx, const oc_matmul_array *c, const oc_matmul_options *o, const mm_setup *s)
{
    if (!c || !c->path || (o->resume && oc_journal_present(c->path))) return OC_OK;
    const double bytes = (double)oc_matmul_dtype_size(s->result) * (double)s->job.m * (double)s->job.n + 128;
    if (bytes > (double)INT64_MAX) return OC_OK; /* the writer names the overflow */
    char what[96];
    snprintf(what, sizeof what, "%s %" PRId64 " x %" PRId64, oc_matmul_dtype_name(s->result), s->job.m, s->job.n);
    return oc_npy_out_check_room(ctx, c->path, what, (int64_t)bytes);
}

/* A result in GPU memory (c->gpu): device memory of the result's shape. */
static oc_status gpu_result(oc_context *ctx, const oc_matmul_options *o, const oc_matmul_array *c, mm_setup *s)
{
    if (c && !c->path && oc_mm_array_gpu(c)) {
        int device = -1;
        const int64_t ld = c->ld ? c->ld : c->cols;
        OC_CHECK(ctx,
                 oc_mm_gpu_memory(ctx, "C", c->data, c->rows, c->cols, ld, oc_matmul_dtype_size(c->dtype), &device));
        if (device >= 0) {
            if (ld != c->cols && s->job.symmetric)
                return oc_fail(ctx, OC_ERR_INPUT, "C: in GPU memory for A·Aᵀ, its rows must be back to back (ld 0)");
            uses_gpu_memory(o, s, device);
            s->c_device = device;
            s->c_ld = ld;
        }
    }
    return gpu_resident(ctx, o, s);
}

/* Rows and columns of op(X). */
static void op_shape(const oc_mm_source *s, int transpose, int64_t *rows, int64_t *cols)
{
    *rows = transpose ? s->cols : s->rows;
    *cols = transpose ? s->rows : s->cols;
}

/* For inner dimensions that differ, op(A) m x k and op(B) k2 x n: "; they multiply with
 * --transpose-b" (or without, or with both changed) where a change of the transposes that can
 * change (a vector's cannot) makes them multiply, else "". */
static const char *transposes_that_fit(char *buf, size_t size, int a_can, int ta, int b_can, int tb, int64_t m,
                                       int64_t k, int64_t k2, int64_t n)
{
    int flip_a = a_can && m == k2, flip_b = b_can && k == n, both = a_can && b_can && m == n;
    if (!flip_a && !flip_b && !both) return "";
    if (flip_a && flip_b) {
        snprintf(buf, size, "; they multiply %s --transpose-a, or %s --transpose-b", ta ? "without" : "with",
                 tb ? "without" : "with");
    } else if (flip_a || flip_b) {
        int t = flip_a ? ta : tb;
        snprintf(buf, size, "; they multiply %s --transpose-%c", t ? "without" : "with", flip_a ? 'a' : 'b');
    } else {
        snprintf(buf, size, "; they multiply %s --transpose-a and %s --transpose-b", ta ? "without" : "with",
                 tb ? "without" : "with");
    }
    return buf;
}

/* Opens the operands, checks shapes and dtypes, fills the job's shape and types. */
static oc_status setup(oc_context *ctx, const oc_matmul_array *a, const oc_matmul_array *b, const oc_matmul_options *o,
                       mm_setup *s)
{
    memset(s, 0, sizeof *s);
    s->a.fd = s->b.fd = -1;
    s->a.gpu_device = s->b.gpu_device = s->c_device = -1;
    OC_CHECK(ctx, check_options(ctx, o, b));
    OC_CHECK(ctx, parse_devices(ctx, o, s)); /* the options' syntax before the files */
    if (!a) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "no A");
    /* Inputs whose data together take at most half the budget are mapped (as gram keeps
     * them: host_budget.h); the panels and tiles get what the mapped inputs leave. */
    const int64_t budget = s->host_budget = oc_host_budget_resolve(o->host_mem_bytes);
    OC_CHECK(ctx, oc_mm_source_open(ctx, a, "A", oc_mm_map_limit(budget, 0, o->tile), &s->a));
    const oc_mm_source *sb = &s->a;
    /* A vector is its own transpose, as numpy's v.T is v: a row as A, a column as B. */
    const int ta = s->transpose[OC_MM_A] = s->a.vector ? 0 : o->transpose_a ^ s->a.transposed;
    int tb = !ta; /* op(B) = op(A)ᵀ */
    if (b) {
        s->has_b = 1;
        OC_CHECK(ctx, oc_mm_source_open(ctx, b, "B", oc_mm_map_limit(budget, oc_mm_source_mapped_bytes(&s->a), o->tile),
                                        &s->b));
        sb = &s->b;
        tb = s->b.vector ? 1 : o->transpose_b ^ s->b.transposed;
    }
    s->transpose[OC_MM_B] = tb;
    int64_t m, k, k2, n;
    op_shape(&s->a, ta, &m, &k);
    op_shape(sb, tb, &k2, &n);
    char hint[96];
    if (k != k2)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: inner dimensions differ: op(A) of %s is %" PRId64 " x %" PRId64 ", op(B) is %" PRId64
                       " x %" PRId64 " (%" PRId64 " != %" PRId64 "%s)",
                       sb->name, s->a.name, m, k, k2, n, k, k2,
                       transposes_that_fit(hint, sizeof hint, !s->a.vector, o->transpose_a, !sb->vector, o->transpose_b,
                                           m, k, k2, n));
    char why[320];
    oc_matmul_job *job = &s->job;
    if (oc_matmul_promote(s->a.dtype, sb->dtype, o->dtype, &job->in_type, &job->out_type, &s->result, why,
                          sizeof why)) {
        /* The file whose dtype is the problem: an integer type other than int8, else A. */
        const int a_odd = s->a.dtype > OC_MATMUL_INT8, b_odd = sb->dtype > OC_MATMUL_INT8;
        const char *file = !a_odd && b_odd ? sb->name : s->a.name;
        return oc_fail(ctx, OC_ERR_INPUT, "%s: %s", file, why);
    }
    const int64_t k_max = oc_matmul_int8_k_max(s->a.dtype, sb->dtype);
    if (job->in_type == OC_MM_INT8 && k > k_max)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: %s x %s with k = %" PRId64 " could overflow the int32 result (exact up to k = %" PRId64
                       "): ask for --dtype float64",
                       s->a.name, oc_matmul_dtype_name(s->a.dtype), oc_matmul_dtype_name(sb->dtype), k, k_max);
    int64_t cells;
    if (__builtin_mul_overflow(m, n, &cells) || cells > INT64_MAX / 8)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: the result %" PRId64 " x %" PRId64 " overflows 64-bit sizes", s->a.name,
                       m, n);
    job->ctx = ctx;
    job->m = m;
    job->n = n;
    job->k = k;
    job->tf32 = o->tf32 && job->in_type == OC_MM_FLOAT32;
    job->stored_type[OC_MM_A] = s->a.dtype;
    job->stored_type[OC_MM_B] = sb->dtype;
    job->symmetric = o->gram || (b && oc_mm_source_same(&s->a, &s->b) && tb != ta);
    job->host_mem_given = o->host_mem_bytes > 0;
    job->host_mem_bytes = budget - oc_mm_source_mapped_bytes(&s->a) - (s->has_b ? oc_mm_source_mapped_bytes(&s->b) : 0);
    job->host_mem_whole = budget;
    job->file_bytes[0] = oc_mm_source_file_bytes(&s->a);
    job->file_bytes[1] = s->has_b ? oc_mm_source_file_bytes(&s->b) : 0;
    job->gpu_mem_bytes = o->gpu_mem_bytes;
    job->gpu_mem_fraction = o->gpu_mem_fraction;
    job->threads = o->threads;
    OC_CHECK(ctx, gpu_operands(ctx, o, s));
    job->tile = o->tile;
    job->progress = o->progress;
    job->progress_user = o->progress_user;
    return OC_OK;
}

static void setup_close(mm_setup *s)
{
    oc_mm_source_close(&s->a);
    oc_mm_source_close(&s->b);
}

oc_status oc_matmul_result(oc_context *ctx, const oc_matmul_array *a, const oc_matmul_array *b,
                           const oc_matmul_options *opts, oc_matmul_dtype *dtype, int64_t *rows, int64_t *cols)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    oc_context_begin_job(ctx);
    oc_matmul_options local;
    opts = options_current(opts, &local);
    mm_setup s;
    oc_status st = setup(ctx, a, b, opts, &s);
    if (st == OC_OK) {
        if (dtype) *dtype = s.result;
        if (rows) *rows = s.job.m;
        if (cols) *cols = s.job.n;
    }
    setup_close(&s);
    return st == OC_OK ? OC_OK : oc_trace_at(ctx, st, __FILE__, __LINE__);
}

static void io_init(mm_setup *s, oc_mm_io *io)
{
    memset(io, 0, sizeof *io);
    pthread_mutex_init(&io->lock, NULL);
    io->src[OC_MM_A] = &s->a;
    io->src[OC_MM_B] = s->has_b ? &s->b : &s->a;
    io->transpose[OC_MM_A] = s->transpose[OC_MM_A];
    io->transpose[OC_MM_B] = s->transpose[OC_MM_B];
    io->dest_gpu = s->c_device >= 0;
    oc_mm_io_bind(&s->job, io);
}

/* job->tile_place_ld: C's rows apart where tile_memory gives it a place (0: none), and
 * whether that is the output file's mapping. */
static void tile_place(oc_matmul_job *job, const oc_mm_io *io)
{
    int64_t ld = 0;
    job->tile_place_ld = job->tile_memory && job->tile_memory(job, 0, 0, &ld) ? ld : 0;
    job->tile_place_mapped = job->tile_place_ld > 0 && io->dest.npy != NULL;
}

/* The result opened: for a resumable job, its journal first (matmul_resume.h), and the
 * temporary file of an interrupted run reopened. */
static oc_status resume_open(oc_context *ctx, mm_setup *s, oc_mm_io *io, const oc_matmul_array *c,
                             const oc_matmul_options *o)
{
    const oc_mm_resume_job id = {&s->a,
                                 s->has_b && !s->job.symmetric ? &s->b : NULL,
                                 s->transpose[OC_MM_A],
                                 s->transpose[OC_MM_B],
                                 s->result,
                                 s->has_b ? &s->b : NULL};
    OC_CHECK(ctx, oc_mm_resume_start(ctx, &s->job, &id, o, c, &io->resume));
    oc_mm_resume *r = io->resume;
    OC_CHECK(ctx, oc_mm_dest_open(ctx, c, s->result, s->job.m, s->job.n, &s->a, s->has_b ? &s->b : NULL,
                                  r ? oc_mm_resume_temp(r) : NULL, &io->dest));
    tile_place(&s->job, io);
    if (!r) return OC_OK;
    s->job.plan_tiles = oc_mm_resume_plan_tiles;
    s->job.tile_done = oc_mm_resume_tile_done;
    return oc_mm_resume_record_temp(ctx, r, io->dest.npy, io->dest.data, io->dest.ld, io->dest.elem);
}

/* After the run (st its outcome; committed: the commit was tried, so the result's writer
 * and temporary file are gone whatever its outcome): a failed resumable job puts what it
 * finished on record (unless an input changed: matmul_resume.h) and keeps its journal and
 * temporary file, unless it has nothing on record or its commit failed (nothing is left to
 * resume); everything else is removed. */
static void resume_end(oc_context *ctx, oc_mm_io *io, oc_status st, int committed)
{
    oc_mm_resume *r = io->resume;
    io->resume = NULL;
    if (committed) {
        oc_mm_resume_finish(r);
        return;
    }
    if (st != OC_OK && r) oc_mm_resume_checkpoint(ctx, r);
    if (st != OC_OK && oc_mm_resume_worth_keeping(r)) {
        oc_mm_dest_keep(&io->dest);
        oc_mm_resume_close(r);
        return;
    }
    if (st != OC_OK) oc_mm_dest_abort(&io->dest);
    oc_mm_resume_finish(r);
}

static void fill_stats(const mm_setup *s, const oc_mm_io *io, const oc_mm_backend *be, double seconds,
                       const char *explain, oc_matmul_stats *st)
{
    if (!st) return;
    const oc_matmul_job *job = &s->job;
    memset((char *)st + sizeof st->struct_size, 0, sizeof *st - sizeof st->struct_size);
    st->backend = strcmp(be->name, "cuda") == 0 ? OC_BACKEND_CUDA : OC_BACKEND_CPU;
    if (st->backend == OC_BACKEND_CPU) {
        st->threads = oc_threads_resolve(job->threads);
        snprintf(st->backend_desc, sizeof st->backend_desc, "%s %d thread%s", job->stats.backend, st->threads,
                 st->threads == 1 ? "" : "s");
    } else {
        snprintf(st->backend_desc, sizeof st->backend_desc, "%s", job->stats.backend);
    }
    st->dtype = s->result;
    st->m = job->m;
    st->n = job->n;
    st->k = job->k;
    st->seconds = seconds;
    st->flops = 2.0 * (double)job->m * (double)job->n * (double)job->k;
    st->tiles = job->stats.tiles;
    st->bytes_read = io->bytes_read + job->stats.bytes_straight;
    st->bytes_written = job->m * job->n * (int64_t)oc_matmul_dtype_size(s->result);
    st->bytes_h2d = job->stats.bytes_to_device;
    st->bytes_d2h = job->stats.bytes_from_device;
    st->host_budget_bytes = s->host_budget;
    st->host_peak_bytes = oc_host_mem_peak();
    st->dev_peak_bytes = job->stats.peak_device_bytes;
    snprintf(st->backend_explain, sizeof st->backend_explain, "%s", explain ? explain : "");
}

static oc_status matmul_call(oc_context *ctx, const oc_matmul_array *a, const oc_matmul_array *b,
                             const oc_matmul_array *c, const oc_matmul_options *opts, oc_matmul_stats *stats)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    /* The last job's error, cancel flag and fault counts are not this one's. */
    oc_context_begin_job(ctx);
    if (stats && stats->struct_size != sizeof *stats)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_matmul_stats.struct_size is %zu, expected %zu",
                       stats->struct_size, sizeof *stats);
    const double start = oc_now();
    double t = start;
    oc_matmul_options local;
    opts = options_current(opts, &local);
    mm_setup s;
    oc_mm_io io;
    char explain[640];
    const oc_mm_backend *be = NULL;
    int io_open = 0, committed = 0; /* io_init ran; the commit was tried */
    oc_status st;
    OC_CHECK_GOTO(ctx, st, setup(ctx, a, b, opts, &s), cleanup);
    if (!c) {
        st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "no output C");
        goto cleanup;
    }
    /* C's size before any of its fields is read, and its name before any work. */
    OC_CHECK_GOTO(ctx, st, oc_mm_array_check_size(ctx, c, "C"), cleanup);
    if (c->path) OC_CHECK_GOTO(ctx, st, oc_output_npy_name(ctx, c->path, "a product is written"), cleanup);
    OC_CHECK_GOTO(ctx, st, gpu_result(ctx, opts, c, &s), cleanup);
    result_file(c, &s);
    OC_CHECK_GOTO(ctx, st, result_room(ctx, c, opts, &s), cleanup);
    oc_trace_phase(&t, "matmul", "operands");
    OC_CHECK_GOTO(ctx, st, oc_mm_choose(ctx, &s.job, opts, &be, explain, sizeof explain), cleanup);
    oc_trace_phase(&t, "matmul", "backend choice");
    io_init(&s, &io);
    io_open = 1;
    OC_CHECK_GOTO(ctx, st, resume_open(ctx, &s, &io, c, opts), cleanup);
    oc_trace_phase(&t, "matmul", "output opened");
    if (s.job.m > 0 && s.job.n > 0) {
        OC_CHECK_GOTO(ctx, st, be->run(&s.job), cleanup);
    } else {
        snprintf(s.job.stats.backend, sizeof s.job.stats.backend, "%s", be->name); /* nothing to run */
    }
    oc_trace_phase(&t, "matmul", "backend run");
    OC_CHECK_GOTO(ctx, st, oc_mm_source_check(ctx, &s.a), cleanup);
    if (s.has_b) OC_CHECK_GOTO(ctx, st, oc_mm_source_check(ctx, &s.b), cleanup);
    if (strcmp(be->name, "cuda") == 0) oc_cost_note_gpu_job();
    committed = 1;
    OC_CHECK_GOTO(ctx, st, oc_mm_dest_commit(ctx, &io.dest), cleanup);

cleanup:
    if (io_open) {
        const int resumable = io.resume != NULL;
        resume_end(ctx, &io, st, committed);
        /* A temporary of an earlier run that the journal no longer named (a damaged journal the
         * run started over from) is no longer owned by one: removed, as a new job's start does. */
        if (st == OC_OK && resumable) oc_stale_temps_remove(ctx, c->path);
        oc_trace_phase(&t, "matmul", "output committed");
        if (st == OC_OK) fill_stats(&s, &io, be, oc_now() - start, explain, stats);
        pthread_mutex_destroy(&io.lock);
    }
    setup_close(&s);
    oc_trace_phase(&t, "matmul", "stats and close");
    return st;
}

/* The job reads mapped inputs: SIGBUS deliverable meanwhile (core/process/bus_signal.h). */
oc_status oc_matmul(oc_context *ctx, const oc_matmul_array *a, const oc_matmul_array *b, const oc_matmul_array *c,
                    const oc_matmul_options *opts, oc_matmul_stats *stats)
{
    OC_RETURN_WITH_BUS_SIGNAL(matmul_call(ctx, a, b, c, opts, stats));
}

oc_status oc_matmul_plan(oc_context *ctx, const oc_matmul_array *a, const oc_matmul_array *b, const oc_matmul_array *c,
                         const oc_matmul_options *opts, int json, int explain, char **text)
{
    if (!ctx) return OC_ERR_INVALID_ARGUMENT;
    oc_context_begin_job(ctx);
    if (!text) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "text is NULL");
    char *result = NULL; /* *text on success only: on failure it is left as it was */
    oc_matmul_options local;
    opts = options_current(opts, &local);
    mm_setup s;
    oc_mm_io io;
    char why[640];
    const oc_mm_backend *be = NULL;
    oc_status st = setup(ctx, a, b, opts, &s);
    if (st == OC_OK && c) st = oc_mm_array_check_size(ctx, c, "C");
    if (st == OC_OK) st = gpu_result(ctx, opts, c, &s);
    if (st == OC_OK) result_file(c, &s);
    if (st == OC_OK) st = oc_mm_choose(ctx, &s.job, opts, &be, why, sizeof why);
    if (st == OC_OK) {
        io_init(&s, &io);
        /* A result in memory: where it is, which decides whether the product runs where its
         * operands are (nothing is written). */
        if (c && !c->path && c->data) {
            io.dest.data = c->data;
            io.dest.rows = s.job.m, io.dest.cols = s.job.n;
            io.dest.ld = c->ld ? c->ld : c->cols;
            io.dest.elem = oc_matmul_dtype_size(s.result);
        }
        tile_place(&s.job, &io);
        /* A .npy result (none given: planned as one) is written through its mapping, rows
         * back to back. */
        if ((!c || c->path) && !s.job.symmetric) s.job.tile_place_ld = s.job.n, s.job.tile_place_mapped = 1;
        if (explain) {
            char *plan = NULL;
            st = be->plan(&s.job, 0, &plan);
            if (st == OC_OK) {
                oc_text t = {0};
                oc_text_printf(&t, "backend: %s\nresult: %s %" PRId64 " x %" PRId64 " (k = %" PRId64 ")%s\n%s", why,
                               oc_matmul_dtype_name(s.result), s.job.m, s.job.n, s.job.k,
                               s.job.symmetric ? ", symmetric: upper tiles mirrored" : "", plan);
                st = oc_text_finish(ctx, &t, &result);
            }
            free(plan);
        } else {
            st = be->plan(&s.job, json, &result);
        }
        pthread_mutex_destroy(&io.lock);
    }
    setup_close(&s);
    if (st != OC_OK) return oc_trace_at(ctx, st, __FILE__, __LINE__);
    *text = result;
    return OC_OK;
}
