/*
 * gram_compat.h - the earlier versions of oc_gram's structs (docs/abi.md): a caller built
 * against an earlier version still works.
 *   oc_gram_options: version 1 ends before `algorithm`, 2 before `resume`, 3 before `devices`,
 *                    4 before `use_min_score`. Versions 2 and 3 have one size (`resume`
 *                    took the padding after version 2's `algorithm`): that size is read as
 *                    version 3, a version-2 caller's padding as `resume`.
 *   oc_gram_stats:   version 1 ends before `host_budget_bytes`, 2 before `backend_explain`,
 *                    3 before `device_count`, 4 before `threads`, 5 before `phases`,
 *                    6 before `predicted_seconds`.
 */
#ifndef OC_GRAM_GRAM_COMPAT_H
#define OC_GRAM_GRAM_COMPAT_H

#include "outcore.h"
#include "core/abi/struct_version.h"

#define OC_GRAM_OPTIONS_V1_SIZE OC_STRUCT_VERSION_SIZE(oc_gram_options, algorithm)
#define OC_GRAM_OPTIONS_V3_SIZE OC_STRUCT_VERSION_SIZE(oc_gram_options, devices) /* and version 2's */
#define OC_GRAM_OPTIONS_V4_SIZE OC_STRUCT_VERSION_SIZE(oc_gram_options, use_min_score)
#define OC_GRAM_STATS_V1_SIZE OC_STRUCT_VERSION_SIZE(oc_gram_stats, host_budget_bytes)
#define OC_GRAM_STATS_V2_SIZE OC_STRUCT_VERSION_SIZE(oc_gram_stats, backend_explain)
#define OC_GRAM_STATS_V3_SIZE OC_STRUCT_VERSION_SIZE(oc_gram_stats, device_count)
#define OC_GRAM_STATS_V4_SIZE OC_STRUCT_VERSION_SIZE(oc_gram_stats, threads)
#define OC_GRAM_STATS_V5_SIZE OC_STRUCT_VERSION_SIZE(oc_gram_stats, phases)
#define OC_GRAM_STATS_V6_SIZE OC_STRUCT_VERSION_SIZE(oc_gram_stats, predicted_seconds)

/* opts itself when it is the current version; a copy in *local with the later fields at
 * their defaults when it is an earlier one; NULL when its size is no version's. */
static inline const oc_gram_options *oc_gram_options_current(const oc_gram_options *opts, oc_gram_options *local)
{
    if (opts->struct_size == sizeof *opts) return opts;
    if (opts->struct_size != OC_GRAM_OPTIONS_V1_SIZE && opts->struct_size != OC_GRAM_OPTIONS_V3_SIZE &&
        opts->struct_size != OC_GRAM_OPTIONS_V4_SIZE)
        return NULL;
    *local = (oc_gram_options)OC_GRAM_OPTIONS_INIT;
    __builtin_memcpy(local, opts, opts->struct_size);
    local->struct_size = sizeof *local;
    return local;
}

/* Whether a stats struct of this size is a version the library writes (only its fields). */
static inline int oc_gram_stats_size_known(size_t size)
{
    return size == sizeof(oc_gram_stats) || size == OC_GRAM_STATS_V1_SIZE || size == OC_GRAM_STATS_V2_SIZE ||
           size == OC_GRAM_STATS_V3_SIZE || size == OC_GRAM_STATS_V4_SIZE || size == OC_GRAM_STATS_V5_SIZE ||
           size == OC_GRAM_STATS_V6_SIZE;
}

#endif
