/*
 * fork_locks.h - the library's process-wide locks across fork().
 *
 * A process that forks while another of its threads holds one of the library's process-wide
 * locks gives the child a lock that nobody there can release (its holder was not copied): the
 * child's first job would wait for ever. Each such lock is registered here (OC_FORK_LOCK, a
 * constructor); pthread_atfork then takes every one of them before the fork, in the order of
 * their ranks, and releases them after it in the parent and in the child, so that the child
 * starts with each lock free and the data it guards whole.
 *
 * A rank is the order in which one thread may nest the locks: a thread that holds a lock takes
 * only locks of higher ranks while it does. Nothing may fork while it holds one of them.
 */
#ifndef OC_CORE_FORK_LOCKS_H
#define OC_CORE_FORK_LOCKS_H

#include <pthread.h>

typedef enum oc_fork_rank {
    OC_FORK_RANK_CONTEXTS,    /* the list of live contexts (core/context.c) */
    OC_FORK_RANK_COST_RATES,  /* the cost model's rates (cost/cost_rates.c), read with the GPUs' */
    OC_FORK_RANK_BLAS,        /* the BLAS loaded (matmul/cpu/mm_blas.c) */
    OC_FORK_RANK_HOST_BUDGET, /* the available memory last read (mem/host_budget.c) */
    OC_FORK_RANK_MAP_GUARD,   /* the SIGBUS guard's slots (io/map_guard.c) */
    OC_FORK_RANK_PTXAS,       /* ptxas's release (inspect/ptxas.c) */
    OC_FORK_RANK_AFTER_JOB,   /* work left running after a job (core/process/after_job.c) */
    OC_FORK_RANK_CUDA_LAUNCH, /* the kernels checked before a launch (engine/cuda/device.c) */
    OC_FORK_RANK_CUDA,        /* the CUDA backends' caches: each taken alone */
    OC_FORK_RANKS
} oc_fork_rank;

/* Registers lock (process-wide, statically initialised) at rank; in_child, when not NULL,
 * runs in the child after the locks are released there (to forget threads the child lacks). */
void oc_fork_lock_register(pthread_mutex_t *lock, oc_fork_rank rank, void (*in_child)(void));

/* The locks registered, and how many can be: a lock past the last is not taken across fork. */
int oc_fork_locks_count(void);
int oc_fork_locks_max(void);

/* Registers the file-scope mutex `lock` when the library is loaded. */
#define OC_FORK_LOCK(lock, rank, in_child)                                 \
    __attribute__((constructor)) static void oc_fork_register_##lock(void) \
    {                                                                      \
        oc_fork_lock_register(&(lock), (rank), (in_child));                \
    }

#endif
