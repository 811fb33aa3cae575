/*
 * cli_visible.c - CUDA_VISIBLE_DEVICES narrowed to the devices a CLI job names (cli_visible.h).
 */
#include "cli/cli_visible.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The highest device index of a --devices list ("0,2", "1:4", " 3 "), or -1 for "all" or a
 * spelling other than comma-separated indices, each optionally split with ":N". */
static int highest_index(const char *devices)
{
    int highest = -1;
    const char *p = devices;
    for (;;) {
        while (*p == ' ') ++p;
        if (!isdigit((unsigned char)*p)) return -1;
        long v = 0;
        while (isdigit((unsigned char)*p) && v < 100000) v = v * 10 + (*p++ - '0');
        if (v >= 100000) return -1;
        if (*p == ':') {
            ++p;
            if (!isdigit((unsigned char)*p)) return -1;
            while (isdigit((unsigned char)*p)) ++p;
        }
        while (*p == ' ') ++p;
        if (v > highest) highest = (int)v;
        if (*p == '\0') return highest;
        if (*p++ != ',') return -1;
    }
}

int cli_visible_prefix(const char *devices, int device, const char *current, char *out, size_t size)
{
    const int m = devices && *devices ? (strcasecmp(devices, "all") == 0 ? -1 : highest_index(devices)) : device;
    if (m < 0 || size == 0) return 0;
    size_t used = 0;
    if (!current) {
        for (int i = 0; i <= m; ++i) {
            const int n = snprintf(out + used, size - used, "%s%d", i ? "," : "", i);
            if (n < 0 || (size_t)n >= size - used) return 0;
            used += (size_t)n;
        }
        return 1;
    }
    /* The first m+1 entries of the current list (indices, UUIDs or MIG names), unchanged. */
    const char *p = current;
    for (int i = 0; i <= m; ++i) {
        while (*p == ' ') ++p;
        const char *end = strchr(p, ',');
        const size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0) return 0; /* fewer entries than the job names: the job reports it */
        if (used + len + 2 > size) return 0;
        if (i) out[used++] = ',';
        memcpy(out + used, p, len);
        used += len;
        if (!end && i < m) return 0;
        p = end ? end + 1 : p + len;
    }
    out[used] = '\0';
    return strcmp(out, current) != 0;
}

void cli_limit_visible_devices(const char *devices, int device)
{
    const char *all = getenv("OUTCORE_ALL_DEVICES");
    if (all && strcmp(all, "1") == 0) return;
    char value[1024];
    if (cli_visible_prefix(devices, device, getenv("CUDA_VISIBLE_DEVICES"), value, sizeof value))
        setenv("CUDA_VISIBLE_DEVICES", value, 1);
}
