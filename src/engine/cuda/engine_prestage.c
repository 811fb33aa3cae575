/*
 * engine_prestage.c - a resident plan's panel uploads on a thread of their own
 * (engine_prestage.h).
 */
#include "engine/cuda/engine_prestage.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/threads.h"

enum { KEY_NOT_MINE = 0, KEY_PENDING, KEY_DONE, KEY_GIVEN_UP };

struct oc_prestage {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    oc_prestage_ops ops;
    oc_context *ctx; /* for the one message of the thread's own (the uploads write theirs) */
    int device;
    int64_t *keys, n;
    unsigned char *state; /* per key, under lock */
    int stop;             /* under lock */
    oc_status status;     /* under lock */
};

static void *prestage_main(void *arg)
{
    oc_prestage *p = arg;
    int64_t i = 0;
    oc_status st = OC_OK;
    if (p->device >= 0 && cudaSetDevice(p->device) != cudaSuccess) {
        (void)cudaGetLastError();
        st = oc_fail(p->ctx, OC_ERR_DEVICE, "cannot select CUDA device %d for the panel uploads", p->device);
        pthread_mutex_lock(&p->lock);
        p->status = st;
        pthread_mutex_unlock(&p->lock);
    }
    for (; st == OC_OK && i < p->n; ++i) {
        pthread_mutex_lock(&p->lock);
        int stop = p->stop;
        pthread_mutex_unlock(&p->lock);
        if (stop) break;
        /* On failure the upload has withdrawn its own key; the keys after it are given up. */
        st = p->ops.upload(p->ops.user, p->keys[i]);
        pthread_mutex_lock(&p->lock);
        if (st == OC_OK) p->state[p->keys[i]] = KEY_DONE;
        else p->state[p->keys[i]] = KEY_GIVEN_UP, p->status = st;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
    }
    for (int64_t j = i; j < p->n; ++j)
        if (p->ops.give_up) p->ops.give_up(p->ops.user, p->keys[j]);
    pthread_mutex_lock(&p->lock);
    for (int64_t j = i; j < p->n; ++j) p->state[p->keys[j]] = KEY_GIVEN_UP;
    pthread_cond_broadcast(&p->changed);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void prestage_free(oc_prestage *p)
{
    pthread_cond_destroy(&p->changed);
    pthread_mutex_destroy(&p->lock);
    free(p->keys);
    free(p->state);
    free(p);
}

oc_status oc_prestage_start(oc_context *ctx, int device, const int64_t *keys, int64_t n, int64_t nkeys,
                            const oc_prestage_ops *ops, oc_prestage **out)
{
    oc_prestage *p = calloc(1, sizeof *p);
    if (!p) return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the panel uploads' state");
    p->keys = malloc((size_t)(n > 0 ? n : 1) * sizeof *p->keys);
    p->state = calloc((size_t)(nkeys > 0 ? nkeys : 1), 1);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    if (!p->keys || !p->state) {
        prestage_free(p);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "cannot allocate the panel uploads' list (%lld panels)", (long long)n);
    }
    for (int64_t i = 0; i < n; ++i) {
        p->keys[i] = keys[i];
        p->state[keys[i]] = KEY_PENDING;
    }
    p->n = n;
    p->ops = *ops;
    p->ctx = ctx;
    p->device = device;
    int rc = oc_thread_start(&p->thread, 0, prestage_main, p);
    if (rc != 0) {
        prestage_free(p);
        return oc_thread_start_failed(ctx, rc, "panel upload thread", 1);
    }
    *out = p;
    return OC_OK;
}

int oc_prestage_wait(oc_prestage *p, int64_t key, int nowait, double *waited)
{
    pthread_mutex_lock(&p->lock);
    double t0 = 0;
    if (!nowait && p->state[key] == KEY_PENDING) t0 = oc_now();
    while (!nowait && p->state[key] == KEY_PENDING) pthread_cond_wait(&p->changed, &p->lock);
    int s = p->state[key];
    pthread_mutex_unlock(&p->lock);
    if (t0 > 0 && waited) *waited += oc_now() - t0;
    return s == KEY_DONE ? 1 : s == KEY_PENDING ? -1 : 0;
}

oc_status oc_prestage_status(oc_prestage *p)
{
    pthread_mutex_lock(&p->lock);
    oc_status st = p->status;
    pthread_mutex_unlock(&p->lock);
    return st;
}

oc_status oc_prestage_end(oc_prestage *p, int stop)
{
    if (!p) return OC_OK;
    pthread_mutex_lock(&p->lock);
    p->stop = stop;
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    oc_status st = p->status;
    prestage_free(p);
    return st;
}
