/*
 * test_host_budget.c - the host memory budget and the peak memory (mem/host_budget.h): a
 * given budget is kept, the default is a share of what is available, read again once it is
 * a tenth of a second old; the peak is VmHWM, read through getrusage where that agrees, and
 * grows by what the process touches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "mem/host_budget.h"

/* "VmHWM" of /proc/self/status in bytes, or -1. */
static int64_t vm_hwm(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lld kB", &kb) == 1) break;
    fclose(f);
    return kb >= 0 ? (int64_t)kb * 1024 : -1;
}

static void check_budget(void)
{
    CHECK_EQ_I64(oc_host_budget_resolve(12345), 12345);
    const int64_t first = oc_host_budget_resolve(0), available = oc_host_mem_available();
    CHECK_MSG(first >= (64LL << 20), "default budget %lld below 64 MiB", (long long)first);
    /* The share of a reading at most a tenth of a second old: within the share of now's,
     * give or take what other processes took or gave since (an eighth of it, generously). */
    const int64_t share = available / 100 * OC_HOST_MEM_DEFAULT_PERCENT;
    CHECK_MSG(available <= 0 || (first <= share + share / 8 + (64LL << 20) && first + share / 8 >= share),
              "default budget %lld, %d%% of %lld available is %lld", (long long)first, OC_HOST_MEM_DEFAULT_PERCENT,
              (long long)available, (long long)share);
    /* Many calls at once cost the reading once: they all agree. */
    int same = 1;
    for (int i = 0; i < 1000 && same; ++i) same = oc_host_budget_resolve(0) == first;
    CHECK_MSG(same, "the default budget moved within a burst of calls");
    CHECK_EQ_I64(oc_host_budget_resolve(1), 1);
}

static void check_peak(void)
{
    const int64_t before = oc_host_mem_peak(), hwm = vm_hwm();
    CHECK_MSG(before > 0, "peak %lld", (long long)before);
    if (hwm >= 0)
        CHECK_MSG(llabs(before - hwm) <= (8LL << 20), "peak %lld, VmHWM %lld", (long long)before, (long long)hwm);
    const size_t bytes = (size_t)64 << 20;
    unsigned char *p = malloc(bytes);
    CHECK(p != NULL);
    if (!p) return;
    memset(p, 1, bytes);
    const int64_t after = oc_host_mem_peak(), hwm_after = vm_hwm();
    CHECK_MSG(after >= before + (int64_t)bytes - (8LL << 20), "peak %lld after touching 64 MiB, %lld before",
              (long long)after, (long long)before);
    if (hwm_after >= 0)
        CHECK_MSG(llabs(after - hwm_after) <= (8LL << 20), "peak %lld, VmHWM %lld", (long long)after,
                  (long long)hwm_after);
    volatile unsigned char sink = p[bytes - 1];
    (void)sink;
    free(p);
}

int main(void)
{
    check_budget();
    check_peak();
    return oc_test_finish();
}
