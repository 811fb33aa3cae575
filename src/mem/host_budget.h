/*
 * host_budget.h - the host memory budget of a read and of a job (--host-mem).
 *
 * The rule, written once: a budget the caller gives (bytes > 0) is used as it is; 0 means
 * OC_HOST_MEM_DEFAULT_PERCENT of the memory available when the read or the job starts
 * (MemAvailable in /proc/meminfo, which counts reclaimable page cache; where that file is
 * missing, the free pages sysconf reports; read at most a tenth of a second before). An
 * input matrix stays resident when its packed bits take at most half the budget; a larger
 * one is file-backed and read in panels, and the job's panels take what the budget leaves.
 */
#ifndef OC_MEM_HOST_BUDGET_H
#define OC_MEM_HOST_BUDGET_H

#include <stdint.h>

#define OC_HOST_MEM_DEFAULT_PERCENT 80

/* Bytes of host memory available now (MemAvailable), or 0 when unknown. */
int64_t oc_host_mem_available(void);

/* Bytes of the machine's physical memory (what a --host-mem percentage is of), or 0 when
 * unknown. */
int64_t oc_host_mem_physical(void);

/* The budget for a requested value (> 0: itself; 0: the default share above, at least
 * 64 MiB so that a machine that reports nothing still runs; the memory available as read at
 * most a tenth of a second before). Thread-safe. */
int64_t oc_host_budget_resolve(int64_t requested);

/* The process's peak resident memory in bytes: VmHWM, which counts from the process's own
 * exec. (getrusage's maxrss carries over the peak of the process that forked it: a CLI
 * started from a large Python process would report Python's size. Where it carried over
 * nothing larger, it is read instead, for a system call.) Thread-safe. */
int64_t oc_host_mem_peak(void);

/* Nonzero when an input of packed_bytes stays resident under budget. */
static inline int oc_host_budget_keeps_input(int64_t packed_bytes, int64_t budget)
{
    return packed_bytes <= budget / 2;
}

#endif
