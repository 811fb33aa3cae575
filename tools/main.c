/* main.c - the outcore command line: dispatches to the subcommands. Uses outcore.h only. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_names.h"
#include "commands.h"
#include "outcore.h"

static const char usage[] = "usage: outcore <command> [options]\n"
                            "\n"
                            "Binary Gram matrices (A·Aᵀ of 0/1 matrices) that do not fit: exact counts, Jaccard,\n"
                            "cosine and Hamming similarity, on 1-bit tensor cores or a fast CPU backend.\n"
                            "\n"
                            "commands:\n"
                            "  gram      C = A·Aᵀ or A·Bᵀ of 0/1 matrix files          (outcore gram --help)\n"
                            "  gen       write a random 0/1 matrix with planted near-duplicates\n"
                            "  demo      run the main job on a built-in example and check what it finds\n"
                            "  devices   the GPUs (and CPU) outcore can use, their limits and bandwidth\n"
                            "  inspect   registers, shared memory and launch limits of a PTX/cubin kernel\n"
                            "  map       a numpy-style expression over .npy arrays of any size  (outcore map --help)\n"
                            "  matmul    C = A·B of dense .npy matrices beyond memory  (outcore matmul --help)\n"
                            "  clean     remove what interrupted jobs left beside an output (outcore clean --help)\n"
                            "\n"
                            "  --version, --help\n"
                            "An option that takes a value is given once; -- ends a command's options.\n"
                            "Exit status: 0 success, 2 bad input or usage, 1 other failures, 130 interrupted.\n";

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } commands[] = {
        {"gram", oc_cmd_gram},       {"gen", oc_cmd_gen}, {"demo", oc_cmd_demo},   {"devices", oc_cmd_devices},
        {"inspect", oc_cmd_inspect}, {"map", oc_cmd_map}, {"clean", oc_cmd_clean}, {"matmul", oc_cmd_matmul},
    };
    if (argc < 2) {
        fputs(usage, stderr);
        return OC_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        fputs(usage, stdout);
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
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; ++k)
        if (strcmp(argv[1], commands[k].name) == 0) return commands[k].run(argc - 1, argv + 1);
    return cli_usage_error("unknown command '%s' (see outcore --help)", argv[1]);
}
