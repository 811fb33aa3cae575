/*
 * cli_parse.c - the strict parsers of option values (cli_parse.h): numbers, sizes, the
 * placement options' values, an output path's extension.
 */
#include "cli/cli_parse.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "outcore.h"

/* A number as the CLI takes it: plain decimal, as the size parser takes sizes. strtoll and
 * strtod alone would also take a leading blank or '+', and strtod hex ("0x1p-1"), though
 * not a trailing blank: written out, the rule is one. */
static int decimal_text(const char *text, const char *allowed)
{
    const char *digits = text + (text[0] == '-');
    return (isdigit((unsigned char)digits[0]) || (digits[0] == '.' && isdigit((unsigned char)digits[1]))) &&
           text[strspn(text, allowed)] == '\0';
}

int cli_parse_i64(const char *text, int64_t *out)
{
    if (!text || !decimal_text(text, "-0123456789")) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int cli_parse_u64(const char *text, uint64_t *out)
{
    if (!text || text[0] == '-' || !decimal_text(text, "0123456789")) return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int cli_parse_double(const char *text, double *out)
{
    if (!text || !decimal_text(text, "-+.0123456789eE")) return -1;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    /* An underflow (ERANGE with a subnormal or zero) is the number Python's float() reads too;
     * an overflow is no number. */
    if ((errno && !(errno == ERANGE && fabs(v) <= DBL_MIN)) || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

int cli_parse_size(const char *text, int64_t *bytes, double *fraction)
{
    int64_t b;
    double f;
    if (oc_size_parse(text, &b, &f) != OC_OK) return -1;
    /* A size leaves the fraction as it was (the option struct's default stays valid). */
    *bytes = b;
    if (f > 0) *fraction = f;
    return 0;
}

int cli_parse_threads(const char *text, int *threads)
{
    int64_t t;
    if (cli_parse_i64(text, &t) || t < 1 || t > OC_MAX_THREADS)
        return cli_usage_error("--threads %s: expected a whole number from 1 to %d", text, OC_MAX_THREADS);
    *threads = (int)t;
    return -1;
}

/* The usage error of a memory budget (option, e.g. "--gpu-mem") that cli_parse_size refused:
 * a percentage outside (0, 100] is named as one. */
static int size_error(const char *option, const char *text, const char *example, const char *percent)
{
    size_t n = strlen(text);
    if (n > 1 && text[n - 1] == '%')
        return cli_usage_error("%s %s: a percentage must be more than 0 and at most 100", option, text);
    return cli_usage_error("%s %s: expected a size such as %s (1 byte to 2^63 - 1), or a percentage such as %s", option,
                           text, example, percent);
}

int cli_parse_gpu_mem(const char *text, int64_t *bytes, double *fraction)
{
    if (cli_parse_size(text, bytes, fraction)) return size_error("--gpu-mem", text, "2G or 512M", "50%");
    return -1;
}

int cli_parse_device(const char *text, int *device)
{
    int64_t d;
    if (cli_parse_i64(text, &d) || d < 0 || d > CLI_MAX_DEVICE)
        return cli_usage_error("--device %s: expected a device index from 0 to %d", text, CLI_MAX_DEVICE);
    *device = (int)d;
    return -1;
}

int cli_parse_devices(const char *text)
{
    if (!*text) return cli_usage_error("--devices: an empty list: give device numbers such as 0,1, or all");
    return -1;
}

int cli_parse_host_mem(const char *text, int64_t *bytes)
{
    double frac = 0;
    if (cli_parse_size(text, bytes, &frac)) return size_error("--host-mem", text, "4G or 512M", "25%");
    /* A percentage is of the machine's physical memory, resolved by the library. */
    const oc_status st = oc_host_mem_parse(text, bytes);
    if (st == OC_ERR_UNSUPPORTED)
        return cli_usage_error("--host-mem %s: the machine's memory size is unknown; give a size", text);
    if (st != OC_OK) return cli_usage_error("--host-mem %s: less than a byte of this machine's memory", text);
    return -1;
}

const char *cli_path_extension(const char *path)
{
    /* A name's leading dots are part of it (".npy", "..npy"), as for oc_path_extension. */
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    while (*base == '.') ++base;
    const char *dot = strrchr(base, '.');
    return dot ? dot + 1 : "";
}
