/*
 * select_config.h - what a selection (select.h) is asked for: its mode, the job's shape,
 * metric and result dtype, k or the threshold, and where pairs go. Apart from select.h so
 * that the state its files share (select_state.h) needs the configuration without the
 * object's calls.
 */
#ifndef OC_GRAM_SELECT_SELECT_CONFIG_H
#define OC_GRAM_SELECT_SELECT_CONFIG_H

#include <stdint.h>

#include "outcore.h"

typedef enum oc_select_mode { OC_SELECT_TOPK = 1, OC_SELECT_PAIRS = 2 } oc_select_mode;

/* Receives pairs in (row, col) order; values have the result dtype. */
typedef oc_status (*oc_select_emit_fn)(oc_context *ctx, void *user, const int64_t *rows, const int64_t *cols,
                                       const void *values, int64_t count);

typedef struct oc_select_config {
    oc_select_mode mode;
    int64_t n, p;  /* the result is n x p */
    int symmetric; /* A·Aᵀ */
    oc_metric metric;
    oc_dtype dtype;    /* resolved result dtype */
    int64_t k;         /* top-k: requested k */
    double threshold;  /* pairs */
    int use_min_score; /* top-k: lists hold only scores passing min_score (as a threshold) */
    double min_score;
    oc_select_emit_fn emit; /* pairs: NULL drops them (they are still counted) */
    void *emit_user;
    int64_t buffer_bytes; /* pairs waiting in memory before spilling; 0 = the default */
    int64_t host_budget;  /* top-k: the lists must fit in it (the job's host budget); 0: no limit */
} oc_select_config;

#define OC_SELECT_BUFFER_DEFAULT (256LL << 20) /* buffer_bytes when 0 */

typedef struct oc_select oc_select;

#endif
