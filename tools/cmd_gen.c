/* cmd_gen.c - `outcore gen`: writes a random 0/1 matrix with planted near-duplicates. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "generate.h"

static const char gen_usage[] =
    "usage: outcore gen --rows N --cols M --density P [--plant K] [--flip F] [--seed S] [--packed] -o A.npy\n"
    "\n"
    "Writes a random 0/1 matrix (each bit 1 with probability P, to 1/4096) as uint8 .npy, or\n"
    "as numpy.packbits rows with --packed (read it back with --bits M). --plant K makes K\n"
    "rows near-copies of K others, with a fraction F (default 0.01) of their bits flipped.\n";

static int parse_count(const char *name, const char *v, int64_t *out)
{
    if (cli_parse_i64(v, out) || *out < 0) return cli_usage_error("gen: %s needs a whole number >= 0, got '%s'", name, v);
    return 0;
}

static int parse_fraction(const char *name, const char *v, double *out)
{
    if (cli_parse_double(v, out) || *out < 0 || *out > 1) return cli_usage_error("gen: %s needs a number in [0, 1], got '%s'", name, v);
    return 0;
}

int oc_cmd_gen(int argc, char **argv)
{
    gen_params p = {.rows = 0, .cols = 0, .density = -1, .plant = 0, .flip = 0.01, .seed = 1};
    const char *output = NULL;
    int packed = 0;
    for (int i = 1; i < argc; ++i) {
        const char *v = NULL;
        int64_t iv;
        int r;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(gen_usage, stdout);
            return OC_EXIT_OK;
        }
        if (strcmp(argv[i], "--packed") == 0) { packed = 1; continue; }
#define OPTION(name) ((r = cli_option(argc, argv, &i, name, &v)) != 0)
        if (OPTION("--rows")) {
            if (r < 0 || parse_count("--rows", v, &p.rows)) return OC_EXIT_USAGE;
        } else if (OPTION("--cols")) {
            if (r < 0 || parse_count("--cols", v, &p.cols)) return OC_EXIT_USAGE;
        } else if (OPTION("--plant")) {
            if (r < 0 || parse_count("--plant", v, &p.plant)) return OC_EXIT_USAGE;
        } else if (OPTION("--seed")) {
            if (r < 0 || parse_count("--seed", v, &iv)) return OC_EXIT_USAGE;
            p.seed = (uint64_t)iv;
        } else if (OPTION("--density")) {
            if (r < 0 || parse_fraction("--density", v, &p.density)) return OC_EXIT_USAGE;
        } else if (OPTION("--flip")) {
            if (r < 0 || parse_fraction("--flip", v, &p.flip)) return OC_EXIT_USAGE;
        } else if (OPTION("-o") || OPTION("--output")) {
            if (r < 0) return OC_EXIT_USAGE;
            output = v;
        } else {
            return cli_usage_error("gen: unknown argument %s (see outcore gen --help)", argv[i]);
        }
#undef OPTION
    }
    if (p.rows < 1 || p.cols < 1) return cli_usage_error("gen: --rows and --cols must be given and positive");
    if (p.density < 0) return cli_usage_error("gen: --density must be given (a number in [0, 1])");
    if (!output) return cli_usage_error("gen: no output given: add -o A.npy");

    oc_context *ctx = NULL;
    oc_matrix *m = NULL;
    if (oc_context_create(&ctx) != OC_OK) return OC_EXIT_FAILURE;
    oc_status st = gen_matrix(ctx, &p, &m, NULL);
    if (st == OC_OK) st = oc_matrix_save(ctx, m, output, packed);
    int rc = st == OC_OK ? OC_EXIT_OK : cli_status_error(ctx, st);
    oc_matrix_free(m);
    oc_context_free(ctx);
    return rc;
}
