/*
 * map_plan.h - a map job ready to run (the opaque oc_map of outcore.h): the typed IR, the
 * bound inputs with their broadcasting strides, the result's shape and type, the reduction.
 * Backends (src/map/cpu/map_cpu.c; src/map/cuda/map_cuda.c through oc_map_emit_cuda) read it and never
 * change it.
 *
 * Element indexing: the element-wise result has the broadcast shape `shape` (ndim dims,
 * `count` elements, C order; a Fortran-order plan's are reversed, see `fortran` below). Input k's element for the result's multi-index (i_0..i_{n-1})
 * is at data + elem * sum_d i_d * stride[d], where stride[d] is 0 along broadcast dims and
 * dims the input lacks (numpy's broadcasting).
 */
#ifndef OC_MAP_MAP_PLAN_H
#define OC_MAP_MAP_PLAN_H

#include <stdint.h>
#include "outcore.h"
#include "map/map_expr.h"
#include "io/mapped_file.h"

typedef struct oc_map_bound {
    char *name;
    int used; /* the expression refers to it */
    int type; /* oc_map_dtype */
    int ndim;
    int64_t shape[OC_MAP_MAX_DIMS];
    const unsigned char *data;       /* element 0 */
    int64_t count;                   /* elements */
    int64_t stride[OC_MAP_MAX_DIMS]; /* elements per step of each result dim (0: broadcast) */
    int same_shape;                  /* its shape is the result's: flat index = element index */
    int fortran;                     /* in Fortran order (2 dims or more; a .npy or memory): shape is reversed */
    oc_mapped_file file;             /* file inputs; zeroed for memory */
    char *path;
} oc_map_bound;

struct oc_map {
    char *text;     /* the expression */
    oc_map_expr ir; /* typed IR; root = ir.root */
    oc_map_bound *inputs;
    int n_inputs;
    int ndim; /* the element-wise (broadcast) result */
    int64_t shape[OC_MAP_MAX_DIMS];
    int64_t count;
    int expr_type; /* the expression's type (IR root) */
    oc_map_reduce reduce;
    int axis;        /* reduced axis, -1: all elements (with reduce != NONE) */
    int reduce_type; /* the reduction's result type before the output cast */
    int out_type;    /* the output dtype */
    int out_ndim;
    int64_t out_shape[OC_MAP_MAX_DIMS];
    int64_t out_count;
    oc_map_options opts;
    /* Nonzero: the array inputs are in Fortran order. The plan runs over each one's bytes as
     * the C-order array of its reversed shape (its transpose), so shape, the strides, axis and
     * out_shape are all reversed, and the result is written in Fortran order, which reverses
     * them back (oc_map_user_shape, oc_map_user_axis). */
    int fortran;
    int out_is_file; /* set by oc_map_run: the output is a shared file mapping,
                                       * whose written pages the backend may drop (they stay in
                                       * the page cache and reach the file) */
};
typedef struct oc_map oc_map_plan;

/* A backend of map. */
typedef struct oc_map_backend {
    const char *name;
    /* Evaluates the plan into out (out_count elements of out_type, C order); fills the
     * backend fields of stats (never NULL here). */
    oc_status (*run)(oc_context *ctx, const oc_map_plan *m, void *out, oc_map_stats *stats);
    /* Nonzero when the backend can run element-wise plans now (cheap; no messages), else 0
     * with the reason in why; NULL: always (the CPU). */
    int (*usable)(char *why, size_t why_size);
} oc_map_backend;

extern const oc_map_backend oc_map_backend_cpu;
#ifdef OC_HAVE_CUDA
/* Plans on CUDA device 0 (src/map/cuda/map_cuda.c; reductions map_cuda_reduce.c). */
extern const oc_map_backend oc_map_backend_cuda;
#endif

/* Where a plan runs and why (map_choice.c): --backend cpu and cuda as asked (cuda fails, one
 * line, for a reduction whose runs are too long and where no GPU or no NVRTC can run it), auto by the cost model's
 * prediction (cost.h) when the GPU can run the plan. explain is the --explain paragraph. */
typedef struct oc_map_choice {
    const oc_map_backend *backend;
    int gpu_candidate; /* the GPU could run it: the prediction weighed both */
    char explain[700];
} oc_map_choice;

oc_status oc_map_choose(oc_context *ctx, const oc_map_plan *m, oc_map_choice *out);

/* numpy's result type of a reduction over elements of type t. */
int oc_map_reduce_type(oc_map_reduce r, int t);

/* A shape of the plan (shape, out_shape) as the caller gave its inputs: reversed back in a
 * Fortran-order plan; out may be shape. The reduced axis likewise (-1: all elements). */
void oc_map_user_shape(const oc_map_plan *m, int ndim, const int64_t *shape, int64_t *out);
int oc_map_user_axis(const oc_map_plan *m);

/* "1000000 x 500" ("a scalar" for 0-d) into buf. */
const char *oc_map_shape_text(int ndim, const int64_t *shape, char *buf, size_t size);

#endif
