/* fault.c - the write-side fault plan (fault.h). */
#include "core/fault.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const variables[] = {
    [OC_FAULT_OPEN] = "OUTCORE_FAULT_OPEN",         [OC_FAULT_WRITE] = "OUTCORE_FAULT_WRITE",
    [OC_FAULT_TRUNCATE] = "OUTCORE_FAULT_TRUNCATE", [OC_FAULT_MMAP] = "OUTCORE_FAULT_MMAP",
    [OC_FAULT_FSYNC] = "OUTCORE_FAULT_FSYNC",       [OC_FAULT_CLOSE] = "OUTCORE_FAULT_CLOSE",
    [OC_FAULT_RENAME] = "OUTCORE_FAULT_RENAME",     [OC_FAULT_FLUSH_FOLDER] = "OUTCORE_FAULT_FLUSH_FOLDER",
    [OC_FAULT_SHRINK] = "OUTCORE_FAULT_SHRINK",     [OC_FAULT_SWEEP] = "OUTCORE_FAULT_SWEEP",
};
/* A call added to oc_fault_call without its variable here (or the reverse) stops the build. */
_Static_assert(sizeof variables / sizeof variables[0] == OC_FAULT_CALLS, "variables[] needs one row per oc_fault_call");

const char *oc_fault_variable(oc_fault_call call) { return (unsigned)call < OC_FAULT_CALLS ? variables[call] : "?"; }

/* "k[:mode][,k[:mode]...]" into out (zeroed first); 0 when it does not parse. A short write
 * only means something for writes. */
static int parse_spec(oc_fault_call call, const char *spec, oc_fault_entry out[OC_FAULT_ENTRIES])
{
    memset(out, 0, OC_FAULT_ENTRIES * sizeof *out);
    if (!spec || !*spec) return 1;
    const char *p = spec;
    for (int n = 0;; ++n) {
        if (n == OC_FAULT_ENTRIES || *p < '1' || *p > '9') return 0;
        char *end;
        errno = 0;
        long at = strtol(p, &end, 10);
        if (errno || at < 1) return 0;
        oc_fault_mode mode = OC_FAULT_EIO;
        if (*end == ':') {
            static const struct {
                const char *name;
                oc_fault_mode mode;
            } modes[] = {{"enospc", OC_FAULT_ENOSPC}, {"eio", OC_FAULT_EIO}, {"short", OC_FAULT_SHORT}};
            size_t len = strcspn(end + 1, ",");
            mode = OC_FAULT_NONE;
            for (size_t m = 0; m < sizeof modes / sizeof *modes; ++m)
                if (strlen(modes[m].name) == len && strncmp(end + 1, modes[m].name, len) == 0) mode = modes[m].mode;
            if (mode == OC_FAULT_NONE || (mode == OC_FAULT_SHORT && call != OC_FAULT_WRITE)) return 0;
            end += 1 + len;
        }
        out[n] = (oc_fault_entry){.at = at, .mode = mode};
        if (*end == '\0') return 1;
        if (*end != ',') return 0;
        p = end + 1;
    }
}

int oc_fault_plan_arm(oc_fault_plan *plan, oc_fault_call call, const char *spec)
{
    oc_fault_entry parsed[OC_FAULT_ENTRIES];
    if ((unsigned)call >= OC_FAULT_CALLS || !parse_spec(call, spec, parsed)) return 0;
    memcpy(plan->armed[call], parsed, sizeof parsed);
    return 1;
}

void oc_fault_plan_begin_job(oc_fault_plan *plan)
{
    int active = 0;
    for (int c = 0; c < OC_FAULT_CALLS; ++c) {
        const char *spec = getenv(variables[c]);
        if (!spec) memcpy(plan->job[c], plan->armed[c], sizeof plan->job[c]);
        else if (!parse_spec((oc_fault_call)c, spec, plan->job[c])) memset(plan->job[c], 0, sizeof plan->job[c]);
        active |= plan->job[c][0].at != 0;
        atomic_store(&plan->calls[c], 0);
    }
    atomic_store(&plan->active, active);
}

oc_fault_mode oc_fault_plan_next(oc_fault_plan *plan, oc_fault_call call)
{
    /* Nothing armed (every real job): no shared counter is touched. */
    if (!atomic_load_explicit(&plan->active, memory_order_relaxed)) return OC_FAULT_NONE;
    long n = atomic_fetch_add(&plan->calls[call], 1) + 1;
    for (int e = 0; e < OC_FAULT_ENTRIES && plan->job[call][e].at; ++e)
        if (plan->job[call][e].at == n) return plan->job[call][e].mode;
    return OC_FAULT_NONE;
}
