/*
 * test_cpu_cores.c - oc_cpu_cores counts the CPUs this process may run on (its affinity, as
 * taskset, cpusets and batch schedulers set it), not every CPU of the machine, and the
 * default thread count follows it.
 */
#include <sched.h>
#include <stdio.h>

#include "core/threads.h"
#include "harness.h"

int main(void)
{
#ifdef __linux__
    cpu_set_t all;
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    CHECK_MSG(oc_cpu_cores() == CPU_COUNT(&all), "%d cores, the affinity holds %d", oc_cpu_cores(), CPU_COUNT(&all));
    int first = 0;
    while (first < CPU_SETSIZE && !CPU_ISSET(first, &all)) ++first;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (sched_setaffinity(0, sizeof one, &one) == 0) {
        CHECK_MSG(oc_cpu_cores() == 1, "%d cores on one CPU", oc_cpu_cores());
        CHECK(oc_threads_resolve(0) == 1 && oc_threads_resolve(3) == 3);
        CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
        CHECK(oc_cpu_cores() == CPU_COUNT(&all));
    } else {
        oc_test_skip("sched_setaffinity refused here");
    }
#else
    oc_test_skip("no CPU affinity on this system");
#endif
    return oc_test_finish();
}
