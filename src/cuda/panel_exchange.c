/*
 * panel_exchange.c - row panels shared by the devices of one job (panel_exchange.h).
 */
#include "cuda/panel_exchange.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

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
    if (current >= 0) (void)cudaSetDevice(current);
    pthread_cond_destroy(&x->published);
    pthread_mutex_destroy(&x->lock);
    free(x->entry);
    free(x);
}

int oc_panel_exchange_claim(oc_panel_exchange *x, int64_t key, oc_panel_source *from)
{
    pthread_mutex_lock(&x->lock);
    panel_entry *e = &x->entry[key];
    while (e->state == PANEL_UPLOADING) pthread_cond_wait(&x->published, &x->lock);
    int r = OC_PANEL_COPY;
    if (e->state == PANEL_READY) *from = e->source;
    else e->state = PANEL_UPLOADING, r = OC_PANEL_UPLOAD;
    pthread_mutex_unlock(&x->lock);
    return r;
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

int oc_panel_exchange_peers(const int *devices, int count)
{
    for (int i = 0; i < count; ++i)
        for (int j = 0; j < count; ++j) {
            if (devices[i] == devices[j]) continue;
            int can = 0;
            if (cudaDeviceCanAccessPeer(&can, devices[i], devices[j]) != cudaSuccess || !can) return 0;
            if (cudaSetDevice(devices[i]) != cudaSuccess) return 0;
            cudaError_t e = cudaDeviceEnablePeerAccess(devices[j], 0);
            if (e == cudaErrorPeerAccessAlreadyEnabled) (void)cudaGetLastError();
            else if (e != cudaSuccess) {
                (void)cudaGetLastError();
                return 0;
            }
        }
    return 1;
}
