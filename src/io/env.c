/*
 * env.c - numbers read from the environment (see env.h).
 */
#include "io/env.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/text_buf.h"

int oc_env_whole(const char *name, int64_t lo, int64_t hi, int64_t *out)
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

int oc_env_seconds(const char *name, double *out)
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
