/*
 * cli.h - what the subcommands share: error reporting with exit codes, option value
 * parsing, the progress bar and the job summary. Uses include/outcore.h only.
 */
#ifndef OC_TOOLS_CLI_H
#define OC_TOOLS_CLI_H

#include <stdint.h>
#include "outcore.h"

#define OC_EXIT_OK 0
#define OC_EXIT_FAILURE 1
#define OC_EXIT_USAGE 2
#define OC_EXIT_CANCELLED 130

/* Prints "outcore: <message>" on stderr (one line) and returns 2. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Set by --verbose: errors are followed by the library's file:line trace. */
extern int cli_verbose;

/* Prints the context's last error and returns the exit status its status maps to. With
 * --verbose (or OUTCORE_VERBOSE set), the file:line trace follows on further lines. */
int cli_status_error(oc_context *ctx, oc_status st);
int cli_exit_code(oc_status st);

/* Strict parsers: the whole text must be the value. Return 0 on success. */
int cli_parse_i64(const char *text, int64_t *out);
int cli_parse_double(const char *text, double *out);
/* "123", "64K", "64M", "2G", "1.5GiB" -> bytes; "90%" -> *fraction = 0.9, *bytes = 0. */
int cli_parse_size(const char *text, int64_t *bytes, double *fraction);
/* --threads N (1..4096) and --host-mem SIZE|PCT (a percentage of the machine's physical
 * memory, resolved to bytes): -1 when parsed, else the usage error's exit status. */
int cli_parse_threads(const char *text, int *threads);
int cli_parse_host_mem(const char *text, int64_t *bytes);

/* Matches "--name VALUE" or "--name=VALUE" at argv[*i]; advances *i past the value.
 * Returns 1 when matched (value in *value), 0 when argv[*i] is another option, -1 when the
 * value is missing (after printing the usage error). */
int cli_option(int argc, char **argv, int *i, const char *name, const char **value);

/* The progress bar: pass as oc_gram_options.progress with a cli_progress as user data. It
 * draws on stderr (a terminal only) once the job has run about a second. */
typedef struct cli_progress {
    double start;
    double last_draw;
    int drawn;
    int enabled;
    const char *label;
    double work;        /* bit-MACs the whole job represents (n·p·m), for the rate; 0 = unknown */
    const char *unit;   /* of work, for the rate: "bit-MAC" unless set after init ("B" for bytes) */
} cli_progress;
void cli_progress_init(cli_progress *p, const char *label, double work, int enabled);
void cli_progress_update(void *user, double done, double total);
void cli_progress_finish(cli_progress *p);

/* oc_output_check on a context of its own, before anything else is checked or read: a folder
 * or a missing folder is named before the extension. -1 when path can take the output,
 * else the exit status (the message printed). */
int cli_check_output(const char *path);

/* The extension of path's file name after its last dot ("npz"), or "" when it has none. */
const char *cli_path_extension(const char *path);
double cli_now(void);
/* OUTCORE_TRACE (docs/environment.md): prints "outcore cli: <phase> <seconds since *t>" to
 * stderr and sets *t to now; with the variable unset only the clock is read. */
void cli_trace_phase(double *t, const char *phase);
/* "1.23 T", "456 G" style figure with a unit prefix. */
const char *cli_si(double value, char *buf, int size);
/* "120 MiB" style byte count. */
const char *cli_bytes(double bytes, char *buf, int size);

/* Installs SIGINT/SIGTERM handlers that cancel the job running on ctx; NULL restores the
 * default actions (before ctx is freed: under mpirun a SIGTERM can come at any time). */
void cli_cancel_on_signal(oc_context *ctx);

#endif
