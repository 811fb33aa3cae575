/*
 * malloc_ops.h - malloc behind a pool's allocation calls (mem/pool.h), for the tests of the
 * pool, the staging ring and the engine's parts on machines without a GPU. `live` counts the
 * bytes handed out and not freed, device and pinned together.
 */
#ifndef OC_TEST_MALLOC_OPS_H
#define OC_TEST_MALLOC_OPS_H

#include <stdint.h>
#include <stdlib.h>

#include "mem/pool.h"

static int64_t live;

static int fake_alloc(void *user, size_t bytes, void **out, char *why, size_t why_size)
{
    (void)user, (void)why, (void)why_size;
    *out = malloc(bytes);
    if (!*out) return 1;
    live += (int64_t)bytes;
    return 0;
}

static void fake_free(void *user, void *ptr, size_t bytes)
{
    (void)user;
    free(ptr);
    live -= (int64_t)bytes;
}

static const oc_mem_ops ops = {NULL, fake_alloc, fake_free, fake_alloc, fake_free};

#endif
