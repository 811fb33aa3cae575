/*
 * panel_exchange.h - row panels shared by the devices of one job.
 *
 * With every panel resident (each uploaded once and kept to the end), the devices of a
 * several-device job all need most of the panels: each staging all of A from host memory
 * multiplies the host's copy traffic by the device count, and the host's memory bandwidth,
 * not the GPUs, then sets the job's speed. Through the exchange a panel crosses from the
 * host once: the first device that needs it uploads it and publishes where it is; the
 * others copy it from that device's memory (over NVLink or PCIe peer to peer, or within
 * the device for logical devices that share one GPU).
 *
 *   claim(key) -> OC_PANEL_UPLOAD: the caller uploads the panel, then publish() (or, if the
 *                                  upload failed, withdraw(): another device takes it over)
 *              -> OC_PANEL_COPY:   *from says where it is; the copy must wait for from->ready
 *                                  (an event recorded on the owner's upload stream after it)
 *   A claim of a panel that another device is uploading waits until it is published.
 *
 * Owners (oc_panel_exchange_assign): before the devices start, each panel may be given to
 * one device, which uploads it ahead of its tiles (engine_prestage.h); a claim of such a
 * panel by another device waits for it, as for any panel being uploaded, and the owner
 * withdraws the panels it will not upload (it stopped), so that a waiting claim takes them
 * over. The panels are dealt round the devices in the order the job first needs them, so
 * every device uploads from the start and each a share.
 *
 * No cycle of waits: a device waits (on the host, or on its stream) only for panels whose
 * upload was enqueued before, and an upload waits for nothing of another device. Panels
 * stay where they were published until the job ends (resident plans never evict), so the
 * exchange is used only when every device's plan is resident. Thread-safe (one mutex).
 */
#ifndef OC_ENGINE_CUDA_PANEL_EXCHANGE_H
#define OC_ENGINE_CUDA_PANEL_EXCHANGE_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "outcore.h"

typedef struct oc_panel_exchange oc_panel_exchange;

typedef struct oc_panel_source {
    const void *ptr;   /* the panel in the owner's device memory */
    int device;        /* the owner's CUDA device */
    cudaEvent_t ready; /* recorded after the owner's upload (on the owner's device) */
} oc_panel_source;

enum { OC_PANEL_UPLOAD = 1, OC_PANEL_COPY = 2 };

/* An exchange of `keys` panels (oc_tile_panel_key's range); the devices that use it must
 * reach each other's memory (oc_panel_exchange_peers). */
oc_status oc_panel_exchange_create(oc_context *ctx, int64_t keys, oc_panel_exchange **out);
/* Destroys the published events (each on its own device); the devices must be idle. */
void oc_panel_exchange_free(oc_panel_exchange *x);

/* Gives the panels to `devices` owners in turn (device d the d-th, d + devices-th ... of the
 * `n` keys in need order); before any claim. Fails only when memory is short. */
oc_status oc_panel_exchange_assign(oc_context *ctx, oc_panel_exchange *x, const int64_t *keys, int64_t n, int devices);
/* The keys given to `device`, in need order, into keys (room for every key); returns how
 * many. */
int64_t oc_panel_exchange_owned(const oc_panel_exchange *x, int device, int64_t *keys);

int oc_panel_exchange_claim(oc_panel_exchange *x, int64_t key, oc_panel_source *from);
/* Device `device` will upload none of its panels (it failed before it started): each goes
 * back to no one, and a device waiting for one takes it over. Only for a device that never
 * started its uploads. */
void oc_panel_exchange_abandon(oc_panel_exchange *x, int device);
/* The same without waiting: 0 while another device is uploading the panel. */
int oc_panel_exchange_try_claim(oc_panel_exchange *x, int64_t key, oc_panel_source *from);
/* The owner's upload of key is enqueued and `ready` recorded after it; the exchange owns
 * the event from now on. */
void oc_panel_exchange_publish(oc_panel_exchange *x, int64_t key, const void *ptr, int device, cudaEvent_t ready);
void oc_panel_exchange_withdraw(oc_panel_exchange *x, int64_t key);

/* Whether panels may be shared at all: not when OUTCORE_PANEL_EXCHANGE=0 (docs/environment.md). */
int oc_panel_exchange_wanted(void);
/* Whether every pair of the listed physical devices can reach each other's memory; enables
 * the access where it can (the calling thread's current device changes). */
int oc_panel_exchange_peers(const int *devices, int count);

#endif
