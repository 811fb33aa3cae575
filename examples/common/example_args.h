/* example_args.h - the examples' small command-line helpers (sizes like "2G", timing). */
#ifndef OC_EXAMPLE_ARGS_H
#define OC_EXAMPLE_ARGS_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* "2G", "512M", "64K" or bytes; -1 when it does not parse. */
static int64_t example_size(const char *s)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || v < 0) return -1;
    int64_t unit = 1;
    switch (*end) {
    case 'k': case 'K': unit = 1LL << 10, ++end; break;
    case 'm': case 'M': unit = 1LL << 20, ++end; break;
    case 'g': case 'G': unit = 1LL << 30, ++end; break;
    case 't': case 'T': unit = 1LL << 40, ++end; break;
    default: break;
    }
    if (*end == 'i') ++end;
    if (*end == 'B') ++end;
    return *end ? -1 : (int64_t)(v * (double)unit);
}

static double example_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#endif
