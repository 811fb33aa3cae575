/*
 * panel_exchange.c - row panels shared by the devices of one job (panel_exchange.h).
 */
#include "engine/cuda/panel_exchange.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "engine/cuda/device.h"
#include "core/process/fork_locks.h"

enum { PANEL_NONE = 0, PANEL_UPLOADING, PANEL_READY };

typedef struct panel_entry {
    int state;
    oc_panel_source source;
} panel_entry;

struct oc_panel_exchange {
    pthread_mutex_t lock;
    pthread_cond_t published;
    int64_t keys;
    panel_entry *entry;
    int64_t *need; /* oc_panel_exchange_assign's keys in need order, and their owners */
    int *owner;
    int64_t nneed;
};

oc_status oc_panel_exchange_create(oc_context *ctx, int64_t keys, oc_panel_exchange **out)
{
    oc_panel_exchange *x = calloc(1, sizeof *x);
    if (x) x->entry = calloc((size_t)(keys > 0 ? keys : 1), sizeof *x->entry);
    if (!x || !x->entry) {
        free(x);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the panel exchange (%lld panels)", (long long)keys);
    }
    x->keys = keys;
    pthread_mutex_init(&x->lock, NULL);
    pthread_cond_init(&x->published, NULL);
    *out = x;
    return OC_OK;
}

void oc_panel_exchange_free(oc_panel_exchange *x)
{
    if (!x) return;
    int current = -1;
    (void)cudaGetDevice(&current);
    for (int64_t k = 0; k < x->keys; ++k) {
        panel_entry *e = &x->entry[k];
        if (e->state != PANEL_READY) continue;
        if (cudaSetDevice(e->source.device) == cudaSuccess) (void)cudaEventDestroy(e->source.ready);
    }
    (void)cudaGetLastError();
    /* Back to the caller's device, unless that is the default of a thread that never chose
     * one (the release after the job): selecting it would make a context the job never used. */
    if (current >= 0 && current < 64 && oc_cuda_contexts_made() >> current & 1) (void)cudaSetDevice(current);
    pthread_cond_destroy(&x->published);
    pthread_mutex_destroy(&x->lock);
    free(x->need);
    free(x->owner);
    free(x->entry);
    free(x);
}

oc_status oc_panel_exchange_assign(oc_context *ctx, oc_panel_exchange *x, const int64_t *keys, int64_t n, int devices)
{
    x->need = malloc((size_t)(n > 0 ? n : 1) * sizeof *x->need);
    x->owner = malloc((size_t)(n > 0 ? n : 1) * sizeof *x->owner);
    if (!x->need || !x->owner)
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the panels' owners (%lld)", (long long)n);
    for (int64_t i = 0; i < n; ++i) {
        x->need[i] = keys[i];
        x->owner[i] = (int)(i % devices);
        x->entry[keys[i]].state = PANEL_UPLOADING; /* by its owner, ahead of the tiles */
    }
    x->nneed = n;
    return OC_OK;
}

int64_t oc_panel_exchange_owned(const oc_panel_exchange *x, int device, int64_t *keys)
{
    int64_t n = 0;
    for (int64_t i = 0; i < x->nneed; ++i)
        if (x->owner[i] == device) keys[n++] = x->need[i];
    return n;
}

void oc_panel_exchange_abandon(oc_panel_exchange *x, int device)
{
    pthread_mutex_lock(&x->lock);
    for (int64_t i = 0; i < x->nneed; ++i)
        if (x->owner[i] == device && x->entry[x->need[i]].state == PANEL_UPLOADING)
            x->entry[x->need[i]].state = PANEL_NONE;
    pthread_cond_broadcast(&x->published);
    pthread_mutex_unlock(&x->lock);
}

static int claim(oc_panel_exchange *x, int64_t key, oc_panel_source *from, int wait)
{
    pthread_mutex_lock(&x->lock);
    panel_entry *e = &x->entry[key];
    while (wait && e->state == PANEL_UPLOADING) pthread_cond_wait(&x->published, &x->lock);
    if (e->state == PANEL_UPLOADING) {
        pthread_mutex_unlock(&x->lock);
        return 0;
    }
    int r = OC_PANEL_COPY;
    if (e->state == PANEL_READY) *from = e->source;
    else e->state = PANEL_UPLOADING, r = OC_PANEL_UPLOAD;
    pthread_mutex_unlock(&x->lock);
    return r;
}

int oc_panel_exchange_claim(oc_panel_exchange *x, int64_t key, oc_panel_source *from) { return claim(x, key, from, 1); }

int oc_panel_exchange_try_claim(oc_panel_exchange *x, int64_t key, oc_panel_source *from)
{
    return claim(x, key, from, 0);
}

void oc_panel_exchange_publish(oc_panel_exchange *x, int64_t key, const void *ptr, int device, cudaEvent_t ready)
{
    pthread_mutex_lock(&x->lock);
    x->entry[key] = (panel_entry){.state = PANEL_READY, .source = {.ptr = ptr, .device = device, .ready = ready}};
    pthread_cond_broadcast(&x->published);
    pthread_mutex_unlock(&x->lock);
}

void oc_panel_exchange_withdraw(oc_panel_exchange *x, int64_t key)
{
    pthread_mutex_lock(&x->lock);
    x->entry[key].state = PANEL_NONE;
    pthread_cond_broadcast(&x->published);
    pthread_mutex_unlock(&x->lock);
}

int oc_panel_exchange_wanted(void)
{
    const char *v = getenv("OUTCORE_PANEL_EXCHANGE");
    return !(v && strcmp(v, "0") == 0);
}

/* The pairs this process enabled (i reads j's memory), so that a later job does not ask the
 * driver again: the call costs driver time, and its "already enabled" error is reported by
 * compute-sanitizer as an API error. */
enum { PEER_DEVICES = 64 };
static unsigned char peer_enabled[PEER_DEVICES][PEER_DEVICES];
static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;
OC_FORK_LOCK(peer_lock, OC_FORK_RANK_CUDA, NULL)

static int enable_peer(int i, int j)
{
    int known = i < PEER_DEVICES && j < PEER_DEVICES;
    pthread_mutex_lock(&peer_lock);
    int done = known && peer_enabled[i][j];
    pthread_mutex_unlock(&peer_lock);
    if (done) return 1;
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, i, j) != cudaSuccess || !can) return 0;
    if (cudaSetDevice(i) != cudaSuccess) return 0;
    cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
    if (e != cudaSuccess) (void)cudaGetLastError();
    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) return 0;
    pthread_mutex_lock(&peer_lock);
    if (known) peer_enabled[i][j] = 1;
    pthread_mutex_unlock(&peer_lock);
    return 1;
}

int oc_panel_exchange_peers(const int *devices, int count)
{
    for (int i = 0; i < count; ++i)
        for (int j = 0; j < count; ++j)
            if (devices[i] != devices[j] && !enable_peer(devices[i], devices[j])) return 0;
    return 1;
}
