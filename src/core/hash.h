/*
 * hash.h - FNV-1a, the one 64-bit hash of bytes the library keys things by (the NVRTC cache,
 * the rate cache's paths, the ranks' command lines): equal bytes, equal hashes; not a
 * defence against chosen collisions.
 */
#ifndef OC_CORE_HASH_H
#define OC_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define OC_FNV1A_SEED 0xcbf29ce484222325ull /* FNV-1a's offset basis */

/* h carried over n bytes at data (h = OC_FNV1A_SEED to start). */
static inline uint64_t oc_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

#endif
