/*
 * env.h - numbers read from the environment, strictly: a value is what docs/environment.md
 * says it is, or the job is refused naming the variable; never a prefix of it ("1G" read as
 * 1, "1e3" as 1) nor a silent default for text ("abc" read as 0). Every level reads its
 * variables through these (mem/pool.c's fault injection as much as io/journal.c's interval).
 */
#ifndef OC_CORE_ENV_H
#define OC_CORE_ENV_H

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/text_buf.h"

/* The whole number in variable `name`: 0 when unset or empty; 1 with *out set when it is a
 * plain decimal (an optional '-', digits, nothing else) from lo to hi; -1 otherwise. */
static inline int oc_env_whole(const char *name, int64_t lo, int64_t hi, int64_t *out)
{
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    const char *digits = v + (*v == '-');
    if (!*digits || strspn(digits, "0123456789") != strlen(digits)) return -1;
    errno = 0;
    char *end = NULL;
    const long long n = strtoll(v, &end, 10);
    if (errno || *end || n < lo || n > hi) return -1;
    *out = n;
    return 1;
}

/* Seconds in variable `name`: 0 when unset or empty; 1 with *out set when it is a plain
 * decimal number >= 0 ("2", "0.5", "1e-3"), finite; -1 otherwise (hex, inf, nan, text). */
static inline int oc_env_seconds(const char *name, double *out)
{
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    /* digits, one '.', an exponent: what strtod reads of a plain decimal, and no more */
    if (strspn(v, "0123456789.eE+-") != strlen(v) || (!(v[0] >= '0' && v[0] <= '9') && v[0] != '.')) return -1;
    char *end = NULL;
    const double s = oc_strtod(v, &end);
    if (*end || !isfinite(s) || s < 0) return -1;
    *out = s;
    return 1;
}

#endif
