/*
 * device_spec.h - which logical devices a job runs on, and each one's device budget: the one
 * parser of `--devices` / `devices=` / oc_gram_options.devices and of a per-device
 * `--gpu-mem` (oc_gram_options.gpu_mem_devices).
 *
 *   devices  = "all" | entry [, entry ...]     entry = index [":" parts]
 *   gpu_mem  = value | index "=" value [, index "=" value ...]     value = SIZE | PCT
 *
 * "0:2" splits physical device 0 into two logical devices (TensorFlow's logical devices):
 * each gets half of device 0's budget and its own streams, pool and staging. A device named
 * twice, an index past the machine's devices, parts outside 1..OC_DEVICE_MAX_PARTS or more
 * than OC_MAX_LOGICAL_DEVICES logical devices in all is an error; so is a per-device budget
 * for a device the list does not name. Devices the per-device budget does not name keep the
 * job's one budget (gpu_mem_bytes, else gpu_mem_fraction of the free memory).
 * Every error is one line naming the bad token. Pure: no device calls, unit-tested.
 */
#ifndef OC_ENGINE_DEVICE_SPEC_H
#define OC_ENGINE_DEVICE_SPEC_H

#include <stdint.h>

#include "outcore.h"

#define OC_DEVICE_MAX_PARTS 8

typedef struct oc_logical_device {
    int physical;           /* CUDA device index */
    int part, parts;        /* this is part `part` (0-based) of `parts` of the physical device */
    int64_t budget_bytes;   /* this logical device's share of an explicit budget, else 0 */
    double budget_fraction; /* else its share of the free memory (fraction of the device's) */
} oc_logical_device;

typedef struct oc_device_list {
    int count;
    oc_logical_device dev[OC_MAX_LOGICAL_DEVICES];
} oc_device_list;

/* The logical devices of the options: opts->devices (NULL or "": opts->device alone) with the
 * budgets of opts->gpu_mem_devices (NULL or "": gpu_mem_bytes / gpu_mem_fraction for all).
 * physical_count: the machine's CUDA devices ("all", index checks), or -1 when unknown (no
 * index check; "all" is then an error). */
oc_status oc_device_list_parse(oc_context *ctx, const oc_gram_options *opts, int physical_count, oc_device_list *out);

/* The physical devices a job on `list` opens, each once, in the order the list first names
 * them, into out[] (room for OC_MAX_LOGICAL_DEVICES); an index outside 0..physical_count-1
 * is left out (physical_count < 0: none is). Returns how many. Every CUDA call that makes
 * a context, enables peer access or queries a device's memory ahead of or during a job is
 * made for these devices alone (oc_cuda_warm_up, the Gram parts). */
int oc_device_list_physical(const oc_device_list *list, int physical_count, int *out);

/* "cuda:0", or "cuda:0.1/2" for part 1 of a device split in two: how messages and --json
 * name a logical device. */
void oc_logical_device_name(const oc_logical_device *d, char *buf, int size);

#endif
