/*
 * gram_window.h - which tiles of a Gram job on several devices run split on K (engine.h:
 * oc_engine_window): chosen once for all parts, from their plans, before they set up.
 *
 * While the first panels cross from the host, a device has few whole tiles to run: a tile
 * needs both its panels complete. Split on K, the first W panels go up slice by slice, and
 * the tiles among them start on their first columns (docs/design-notes.md, "Tiles split on
 * K"). Each window tile keeps int32 counts on its device from its first slice to its last,
 * so W is bounded by the memory the parts' plans leave.
 *
 * Only where it runs exactly as whole tiles would: every part's panels resident and shared
 * through the exchange, the wgmma kernel on every part (tiles split on K are its mode only),
 * not a resumable job (its checkpoints are whole tiles). The environment can force or
 * refuse it (OUTCORE_CUDA_SPLIT_K, docs/environment.md).
 *
 * How many panels: the ramp lasts until the tiles among the panels that have arrived keep
 * every device busy, p(p + 1)/2 tiles of t seconds on D devices against p panels of B bytes
 * from the host at R bytes/s in all: p = 2 D B / (R t). With tiles of 6144 rows on sm_90
 * GPUs and the host links measured there that is a handful of panels a device, fewer for
 * larger tiles; the default was chosen by measuring its neighbours on two and four devices
 * (bench/RESULTS.md, "Tiles split on K"). Past
 * three quarters of the panels the last ones arrive while whole tiles already run.
 */
#ifndef OC_GRAM_CUDA_GRAM_WINDOW_H
#define OC_GRAM_CUDA_GRAM_WINDOW_H

#include "gram/cuda/gram_part.h"

/* Slices of K by default (measured against 2 and 3: bench/RESULTS.md, "Tiles split on K"). */
#define OC_GRAM_WINDOW_SLICES 4
/* Window panels per device at a tile of OC_GRAM_WINDOW_TILE rows (above). */
#define OC_GRAM_WINDOW_PANELS_PER_DEVICE 6
#define OC_GRAM_WINDOW_TILE 6144

typedef struct oc_gram_window {
    oc_engine_window win;
    unsigned char *sliced; /* win.sliced */
    int64_t panels;        /* W: the window's panel keys */
} oc_gram_window;

/* The window of the shared tile order of `count` parts (order: its ntiles (I, J) pairs,
 * reordered: the window's tiles first) into *out, or *out = NULL when the job keeps whole
 * tiles. Only for parts that will share their panels through an exchange (gram_parts.h).
 * Fails only when memory is short or the environment's setting is malformed. */
oc_status oc_gram_window_plan(oc_context *ctx, const oc_gram_part *const *parts, int count, int symmetric,
                              int64_t *order, oc_gram_window **out);

/* The exchange's keys in the order the parts first need them: each window panel's slice keys
 * slice by slice, then the other panels' keys. need: the panels' keys in need order (n of
 * them); out: room for n x (1 + slices). Returns the count. */
int64_t oc_gram_window_need(const oc_gram_window *w, const int64_t *need, int64_t n, int64_t *out);

void oc_gram_window_free(oc_gram_window *w); /* NULL: no-op */

#endif
