/* map_guard.c - SIGBUS on a shrunk input mapping becomes a flag (map_guard.h). */
#include "io/map_guard.h"
#include "core/process/fork_locks.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Mappings open at once: the inputs of the jobs running in the process. */
#define GUARD_SLOTS 256

typedef struct guard_slot {
    atomic_uintptr_t begin, end; /* begin 0: free; end is page-rounded */
    atomic_int faulted;
    atomic_int taken;
} guard_slot;

static guard_slot slots[GUARD_SLOTS];
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
OC_FORK_LOCK(install_lock, OC_FORK_RANK_MAP_GUARD, NULL)
static int registered;            /* under install_lock */
static struct sigaction previous; /* the handler before ours, while ours is installed */
static uintptr_t page_size;

/* Hands a fault that is not ours to the handler that was there before. */
static void chain(int sig, siginfo_t *info, void *uctx)
{
    if ((previous.sa_flags & SA_SIGINFO) && previous.sa_sigaction) {
        previous.sa_sigaction(sig, info, uctx);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
    } else {
        /* The default action: returning re-runs the access, which now ends the process as
         * it would have without us (a fault cannot be ignored). */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(sig, &dfl, NULL);
    }
}

static void on_sigbus(int sig, siginfo_t *info, void *uctx)
{
    uintptr_t at = (uintptr_t)info->si_addr;
    /* Only a fault the kernel raised has an address (kill and raise say si_code <= 0). */
    for (int i = 0; i < GUARD_SLOTS && info->si_code > 0; i++) {
        uintptr_t begin = atomic_load(&slots[i].begin), end = atomic_load(&slots[i].end);
        if (!begin || at < begin || at >= end) continue;
        /* Every page from the faulting one on lies past the file's new end: zeros from here
         * on, one call, so the reader meets no further fault in this mapping. */
        uintptr_t page = at & ~(page_size - 1);
        if (mmap((void *)page, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
            atomic_store(&slots[i].faulted, 1);
            return;
        }
        break;
    }
    chain(sig, info, uctx);
}

int oc_map_guard_add(const void *addr, size_t len)
{
    pthread_mutex_lock(&install_lock);
    int slot = -1;
    for (int i = 0; i < GUARD_SLOTS && slot < 0; i++)
        if (!atomic_load(&slots[i].taken)) slot = i;
    if (slot >= 0 && registered == 0) {
        page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
        struct sigaction ours;
        memset(&ours, 0, sizeof ours);
        ours.sa_sigaction = on_sigbus;
        ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&ours.sa_mask);
        /* `previous` is complete before a fault can reach on_sigbus. */
        if (sigaction(SIGBUS, NULL, &previous) != 0 || sigaction(SIGBUS, &ours, NULL) != 0) slot = -1;
    }
    if (slot >= 0) {
        registered++;
        uintptr_t begin = (uintptr_t)addr;
        atomic_store(&slots[slot].taken, 1);
        atomic_store(&slots[slot].faulted, 0);
        atomic_store(&slots[slot].end, (begin + len + page_size - 1) & ~(page_size - 1));
        atomic_store(&slots[slot].begin, begin);
    }
    pthread_mutex_unlock(&install_lock);
    return slot;
}

int oc_map_guard_faulted(int slot) { return slot >= 0 && slot < GUARD_SLOTS && atomic_load(&slots[slot].faulted); }

void oc_map_guard_remove(int slot)
{
    if (slot < 0 || slot >= GUARD_SLOTS) return;
    pthread_mutex_lock(&install_lock);
    atomic_store(&slots[slot].begin, 0);
    atomic_store(&slots[slot].end, 0);
    atomic_store(&slots[slot].taken, 0);
    if (--registered == 0) {
        /* Put the earlier handler back, unless someone installed another since ours. */
        struct sigaction now;
        if (sigaction(SIGBUS, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigbus)
            sigaction(SIGBUS, &previous, NULL);
    }
    pthread_mutex_unlock(&install_lock);
}
