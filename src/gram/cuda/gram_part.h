/*
 * gram_part.h - one logical device's part of a Gram job on the CUDA engine (gram_cuda.c):
 * its worker, plan, kernel choice and selection. gram_devices.c runs one part per logical
 * device of the job (engine/device_spec.h) over a shared tile queue; a job on one device is
 * one part that walks its own plan's order.
 */
#ifndef OC_GRAM_CUDA_GRAM_PART_H
#define OC_GRAM_CUDA_GRAM_PART_H

#include "gram/gram_job.h"
#include "engine/cuda/engine.h"
#include "gram/cuda/gram_tile.h"
#include "gram/select/cuda/select_cuda.h"

/* The 1-bit kernels a part may run; their OUTCORE_CUDA_KERNEL names are gram_cuda.c's table. */
typedef enum { OC_GRAM_KERNEL_B1, OC_GRAM_KERNEL_WGMMA, OC_GRAM_KERNEL_POPC, OC_GRAM_KERNEL_COUNT } oc_gram_kernel;

typedef struct oc_gram_part {
    oc_gram_job *job; /* the part's copy of the job: its context and statistics */
    oc_context *ctx;
    const oc_logical_device *ldev; /* its device and budget */
    int64_t host_budget;           /* its share of the job's host budget */
    int64_t force_tile;            /* > 0: the tile edge every part of the job uses */
    oc_engine_worker *worker;
    oc_cuda_device *dev;
    oc_engine_plan plan;
    oc_gram_kernel kernel;
    int64_t words, elem;
    int pops;        /* the metric reads row popcounts: each panel slot counts its rows' */
    int gpu_mirror;  /* dense A·Aᵀ, mirrors made on the device */
    int two_streams; /* consecutive tiles may overlap (engine.h) */
    oc_cuda_select *select;
    oc_cuda_select_share share; /* several devices: its place among them (select_cuda.h) */
    int shared;                 /* share holds it */
    oc_gram_tile tile;          /* the tile last computed, which consume() hands to the selection */
} oc_gram_part;

/* Opens the part's device and makes its plan (tile edge part->force_tile when set). */
oc_status oc_gram_part_open(oc_gram_part *part);
/* Makes the plan again, e.g. with force_tile set after every part's plan was seen. */
oc_status oc_gram_part_replan(oc_gram_part *part);
/* Allocates what the plan names; the selection (share: NULL on one device) opens once the
 * worker runs (engine.h: prepare). `progress`: this part reports the job's progress (the
 * part on the caller's thread). */
oc_status oc_gram_part_setup(oc_gram_part *part, const oc_cuda_select_share *share, int progress);
/* Whether the part's order puts each panel's diagonal tile first (fused top-k of A·Aᵀ,
 * select_cuda.h); known once the part is open. */
int oc_gram_part_seeds_first(const oc_gram_part *part);
/* Whether the part can run tiles split on K (engine.h: oc_engine_window): the wgmma kernel,
 * and not a resumable job. */
int oc_gram_part_splits_k(const oc_gram_part *part);
/* "b1-mma", "popc", ... */
const char *oc_gram_part_kernel_desc(const oc_gram_part *part);
/* OUTCORE_TRACE: the worker's and the selection's figures. */
void oc_gram_part_trace(const oc_gram_part *part);
/* Closes the selection and the worker. */
void oc_gram_part_close(oc_gram_part *part);

#endif
