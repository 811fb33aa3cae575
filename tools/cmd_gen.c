/* cmd_gen.c - `outcore gen`: writes a random 0/1 matrix with planted near-duplicates,
 * streamed to the file in blocks of rows by oc_matrix_write_rows. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/cli_parse.h"
#include "cli/cli_progress.h"
#include "cli/cli_signal.h"
#include "commands.h"
#include "generate.h"

static const char gen_usage[] =
    "usage: outcore gen --rows N --cols M --density P [--plant K] [--flip F] [--seed S] [--packed]\n"
    "                   [--threads N] [-q] -o A.npy\n"
    "\n"
    "Writes a random 0/1 matrix (each bit 1 with probability P, to 1/4096) as uint8 .npy, or\n"
    "as numpy.packbits rows with --packed (read it back with --bits M).\n"
    "Each row comes from its own random stream of (S, row), so the file is the same for any\n"
    "number of threads. Rows are written in blocks as they are made: the file may be larger\n"
    "than memory. The output's name, folder and free space are checked before any work.\n"
    "\n"
    "  --rows N               rows of the matrix (at least 1)\n"
    "  --cols M               columns of the matrix (at least 1)\n"
    "  --density P            the chance that a bit is 1, 0 to 1\n"
    "  --packed               write numpy.packbits rows (M / 8 bytes a row, rounded up)\n"
    "  -o, --output A.npy     the matrix file (.npy; written under a temporary name, renamed\n"
    "                         when done)\n"
    "  --plant K              make K rows near-copies of K others (default 0; K at most half\n"
    "                         the rows)\n"
    "  --flip F               a copy is its source with F x M bits flipped, rounded to the\n"
    "                         nearest whole number (halves up): that many distinct columns,\n"
    "                         drawn at random for each copy (default 0.01; 1 flips every bit)\n"
    "  --seed S               the random seed, a whole number from 0 to 2^64 - 1 (default\n"
    "                         1): the same arguments and S give the same file\n"
    "  --threads N            threads (default: all cores)\n"
    "  -q, --quiet            no progress bar, no summary line, no line for a stale temporary\n"
    "                         removed\n";

static int parse_count(const char *name, const char *v, int64_t *out)
{
    if (cli_parse_i64(v, out) || *out < 0)
        return cli_usage_error("gen: %s needs a whole number >= 0, got '%s'", name, v);
    return 0;
}

static int parse_fraction(const char *name, const char *v, double *out)
{
    if (cli_parse_double(v, out) || *out < 0 || *out > 1)
        return cli_usage_error("gen: %s needs a number in [0, 1], got '%s'", name, v);
    return 0;
}

/* The planted pairs are picked once oc_matrix_write_rows has checked the output (its name and
 * folder, its size, the free space) and reserved the file, at the first block's fill: a job
 * that cannot be written is refused before the pairs cost time and memory (a table of 20
 * million pairs takes seconds and gigabytes). They are picked on a thread of their own while
 * the workers wait, so that Ctrl-C ends the job at once even then: the workers give up, the
 * writer removes its file, and the picking thread, left to finish, frees the job. */
typedef struct gen_job {
    gen_params p;
    gen_plan plan;
    pthread_mutex_t lock;
    pthread_cond_t done;
    int state;          /* 0: not started, 2: being picked, 1: picked, -1: out of memory for them */
    int scratch_failed; /* out of memory for a planted copy's flips */
    int abandoned;      /* the command ended while the pairs were being picked */
} gen_job;

static void gen_job_free(gen_job *job)
{
    if (job->state == 1) gen_plan_free(&job->plan);
    pthread_cond_destroy(&job->done);
    pthread_mutex_destroy(&job->lock);
    free(job);
}

static void *pick_pairs(void *user)
{
    gen_job *job = user;
    gen_plan plan;
    const int ok = gen_plan_init(&plan, &job->p) == 0;
    pthread_mutex_lock(&job->lock);
    job->plan = plan;
    job->state = ok ? 1 : -1;
    const int abandoned = job->abandoned;
    pthread_cond_broadcast(&job->done);
    pthread_mutex_unlock(&job->lock);
    if (abandoned) gen_job_free(job);
    return NULL;
}

static int gen_job_fill(void *user, int64_t row0, int64_t nrows, unsigned char *bits, int64_t stride)
{
    gen_job *job = user;
    pthread_mutex_lock(&job->lock);
    if (job->state == 0) {
        pthread_t t;
        pthread_attr_t attr;
        job->state = 2;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, pick_pairs, job) != 0) {
            /* No thread to spare: picked here, where Ctrl-C waits for them. */
            pthread_mutex_unlock(&job->lock);
            pick_pairs(job);
            pthread_mutex_lock(&job->lock);
        }
        pthread_attr_destroy(&attr);
    }
    while (job->state == 2 && !cli_cancel_requested()) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000 * 1000;
        if (until.tv_nsec >= 1000 * 1000 * 1000) until.tv_sec += 1, until.tv_nsec -= 1000 * 1000 * 1000;
        pthread_cond_timedwait(&job->done, &job->lock, &until);
    }
    const int state = job->state;
    pthread_mutex_unlock(&job->lock);
    if (state != 1) return -1;
    if (gen_fill_rows(&job->plan, row0, nrows, bits, stride) == 0) return 0;
    pthread_mutex_lock(&job->lock);
    job->scratch_failed = 1;
    pthread_mutex_unlock(&job->lock);
    return -1;
}

int oc_cmd_gen(int argc, char **argv)
{
    gen_params p = {.rows = 0, .cols = 0, .density = -1, .plant = 0, .flip = 0.01, .seed = 1};
    const char *output = NULL;
    oc_write_options wopts = OC_WRITE_OPTIONS_INIT;
    int quiet = 0;
    cli_args args = CLI_ARGS_INIT(argc, argv), *a = &args;
    for (const char *arg; (arg = cli_next(a)) != NULL;) {
        const char *v = NULL;
        int r;
        if (cli_positional(a)) return cli_usage_error("gen: unexpected argument %s (see outcore gen --help)", arg);
        if (cli_flag(a, "--help|-h")) {
            fputs(gen_usage, stdout);
            return OC_EXIT_OK;
        }
        if (cli_flag(a, "--packed")) {
            wopts.packed = 1;
            continue;
        }
        if (cli_flag(a, "--quiet|-q")) {
            quiet = 1;
            continue;
        }
        if (CLI_OPTION(a, r, v, "--rows")) {
            if (r < 0 || parse_count("--rows", v, &p.rows)) return OC_EXIT_USAGE;
        } else if (CLI_OPTION(a, r, v, "--cols")) {
            if (r < 0 || parse_count("--cols", v, &p.cols)) return OC_EXIT_USAGE;
        } else if (CLI_OPTION(a, r, v, "--plant")) {
            if (r < 0 || parse_count("--plant", v, &p.plant)) return OC_EXIT_USAGE;
        } else if (CLI_OPTION(a, r, v, "--seed")) {
            if (r < 0) return OC_EXIT_USAGE;
            if (cli_parse_u64(v, &p.seed))
                return cli_usage_error("gen: --seed needs a whole number from 0 to 2^64 - 1, got '%s'", v);
        } else if (CLI_OPTION(a, r, v, "--density")) {
            if (r < 0 || parse_fraction("--density", v, &p.density)) return OC_EXIT_USAGE;
        } else if (CLI_OPTION(a, r, v, "--flip")) {
            if (r < 0 || parse_fraction("--flip", v, &p.flip)) return OC_EXIT_USAGE;
        } else if (CLI_OPTION(a, r, v, "--threads")) {
            if (r < 0) return OC_EXIT_USAGE;
            if ((r = cli_parse_threads(v, &wopts.threads)) >= 0) return r;
        } else if (CLI_OPTION(a, r, v, "-o|--output")) {
            if (r < 0) return OC_EXIT_USAGE;
            output = v;
        } else {
            return cli_unknown_option(a, 0);
        }
    }
    if (p.rows < 1 || p.cols < 1) return cli_usage_error("gen: --rows and --cols must be given and positive");
    if (p.density < 0) return cli_usage_error("gen: --density must be given (a number in [0, 1])");
    if (!output) return cli_usage_error("gen: no output given: add -o A.npy");
    if (p.plant > p.rows / 2)
        return cli_usage_error(
            "gen: --plant %lld needs %lld rows (each planted row copies another), but --rows is %lld: "
            "plant at most %lld",
            (long long)p.plant, p.plant > INT64_MAX / 2 ? (long long)INT64_MAX : 2 * (long long)p.plant,
            (long long)p.rows, (long long)(p.rows / 2));

    int rc = cli_check_output(output); /* a folder, a missing one: before the extension */
    if (rc >= 0) return rc;
    if (strcasecmp(cli_path_extension(output), "npy") != 0)
        return cli_usage_error("%s: gen writes .npy files: name the output A.npy", output);

    /* Tests force small blocks to show that the bytes do not depend on them. */
    const char *block_rows = getenv("OUTCORE_GEN_BLOCK_ROWS");
    if (block_rows && (cli_parse_i64(block_rows, &wopts.block_rows) || wopts.block_rows < 1))
        return cli_usage_error("gen: OUTCORE_GEN_BLOCK_ROWS=%s is not a whole number >= 1", block_rows);

    oc_context *ctx = NULL;
    if (oc_context_create(&ctx) != OC_OK) return OC_EXIT_FAILURE;
    cli_quiet_library(ctx, quiet);
    gen_job *job = calloc(1, sizeof *job);
    if (!job) {
        oc_context_free(ctx);
        cli_message("gen: out of memory");
        return OC_EXIT_FAILURE;
    }
    job->p = p;
    pthread_mutex_init(&job->lock, NULL);
    pthread_cond_init(&job->done, NULL);
    cli_cancel_on_signal(ctx);
    cli_progress progress;
    double bytes = (double)p.rows * (double)(wopts.packed ? (p.cols + 7) / 8 : p.cols);
    cli_progress_init(&progress, "gen", bytes, !quiet);
    progress.unit = "B";
    wopts.progress = cli_progress_update;
    wopts.progress_user = &progress;
    /* Its start would clear the cancel: a signal caught before it is asked for here. */
    oc_status st = cli_cancel_requested()
                       ? OC_ERR_CANCELLED
                       : oc_matrix_write_rows(ctx, output, p.rows, p.cols, gen_job_fill, job, &wopts);
    cli_progress_finish(&progress);
    pthread_mutex_lock(&job->lock);
    const int state = job->state, scratch_failed = job->scratch_failed;
    job->abandoned = state == 2; /* the picking thread frees it */
    pthread_mutex_unlock(&job->lock);
    if (st == OC_OK) {
        rc = OC_EXIT_OK;
        if (!quiet) {
            char size[32];
            cli_message("gen %lld x %lld%s, density %g, %lld planted pair%s, seed %llu: %s -> %s", (long long)p.rows,
                        (long long)p.cols, wopts.packed ? " packed bits" : " 0/1 bytes", p.density, (long long)p.plant,
                        p.plant == 1 ? "" : "s", (unsigned long long)p.seed, cli_bytes(bytes, size, sizeof size),
                        output);
        }
    } else if (st == OC_ERR_CANCELLED) {
        rc = cli_status_error(ctx, st);
    } else if (state == 2 || cli_cancel_requested()) {
        /* A signal while the pairs were being picked: the workers gave up (the picking may have
         * ended since, so the signal is what tells). */
        cli_message("%s", oc_status_string(OC_ERR_CANCELLED));
        rc = OC_EXIT_CANCELLED;
    } else if (state == -1) {
        cli_message("gen: out of memory for %lld planted pairs", (long long)p.plant);
        rc = OC_EXIT_FAILURE;
    } else if (scratch_failed) {
        cli_message("gen: out of memory for the flips of a planted row (%lld bytes)",
                    (long long)((p.cols + 63) / 64 * 8));
        rc = OC_EXIT_FAILURE;
    } else {
        rc = cli_status_error(ctx, st);
    }
    cli_cancel_on_signal(NULL);
    if (state != 2) gen_job_free(job);
    oc_context_free(ctx);
    return rc;
}
