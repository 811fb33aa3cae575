/*
 * nvrtc_cache.h - the key of a compiled program and the disk cache of NVRTC's output
 * (nvrtc.h draws where it sits between the in-process cache and NVRTC).
 *
 * A key is two independent 64-bit hashes (FNV-1a from two seeds) of everything that decides
 * the compiled bytes: the source, the options in order, the target and its kind, NVRTC's
 * version. The first names the file; the second, and the source's length, are stored in the
 * file's header and checked on read, so a hash collision or a foreign file is a miss, never
 * wrong code.
 *
 * File layout: "OCNVRTC1" | u64 check hash | u64 source length | u32 is_cubin | u32 target |
 * u64 image size | image bytes.
 */
#ifndef OC_MAP_CUDA_NVRTC_CACHE_H
#define OC_MAP_CUDA_NVRTC_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "map/cuda/nvrtc_program.h"

typedef struct oc_nvrtc_key {
    uint64_t name_hash, check_hash;
    uint64_t source_len;
    int target, cubin;
} oc_nvrtc_key;

/* The disk cache directory in use (no trailing slash) into buf; 0 when there is none. */
int oc_nvrtc_cache_dir(char *buf, size_t size);

void oc_nvrtc_key_make(const oc_nvrtc_source *src, int target, int cubin, int nvrtc_version, oc_nvrtc_key *key);
int oc_nvrtc_key_equal(const oc_nvrtc_key *a, const oc_nvrtc_key *b);

/* 1 and *img filled (from_cache = 1) when the cache holds key; 0 otherwise (no cache, a
 * miss, or a file that does not check). */
int oc_nvrtc_cache_read(const oc_nvrtc_key *key, oc_nvrtc_image *img);

/* Stores img under key (temporary name, then rename); failures are ignored: the cache only
 * saves time. */
void oc_nvrtc_cache_write(const oc_nvrtc_key *key, const oc_nvrtc_image *img);

#endif
