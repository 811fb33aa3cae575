/*
 * cli.h - what the CLI says and the status it ends with: messages on stderr (every line the
 * CLI writes there), exit codes, the library's errors, the figures and notes of a job's
 * summary, the output path's check. Uses include/outcore.h only. The commands' other shared
 * parts have a file each: cli_args.h (the argument walker), cli_parse.h (option values),
 * cli_progress.h (the progress bar), cli_signal.h (signals cancel the job).
 */
#ifndef OC_TOOLS_CLI_H
#define OC_TOOLS_CLI_H

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

/* oc_output_check on a context of its own, before anything else is checked or read: a folder
 * or a missing folder is named before the extension. -1 when path can take the output,
 * else the exit status (the message printed). */
int cli_check_output(const char *path);

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
/* -q: what the library itself would say on stderr during ctx's jobs (a stale temporary it
 * removed beside the output) is silenced too; errors still are one line. quiet 0: no-op. */
void cli_quiet_library(oc_context *ctx, int quiet);
/* Under MPI ranks every rank reads the inputs: the library's warnings (oc_warn) are printed by
 * rank 0 alone, once for the job, as its errors are. */
void cli_warnings_from_rank0(oc_context *ctx, int ranked, int rank);

#endif
