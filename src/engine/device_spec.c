/*
 * device_spec.c - the one parser of device lists and budgets (device_spec.h), and of the
 * budget text itself (oc_size_parse: the CLI's --gpu-mem and --host-mem call it too; and
 * oc_host_mem_parse, which resolves a --host-mem percentage to bytes for every front end).
 */
#include "engine/device_spec.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/text_buf.h"
#include "core/error.h"
#include "core/gpu_probe.h"
#include "mem/host_budget.h"

oc_status oc_size_parse(const char *text, int64_t *bytes, double *fraction)
{
    if (!text || !*text || !bytes || !fraction) return OC_ERR_INVALID_ARGUMENT;
    char *end;
    errno = 0;
    double v = oc_strtod(text, &end);
    /* A decimal number only: strtod alone also takes leading blanks, hexadecimal ("0x10"),
     * "inf" and "nan", which no caller means as a size (Python's binding asks this parser). */
    const size_t number = (size_t)(end - text);
    if (errno || end == text || !strchr("0123456789.", text[0]) || strspn(text, "0123456789.eE+-") < number ||
        !isfinite(v) || v <= 0)
        return OC_ERR_INVALID_ARGUMENT;
    if (strcmp(end, "%") == 0) {
        if (v > 100) return OC_ERR_INVALID_ARGUMENT;
        *fraction = v / 100.0;
        *bytes = 0;
        return OC_OK;
    }
    static const struct {
        const char *suffix;
        double scale;
    } units[] = {{"", 1},
                 {"B", 1},
                 {"K", 1024.0},
                 {"KB", 1024.0},
                 {"KiB", 1024.0},
                 {"M", 1048576.0},
                 {"MB", 1048576.0},
                 {"MiB", 1048576.0},
                 {"G", 1073741824.0},
                 {"GB", 1073741824.0},
                 {"GiB", 1073741824.0},
                 {"T", 1099511627776.0},
                 {"TB", 1099511627776.0},
                 {"TiB", 1099511627776.0}};
    /* Plain digits are read exactly, up to 2^63 - 1 (a double rounds 2^63 - 1 to 2^63); a
     * unit or a fraction scales a double, below 2^63. */
    if (!*end && strspn(text, "0123456789") == number) {
        errno = 0;
        long long whole = strtoll(text, NULL, 10);
        if (errno) return OC_ERR_INVALID_ARGUMENT;
        *bytes = whole;
        *fraction = 0.0;
        return OC_OK;
    }
    for (size_t k = 0; k < sizeof units / sizeof units[0]; ++k) {
        if (strcasecmp(end, units[k].suffix) == 0) {
            double b = v * units[k].scale;
            if (b < 1 || b >= 0x1p63) return OC_ERR_INVALID_ARGUMENT;
            *bytes = (int64_t)b;
            *fraction = 0.0;
            return OC_OK;
        }
    }
    return OC_ERR_INVALID_ARGUMENT;
}

oc_status oc_host_mem_parse(const char *text, int64_t *bytes)
{
    int64_t size;
    double fraction;
    if (!bytes || oc_size_parse(text, &size, &fraction) != OC_OK) return OC_ERR_INVALID_ARGUMENT;
    if (fraction > 0) {
        const int64_t memory = oc_host_mem_physical();
        if (memory <= 0) return OC_ERR_UNSUPPORTED;
        size = (int64_t)((double)memory * fraction);
        if (size < 1) return OC_ERR_INVALID_ARGUMENT; /* 0 would be the library's default budget */
    }
    *bytes = size;
    return OC_OK;
}

/* A device index: digits only, below 2^20. */
static int parse_index(const char *s, size_t len, int *out)
{
    if (len == 0 || len > 7) return -1;
    int v = 0;
    for (size_t i = 0; i < len; ++i) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* The next comma-separated token of *p into buf; returns its length, -1 past the end. */
static int next_token(const char **p, char *buf, size_t size)
{
    if (!*p) return -1;
    const char *comma = strchr(*p, ',');
    size_t len = comma ? (size_t)(comma - *p) : strlen(*p);
    const int whole = len < size;
    if (!whole) len = size - 1; /* buf: its start, for the message; -2 says it is cut */
    memcpy(buf, *p, len);
    buf[len] = '\0';
    *p = comma ? comma + 1 : NULL;
    return whole ? (int)len : -2;
}

/* The refusal of an entry longer than any that parses (`what`: "devices", "gpu-mem"). */
static oc_status too_long(oc_context *ctx, const char *what, const char *start)
{
    return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: \"%s...\": an entry too long to be a device or a size", what,
                   start);
}

static oc_status add_physical(oc_context *ctx, oc_device_list *list, int physical, int parts, const char *token)
{
    for (int i = 0; i < list->count; ++i)
        if (list->dev[i].physical == physical)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "devices: \"%s\": device %d is named twice (use %d:N to split it)", token, physical,
                           physical);
    if (list->count + parts > OC_MAX_LOGICAL_DEVICES)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "devices: \"%s\": more than %d logical devices in all", token,
                       OC_MAX_LOGICAL_DEVICES);
    for (int k = 0; k < parts; ++k)
        list->dev[list->count++] = (oc_logical_device){.physical = physical, .part = k, .parts = parts};
    return OC_OK;
}

/* Why a device list cannot run at all when no CUDA device is usable (physical_count 0): the
 * build, or the machine. Such a list is OC_ERR_UNSUPPORTED (outcore.h: a device not available),
 * as a CUDA backend asked for there is; a device past the count of a machine that has some is
 * a bad argument. */
static const char *no_device(void)
{
#ifdef OC_HAVE_CUDA
    return "this machine has no usable CUDA device";
#else
    return OC_NO_CUDA_BUILD;
#endif
}

/* Whether the named devices exist, once every token parsed: a typo is named before a device. */
static oc_status check_exist(oc_context *ctx, const oc_device_list *list, int physical_count)
{
    for (int i = 0; i < list->count; ++i) {
        const int d = list->dev[i].physical;
        if (physical_count == 0)
            return oc_fail(ctx, OC_ERR_UNSUPPORTED, "devices: \"%d\": CUDA device %d is not available: %s", d, d,
                           no_device());
        if (physical_count > 0 && d >= physical_count)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "devices: \"%d\": CUDA device %d does not exist (this machine has %d)", d, d,
                           physical_count);
    }
    return OC_OK;
}

static oc_status parse_devices(oc_context *ctx, const char *text, int physical_count, oc_device_list *list)
{
    if (strcmp(text, "all") == 0) {
        if (physical_count == 0) return oc_fail(ctx, OC_ERR_UNSUPPORTED, "devices: \"all\": %s", no_device());
        if (physical_count < 0)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "devices: \"all\": the CUDA devices are not known here");
        for (int d = 0; d < physical_count && d < OC_MAX_LOGICAL_DEVICES; ++d)
            OC_CHECK(ctx, add_physical(ctx, list, d, 1, text));
        return OC_OK;
    }
    char token[64];
    int len;
    for (const char *p = text; (len = next_token(&p, token, sizeof token)) != -1;) {
        if (len == -2) return too_long(ctx, "devices", token);
        const char *colon = strchr(token, ':');
        int physical, parts = 1;
        size_t ilen = colon ? (size_t)(colon - token) : strlen(token);
        if (parse_index(token, ilen, &physical) != 0)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "devices: \"%s\": expected a device index such as 0, or 0:2 to split it", token);
        if (colon &&
            (parse_index(colon + 1, strlen(colon + 1), &parts) != 0 || parts < 1 || parts > OC_DEVICE_MAX_PARTS))
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "devices: \"%s\": a device splits into 1 to %d parts", token,
                           OC_DEVICE_MAX_PARTS);
        OC_CHECK(ctx, add_physical(ctx, list, physical, parts, token));
    }
    return OC_OK;
}

/* Sets the budget of every logical part of `physical` (all devices when physical < 0). */
static void set_budget(oc_device_list *list, int physical, int64_t bytes, double fraction)
{
    for (int i = 0; i < list->count; ++i) {
        oc_logical_device *d = &list->dev[i];
        if (physical >= 0 && d->physical != physical) continue;
        d->budget_bytes = bytes / d->parts;
        d->budget_fraction = bytes ? 0.0 : fraction / d->parts;
    }
}

static oc_status parse_budgets(oc_context *ctx, const char *text, oc_device_list *list)
{
    int64_t bytes;
    double fraction;
    if (!strchr(text, '=')) {
        if (oc_size_parse(text, &bytes, &fraction) != OC_OK)
            return oc_fail(
                ctx, OC_ERR_INVALID_ARGUMENT,
                "gpu-mem: \"%s\": expected a size such as 2G or 512M, a percentage such as 50%%, or DEVICE=SIZE,...",
                text);
        set_budget(list, -1, bytes, fraction);
        return OC_OK;
    }
    char token[64];
    int len, given[OC_MAX_LOGICAL_DEVICES], n_given = 0; /* the devices given a budget so far */
    for (const char *p = text; (len = next_token(&p, token, sizeof token)) != -1;) {
        if (len == -2) return too_long(ctx, "gpu-mem", token);
        char *eq = strchr(token, '=');
        int physical, named = 0;
        if (!eq || parse_index(token, (size_t)(eq - token), &physical) != 0)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "gpu-mem: \"%s\": expected DEVICE=SIZE such as 0=20G", token);
        if (oc_size_parse(eq + 1, &bytes, &fraction) != OC_OK)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "gpu-mem: \"%s\": expected a size such as 20G or a percentage such as 50%% after =", token);
        for (int i = 0; i < list->count; ++i) named |= list->dev[i].physical == physical;
        if (!named)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "gpu-mem: \"%s\": device %d is not one of the job's devices",
                           token, physical);
        for (int i = 0; i < n_given; ++i)
            if (given[i] == physical)
                return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "gpu-mem: \"%s\": device %d is given a budget twice",
                               token, physical);
        given[n_given++] = physical; /* a device the list names: at most one per logical device */
        set_budget(list, physical, bytes, fraction);
    }
    return OC_OK;
}

oc_status oc_device_list_parse(oc_context *ctx, const oc_gram_options *opts, int physical_count, oc_device_list *out)
{
    memset(out, 0, sizeof *out);
    const char *devices = opts->devices && *opts->devices ? opts->devices : NULL;
    if (devices) OC_CHECK(ctx, parse_devices(ctx, devices, physical_count, out));
    else OC_CHECK(ctx, add_physical(ctx, out, opts->device, 1, "device"));
    /* The job's one budget first; per-device entries then override theirs. */
    set_budget(out, -1, opts->gpu_mem_bytes,
               opts->gpu_mem_fraction > 0 ? opts->gpu_mem_fraction : OC_GPU_MEM_FRACTION_DEFAULT);
    if (opts->gpu_mem_devices && *opts->gpu_mem_devices) OC_CHECK(ctx, parse_budgets(ctx, opts->gpu_mem_devices, out));
    return devices ? check_exist(ctx, out, physical_count) : OC_OK;
}

int oc_device_list_physical(const oc_device_list *list, int physical_count, int *out)
{
    int n = 0;
    for (int d = 0; d < list->count && d < OC_MAX_LOGICAL_DEVICES; ++d) {
        const int physical = list->dev[d].physical;
        int seen = physical < 0 || (physical_count >= 0 && physical >= physical_count);
        for (int e = 0; e < n && !seen; ++e) seen = out[e] == physical;
        if (!seen) out[n++] = physical;
    }
    return n;
}

void oc_logical_device_name(const oc_logical_device *d, char *buf, int size)
{
    if (d->parts > 1) snprintf(buf, (size_t)size, "cuda:%d.%d/%d", d->physical, d->part, d->parts);
    else snprintf(buf, (size_t)size, "cuda:%d", d->physical);
}
