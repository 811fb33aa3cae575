#include "mem/host_budget.h"

#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

/* The value of a "Key: N kB" line of a /proc file in bytes, or -1. */
static int64_t proc_kb_line(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256], format[64];
    long long kb = -1;
    snprintf(format, sizeof format, "%s: %%lld kB", key);
    while (fgets(line, sizeof line, f))
        if (sscanf(line, format, &kb) == 1) break;
    fclose(f);
    return kb >= 0 ? (int64_t)kb * 1024 : -1;
}

int64_t oc_host_mem_available(void)
{
    int64_t bytes = proc_kb_line("/proc/meminfo", "MemAvailable");
    if (bytes >= 0) return bytes;
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (int64_t)pages * page : 0;
}

int64_t oc_host_budget_resolve(int64_t requested)
{
    if (requested > 0) return requested;
    int64_t share = oc_host_mem_available() / 100 * OC_HOST_MEM_DEFAULT_PERCENT;
    return share > (64 << 20) ? share : (64 << 20);
}

int64_t oc_host_mem_peak(void)
{
    int64_t bytes = proc_kb_line("/proc/self/status", "VmHWM");
    if (bytes >= 0) return bytes;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (int64_t)ru.ru_maxrss * 1024; /* Linux reports kilobytes */
}
