/* map_guard.c - SIGBUS on a shrunk input mapping becomes a flag (map_guard.h). */
#include "io/map_guard.h"
#include "core/process/fork_locks.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Slots come in chunks, added as more mappings are open at once than the chunks hold and
 * never freed (the handler walks them without a lock): a chunk holds the inputs of the jobs
 * a process usually runs at once. */
#define CHUNK_SLOTS 256

typedef struct guard_slot {
    atomic_uintptr_t begin, end; /* begin 0: free; end is page-rounded */
    atomic_int faulted;
    atomic_int taken;
} guard_slot;

typedef struct guard_chunk {
    guard_slot slots[CHUNK_SLOTS];
    _Atomic(struct guard_chunk *) next;
} guard_chunk;

static guard_chunk first_chunk;
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
    for (guard_chunk *c = &first_chunk; c && info->si_code > 0; c = atomic_load(&c->next)) {
        for (int i = 0; i < CHUNK_SLOTS; i++) {
            guard_slot *g = &c->slots[i];
            uintptr_t begin = atomic_load(&g->begin), end = atomic_load(&g->end);
            if (!begin || at < begin || at >= end) continue;
            /* Every page from the faulting one on lies past the file's new end: zeros from
             * here on, one call, so the reader meets no further fault in this mapping. The
             * mark comes first: a reader on another thread may read those zeros as soon as
             * they are mapped, and whoever then asks (a resume checkpoint, about the tiles
             * finished before it) must find the mapping marked. */
            uintptr_t page = at & ~(page_size - 1);
            atomic_store(&g->faulted, 1);
            if (mmap((void *)page, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
                return;
            chain(sig, info, uctx);
            return;
        }
    }
    chain(sig, info, uctx);
}

/* The slot numbered slot (chunks in order), or NULL past the chunks there are. */
static guard_slot *slot_at(int slot)
{
    if (slot < 0) return NULL;
    guard_chunk *c = &first_chunk;
    for (int n = slot / CHUNK_SLOTS; c && n > 0; n--) c = atomic_load(&c->next);
    return c ? &c->slots[slot % CHUNK_SLOTS] : NULL;
}

/* A free slot's number, a new chunk's first when every slot is taken; -1 without memory.
 * Under install_lock. */
static int free_slot(void)
{
    int base = 0;
    for (guard_chunk *c = &first_chunk;; c = atomic_load(&c->next), base += CHUNK_SLOTS) {
        for (int i = 0; i < CHUNK_SLOTS; i++)
            if (!atomic_load(&c->slots[i].taken)) return base + i;
        if (!atomic_load(&c->next)) {
            guard_chunk *more = calloc(1, sizeof *more);
            if (!more) return -1;
            atomic_store(&c->next, more); /* complete (zeroed) before the handler can see it */
        }
    }
}

int oc_map_guard_add(const void *addr, size_t len)
{
    pthread_mutex_lock(&install_lock);
    int slot = free_slot();
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
        guard_slot *g = slot_at(slot);
        uintptr_t begin = (uintptr_t)addr;
        atomic_store(&g->taken, 1);
        atomic_store(&g->faulted, 0);
        atomic_store(&g->end, (begin + len + page_size - 1) & ~(page_size - 1));
        atomic_store(&g->begin, begin);
    }
    pthread_mutex_unlock(&install_lock);
    return slot;
}

int oc_map_guard_faulted(int slot)
{
    const guard_slot *g = slot_at(slot);
    return g && atomic_load(&g->faulted);
}

void oc_map_guard_remove(int slot)
{
    pthread_mutex_lock(&install_lock);
    guard_slot *g = slot_at(slot);
    if (!g) {
        pthread_mutex_unlock(&install_lock);
        return;
    }
    atomic_store(&g->begin, 0);
    atomic_store(&g->end, 0);
    atomic_store(&g->taken, 0);
    if (--registered == 0) {
        /* Put the earlier handler back, unless someone installed another since ours. */
        struct sigaction now;
        if (sigaction(SIGBUS, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigbus)
            sigaction(SIGBUS, &previous, NULL);
    }
    pthread_mutex_unlock(&install_lock);
}
