/*
 * cli_parse.h - the values of options: strict parsers of numbers and sizes, the placement
 * options' values with their usage errors, an output path's extension.
 */
#ifndef OC_TOOLS_CLI_PARSE_H
#define OC_TOOLS_CLI_PARSE_H

#include <stdint.h>

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

/* The extension of path's file name after its last dot ("npy"), or "" when it has none. */
const char *cli_path_extension(const char *path);

#endif
