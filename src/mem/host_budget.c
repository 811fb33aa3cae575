#include "mem/host_budget.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int64_t oc_host_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        long long kb = -1;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) break;
        fclose(f);
        if (kb >= 0) return (int64_t)kb * 1024;
    }
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (int64_t)pages * page : 0;
}

int64_t oc_host_budget_resolve(int64_t requested)
{
    if (requested > 0) return requested;
    int64_t share = oc_host_mem_available() / 100 * OC_HOST_MEM_DEFAULT_PERCENT;
    return share > (64 << 20) ? share : (64 << 20);
}
