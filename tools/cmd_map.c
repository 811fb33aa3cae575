/* cmd_map.c - `outcore map`: an element-wise expression over .npy arrays (docs/map.md). */
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_names.h"
#include "cli/cli_parse.h"
#include "cli/cli_placement.h"
#include "cli/cli_progress.h"
#include "cli/cli_signal.h"
#include "cli/cli_visible.h"
#include "commands.h"

static const char map_usage[] = "usage: outcore map EXPR NAME=FILE.npy ... -o OUT.npy [options]\n";
/* Then the --reduce synopsis, from the library's list (print_usage), and the rest. */
static const char map_usage_about[] =
    "\n"
    "Evaluates a numpy-style expression element by element over .npy arrays of any size,\n"
    "with numpy's broadcasting and type promotion (NEP 50), on all CPU cores. See docs/map.md.\n";
/* Then the operators and functions, from the library's lists (print_usage), and the options. */
static const char map_usage_options[] =
    "\n"
    "  -o, --output OUT.npy   result file (written under a temporary name, renamed when done);\n"
    "                         a reduction to one value without -o prints it\n"
    "  --set NAME=VALUE       a Python scalar (weak in numpy's promotion: float32 * 0.5 stays float32)\n";
/* Then the --dtype line, from the library's list (print_usage), and the rest. */
static const char map_usage_dtype[] =
    "                         the output dtype (default: numpy's result type); the result\n"
    "                         must cast to it under numpy's same_kind rule\n";
/* Then the --reduce line, from the library's list (print_usage), and the rest. */
static const char map_usage_reduce[] =
    "                         of the result, never materialised\n"
    "  --axis N               reduce over axis N only (negative counts from the end; default:\n"
    "                         over all elements, to one value)\n";
/* Then the --backend line, from the library's list (print_usage), and the rest. */
static const char map_usage_backend[] =
    "                         auto runs the faster by the cost model; cuda runs element-wise\n"
    "                         jobs and reductions (per chunk on the device, in the orders\n"
    "                         docs/map.md states)\n"
    "  --threads N            CPU threads (default: all cores)\n" CLI_HELP_HOST_MEM ": inputs are\n"
    "                         memory-mapped, and the pages read are dropped past it\n" CLI_HELP_GPU_MEM "\n"
    "  --explain              print what the job does and why (backend, types, bytes)\n"
    "  --json                 print the summary as JSON on stdout\n"
    "  -q, --quiet            no progress bar, no summary, no line for a stale temporary removed\n"
    "  -v, --verbose          on failure, also print the library's file:line trace\n"
    "  --                     ends the options: an expression after it may start with '-'\n"
    "                         (outcore map -o OUT.npy -- '-a * 2' a=A.npy)\n";

static void print_usage(void)
{
    cli_wrap w = {.width = 88};
    char reductions[128];
    fputs(map_usage, stdout);
    printf("       outcore map EXPR NAME=FILE.npy ... --reduce %s [--axis N] [-o OUT.npy]\n",
           cli_join_names(reductions, sizeof reductions, cli_map_reduction_at, "|", "|", NULL));
    fputs(map_usage_about, stdout);
    cli_wrap_word(&w, "Operators:", "");
    cli_wrap_names(&w, cli_map_operator_at, ";");
    cli_wrap_word(&w, "functions:", "");
    cli_wrap_names(&w, cli_map_function_at, ".");
    putchar('\n');
    fputs(map_usage_options, stdout);
    const oc_map_options defaults = OC_MAP_OPTIONS_INIT;
    cli_help_names("--dtype T", cli_map_dtype_at, NULL);
    fputs(map_usage_dtype, stdout);
    cli_help_names("--reduce OP", cli_map_reduction_at, NULL);
    fputs(map_usage_reduce, stdout);
    cli_help_names("--backend B", cli_backend_at, oc_backend_name(defaults.backend));
    fputs(map_usage_backend, stdout);
}

#define MAX_ARGS 64

typedef struct map_args {
    const char *expr;
    const char *output;
    const char *gpu_mem; /* --gpu-mem as given */
    oc_map_array inputs[MAX_ARGS];
    int ninputs;
    oc_map_scalar scalars[MAX_ARGS];
    int nscalars;
    char *names[2 * MAX_ARGS];
    int nnames;
    int json, quiet, explain;
    oc_map_options opts;
} map_args;

/* Splits "NAME=VALUE" into a copy of NAME and a pointer to VALUE; NULL when there is no '='. */
static const char *split_binding(map_args *g, const char *arg, char **name)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) return NULL;
    *name = strndup(arg, (size_t)(eq - arg));
    if (*name) g->names[g->nnames++] = *name;
    return *name ? eq + 1 : NULL;
}

/* A reduction by the library's name ("none" is no reduction to ask for). */
static int parse_reduce(const char *v, oc_map_reduce *out)
{
    for (int i = 0; cli_map_reduction_at(i); i++)
        if (strcmp(v, cli_map_reduction_at(i)) == 0) return *out = (oc_map_reduce)(i + 1), 0;
    return -1;
}

/* Whether text reads as an input, NAME=FILE: a name, then one '=' (not '==', which an
 * expression may hold). */
static int looks_like_binding(const char *text)
{
    size_t n = 0;
    while (isalnum((unsigned char)text[n]) || text[n] == '_') n++;
    return n > 0 && !isdigit((unsigned char)text[0]) && text[n] == '=' && text[n + 1] != '=' && text[n + 1] != '\0';
}

/* The expression (the first positional argument), then the NAME=FILE.npy inputs: -1 when
 * arg was taken, else the exit status. */
static int positional_arg(map_args *g, const char *arg)
{
    if (!g->expr) {
        g->expr = arg;
        return -1;
    }
    /* The count first: names[] holds the names of MAX_ARGS inputs and MAX_ARGS scalars. */
    if (g->ninputs == MAX_ARGS && strchr(arg, '=') && arg[0] != '=')
        return cli_usage_error("map: at most %d inputs", MAX_ARGS);
    char *name = NULL;
    const char *path = split_binding(g, arg, &name);
    if (!path && g->ninputs == 0 && looks_like_binding(g->expr))
        return cli_usage_error("map: '%s' is not an input, and the expression '%s' is one: the expression goes "
                               "first (outcore map '%s' %s ...)",
                               arg, g->expr, arg, g->expr);
    if (!path)
        return cli_usage_error("map: '%s' is not an input: write NAME=FILE.npy%s", arg,
                               arg[0] == '-' ? " (options go before --)" : "");
    oc_map_array in = OC_MAP_ARRAY_INIT;
    in.name = name;
    in.path = path;
    g->inputs[g->ninputs++] = in;
    return -1;
}

static int parse_map_args(int argc, char **argv, map_args *g)
{
    cli_args args = CLI_ARGS_INIT(argc, argv), *a = &args;
    const cli_placement where = {.backend = &g->opts.backend,
                                 .threads = &g->opts.threads,
                                 .gpu_mem_bytes = &g->opts.gpu_mem_bytes,
                                 .gpu_mem_fraction = &g->opts.gpu_mem_fraction,
                                 .gpu_mem_text = &g->gpu_mem,
                                 .host_mem_bytes = &g->opts.host_mem_bytes};
    for (const char *arg; (arg = cli_next(a)) != NULL;) {
        const char *v = NULL;
        int r;
        if (cli_positional(a)) {
            if ((r = positional_arg(g, arg)) >= 0) return r;
            continue;
        }
        if (cli_flag(a, "--help|-h")) {
            print_usage();
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
        } else if ((r = cli_take(a, "--set", CLI_REPEATS)) != 0) {
            if (r < 0) return OC_EXIT_USAGE;
            v = a->value;
            if (g->nscalars == MAX_ARGS) return cli_usage_error("map: at most %d --set scalars", MAX_ARGS);
            char *name = NULL;
            const char *value = split_binding(g, v, &name);
            if (!value) return cli_usage_error("--set %s: expected NAME=VALUE", v);
            g->scalars[g->nscalars++] = (oc_map_scalar){name, value};
        } else if (CLI_OPTION(a, r, v, "--dtype")) {
            if (r < 0) return OC_EXIT_USAGE;
            if (oc_map_dtype_parse(v, &g->opts.dtype) != OC_OK) return cli_expected("--dtype", v, cli_map_dtype_at);
        } else if (CLI_OPTION(a, r, v, "--reduce")) {
            if (r < 0) return OC_EXIT_USAGE;
            if (parse_reduce(v, &g->opts.reduce)) return cli_expected("--reduce", v, cli_map_reduction_at);
        } else if (CLI_OPTION(a, r, v, "--axis")) {
            int64_t axis;
            if (r < 0) return OC_EXIT_USAGE;
            if (cli_parse_i64(v, &axis) || axis < -64 || axis > 64)
                return cli_usage_error("--axis %s: expected an axis number", v);
            g->opts.has_axis = 1;
            g->opts.axis = (int)axis;
        } else if ((r = cli_take_placement(a, &where)) != 0) {
            if (r > 0) return r;
        } else {
            return cli_unknown_option(a, 1);
        }
    }
    if (!g->expr) return cli_usage_error("map: no expression given (see outcore map --help)");
    if (!g->output && !g->explain && g->opts.reduce == OC_MAP_REDUCE_NONE)
        return cli_usage_error("map: no output given: add -o OUT.npy");
    if (g->output) {
        int rc = cli_check_output(g->output); /* a folder, a missing one: before the extension */
        if (rc >= 0) return rc;
        if (strcasecmp(cli_path_extension(g->output), "npy") != 0)
            return cli_usage_error("%s: map writes .npy files: name the output OUT.npy", g->output);
    }
    return -1;
}

/* Whether the decimal text s reads back as v: in float32 when single, else in float64. */
static int reads_back(const char *s, double v, int single)
{
    return single ? strtof(s, NULL) == (float)v : strtod(s, NULL) == v;
}

/* The shortest decimal digits that read back as v (finite, > 0; in float32 when single),
 * the closest to v among those: the digits Python's repr and numpy's str print. Writes them
 * into digits, no trailing zeros, and returns the decimal exponent of the first. */
static int shortest_digits(double v, int single, char digits[32])
{
    for (int prec = 1; prec <= 17; prec++) {
        char s[48];
        snprintf(s, sizeof s, "%.*e", prec - 1, v); /* v rounded to prec digits: d.ddde+XX */
        unsigned long long m = 0;
        for (const char *c = s; *c && *c != 'e'; c++)
            if (*c != '.') m = m * 10 + (unsigned)(*c - '0');
        int scale = atoi(strchr(s, 'e') + 1) - (prec - 1); /* v ~ m x 10^scale */
        /* Next to a power of two the values that read back as v lie further on one side: the
         * other prec-digit neighbour of v may read back where the nearest does not. */
        if (!reads_back(s, v, single)) {
            m = strtod(s, NULL) > v ? m - 1 : m + 1;
            snprintf(s, sizeof s, "%llue%d", m, scale);
            if (!reads_back(s, v, single)) continue;
        }
        int n = snprintf(digits, 32, "%llu", m);
        int exponent = scale + n - 1;
        while (n > 1 && digits[n - 1] == '0') digits[--n] = '\0';
        return exponent;
    }
    /* Unreachable: 17 digits always read back a double. */
    snprintf(digits, 32, "0");
    return 0;
}

/* A float as numpy's str() prints a float64 or float32 scalar (Python's repr for float64):
 * the shortest digits that read back in that type; positional from 1e-4 up to 1e16 (float64)
 * or 1e6 (float32), else scientific (1e+16, 1.5e-07); nan, inf and -inf. */
static void format_float(double v, int single, char *buf, size_t size)
{
    if (isnan(v)) {
        snprintf(buf, size, "nan");
        return;
    }
    const char *sign = signbit(v) ? "-" : "";
    double a = fabs(v);
    if (isinf(v)) {
        snprintf(buf, size, "%sinf", sign);
        return;
    }
    if (a == 0) {
        snprintf(buf, size, "%s0.0", sign);
        return;
    }
    char d[32];
    int e = shortest_digits(a, single, d), n = (int)strlen(d);
    if (a >= 1e-4 && a < (single ? 1e6 : 1e16)) { /* e from -4 to 15 */
        static const char zeros[] = "0000000000000000";
        if (e < 0) snprintf(buf, size, "%s0.%.*s%s", sign, -e - 1, zeros, d);
        else if (n <= e + 1) snprintf(buf, size, "%s%s%.*s.0", sign, d, e + 1 - n, zeros);
        else snprintf(buf, size, "%s%.*s.%s", sign, e + 1, d, d + e + 1);
    } else {
        snprintf(buf, size, "%s%c%s%se%c%02d", sign, d[0], n > 1 ? "." : "", d + 1, e < 0 ? '-' : '+', abs(e));
    }
}

/* One value as numpy's str() prints it (as print(numpy.sum(...)) shows it). In JSON, bools
 * are true/false and NaN and the infinities, which JSON has no number for, are null. */
static const char *format_value(oc_map_dtype t, const void *p, int json, char *buf, size_t size)
{
    switch (t) {
    case OC_MAP_BOOL:
        snprintf(buf, size, "%s", *(const uint8_t *)p ? (json ? "true" : "True") : (json ? "false" : "False"));
        break;
    case OC_MAP_INT8:
        snprintf(buf, size, "%d", *(const int8_t *)p);
        break;
    case OC_MAP_INT16:
        snprintf(buf, size, "%d", *(const int16_t *)p);
        break;
    case OC_MAP_INT32:
        snprintf(buf, size, "%" PRId32, *(const int32_t *)p);
        break;
    case OC_MAP_INT64:
        snprintf(buf, size, "%" PRId64, *(const int64_t *)p);
        break;
    case OC_MAP_UINT8:
        snprintf(buf, size, "%u", *(const uint8_t *)p);
        break;
    case OC_MAP_UINT16:
        snprintf(buf, size, "%u", *(const uint16_t *)p);
        break;
    case OC_MAP_UINT32:
        snprintf(buf, size, "%" PRIu32, *(const uint32_t *)p);
        break;
    case OC_MAP_UINT64:
        snprintf(buf, size, "%" PRIu64, *(const uint64_t *)p);
        break;
    default: {
        double v;
        if (t == OC_MAP_FLOAT32) {
            float f;
            memcpy(&f, p, sizeof f);
            v = f;
        } else {
            memcpy(&v, p, sizeof v);
        }
        if (json && !isfinite(v)) snprintf(buf, size, "null");
        else format_float(v, t == OC_MAP_FLOAT32, buf, size);
    }
    }
    return buf;
}

static void print_summary(const map_args *g, const oc_map *m, const oc_map_stats *s, const void *value)
{
    int64_t shape[OC_MAP_MAX_DIMS];
    int nd = oc_map_result_shape(m, shape);
    double moved = (double)(s->bytes_read + s->bytes_written);
    double rate = s->seconds > 0 ? moved / s->seconds : 0;
    if (g->json) {
        printf("{\"command\": \"map\", \"expression\": ");
        cli_json_string(stdout, g->expr);
        printf(", \"output\": ");
        cli_json_string(stdout, g->output);
        char buf[64];
        if (value) printf(", \"value\": %s", format_value(oc_map_result_dtype(m), value, 1, buf, sizeof buf));
        printf(", \"dtype\": \"%s\", \"shape\": [", oc_map_dtype_name(oc_map_result_dtype(m)));
        for (int d = 0; d < nd; d++) printf("%s%" PRId64, d ? ", " : "", shape[d]);
        printf("], \"backend\": \"%s\", \"backend_desc\": ", oc_backend_name(s->backend));
        cli_json_string(stdout, s->backend_desc);
        printf(", \"seconds\": %.6f, \"elements\": %" PRId64 ", \"bytes_read\": %" PRId64
               ", \"bytes_written\": %" PRId64
               ", \"bytes_per_second\": %.6g, \"threads\": %d, \"host_peak_bytes\": %" PRId64 "}\n",
               s->seconds, s->elements, s->bytes_read, s->bytes_written, rate, s->threads, s->host_peak_bytes);
        return;
    }
    char r[32], b[32];
    cli_message("map %s on %s: %.3f s, %s moved at %sB/s -> %s", g->expr, s->backend_desc, s->seconds,
                cli_bytes(moved, b, sizeof b), cli_si(rate, r, sizeof r), g->output ? g->output : "stdout");
}

/* Under a syntax error, the expression and a caret under the column the message names. */
static void print_caret(oc_context *ctx, const char *expr)
{
    int column = 0;
    if (sscanf(oc_context_last_error(ctx), "syntax error in the expression at column %d:", &column) != 1 || column < 1)
        return;
    /* The expression as the message shows names (escaped), the caret under the column's
     * character wherever escapes widen what comes before it. */
    fputs("  ", stderr);
    cli_shown(stderr, expr);
    fputs("\n  ", stderr);
    char *before = strndup(expr, (size_t)column - 1);
    size_t width = before ? oc_text_escape(NULL, 0, before, OC_ESCAPE_TERMINAL) : 0;
    free(before);
    for (size_t i = 0; i < width; i++) fputc(' ', stderr);
    fputs("^\n", stderr);
}

static void map_args_free(map_args *g)
{
    for (int i = 0; i < g->nnames; i++) free(g->names[i]);
}

int oc_cmd_map(int argc, char **argv)
{
    map_args g = {.opts = OC_MAP_OPTIONS_INIT};
    int rc = parse_map_args(argc, argv, &g);
    if (rc >= 0) {
        map_args_free(&g);
        return rc;
    }
    cli_limit_visible_devices(NULL, 0); /* map runs on device 0 */
    oc_context *ctx = NULL;
    oc_map *m = NULL;
    oc_status st = oc_context_create(&ctx);
    if (st != OC_OK) {
        map_args_free(&g);
        return cli_usage_error("cannot create a context: %s", oc_status_string(st)) - 1;
    }
    cli_cancel_on_signal(ctx);
    cli_quiet_library(ctx, g.quiet);
    cli_progress progress;
    cli_progress_init(&progress, "map", 0, !g.quiet && !g.json);
    progress.unit = " elements"; /* the job counts the result's elements */
    g.opts.progress = cli_progress_update;
    g.opts.progress_user = &progress;
    st = oc_map_create(ctx, g.expr, g.inputs, g.ninputs, g.scalars, g.nscalars, &g.opts, &m);
    if (st != OC_OK) {
        rc = cli_status_error(ctx, st);
        print_caret(ctx, g.expr);
        goto done;
    }
    if (g.explain) {
        char *text = NULL;
        st = oc_map_explain(ctx, m, g.json && !g.output && !g.opts.reduce, &text);
        if (st != OC_OK) {
            rc = cli_status_error(ctx, st);
            goto done;
        }
        fputs(text, g.output || g.opts.reduce ? stderr : stdout);
        free(text);
        if (!g.output && !g.opts.reduce) {
            rc = OC_EXIT_OK;
            goto done;
        }
    }
    int64_t shape[OC_MAP_MAX_DIMS];
    int to_stdout = !g.output;
    if (to_stdout && oc_map_result_shape(m, shape) != 0) {
        rc = cli_usage_error("map: the result has %d dimension%s: add -o OUT.npy", oc_map_result_shape(m, shape),
                             oc_map_result_shape(m, shape) == 1 ? "" : "s");
        goto done;
    }
    unsigned char value[8] = {0};
    oc_map_stats stats = {.struct_size = sizeof stats};
    if ((rc = cli_cancelled_before_job()) >= 0) goto done; /* its start would clear the cancel */
    st = oc_map_run(ctx, m, g.output, to_stdout ? value : NULL, &stats);
    cli_progress_finish(&progress);
    if (st != OC_OK) {
        rc = cli_status_error(ctx, st);
        goto done;
    }
    /* After the job: a failure stays one line. */
    cli_warn_gpu_only("--gpu-mem", g.gpu_mem, g.gpu_mem != NULL, g.opts.backend);
    cli_note_threads(g.opts.threads, stats.threads, "one per block of the result; more would have nothing to do");
    char text[64];
    if (to_stdout && !g.json) printf("%s\n", format_value(oc_map_result_dtype(m), value, 0, text, sizeof text));
    if (!g.quiet || g.json) print_summary(&g, m, &stats, to_stdout ? value : NULL);
    rc = OC_EXIT_OK;
done:
    oc_map_free(m);
    oc_context_free(ctx);
    map_args_free(&g);
    return rc;
}
