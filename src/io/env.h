/*
 * env.h - numbers read from the environment, strictly: a value is what docs/environment.md
 * says it is, or the job is refused naming the variable; never a prefix of it ("1G" read as
 * 1, "1e3" as 1) nor a silent default for text ("abc" read as 0).
 */
#ifndef OC_IO_ENV_H
#define OC_IO_ENV_H

#include <stdint.h>

/* The whole number in variable `name`: 0 when unset or empty; 1 with *out set when it is a
 * plain decimal (an optional '-', digits, nothing else) from lo to hi; -1 otherwise. */
int oc_env_whole(const char *name, int64_t lo, int64_t hi, int64_t *out);

/* Seconds in variable `name`: 0 when unset or empty; 1 with *out set when it is a plain
 * decimal number >= 0 ("2", "0.5", "1e-3"), finite; -1 otherwise (hex, inf, nan, text). */
int oc_env_seconds(const char *name, double *out);

#endif
