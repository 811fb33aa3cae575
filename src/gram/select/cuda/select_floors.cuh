/*
 * select_floors.cuh - a top-k job on several devices raises each device's floors to the
 * best any device has reached.
 *
 * Each device keeps its own lists of the job's rows and, beside them, each list's floor: its
 * kept-th key, which a candidate of the fused epilogue must beat (select_cuda.h). On one
 * device every tile sees the floors all earlier tiles raised; split over D devices, a
 * device's floors come from its own tiles only, about a D-th of them, so more candidates pass
 * and its tiles run a little longer (bench/RESULTS.md). Any device's floor is a bound for the
 * whole job:
 * its list holds kept keys at least that good, and keys are unique (each element of the
 * result is computed once, by one device), so a key at or below it cannot be among the best
 * kept of the row. So before each fused tile a device takes, for the tile's rows and columns,
 * the highest floor any device has published.
 *
 * The peers' floors are read while they change (their selections raise them); a 64-bit
 * aligned load sees the old value or the new one, and either is a bound. A device's own
 * selection may also lower a floor this raised (it writes its own list's kept-th key); a
 * lower floor only lets more candidates through. The result is the same either way.
 */
#ifndef OC_GRAM_SELECT_CUDA_SELECT_FLOORS_CUH
#define OC_GRAM_SELECT_CUDA_SELECT_FLOORS_CUH

#include <stdint.h>

#include "outcore.h"
#include "engine/cuda/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* own[r] = max(own[r], peers[p][r] for every p) for r in [a0, a0 + na) and [b0, b0 + nb)
 * (nb may be 0), enqueued on `stream` of dev (its launch checked by the launch planner first).
 * The peers' arrays are device memory dev can read (its own, or a peer's with access
 * enabled). */
oc_status oc_cuda_floors_import(oc_context *ctx, oc_cuda_device *dev, uint64_t *own, const uint64_t *const *peers,
                                int npeers, int64_t a0, int64_t na, int64_t b0, int64_t nb, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
