#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

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

/* A number as the CLI takes it: plain decimal, as the size parser takes sizes. strtoll and
 * strtod alone would also take a leading blank or '+', and strtod hex ("0x1p-1"), though
 * not a trailing blank: written out, the rule is one. */
static int decimal_text(const char *text, const char *allowed)
{
    const char *digits = text + (text[0] == '-');
    return (isdigit((unsigned char)digits[0]) || (digits[0] == '.' && isdigit((unsigned char)digits[1]))) &&
           text[strspn(text, allowed)] == '\0';
}

int cli_parse_i64(const char *text, int64_t *out)
{
    if (!text || !decimal_text(text, "-0123456789")) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int cli_parse_u64(const char *text, uint64_t *out)
{
    if (!text || text[0] == '-' || !decimal_text(text, "0123456789")) return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *text, double *out)
{
    if (!text || !decimal_text(text, "-+.0123456789eE")) return -1;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    /* An underflow (ERANGE with a subnormal or zero) is the number Python's float() reads too;
     * an overflow is no number. */
    if ((errno && !(errno == ERANGE && fabs(v) <= DBL_MIN)) || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int cli_parse_size(const char *text, int64_t *bytes, double *fraction)
{
    int64_t b;
    double f;
    if (oc_size_parse(text, &b, &f) != OC_OK) return -1;
    /* A size leaves the fraction as it was (the option struct's default stays valid). */
    *bytes = b;
    if (f > 0) *fraction = f;
    return 0;
}

int cli_parse_threads(const char *text, int *threads)
{
    int64_t t;
    if (cli_parse_i64(text, &t) || t < 1 || t > OC_MAX_THREADS)
        return cli_usage_error("--threads %s: expected a whole number from 1 to %d", text, OC_MAX_THREADS);
    *threads = (int)t;
    return -1;
}

/* The usage error of a memory budget (option, e.g. "--gpu-mem") that cli_parse_size refused:
 * a percentage outside (0, 100] is named as one. */
static int size_error(const char *option, const char *text, const char *example, const char *percent)
{
    size_t n = strlen(text);
    if (n > 1 && text[n - 1] == '%')
        return cli_usage_error("%s %s: a percentage must be more than 0 and at most 100", option, text);
    return cli_usage_error("%s %s: expected a size such as %s (1 byte to 2^63 - 1), or a percentage such as %s", option,
                           text, example, percent);
}

int cli_parse_gpu_mem(const char *text, int64_t *bytes, double *fraction)
{
    if (cli_parse_size(text, bytes, fraction)) return size_error("--gpu-mem", text, "2G or 512M", "50%");
    return -1;
}

int cli_parse_device(const char *text, int *device)
{
    int64_t d;
    if (cli_parse_i64(text, &d) || d < 0 || d > CLI_MAX_DEVICE)
        return cli_usage_error("--device %s: expected a device index from 0 to %d", text, CLI_MAX_DEVICE);
    *device = (int)d;
    return -1;
}

int cli_parse_devices(const char *text)
{
    if (!*text) return cli_usage_error("--devices: an empty list: give device numbers such as 0,1, or all");
    return -1;
}

int cli_parse_host_mem(const char *text, int64_t *bytes)
{
    double frac = 0;
    if (cli_parse_size(text, bytes, &frac)) return size_error("--host-mem", text, "4G or 512M", "25%");
    /* A percentage is of the machine's physical memory, resolved by the library. */
    const oc_status st = oc_host_mem_parse(text, bytes);
    if (st == OC_ERR_UNSUPPORTED)
        return cli_usage_error("--host-mem %s: the machine's memory size is unknown; give a size", text);
    if (st != OC_OK) return cli_usage_error("--host-mem %s: less than a byte of this machine's memory", text);
    return -1;
}

const char *cli_next(cli_args *a)
{
    a->ntried = 0;
    while (++a->i < a->argc) {
        if (!a->options_done && strcmp(a->argv[a->i], "--") == 0) {
            a->options_done = 1;
            continue;
        }
        return a->argv[a->i];
    }
    return NULL;
}

int cli_positional(const cli_args *a)
{
    const char *arg = a->argv[a->i];
    return a->options_done || arg[0] != '-' || arg[1] == '\0';
}

/* The length of the form of spec (forms '|' apart) that arg starts with and that ends where
 * arg ends or at its '='; 0 when none does. */
static size_t match_form(const char *spec, const char *arg)
{
    while (*spec) {
        size_t len = strcspn(spec, "|");
        if (strncmp(arg, spec, len) == 0 && (arg[len] == '\0' || arg[len] == '=')) return len;
        spec += len;
        if (*spec == '|') spec++;
    }
    return 0;
}

/* Notes that the current argument was tried against spec (for cli_unknown_option). */
static void tried(cli_args *a, const char *spec, int value)
{
    if (a->ntried >= CLI_MAX_TRIED) return;
    a->tried_value[a->ntried] = (unsigned char)value;
    a->tried[a->ntried++] = spec;
}

int cli_flag(cli_args *a, const char *spec)
{
    const char *arg = a->argv[a->i];
    if (cli_positional(a)) return 0;
    tried(a, spec, 0);
    size_t len = match_form(spec, arg);
    return len > 0 && arg[len] == '\0';
}

int cli_take(cli_args *a, const char *spec, int flags)
{
    const char *arg = a->argv[a->i];
    if (!cli_positional(a)) tried(a, spec, 1);
    size_t len = cli_positional(a) ? 0 : match_form(spec, arg);
    if (len == 0) return 0;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)len, arg);
    if (!(flags & CLI_REPEATS)) {
        for (int k = 0; k < a->nseen; ++k)
            if (a->seen[k] == spec) {
                if (strchr(spec, '|'))
                    cli_usage_error("option %s given twice (%s: one option): give it once", name, spec);
                else cli_usage_error("option %s given twice: give it once", name);
                return -1;
            }
        if (a->nseen < CLI_MAX_SEEN) a->seen[a->nseen++] = spec;
    }
    if (arg[len] == '=') {
        a->value = arg + len + 1;
        return 1;
    }
    if (a->i + 1 >= a->argc) {
        cli_usage_error("option %s needs a value (see outcore %s --help)", name, a->argv[0]);
        return -1;
    }
    a->value = a->argv[++a->i];
    return 1;
}

/* The optimal string alignment distance of a[0..n) and b[0..m) (edits and swaps of two
 * neighbours); past `most` for names longer than any option, which are not compared. */
static int distance(const char *a, size_t n, const char *b, size_t m, int most)
{
    enum { LONGEST = 48 };
    if (n > LONGEST || m > LONGEST) return most + 1;
    int d[LONGEST + 1][LONGEST + 1];
    for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

int cli_unknown_option(const cli_args *a, int positionals)
{
    const char *command = a->argv[0], *arg = a->argv[a->i];
    size_t arg_len = strcspn(arg, "=");
    /* A short option with its value glued on ("-oe.npy"). */
    for (int t = 0; t < a->ntried; t++) {
        if (!a->tried_value[t]) continue;
        for (const char *f = a->tried[t]; *f; f += *f == '|') {
            size_t len = strcspn(f, "|");
            if (len == 2 && f[1] != '-' && strncmp(arg, f, 2) == 0 && arg[2] != '\0')
                return cli_usage_error("%s: unknown option %s (did you mean %.2s %s? see outcore %s --help)", command,
                                       arg, f, arg + 2, command);
            f += len;
        }
    }
    /* The nearest long form within two edits, and a third of its length. */
    const char *near = NULL;
    size_t near_len = 0;
    int best = 3, near_takes_value = 0;
    for (int t = 0; t < a->ntried; t++)
        for (const char *f = a->tried[t]; *f; f += *f == '|') {
            size_t len = strcspn(f, "|");
            int most = (int)(len / 3) < 2 ? (int)(len / 3) : 2;
            if (len > 3 && f[1] == '-') {
                int d = distance(arg, arg_len, f, len, most);
                if (d <= most && d < best) {
                    best = d;
                    near = f;
                    near_len = len;
                    near_takes_value = a->tried_value[t];
                }
            }
            f += len;
        }
    /* A flag given a value (--json=true): the name is right, the value is not taken. */
    if (near && best == 0 && !near_takes_value && arg[arg_len] == '=')
        return cli_usage_error("%s: %.*s takes no value (give %.*s alone; see outcore %s --help)", command,
                               (int)arg_len, arg, (int)arg_len, arg, command);
    if (near)
        return cli_usage_error("%s: unknown option %.*s (did you mean %.*s? see outcore %s --help)", command,
                               (int)arg_len, arg, (int)near_len, near, command);
    if (!positionals) return cli_usage_error("%s: unknown option %s (see outcore %s --help)", command, arg, command);
    return cli_usage_error("%s: unknown option %s (see outcore %s --help; an argument that starts with '-' goes after "
                           "--: outcore %s [options] -- %s)",
                           command, arg, command, command, arg);
}

const char *cli_path_extension(const char *path)
{
    /* A name's leading dots are part of it (".npy", "..npy"), as for oc_path_extension. */
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    while (*base == '.') ++base;
    const char *dot = strrchr(base, '.');
    return dot ? dot + 1 : "";
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_trace_phase(double *t, const char *phase)
{
    static int on = -1;
    if (on < 0) on = getenv("OUTCORE_TRACE") != NULL;
    double now = cli_now();
    if (on) fprintf(stderr, "outcore cli: %-12s %8.4f s\n", phase, now - *t);
    *t = now;
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

static oc_context *signal_ctx;
/* Set by the handler, read by any thread (a worker waiting on gen's planted pairs): an
 * atomic, lock-free int, which C11 allows a handler to store to. */
static atomic_int signal_seen;

static void on_signal(int sig)
{
    atomic_store(&signal_seen, sig);
    if (signal_ctx) oc_context_cancel(signal_ctx);
}

int cli_cancel_requested(void) { return atomic_load(&signal_seen) != 0; }

void cli_progress_init(cli_progress *p, const char *label, double work, int enabled)
{
    p->work = work;
    p->start = cli_now();
    p->last_draw = 0;
    p->drawn = 0;
    p->label = label;
    p->unit = "bit-MAC";
    /* A bar is for people: only on a terminal, and never when asked to be quiet. */
    p->enabled = enabled && isatty(STDERR_FILENO);
}

void cli_progress_update(void *user, double done, double total)
{
    cli_progress *p = user;
    if (signal_ctx && cli_cancel_requested()) oc_context_cancel(signal_ctx); /* cli_cancel_on_signal */
    if (!p->enabled || total <= 0) return;
    double now = cli_now(), elapsed = now - p->start;
    if (elapsed < 1.0 || (p->drawn && now - p->last_draw < 0.1)) return;
    double frac = done / total;
    if (frac > 1) frac = 1;
    char bar[31];
    int fill = (int)(frac * 30);
    for (int k = 0; k < 30; ++k) bar[k] = k < fill ? '#' : '.';
    bar[30] = '\0';
    double eta = frac > 0 ? elapsed * (1 - frac) / frac : 0;
    /* The rate of the work, or without its size of what done counts (the unit names it). */
    char rate[32] = "";
    cli_si(p->work > 0 ? frac * p->work / elapsed : done / elapsed, rate, sizeof rate);
    fprintf(stderr, "\r%s [%s] %5.1f%%  %s%s/s  ETA %.0fs   ", p->label, bar, 100 * frac, rate, p->unit, eta);
    fflush(stderr);
    p->last_draw = now;
    p->drawn = 1;
}

void cli_progress_finish(cli_progress *p)
{
    if (p->drawn) fputs("\r\033[K", stderr);
    p->drawn = 0;
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

int cli_cancelled_before_job(void)
{
    if (!cli_cancel_requested()) return -1;
    cli_message("%s", oc_status_string(OC_ERR_CANCELLED));
    return OC_EXIT_CANCELLED;
}

void cli_cancel_on_signal(oc_context *ctx)
{
    signal_ctx = ctx;
    if (ctx) atomic_store(&signal_seen, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ctx ? on_signal : SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* the terminal closed, an ssh session dropped */
}

static void removed_quietly(void *user, const char *path, int64_t bytes) { (void)user, (void)path, (void)bytes; }

void cli_quiet_library(oc_context *ctx, int quiet)
{
    if (quiet) oc_context_set_removed_fn(ctx, removed_quietly, NULL);
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
