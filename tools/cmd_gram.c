/* cmd_gram.c - `outcore gram`: the binary Gram matrix of one or two 0/1 matrix files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <pthread.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_names.h"
#include "cli/cli_parse.h"
#include "cli/cli_placement.h"
#include "cli/cli_progress.h"
#include "cli/cli_ranks.h"
#include "cli/cli_signal.h"
#include "cli/cli_visible.h"
#include "commands.h"

/* After the usage lines, whose output names come from the library's formats (print_usage). */
static const char gram_usage[] =
    "\n"
    "Computes C = A·Aᵀ (or A·Bᵀ) of 0/1 matrices exactly: C[i,j] counts the columns where\n"
    "rows i and j are both 1; --metric turns counts into similarities.\n";
/* Then the inputs' line, whose suffixes come from the library's formats (print_usage). */
static const char gram_usage_output[] =
    "Output: OUT.npy, dense (in the metric's dtype, below); with --topk each row's K\n"
    "best columns (.npz: indices, scores; .tsv), with --threshold every pair whose score passes\n"
    "(.npz: rows, cols, values; .mtx; .tsv). See docs/topk.md.\n"
    "\n"
    "  -o, --output OUT       result file (written under a temporary name, renamed when done)\n";
/* Then the --metric and --dtype lines, from the library's lists (print_usage), and the rest. */
static const char gram_usage_options[] =
    "  --bits M               .npy inputs hold numpy.packbits(A, axis=1) of M columns\n"
    "  --binarize             read any nonzero value as 1, NaN still refused (default: values\n"
    "                         other than 0/1 are an error naming the row and column, from 0)\n";
/* Then the --backend line, from the library's list (print_usage), and the rest. */
static const char gram_usage_backend[] =
    "                         auto runs the one the cost model predicts faster, the CPU\n"
    "                         without a usable GPU (docs/cost-model.md)\n";
/* Then the --algorithm line, from the library's list (print_usage), and the rest. */
static const char gram_usage_algorithm[] =
    "                         auto runs the one predicted faster; dense computes with packed-bit\n"
    "                         kernels, sparse by per-row accumulation over column lists (CPU);\n"
    "                         the same bytes either way. See docs/sparse.md\n"
    "  --explain              print the predicted time of each backend and algorithm, the\n"
    "                         rates behind them, and the choices (stderr)\n"
    "  --threads N            CPU worker threads (default: all cores)\n"
    "  --device N             CUDA device index (default 0)\n"
    "  --devices LIST         several CUDA devices: 0,1,3 or all; 0:2 splits device 0 into two\n"
    "                         logical devices, each with half its budget (docs/architecture.md)\n" CLI_HELP_GPU_MEM
    "; per\n"
    "                         device: 0=20G,1=40G\n";
/* Then the --gpu-mem-mode line, from the library's list (print_usage), and the rest. */
static const char gram_usage_gpu_mem_mode[] =
    "                         grow allocates on demand up to the budget, reserve takes all of\n"
    "                         it at the start\n" CLI_HELP_HOST_MEM ": a .npy input\n"
    "                         whose packed bits take more than half of it stays in its file and\n"
    "                         is read in panels (so is a packed .npy for --backend cuda, at\n"
    "                         any budget); .mtx and text inputs are always loaded\n"
    "  --tile N               tile edge in rows (default: chosen by the planner)\n"
    "  --topk K               each row's K best columns, best first (score descending, then the\n"
    "                         lower column; hamming: ascending); A·Aᵀ excludes the row itself.\n"
    "                         Every column ranks, score 0 included: a row is filled with score-0\n"
    "                         columns (lowest first) before any padding; index -1 and score 0\n"
    "                         only where K passes the candidates (the rows of B, or of A less one\n"
    "                         for A·Aᵀ). K may not exceed the rows of B (of A for A·Aᵀ)\n"
    "  --min-score S          with --topk: the K best among the columns scoring at least S\n"
    "                         (hamming: at most S; S in the range --threshold takes), so a row\n"
    "                         lists only neighbours that pass; the slots left hold index -1 and\n"
    "                         score NaN (float32), -1 (int32) or 65535 (uint16)\n"
    "  --threshold T          every pair with score >= T (hamming: <= T); jaccard, cosine: T in\n"
    "                         [0, 1]; counts, hamming: a whole number in [0, columns]. For A·Aᵀ\n"
    "                         each pair once as (i, j), i < j. Pairs are sorted by row, then column\n"
    "  --plan                 print the plan (tiles, budgets, threads; on the GPU also staging\n"
    "                         and the estimated time of kernels, uploads and output) and exit\n"
    "                         without computing (no -o needed); with --explain, the\n"
    "                         prediction after it\n"
    "  --resume               keep a journal of the work done beside OUT (OUT.outcore-journal)\n"
    "                         and continue an interrupted run of the same command from it; the\n"
    "                         result has the bytes of an uninterrupted run, on either backend;\n"
    "                         on several --devices, top-k jobs only. See docs/resume.md\n"
    "  --json                 print the summary (or the plan) as JSON on stdout\n"
    "  -q, --quiet            no progress bar, no summary, no line for a stale temporary removed\n"
    "  -v, --verbose          on failure, also print the library's file:line trace\n"
    "  --                     ends the options: an input after it may start with '-'\n"
    "\n"
    "Under mpirun (mpirun -np R outcore gram ...) one job runs over R ranks sharing the file\n"
    "system, each on its own GPU or CPU, into one output: the bytes one process writes (a\n"
    "build with MPI; outcore --version says so). See docs/mpi.md.\n";

/* "OUT.npz|OUT.tsv": an output path of each format of the list. */
static const char *output_paths(char *text, size_t size, cli_name_at format)
{
    snprintf(text, size, "OUT.");
    cli_join_names(text + 4, size - 4, format, "|OUT.", "|OUT.", NULL);
    return text;
}

/* ".npz, .mtx or .tsv": the suffixes of the list, last before the final one (" or .", " and ."). */
static const char *suffixes(char *text, size_t size, cli_name_at format, const char *last)
{
    snprintf(text, size, ".");
    cli_join_names(text + 1, size - 1, format, ", .", last, NULL);
    return text;
}

/* The dtypes each metric takes, in the library's words, and the default. */
static void print_metric_dtypes(void)
{
    char allowed[256];
    oc_metric_dtypes_text(allowed, sizeof allowed);
    printf("%*s%s\n", CLI_HELP_COLUMN, "", allowed);
    printf("%*s(default: the metric's first; uint16 holds counts below 65536)\n", CLI_HELP_COLUMN, "");
}

static void print_usage(void)
{
    const oc_gram_options defaults = OC_GRAM_OPTIONS_INIT;
    char paths[128];
    printf("usage: outcore gram A [B] -o OUT [options]\n");
    printf("       outcore gram A [B] --topk K -o %s [options]\n",
           output_paths(paths, sizeof paths, cli_topk_format_at));
    printf("       outcore gram A [B] --threshold T -o %s [options]\n",
           output_paths(paths, sizeof paths, cli_threshold_format_at));
    fputs(gram_usage, stdout);
    printf("Inputs: %s (a .npy of 0/1 bool, integers or float32/64, or of\n"
           "numpy.packbits rows with --bits).\n",
           suffixes(paths, sizeof paths, cli_input_format_at, " or ."));
    fputs(gram_usage_output, stdout);
    cli_help_names("--metric M", cli_metric_at, oc_metric_name(defaults.metric));
    cli_help_names("--dtype T", cli_dtype_at, NULL);
    print_metric_dtypes();
    fputs(gram_usage_options, stdout);
    cli_help_names("--backend B", cli_backend_at, oc_backend_name(defaults.backend));
    fputs(gram_usage_backend, stdout);
    cli_help_names("--algorithm A", cli_algorithm_at, oc_algorithm_name(defaults.algorithm));
    fputs(gram_usage_algorithm, stdout);
    cli_help_names("--gpu-mem-mode MODE", cli_gpu_mem_mode_at, oc_gpu_mem_mode_name(defaults.gpu_mem_mode));
    fputs(gram_usage_gpu_mem_mode, stdout);
}

typedef struct gram_args {
    const char *inputs[2];
    int ninputs;
    const char *output;
    const char *gpu_mem; /* --gpu-mem as given */
    const char *device;  /* --device as given */
    int gpu_mem_mode;    /* --gpu-mem-mode given */
    oc_read_options read;
    int json, quiet, explain;
    int plan;
    oc_gram_options opts;
} gram_args;

/* The output's extension must suit the mode: one of the library's formats that holds the
 * result (dense .npy, top-k .npz/.tsv, threshold .npz/.mtx/.tsv); -1 when it does, else the
 * exit status. */
static int check_output_kind(const gram_args *g)
{
    const char *ext = cli_path_extension(g->output);
    unsigned holds = 0;
    for (int f = 0; cli_output_format_at(f); ++f)
        if (strcasecmp(ext, cli_output_format_at(f)) == 0) holds = oc_output_format_results((oc_output_format)f);
    char list[128], others[128], got[96];
    /* "not '.tsv'", or for "-o .npy" (a name, as os.path.splitext reads it) "not a name with no extension" */
    snprintf(got, sizeof got, ext[0] ? "'.%.80s'" : "a name with no extension", ext);
    if (g->opts.topk > 0 && !(holds & OC_RESULT_TOPK))
        return cli_usage_error("%s: a --topk result is written as %s, not %s", g->output,
                               suffixes(list, sizeof list, cli_topk_format_at, " or ."), got);
    if (g->opts.use_threshold && !(holds & OC_RESULT_THRESHOLD))
        return cli_usage_error("%s: a --threshold result is written as %s, not %s", g->output,
                               suffixes(list, sizeof list, cli_threshold_format_at, " or ."), got);
    if (!g->opts.topk && !g->opts.use_threshold && !(holds & OC_RESULT_DENSE))
        return cli_usage_error("%s: a dense result is written as %s, not %s (%s hold --topk or --threshold results)",
                               g->output, suffixes(list, sizeof list, cli_dense_format_at, " or ."), got,
                               suffixes(others, sizeof others, cli_selection_format_at, " and ."));
    return -1;
}

/* Parses argv into args; returns -1 when parsing succeeded, else the exit status. */
static int parse_gram_args(int argc, char **argv, gram_args *g)
{
    cli_args args = CLI_ARGS_INIT(argc, argv), *a = &args;
    cli_placement where = CLI_PLACEMENT_OF(g->opts, &g->gpu_mem, &g->device);
    where.gpu_mem_devices = &g->opts.gpu_mem_devices; /* DEV=SIZE,...: parsed by the library */
    for (const char *arg; (arg = cli_next(a)) != NULL;) {
        const char *v = NULL;
        int r;
        if (cli_positional(a)) {
            if (g->ninputs == 2) return cli_usage_error("gram: at most two inputs (A and B), got a third: %s", arg);
            g->inputs[g->ninputs++] = arg;
            continue;
        }
        if (cli_flag(a, "--help|-h")) {
            int size = 0, rank = 0;
            const char *var = NULL;
            if (!cli_launched_by_mpi(&size, &rank, &var) || rank == 0) print_usage(); /* once under ranks */
            return OC_EXIT_OK;
        }
        if (cli_flag(a, "--json")) {
            g->json = 1;
            continue;
        }
        if (cli_flag(a, "--explain")) {
            g->explain = 1;
            continue;
        }
        if (cli_flag(a, "--plan")) {
            g->plan = 1;
            continue;
        }
        if (cli_flag(a, "--resume")) {
            g->opts.resume = 1;
            continue;
        }
        if (cli_flag(a, "--binarize")) {
            g->read.binarize = 1;
            continue;
        }
        if (cli_flag(a, "--quiet|-q")) {
            g->quiet = 1;
            continue;
        }
        if (cli_flag(a, "--verbose|-v")) {
            cli_verbose = 1;
            continue;
        }
        if (CLI_OPTION(a, r, v, "-o|--output")) {
            if (r < 0) return OC_EXIT_USAGE;
            g->output = v;
        } else if (CLI_OPTION(a, r, v, "--metric")) {
            if (r < 0) return OC_EXIT_USAGE;
            if (oc_metric_parse(v, &g->opts.metric) != OC_OK) return cli_expected("--metric", v, cli_metric_at);
        } else if (CLI_OPTION(a, r, v, "--dtype")) {
            if (r < 0) return OC_EXIT_USAGE;
            if (oc_dtype_parse(v, &g->opts.dtype) != OC_OK) return cli_expected("--dtype", v, cli_dtype_at);
        } else if ((r = cli_take_placement(a, &where)) != 0) {
            if (r > 0) return r;
        } else if (CLI_OPTION(a, r, v, "--algorithm")) {
            if (r < 0) return OC_EXIT_USAGE;
            if (oc_algorithm_parse(v, &g->opts.algorithm) != OC_OK)
                return cli_expected("--algorithm", v, cli_algorithm_at);
        } else if (CLI_OPTION(a, r, v, "--gpu-mem-mode")) {
            if (r < 0) return OC_EXIT_USAGE;
            g->gpu_mem_mode = 1;
            if (oc_gpu_mem_mode_parse(v, &g->opts.gpu_mem_mode) != OC_OK)
                return cli_expected("--gpu-mem-mode", v, cli_gpu_mem_mode_at);
        } else if (CLI_OPTION(a, r, v, "--tile")) {
            if (r < 0) return OC_EXIT_USAGE;
            if (cli_parse_i64(v, &g->opts.tile) || g->opts.tile < 1)
                return cli_usage_error("--tile %s: expected a positive number of rows", v);
        } else if (CLI_OPTION(a, r, v, "--topk")) {
            if (r < 0) return OC_EXIT_USAGE;
            if (cli_parse_i64(v, &g->opts.topk) || g->opts.topk < 1)
                return cli_usage_error("--topk %s: expected a positive whole number of neighbours", v);
        } else if (CLI_OPTION(a, r, v, "--threshold")) {
            if (r < 0) return OC_EXIT_USAGE;
            if (cli_parse_double(v, &g->opts.threshold) || !(g->opts.threshold == g->opts.threshold))
                return cli_usage_error("--threshold %s: expected a number", v);
            g->opts.use_threshold = 1;
        } else if (CLI_OPTION(a, r, v, "--min-score")) {
            if (r < 0) return OC_EXIT_USAGE;
            if (cli_parse_double(v, &g->opts.min_score)) return cli_usage_error("--min-score %s: expected a number", v);
            g->opts.use_min_score = 1;
        } else if (CLI_OPTION(a, r, v, "--bits")) {
            if (r < 0) return OC_EXIT_USAGE;
            if (cli_parse_i64(v, &g->read.bits) || g->read.bits < 1)
                return cli_usage_error("--bits %s: expected the positive column count of the packed matrix", v);
        } else {
            return cli_unknown_option(a, 1);
        }
    }
    g->read.host_mem_bytes = g->opts.host_mem_bytes; /* the inputs' reads keep to --host-mem too */
    if (g->ninputs == 0) return cli_usage_error("gram: no input matrix given (see outcore gram --help)");
    if (g->opts.topk > 0 && g->opts.use_threshold)
        return cli_usage_error("gram: --topk and --threshold are exclusive: choose one");
    if (g->opts.use_min_score && g->opts.topk <= 0)
        return cli_usage_error("gram: --min-score keeps the top-k neighbours scoring at least S: give --topk K too "
                               "(--threshold T lists every pair at least T)");
    if (!g->output && g->plan) {
        /* A plan writes nothing: it plans the kind's first format (the .npy, the .npz). */
        static char planned[16];
        const char *ext = (g->opts.topk            ? cli_topk_format_at
                           : g->opts.use_threshold ? cli_threshold_format_at
                                                   : cli_dense_format_at)(0);
        snprintf(planned, sizeof planned, "OUT.%s", ext);
        g->output = planned;
    }
    if (!g->output) {
        char paths[128];
        return cli_usage_error("gram: no output given: add -o %s",
                               output_paths(paths, sizeof paths,
                                            g->opts.topk            ? cli_topk_format_at
                                            : g->opts.use_threshold ? cli_threshold_format_at
                                                                    : cli_dense_format_at));
    }
    if (!g->plan) {
        int rc = cli_check_output(g->output); /* a folder, a missing one: before the extension */
        if (rc >= 0) return rc;
    }
    return check_output_kind(g);
}

/* ", "devices": [...]: what each logical device of a CUDA job did. */
static void print_devices_json(const oc_gram_stats *s)
{
    printf(", \"devices\": [");
    for (int d = 0; d < s->device_count; ++d) {
        const oc_device_stats *x = &s->devices[d];
        printf("%s{\"name\": ", d ? ", " : "");
        cli_json_string(stdout, x->name);
        printf(", \"tiles\": %lld, \"bytes_h2d\": %lld, \"bytes_d2h\": %lld, \"busy_seconds\": %.6f, "
               "\"budget_bytes\": %lld, \"peak_bytes\": %lld}",
               (long long)x->tiles, (long long)x->bytes_h2d, (long long)x->bytes_d2h, x->busy_seconds,
               (long long)x->budget_bytes, (long long)x->peak_bytes);
    }
    printf("]");
}

static void print_summary(const gram_args *g, const oc_matrix *a, const oc_matrix *b, const oc_gram_stats *s,
                          double load_seconds, double cuda_wait, const char *ranks_json)
{
    int64_t n = oc_matrix_rows(a), p = b ? oc_matrix_rows(b) : n, m = oc_matrix_cols(a);
    oc_dtype dtype = oc_gram_result_dtype(g->opts.metric, g->opts.dtype);
    double eff = s->seconds > 0 ? s->bit_macs_effective / s->seconds : 0;
    double raw = s->seconds > 0 ? s->bit_macs_computed / s->seconds : 0;
    if (g->json) {
        printf("{\"command\": \"gram\", \"a\": ");
        cli_json_string(stdout, g->inputs[0]);
        printf(", \"b\": ");
        if (g->ninputs > 1) cli_json_string(stdout, g->inputs[1]);
        else printf("null");
        printf(", \"output\": ");
        cli_json_string(stdout, g->output);
        if (g->opts.topk > 0) printf(", \"topk\": %lld", (long long)g->opts.topk);
        if (g->opts.use_min_score) printf(", \"min_score\": %.17g", g->opts.min_score);
        if (g->opts.use_threshold)
            printf(", \"threshold\": %.17g, \"pairs\": %lld", g->opts.threshold, (long long)s->pairs);
        if (s->select_desc[0]) {
            printf(", \"selection\": ");
            cli_json_string(stdout, s->select_desc);
        }
        printf(", \"n\": %lld, \"p\": %lld, \"m\": %lld, \"metric\": \"%s\", \"dtype\": \"%s\", \"backend\": \"%s\", "
               "\"backend_desc\": ",
               (long long)n, (long long)p, (long long)m, oc_metric_name(g->opts.metric), oc_dtype_name(dtype),
               oc_backend_name(s->backend));
        cli_json_string(stdout, s->backend_desc);
        printf(", \"algorithm\": \"%s\", \"algorithm_desc\": ", oc_algorithm_name(s->algorithm));
        cli_json_string(stdout, s->algorithm_desc);
        printf(", \"backend_explain\": ");
        cli_json_string(stdout, s->backend_explain);
        printf(", \"threads\": %d", s->threads);
        printf(
            ", \"seconds\": %.6f, \"load_seconds\": %.6f, \"bit_macs_computed\": %.0f, \"bit_macs_effective\": %.0f, "
            "\"rate_computed\": %.6g, \"rate_effective\": %.6g, \"predicted_seconds\": %.6f, \"tiles\": %lld, "
            "\"host_peak_bytes\": %lld, "
            "\"host_budget_bytes\": %lld, "
            "\"gpu\": {\"budget_bytes\": %lld, \"peak_bytes\": %lld, \"current_bytes\": %lld, \"allocations\": %lld, "
            "\"bytes_h2d\": %lld, \"bytes_d2h\": %lld}",
            s->seconds, load_seconds, s->bit_macs_computed, s->bit_macs_effective, raw, eff, s->predicted_seconds,
            (long long)s->tiles, (long long)s->host_peak_bytes, (long long)s->host_budget_bytes,
            (long long)s->dev_budget_bytes, (long long)s->dev_peak_bytes, (long long)s->dev_current_bytes,
            (long long)s->dev_allocations, (long long)s->bytes_h2d, (long long)s->bytes_d2h);
        print_devices_json(s);
        /* Where the wall time went (docs/cli.md, "Where the time goes"): the CUDA start this
         * process waited for past the reading of the inputs, then the job's own phases. */
        const oc_gram_phases *ph = &s->phases;
        printf(", \"phases\": {\"cuda_start\": %.6f, \"read\": %.6f, \"prepare\": %.6f, \"setup\": %.6f, "
               "\"compute\": %.6f, \"output\": %.6f, \"teardown\": %.6f}",
               cuda_wait + ph->cuda_start, load_seconds, ph->prepare, ph->setup, ph->compute, ph->output, ph->teardown);
        /* Under mpirun: every rank's rows, backend, tiles, time and bytes (docs/mpi.md). */
        if (ranks_json) printf(", \"ranks\": %s", ranks_json);
        printf("}\n");
        return;
    }
    char r1[32], r2[32], mem[32], gpu[128] = "", what[64] = "";
    if (g->opts.topk > 0) snprintf(what, sizeof what, " top-%lld", (long long)g->opts.topk);
    if (g->opts.use_threshold) snprintf(what, sizeof what, " %lld pairs", (long long)s->pairs);
    if (s->backend == OC_BACKEND_CUDA) {
        char peak[32], budget[32];
        snprintf(gpu, sizeof gpu, ", GPU peak %s of %s budget", cli_bytes((double)s->dev_peak_bytes, peak, sizeof peak),
                 cli_bytes((double)s->dev_budget_bytes, budget, sizeof budget));
    }
    cli_message("%s %lld x %lld over %lld columns on %s: %.3f s, %sbit-MAC/s effective (%sbit-MAC/s computed), "
                "peak memory %s%s ->%s %s",
                oc_metric_name(g->opts.metric), (long long)n, (long long)p, (long long)m, s->backend_desc, s->seconds,
                cli_si(eff, r1, sizeof r1), cli_si(raw, r2, sizeof r2),
                cli_bytes((double)s->host_peak_bytes, mem, sizeof mem), gpu, what, g->output);
    /* Several devices: what each did, on one line. */
    if (s->device_count > 1) {
        char line[OC_MAX_LOGICAL_DEVICES * 96] = "";
        size_t used = 0;
        for (int d = 0; d < s->device_count && used < sizeof line; ++d) {
            char peak[32];
            used += (size_t)snprintf(line + used, sizeof line - used, "%s%s %lld tiles, busy %.3f s, peak %s",
                                     d ? "; " : "", s->devices[d].name, (long long)s->devices[d].tiles,
                                     s->devices[d].busy_seconds,
                                     cli_bytes((double)s->devices[d].peak_bytes, peak, sizeof peak));
        }
        cli_message("devices: %s", line);
    }
}

/* parse_gram_args for cli_parse_off_rank0. */
static int parse_args(int argc, char **argv, void *g) { return parse_gram_args(argc, argv, g); }

/* Whether the job will surely want the GPU: a device list or --backend cuda, or auto over
 * inputs of at least WARM_UP_BYTES (far past the size the CPU finishes before a GPU could
 * start: cost_gram.h). Such a job starts CUDA on a thread while the inputs are read. */
#define WARM_UP_BYTES (1LL << 30)

static int wants_gpu(const gram_args *g)
{
    if (g->opts.backend == OC_BACKEND_CPU) return 0;
    if ((g->opts.devices && *g->opts.devices) || g->opts.backend == OC_BACKEND_CUDA) return 1;
    long long bytes = 0;
    for (int i = 0; i < g->ninputs; ++i) {
        struct stat st;
        if (stat(g->inputs[i], &st) == 0) bytes += (long long)st.st_size;
    }
    return bytes >= WARM_UP_BYTES;
}

/* A packed .npy (--bits) for a job sent to the GPU (--backend cuda) stays in its file: the
 * upload threads read its rows straight into the pinned ring, as fast as they copy a packed
 * copy of it, so reading it into memory first (about 1 s for 25 GB) and freeing it after
 * (0.4 s more) only add to the wall time (docs/design-notes.md, "A packed input for the GPU
 * stays in its file"). Not under MPI ranks (their row views were measured with loaded
 * inputs only) and not for the sparse algorithm, which runs on the CPU from row lists. */
static int read_in_file(const gram_args *g, int ranked)
{
    if (ranked || g->read.bits <= 0 || g->opts.backend != OC_BACKEND_CUDA || g->opts.algorithm == OC_ALGORITHM_SPARSE)
        return 0;
    for (int i = 0; i < g->ninputs; ++i)
        if (strcmp(cli_path_extension(g->inputs[i]), "npy") != 0) return 0;
    return 1;
}

static void *warm_up_thread(void *arg)
{
    const gram_args *g = arg;
    (void)oc_cuda_warm_up(g->opts.devices, g->opts.device);
    return NULL;
}

/* After the job (or its plan): the options only a GPU job uses, given to one on the CPU. */
static void warn_gpu_only(const gram_args *g)
{
    cli_warn_gpu_only("--gpu-mem", g->gpu_mem, g->gpu_mem != NULL, g->opts.backend);
    cli_warn_gpu_only("--device", g->device, g->device != NULL, g->opts.backend);
    cli_warn_gpu_only("--gpu-mem-mode", oc_gpu_mem_mode_name(g->opts.gpu_mem_mode), g->gpu_mem_mode, g->opts.backend);
}

/* oc_gram_explain's "backend: " and "algorithm: " lines into stats' explanation: what
 * --explain prints before the job, and, under ranks, whose stats' explanation is the last
 * sub-job's of rank 0 (a block of its rows), what --json gives as the whole job's prediction,
 * as --plan gives its plan. Left as it is when the prediction fails. */
static void whole_job_explain(oc_context *ctx, const oc_matrix *a, const oc_matrix *b, const oc_gram_options *opts,
                              const oc_output *out, oc_gram_stats *stats)
{
    char *text = NULL;
    if (oc_gram_explain(ctx, a, b, opts, out, &text) != OC_OK || !text) return;
    static const char backend[] = "backend: ", algorithm[] = "algorithm: ";
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (strncmp(line, backend, sizeof backend - 1) == 0)
            snprintf(stats->backend_explain, sizeof stats->backend_explain, "%s", line + sizeof backend - 1);
        else if (strncmp(line, algorithm, sizeof algorithm - 1) == 0)
            snprintf(stats->algorithm_desc, sizeof stats->algorithm_desc, "%s", line + sizeof algorithm - 1);
    }
    free(text);
}

int oc_cmd_gram(int argc, char **argv)
{
    gram_args g = {.opts = OC_GRAM_OPTIONS_INIT, .read = OC_READ_OPTIONS_INIT};
    char held[2048];
    int rc = cli_parse_off_rank0(parse_args, argc, argv, &g, held, sizeof held);
    int env_size = 0, env_rank = 0;
    const char *var = NULL;
    /* --help; or a usage error with no ranks to tell (none, or a build without MPI) */
    if (rc == OC_EXIT_OK || (rc >= 0 && (!cli_launched_by_mpi(&env_size, &env_rank, &var) || !oc_mpi_library())))
        return rc;
    int ranked = 0, rank = 0, size = 1, parsed = rc;
    rc = cli_start_ranks("gram", &ranked, &rank, &size);
    if (rc >= 0) return rc;
    if (ranked && ((rc = cli_usage_over_ranks(parsed, held, rank, size)) >= 0 ||
                   (rc = cli_same_command_over_ranks(argc, argv, rank)) >= 0)) {
        oc_mpi_finalize();
        return rc;
    }
    if (!ranked) cli_limit_visible_devices(g.opts.devices, g.opts.device); /* ranks pick theirs */

    oc_context *ctx = NULL;
    oc_matrix *a = NULL, *b = NULL;
    char *ranks_json = NULL;
    oc_status st = oc_context_create(&ctx);
    if (st != OC_OK) {
        rc = cli_usage_error("cannot create a context: %s", oc_status_string(st)) - 1;
        goto done;
    }
    cli_cancel_on_signal(ctx);
    cli_quiet_library(ctx, g.quiet);
    cli_warnings_from_rank0(ctx, ranked, rank);

    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_FILE;
    out.path = g.output;
    /* What the inputs declare, before they are read: a tiny file declaring a huge shape, or a
     * dense result larger than the disk, is refused at once instead of after the reading. */
    if (!g.plan) {
        st = oc_gram_check_files(ctx, g.inputs[0], g.ninputs > 1 ? g.inputs[1] : NULL, &g.read, &g.opts, &out);
        if (ranked) st = cli_agree_or_cancel(ctx, st);
        if (st != OC_OK) goto failed;
    }

    /* The driver's start and the devices' contexts (about a second on a host of several
     * GPUs) overlap the reading of the inputs. */
    pthread_t warm_up;
    int warming = !ranked && wants_gpu(&g) && pthread_create(&warm_up, NULL, warm_up_thread, &g) == 0;
    double t0 = cli_now();
    oc_read_options read = g.read;
    if (read_in_file(&g, ranked)) read.host_mem_bytes = 1; /* no budget keeps it: it stays in its file */
    /* A signal caught while the headers were checked would be cleared by A's start, and one
     * caught after A's read stopped checking by B's: neither read starts after one. */
    if (!cli_cancel_requested()) st = oc_matrix_read(ctx, g.inputs[0], &read, &a);
    if (st == OC_OK && g.ninputs > 1 && !cli_cancel_requested()) st = oc_matrix_read(ctx, g.inputs[1], &read, &b);
    /* Every rank reads the inputs; one that cannot (or was cancelled) fails the job on all of them. */
    if (ranked) st = cli_agree_or_cancel(ctx, st);
    double load_seconds = cli_now() - t0, t = t0, cuda_wait = 0;
    cli_trace_phase(&t, "read inputs");
    if (warming) {
        pthread_join(warm_up, NULL);
        cuda_wait = cli_now() - t;
        cli_trace_phase(&t, "CUDA start");
    }
    if (st != OC_OK) goto failed;
    if (!ranked && (rc = cli_cancelled_before_job()) >= 0) goto done; /* under ranks: the agreement above */

    /* The plan and the explanation of a ranked job: rank 0's share of its node, as the job
     * runs it (collective: every rank takes its share). */
    oc_gram_options shared = g.opts;
    if (ranked) oc_mpi_node_share(&shared);
    if (g.plan) {
        char *text = NULL;
        if (rank == 0) { /* under ranks: the whole job's plan, as one process would run it */
            st = oc_gram_plan(ctx, a, b, &shared, &out, g.json, &text);
            if (st != OC_OK) goto failed;
            fputs(text, stdout);
            free(text);
            if (g.explain && !g.json) { /* the prediction after the plan, as --explain prints it */
                text = NULL;
                st = oc_gram_explain(ctx, a, b, &shared, &out, &text);
                if (st != OC_OK) goto failed;
                fputs(text, stdout);
                free(text);
            }
            warn_gpu_only(&g);
        }
        rc = OC_EXIT_OK;
        goto done;
    }

    /* --explain predicts before the job starts, as matmul and map do; under ranks, the whole
     * job's prediction as one process would run it. The job's own choice follows the same
     * model; --json carries it in the summary. A prediction that fails leaves the job to say
     * why. */
    if (g.explain && rank == 0) {
        oc_gram_stats predicted = {.struct_size = sizeof predicted};
        whole_job_explain(ctx, a, b, &shared, &out, &predicted);
        if (predicted.backend_explain[0]) cli_message("backend %s", predicted.backend_explain);
        if (predicted.algorithm_desc[0]) cli_message("algorithm %s", predicted.algorithm_desc);
    }
    cli_progress progress;
    cli_progress_init(&progress, "gram",
                      (double)oc_matrix_rows(a) * (double)(b ? oc_matrix_rows(b) : oc_matrix_rows(a)) *
                          (double)oc_matrix_cols(a),
                      !g.quiet);
    g.opts.progress = cli_progress_update;
    g.opts.progress_user = &progress;
    oc_gram_stats stats = {.struct_size = sizeof stats};
    /* The job's start clears the context's cancel: a signal caught since the reading is
     * this job's (cli_cancel_on_signal). */
    if (ranked && (st = cli_agree_or_cancel(ctx, OC_OK)) != OC_OK) goto failed;
    if (!ranked && (rc = cli_cancelled_before_job()) >= 0) goto done;
    if (ranked) st = oc_gram_ranks(ctx, a, b, &g.opts, &out, &stats, &ranks_json);
    else st = oc_gram(ctx, a, b, &g.opts, &out, &stats);
    cli_progress_finish(&progress);
    cli_trace_phase(&t, "job");
    if (st != OC_OK) goto failed;
    if (ranked && rank == 0 && (g.explain || g.json)) whole_job_explain(ctx, a, b, &shared, &out, &stats);
    if (rank == 0) {
        /* After the job: a failure stays one line. */
        warn_gpu_only(&g);
        /* The sparse algorithm runs one worker per block of rows (its tiles), and as many as
         * the host budget holds beside its index. */
        cli_note_threads(g.opts.threads, stats.threads,
                         stats.algorithm == OC_ALGORITHM_SPARSE && stats.threads < stats.tiles
                             ? "as many as the host budget holds beside the sparse algorithm's index: --plan says "
                               "what they take"
                             : "one per tile or block of rows; more would have nothing to do");
        if (!g.quiet || g.json) print_summary(&g, a, b, &stats, load_seconds, cuda_wait, ranks_json);
        if (ranked && !g.json && !g.quiet) cli_message("one job over %d MPI ranks (--json lists each)", size);
    }
    rc = OC_EXIT_OK;
    goto done;

failed:
    /* Under ranks every rank has the same status and message (oc_mpi_agree): one line, from rank 0. */
    rc = rank == 0 ? cli_status_error(ctx, st) : cli_exit_code(st);
done:
    free(ranks_json);
    double tail = cli_now();
    oc_matrix_free(a);
    oc_matrix_free(b);
    cli_trace_phase(&tail, "free inputs");
    cli_cancel_on_signal(NULL);
    oc_context_free(ctx);
    cli_trace_phase(&tail, "context free");
    if (ranked) oc_mpi_finalize();
    return rc;
}
