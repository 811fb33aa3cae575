/*
 * fork_locks.c - the process-wide locks taken across fork() (fork_locks.h).
 */
#include "core/process/fork_locks.h"

#define FORK_LOCKS_MAX 32 /* every process-wide lock of the library, with room to spare */

typedef struct fork_lock {
    pthread_mutex_t *lock;
    oc_fork_rank rank;
    void (*in_child)(void);
} fork_lock;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static fork_lock locks[FORK_LOCKS_MAX]; /* by rank, in the order registered within one */
static int nlocks;
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;

static void before_fork(void)
{
    pthread_mutex_lock(&registry_lock);
    for (int i = 0; i < nlocks; ++i) pthread_mutex_lock(locks[i].lock);
}

static void after_fork_parent(void)
{
    for (int i = nlocks - 1; i >= 0; --i) pthread_mutex_unlock(locks[i].lock);
    pthread_mutex_unlock(&registry_lock);
}

static void after_fork_child(void)
{
    after_fork_parent(); /* the forking thread, the child's only one, holds them all */
    for (int i = 0; i < nlocks; ++i)
        if (locks[i].in_child) locks[i].in_child();
}

/* Without the handlers (pthread_atfork out of memory at load) a fork is as unguarded as a
 * process's other locks: nothing else changes. */
static void install_handlers(void) { (void)pthread_atfork(before_fork, after_fork_parent, after_fork_child); }

void oc_fork_lock_register(pthread_mutex_t *lock, oc_fork_rank rank, void (*in_child)(void))
{
    const fork_lock entry = {lock, rank, in_child};
    pthread_once(&handlers_once, install_handlers);
    pthread_mutex_lock(&registry_lock);
    if (nlocks == FORK_LOCKS_MAX) { /* a lock added without room here: oc_fork_locks_count tells */
        pthread_mutex_unlock(&registry_lock);
        return;
    }
    int at = nlocks++;
    for (; at > 0 && locks[at - 1].rank > entry.rank; --at) locks[at] = locks[at - 1];
    locks[at] = entry;
    pthread_mutex_unlock(&registry_lock);
}

int oc_fork_locks_count(void)
{
    pthread_mutex_lock(&registry_lock);
    int n = nlocks;
    pthread_mutex_unlock(&registry_lock);
    return n;
}

int oc_fork_locks_max(void) { return FORK_LOCKS_MAX; }
