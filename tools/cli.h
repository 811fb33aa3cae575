/*
 * cli.h - what the subcommands share: error reporting with exit codes, option value
 * parsing, the progress bar and the job summary. Uses include/outcore.h only.
 */
#ifndef OC_TOOLS_CLI_H
#define OC_TOOLS_CLI_H

#include <stdint.h>
#include <stdio.h>
#include "outcore.h"

#define OC_EXIT_OK 0
#define OC_EXIT_FAILURE 1
#define OC_EXIT_USAGE 2
#define OC_EXIT_CANCELLED 130

/* Prints "outcore: <message>" on stderr as one line, escaped for a terminal (oc_text_escape:
 * a control byte or invalid UTF-8 in a name it quotes becomes \xNN). Every line the CLI
 * writes to stderr goes through it. */
void cli_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* cli_message, then returns 2. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A command's exit status once what it printed is out: when standard output could not take
 * it (a full disk, a closed pipe), one line saying so and 1 in place of a success. */
int cli_stdout_status(int status);
/* s escaped for a terminal; s as a JSON string literal, quotes included (NULL: null). */
void cli_shown(FILE *f, const char *s);
void cli_json_string(FILE *f, const char *s);
/* Set by --verbose: errors are followed by the library's file:line trace. */
extern int cli_verbose;

/* Prints the context's last error and returns the exit status its status maps to. With
 * --verbose (or OUTCORE_VERBOSE set), the file:line trace follows on further lines. */
int cli_status_error(oc_context *ctx, oc_status st);
int cli_exit_code(oc_status st);

/* Strict parsers: the whole text must be the value. Return 0 on success. */
int cli_parse_i64(const char *text, int64_t *out);
/* A plain decimal whole number from 0 to 2^64 - 1. 0 on success. */
int cli_parse_u64(const char *text, uint64_t *out);
int cli_parse_double(const char *text, double *out);
/* "123", "64K", "64M", "2G", "1.5GiB" -> bytes; "90%" -> *fraction = 0.9, *bytes = 0. */
int cli_parse_size(const char *text, int64_t *bytes, double *fraction);
/* --threads N (1..OC_MAX_THREADS) and --host-mem SIZE|PCT (a percentage of the machine's physical
 * memory, resolved to bytes): -1 when parsed, else the usage error's exit status. */
int cli_parse_threads(const char *text, int *threads);
int cli_parse_host_mem(const char *text, int64_t *bytes);
/* --gpu-mem SIZE|PCT as cli_parse_size reads it (a size leaves *fraction as it was): -1 when
 * parsed, else the usage error's exit status. */
int cli_parse_gpu_mem(const char *text, int64_t *bytes, double *fraction);
/* --device N (0..CLI_MAX_DEVICE) and --devices LIST (not empty; the library parses the list,
 * with one message per bad token): -1 when parsed, else the usage error's exit status. */
#define CLI_MAX_DEVICE 1023
int cli_parse_device(const char *text, int *device);
int cli_parse_devices(const char *text);

/* A command's arguments, walked in order by cli_next. "--" ends the options: every argument
 * after it is positional, even one that starts with '-' (a map expression such as -a * 2).
 * An option that takes a value may be given once (cli_take refuses a second one naming it),
 * unless it is taken with CLI_REPEATS (map's --set); a flag given twice is the same as once. */
#define CLI_MAX_SEEN 32
#define CLI_MAX_TRIED 64
typedef struct cli_args {
    int argc;
    char **argv;                    /* argv[0] is the command's name */
    int i;                          /* the argument cli_next returned last */
    int options_done;               /* "--" was seen */
    const char *value;              /* the value of the option cli_take matched last */
    const char *seen[CLI_MAX_SEEN]; /* the specs of the value options given so far */
    int nseen;
    /* The specs the current argument was tried against (cli_flag, cli_take), so that an
     * unknown option can name the nearest: the command's options, without a list to keep. */
    const char *tried[CLI_MAX_TRIED];
    unsigned char tried_value[CLI_MAX_TRIED]; /* 1: tried by cli_take (the option takes a value) */
    int ntried;
} cli_args;

#define CLI_ARGS_INIT(argc, argv)      \
    {                                  \
        .argc = (argc), .argv = (argv) \
    }
#define CLI_REPEATS 1

/* The next argument (skipping the "--" that ends the options), or NULL after the last. */
const char *cli_next(cli_args *a);
/* Whether the argument cli_next returned is positional: after "--", "-" alone, or not
 * starting with '-'. */
int cli_positional(const cli_args *a);
/* Whether the argument is the flag spec names ("--quiet|-q": the forms, '|' apart). */
int cli_flag(cli_args *a, const char *spec);
/* Matches an option with a value, "NAME VALUE" or "--name=VALUE", in any form of spec:
 * 1 when matched (value in a->value), 0 when the argument is another option, -1 when the
 * value is missing or the option was given before without CLI_REPEATS (after printing the
 * usage error). flags: 0 or CLI_REPEATS. */
int cli_take(cli_args *a, const char *spec, int flags);
/* The usage error of an argument that starts with '-' and is no option of the command: it
 * names the nearest option the argument was tried against when one is near ("--bandwith":
 * --bandwidth; "-oe.npy": -o e.npy), else, for a command that takes positional arguments
 * (positionals != 0), says that such an argument goes after "--". Returns 2. */
int cli_unknown_option(const cli_args *a, int positionals);

/* In a command's argument loop: whether the current argument is option spec with a value,
 * which it puts in v (the match's result in r: -1 means the usage error was printed). */
#define CLI_OPTION(args, r, v, spec) (((r) = cli_take((args), (spec), 0)) != 0 && ((v) = (args)->value, 1))

/* The progress bar: pass as oc_gram_options.progress with a cli_progress as user data. It
 * draws on stderr (a terminal only) once the job has run about a second, and cancels the job
 * when a signal was caught (cli_cancel_on_signal), -q or not. */
typedef struct cli_progress {
    double start;
    double last_draw;
    int drawn;
    int enabled;
    const char *label;
    double work;      /* bit-MACs the whole job represents (n·p·m), for the rate; 0: the rate is
                       * of what the job's progress counts (done) */
    const char *unit; /* of the rate: "bit-MAC" unless set after init ("B" for bytes) */
} cli_progress;
void cli_progress_init(cli_progress *p, const char *label, double work, int enabled);
void cli_progress_update(void *user, double done, double total);
void cli_progress_finish(cli_progress *p);

/* oc_output_check on a context of its own, before anything else is checked or read: a folder
 * or a missing folder is named before the extension. -1 when path can take the output,
 * else the exit status (the message printed). */
int cli_check_output(const char *path);

/* The extension of path's file name after its last dot ("npy"), or "" when it has none. */
const char *cli_path_extension(const char *path);
double cli_now(void);
/* OUTCORE_TRACE (docs/environment.md): prints "outcore cli: <phase> <seconds since *t>" to
 * stderr and sets *t to now; with the variable unset only the clock is read. */
void cli_trace_phase(double *t, const char *phase);
/* "1.23 T", "456 G" style figure with a unit prefix. */
const char *cli_si(double value, char *buf, int size);
/* "120 MiB" style byte count. */
const char *cli_bytes(double bytes, char *buf, int size);

/* After a job: "--threads N: ran M (why)" on stderr when the job ran fewer CPU threads
 * (ran > 0) than --threads asked (asked > 0). */
void cli_note_threads(int asked, int ran, const char *why);
/* A one-line warning when an option that only a GPU job uses was given (given != 0:
 * "--gpu-mem 2G", "--device 1", "--tf32") to a job that ran on no GPU: --backend cpu, or a
 * machine without a usable one. Called after the job succeeded. */
void cli_warn_gpu_only(const char *option, const char *value, int given, oc_backend backend);

/* Installs SIGINT/SIGTERM/SIGHUP handlers that cancel the job running on ctx; NULL restores the
 * default actions (before ctx is freed: under mpirun a SIGTERM can come at any time). A job's
 * start clears the context's cancel flag (oc_context_cancel), so a signal caught between two
 * calls (after an input's read, before the job) would be lost: the commands check
 * cli_cancel_requested before each job (cli_cancelled_before_job), and cli_progress_update
 * cancels the job again at its first report when a signal came in the instant before it
 * started. */
void cli_cancel_on_signal(oc_context *ctx);
/* Nonzero once such a handler caught a signal (since cli_cancel_on_signal installed it): under
 * MPI ranks the CLI's own agreements before the job count it as a cancel. */
int cli_cancel_requested(void);
/* Before a job: OC_EXIT_CANCELLED, having said "cancelled" on stderr, when such a handler
 * caught a signal; else -1 (start the job). */
int cli_cancelled_before_job(void);
/* -q: what the library itself would say on stderr during ctx's jobs (a stale temporary it
 * removed beside the output) is silenced too; errors still are one line. quiet 0: no-op. */
void cli_quiet_library(oc_context *ctx, int quiet);

#endif
