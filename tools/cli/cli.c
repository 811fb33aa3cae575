/*
 * cli.c - what the CLI says and the status it ends with (cli.h): messages on stderr, exit
 * codes, the figures and notes of a job's summary, the output path's check.
 */
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_verbose = 0;

/* Writes s to f escaped as how says (oc_text_escape). */
static void put_escaped(FILE *f, const char *s, oc_escape how)
{
    char stack[512];
    size_t n = oc_text_escape(NULL, 0, s, how);
    char *buf = n < sizeof stack ? stack : malloc(n + 1);
    if (!buf) return;
    oc_text_escape(buf, n + 1, s, how);
    fwrite(buf, 1, n, f);
    if (buf != stack) free(buf);
}

void cli_json_string(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    put_escaped(f, s, OC_ESCAPE_JSON);
    fputc('"', f);
}

void cli_shown(FILE *f, const char *s) { put_escaped(f, s, OC_ESCAPE_TERMINAL); }

static void vmessage(const char *fmt, va_list ap)
{
    char stack[1024], *text = stack;
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(stack, sizeof stack, fmt, ap);
    if (n >= (int)sizeof stack && (text = malloc((size_t)n + 1)) != NULL) vsnprintf(text, (size_t)n + 1, fmt, again);
    va_end(again);
    /* The whole line in one write: stderr is unbuffered, and a launcher (mpirun) that merges
     * several processes' output may put its own lines between the writes of one. */
    const char *shown = text ? text : stack;
    const size_t escaped = oc_text_escape(NULL, 0, shown, OC_ESCAPE_TERMINAL);
    char line_stack[1200], *line = escaped + 11 <= sizeof line_stack ? line_stack : malloc(escaped + 11);
    if (line) {
        memcpy(line, "outcore: ", 9);
        oc_text_escape(line + 9, escaped + 1, shown, OC_ESCAPE_TERMINAL);
        line[9 + escaped] = '\n';
        fwrite(line, 1, escaped + 10, stderr);
        if (line != line_stack) free(line);
    } else {
        fputs("outcore: ", stderr);
        cli_shown(stderr, shown);
        fputc('\n', stderr);
    }
    if (text && text != stack) free(text);
}

void cli_message(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
}

int cli_stdout_status(int status)
{
    errno = 0;
    const int flushed = fflush(stdout) == 0;
    if (flushed && !ferror(stdout)) return status;
    cli_message("standard output: %s", !flushed && errno ? strerror(errno) : "a write failed");
    return status == OC_EXIT_OK ? OC_EXIT_FAILURE : status;
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(fmt, ap);
    va_end(ap);
    return OC_EXIT_USAGE;
}

int cli_exit_code(oc_status st)
{
    switch (st) {
    case OC_OK:
        return OC_EXIT_OK;
    case OC_ERR_INVALID_ARGUMENT:
    case OC_ERR_INPUT:
        return OC_EXIT_USAGE;
    case OC_ERR_CANCELLED:
        return OC_EXIT_CANCELLED;
    default:
        return OC_EXIT_FAILURE;
    }
}

int cli_status_error(oc_context *ctx, oc_status st)
{
    const char *msg = ctx ? oc_context_last_error(ctx) : "";
    cli_message("%s", msg && *msg ? msg : oc_status_string(st));
    if (ctx && (cli_verbose || getenv("OUTCORE_VERBOSE"))) {
        /* The trace's lines, each escaped as a message is. */
        const char *text = oc_context_error_trace(ctx);
        char *trace = text ? strdup(text) : NULL;
        for (char *line = trace, *end; line && *line; line = end ? end + 1 : NULL) {
            end = strchr(line, '\n');
            if (end) *end = '\0';
            cli_shown(stderr, line);
            fputc('\n', stderr);
        }
        free(trace);
    }
    return cli_exit_code(st);
}

const char *cli_si(double v, char *buf, int size)
{
    static const char prefixes[] = " kMGTPE";
    int k = 0;
    while (fabs(v) >= 1000.0 && k < 6) {
        v /= 1000.0;
        k++;
    }
    if (k == 0) snprintf(buf, (size_t)size, "%.3g", v);
    else snprintf(buf, (size_t)size, "%.3g %c", v, prefixes[k]);
    return buf;
}

const char *cli_bytes(double b, char *buf, int size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int k = 0;
    while (b >= 1024.0 && k < 4) {
        b /= 1024.0;
        k++;
    }
    snprintf(buf, (size_t)size, k ? "%.1f %s" : "%.0f %s", b, units[k]);
    return buf;
}

void cli_note_threads(int asked, int ran, const char *why)
{
    if (asked > 0 && ran > 0 && ran < asked) cli_message("--threads %d: ran %d (%s)", asked, ran, why);
}

void cli_warn_gpu_only(const char *option, const char *value, int given, oc_backend backend)
{
    if (!given) return;
    const char *gap = value ? " " : "";
    if (!value) value = "";
    if (backend == OC_BACKEND_CPU) cli_message("warning: %s%s%s has no effect with --backend cpu", option, gap, value);
    else if (oc_cuda_device_count() == 0)
        cli_message("warning: %s%s%s has no effect: no usable GPU, the job runs on the CPU", option, gap, value);
}

static void removed_quietly(void *user, const char *path, int64_t bytes) { (void)user, (void)path, (void)bytes; }

void cli_quiet_library(oc_context *ctx, int quiet)
{
    if (quiet) oc_context_set_removed_fn(ctx, removed_quietly, NULL);
}

static void warned_quietly(void *user, const char *message) { (void)user, (void)message; }

void cli_warnings_from_rank0(oc_context *ctx, int ranked, int rank)
{
    if (ranked && rank != 0) oc_context_set_warning_fn(ctx, warned_quietly, NULL);
}

int cli_check_output(const char *path)
{
    oc_context *ctx = NULL;
    oc_status st = oc_context_create(&ctx);
    if (st == OC_OK) st = oc_output_check(ctx, path);
    int rc = st == OC_OK ? -1 : cli_status_error(ctx, st);
    oc_context_free(ctx);
    return rc;
}
