/*
 * pool.h - the device memory pool of one job on one device, and its pinned host staging.
 *
 * The pool knows budgets, buffers and statistics; it does not know CUDA. The backend hands
 * it the four allocation calls (oc_mem_ops), so that this directory stays free of device
 * headers, the CPU-only build still compiles it, and its accounting and fault injection are
 * tested on any machine with plain malloc behind the same calls.
 */
#ifndef OC_MEM_POOL_H
#define OC_MEM_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "outcore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The raw allocators behind a pool. Each returns 0 on success or nonzero on failure, with a
 * short reason in why (the runtime's error string); dev_alloc returns OC_MEM_OPS_NO_MEMORY when
 * the device had too little memory free (another cause, a context's earlier error, is 1). */
#define OC_MEM_OPS_NO_MEMORY 2
typedef struct oc_mem_ops {
    void *user;
    int (*dev_alloc)(void *user, size_t bytes, void **out, char *why, size_t why_size);
    void (*dev_free)(void *user, void *ptr, size_t bytes);
    int (*host_alloc)(void *user, size_t bytes, void **out, char *why, size_t why_size); /* pinned */
    void (*host_free)(void *user, void *ptr, size_t bytes);
} oc_mem_ops;

typedef struct oc_pool_stats {
    int64_t budget;      /* device bytes the pool may hold */
    int64_t current;     /* device bytes handed out now */
    int64_t peak;        /* the most device bytes handed out at once */
    int64_t allocations; /* device buffers handed out */
    int64_t reserved;    /* device bytes taken from the allocator (reserve mode: the budget) */
    int64_t host_budget; /* pinned host bytes the pool may hold */
    int64_t host_current;
    int64_t host_peak;
} oc_pool_stats;

typedef struct oc_pool oc_pool;

/* Alignment of every device buffer the pool hands out (cp.async and vector loads need 16;
 * 256 matches cudaMalloc). */
#define OC_POOL_ALIGN 256

/* Creates a pool with a device budget and a pinned host budget. In OC_GPU_MEM_RESERVE mode
 * the whole device budget is allocated now (and a failure is reported now); in GROW mode
 * each request allocates. `device` only names the device in messages. Reads the fault
 * injection variables OUTCORE_FAULT_DEVICE_ALLOC=N and OUTCORE_FAULT_PINNED_ALLOC=N: the
 * pool's Nth device (pinned) allocation request then fails as if memory were exhausted (0:
 * never); another value than a whole number >= 0 is OC_ERR_INVALID_ARGUMENT naming it. */
oc_status oc_pool_create(oc_context *ctx, const oc_mem_ops *ops, int device, int64_t budget, oc_gpu_mem_mode mode,
                         int64_t host_budget, oc_pool **out);

/* Frees every buffer still held and the pool. NULL is a no-op. */
void oc_pool_destroy(oc_pool *pool);

/* A device buffer of `bytes` (OC_POOL_ALIGN aligned) for the rest of the job or until
 * oc_pool_free. `what` names the buffer in the message when it does not fit the budget
 * (OC_ERR_DEVICE_NO_MEMORY, saying what was asked, the budget and what is in use). */
oc_status oc_pool_alloc(oc_context *ctx, oc_pool *pool, size_t bytes, const char *what, void **out);
void oc_pool_free(oc_pool *pool, void *ptr);

/* Pinned host memory under the host budget; failures are OC_ERR_NO_MEMORY. */
oc_status oc_pool_host_alloc(oc_context *ctx, oc_pool *pool, size_t bytes, const char *what, void **out);
void oc_pool_host_free(oc_pool *pool, void *ptr);

void oc_pool_get_stats(const oc_pool *pool, oc_pool_stats *out);

/* Device bytes still free under the budget (budget - current, ignoring fragmentation). */
int64_t oc_pool_available(const oc_pool *pool);

#ifdef __cplusplus
}
#endif

#endif
