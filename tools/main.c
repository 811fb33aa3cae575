/* main.c - the outcore command line: dispatches to the subcommands. Uses outcore.h only. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_names.h"
#include "cli/cli_ranks.h"
#include "commands.h"
#include "outcore.h"

/* The usage's text before and after the list of commands (print_usage). */
static const char usage_head[] = "usage: outcore <command> [options]\n"
                                 "\n"
                                 "Binary Gram matrices (A·Aᵀ of 0/1 matrices) that do not fit: exact counts, Jaccard,\n"
                                 "cosine and Hamming similarity, on 1-bit tensor cores or a fast CPU backend.\n"
                                 "\n"
                                 "commands:\n";
static const char usage_tail[] = "\n"
                                 "  --version, --help\n"
                                 "  help COMMAND   the command's help, as outcore COMMAND --help prints it\n"
                                 "An option that takes a value is given once; -- ends a command's options.\n"
                                 "Exit status: 0 success, 2 bad input or usage, 1 other failures, 130 interrupted.\n";

/* The commands in the usage's order, each with its line of the usage. alone: a command that
 * writes an output and does not split over MPI ranks (only gram does, docs/mpi.md): under a
 * launcher of several ranks each would compute the whole job into the same output, so it is
 * refused. */
static const struct {
    const char *name;
    int (*run)(int, char **);
    int alone;
    const char *summary;
} commands[] = {
    {"gram", oc_cmd_gram, 0, "C = A·Aᵀ or A·Bᵀ of 0/1 matrix files          (outcore gram --help)"},
    {"gen", oc_cmd_gen, 1, "write a random 0/1 matrix with planted near-duplicates"},
    {"demo", oc_cmd_demo, 0, "run the main job on a built-in example and check what it finds"},
    {"devices", oc_cmd_devices, 0, "the GPUs (and CPU) outcore can use, their limits and bandwidth"},
    {"inspect", oc_cmd_inspect, 0, "registers, shared memory and launch limits of a PTX/cubin kernel"},
    {"map", oc_cmd_map, 1, "a numpy-style expression over .npy arrays of any size  (outcore map --help)"},
    {"matmul", oc_cmd_matmul, 1, "C = A·B of dense .npy matrices beyond memory  (outcore matmul --help)"},
    {"clean", oc_cmd_clean, 0, "remove what interrupted jobs left beside an output (outcore clean --help)"},
};

static void print_usage(FILE *f)
{
    fputs(usage_head, f);
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; ++k)
        fprintf(f, "  %-9s %s\n", commands[k].name, commands[k].summary);
    fputs(usage_tail, f);
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return OC_EXIT_USAGE;
    }
    /* "help COMMAND" is "COMMAND --help"; "help" alone, or of itself, this text. */
    const int help = strcmp(argv[1], "help") == 0 && argc > 2;
    if (help && argc > 3) return cli_usage_error("help: one command at a time (outcore help COMMAND)");
    const char *name = help ? argv[2] : argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        print_usage(stdout);
        return OC_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        /* "MPI: <library>" when built with MPI (docs/mpi.md; the rank tests look for it). */
        printf("outcore %s (cpu %s, %d CUDA device%s%s%s)\n", oc_version(), oc_cpu_isa(), oc_cuda_device_count(),
               oc_cuda_device_count() == 1 ? "" : "s", oc_mpi_library() ? ", MPI: " : "",
               oc_mpi_library() ? oc_mpi_library() : "");
        return OC_EXIT_OK;
    }
    /* Not in the help: for the completion and the tests, which read the library's names. */
    if (strcmp(argv[1], "--list") == 0) return cli_list_names(argv[2]);
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; ++k) {
        if (strcmp(name, commands[k].name) != 0) continue;
        if (help) {
            char *help_argv[] = {argv[2], "--help", NULL};
            return commands[k].run(2, help_argv);
        }
        int size = 0, rank = 0;
        const char *var = NULL;
        if (commands[k].alone && cli_launched_by_mpi(&size, &rank, &var) && (size > 1 || rank > 0)) {
            if (rank != 0) return OC_EXIT_USAGE; /* one line, from rank 0 */
            return cli_usage_error("%s runs in one process, but an MPI launcher started %d (%s): each would "
                                   "compute the whole job into the same output; run it without mpirun (only gram "
                                   "splits over ranks)",
                                   commands[k].name, size, var);
        }
        return commands[k].run(argc - 1, argv + 1);
    }
    return cli_usage_error("unknown command '%s' (see outcore --help)", name);
}

/* A threaded OpenBLAS keeps its threads spinning for about 2^28 cycles after each call.
 * matmul's CPU backend reads the next panels on every core between its BLAS calls, and those
 * spinners slowed the reads (bench/RESULTS.md, "OpenBLAS's threads asleep between calls"). OpenBLAS reads OPENBLAS_THREAD_TIMEOUT (2^N cycles, N from 4
 * to 30) when it loads, which matmul does at run time; a process of its own, the CLI asks for
 * the shortest spin before any thread starts, unless the user set it. The library, in other
 * programs' processes, leaves their environment alone (docs/environment.md). */
static void blas_threads_sleep(void)
{
    if (!getenv("OPENBLAS_THREAD_TIMEOUT")) setenv("OPENBLAS_THREAD_TIMEOUT", "4", 1);
}

/* A closed standard stream's descriptor would be the next file opened: the output's
 * temporary, which stderr's messages (OUTCORE_TRACE, --verbose) would then be written into.
 * Each closed one is held by /dev/null, read-only, so a write to it still fails (EBADF) and a
 * closed stdout is still reported. */
static void hold_standard_streams(void)
{
    for (int fd = 0; fd <= 2; ++fd)
        if (fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
            int held = open("/dev/null", O_RDONLY);
            if (held >= 0 && held != fd) close(held); /* fd was taken meanwhile: nothing to hold */
        }
}

/* The stack limit (ulimit -s) the command line needs, in KiB. Its main thread runs every job's
 * calling side (reading, planning, the cost model, the output's checks and a failure's
 * message) on the process's stack, which cannot grow past the limit; the deepest run of the
 * CLI tests took 49 KiB of it, and this is about twice that. The library's own threads do not
 * count (they get a stack of their own size, core/threads.h), nor do the threads started
 * without a size of their own (the command line's two, gen's pair picking and gram's GPU
 * warm-up, the BLAS's and the CUDA driver's), which would take the limit as theirs: they get
 * CLI_THREAD_STACK_MIN_KIB at least (threads_stack_at_least). */
#define CLI_STACK_MIN_KIB 96
#define CLI_THREAD_STACK_MIN_KIB 1024

/* Threads the process starts from now on without a stack size of their own get at least
 * kib KiB (glibc's default attributes; elsewhere they keep the stack limit). */
static void threads_stack_at_least(size_t kib)
{
#ifdef __GLIBC__
    pthread_attr_t attr;
    size_t size = 0;
    if (pthread_getattr_default_np(&attr) != 0) return;
    if (pthread_attr_getstacksize(&attr, &size) == 0 && size < kib << 10 &&
        pthread_attr_setstacksize(&attr, kib << 10) == 0)
        (void)pthread_setattr_default_np(&attr);
    pthread_attr_destroy(&attr);
#else
    (void)kib;
#endif
}

/* Whether the stack limit is below CLI_STACK_MIN_KIB, said in one line: a job would end in a
 * segmentation fault, without a word, somewhere in its first steps. */
static int stack_too_small(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= (rlim_t)CLI_STACK_MIN_KIB << 10)
        return 0;
    fprintf(stderr, "outcore: the stack limit (ulimit -s) is %llu KiB; outcore needs at least %d KiB\n",
            (unsigned long long)(rl.rlim_cur >> 10), CLI_STACK_MIN_KIB);
    return 1;
}

int main(int argc, char **argv)
{
    hold_standard_streams();
    if (stack_too_small()) return OC_EXIT_USAGE;
    threads_stack_at_least(CLI_THREAD_STACK_MIN_KIB);
    /* A write past RLIMIT_FSIZE (ulimit -f) fails with EFBIG, which the writers report and
     * clean up after, instead of SIGXFSZ killing the process with its temporary file left;
     * a closed standard output fails a write with EPIPE, which cli_stdout_status reports,
     * instead of SIGPIPE ending the command without a word. */
    signal(SIGXFSZ, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    blas_threads_sleep();
    return cli_stdout_status(run(argc, argv));
}
