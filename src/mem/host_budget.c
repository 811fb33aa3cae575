#include "mem/host_budget.h"

#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/threads.h"
#include "core/process/fork_locks.h"

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

int64_t oc_host_mem_physical(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (int64_t)pages * page : 0;
}

/* The memory available, read at most AVAILABLE_FRESH seconds ago: the kernel formats the
 * whole of /proc/meminfo for it, a visible part of a product of a few milliseconds on device
 * arrays (bench/RESULTS.md, "What a resident call reads of /proc"), while what other
 * processes hold moves on a slower scale. */
#define AVAILABLE_FRESH 0.1
static pthread_mutex_t available_lock = PTHREAD_MUTEX_INITIALIZER;
OC_FORK_LOCK(available_lock, OC_FORK_RANK_HOST_BUDGET, NULL)
static double available_at = -1.0;
static int64_t available_bytes;

int64_t oc_host_budget_resolve(int64_t requested)
{
    if (requested > 0) return requested;
    const double now = oc_now();
    pthread_mutex_lock(&available_lock);
    if (available_at < 0 || now - available_at > AVAILABLE_FRESH) {
        available_bytes = oc_host_mem_available();
        available_at = now;
    }
    const int64_t share = available_bytes / 100 * OC_HOST_MEM_DEFAULT_PERCENT;
    pthread_mutex_unlock(&available_lock);
    return share > (64 << 20) ? share : (64 << 20);
}

/* getrusage's maxrss is max(the peak carried over exec, this process's peak since). Where the
 * first is no larger than VmHWM at the first call (give or take the per-CPU slack of the
 * kernel's counters), maxrss is VmHWM from then on, for a system call instead of the
 * formatting of /proc/self/status. */
#define MAXRSS_SLACK (4LL << 20)
static pthread_once_t maxrss_once = PTHREAD_ONCE_INIT;
static int maxrss_is_own;

static int64_t maxrss_bytes(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
    return (int64_t)ru.ru_maxrss * 1024; /* Linux reports kilobytes */
}

static void check_maxrss(void)
{
    const int64_t hwm = proc_kb_line("/proc/self/status", "VmHWM"), rss = maxrss_bytes();
    maxrss_is_own = hwm >= 0 && rss >= 0 && rss <= hwm + MAXRSS_SLACK;
}

int64_t oc_host_mem_peak(void)
{
    pthread_once(&maxrss_once, check_maxrss);
    int64_t bytes = maxrss_is_own ? maxrss_bytes() : proc_kb_line("/proc/self/status", "VmHWM");
    if (bytes < 0) bytes = maxrss_bytes();
    return bytes > 0 ? bytes : 0;
}
