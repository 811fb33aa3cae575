/*
 * map_values.h - what the GPU map tests share: inputs of every dtype from a seed, and the
 * comparison of the GPU's result with the CPU's (bytes; NaN equals NaN; floats within a
 * number of units in the last place).
 */
#ifndef OC_TEST_MAP_VALUES_H
#define OC_TEST_MAP_VALUES_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "map/map_types.h"

static void fill(void *p, int t, int64_t n, uint64_t seed)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = oc_test_rand(&seed);
        double v = (double)(int64_t)(r % 2001) - 1000.0 + (double)(r >> 40 & 7) / 8.0;
        switch (t) {
        case MT_BOOL:
            ((uint8_t *)p)[i] = r & 1;
            break;
        case MT_I8:
            ((int8_t *)p)[i] = (int8_t)r;
            break;
        case MT_I16:
            ((int16_t *)p)[i] = (int16_t)r;
            break;
        case MT_I32:
            ((int32_t *)p)[i] = (int32_t)(r % 200001) - 100000;
            break;
        case MT_I64:
            ((int64_t *)p)[i] = (int64_t)r;
            break;
        case MT_U8:
            ((uint8_t *)p)[i] = (uint8_t)r;
            break;
        case MT_U16:
            ((uint16_t *)p)[i] = (uint16_t)r;
            break;
        case MT_U32:
            ((uint32_t *)p)[i] = (uint32_t)r;
            break;
        case MT_U64:
            ((uint64_t *)p)[i] = r;
            break;
        case MT_F32:
            ((float *)p)[i] = (float)v;
            break;
        default:
            ((double *)p)[i] = v;
            break;
        }
    }
}

/* Equal bytes, except that any NaN equals any NaN (the GPU's canonical NaN is positive,
 * x86's default NaN negative); floats may also be `ulps` units in the last place apart (0
 * for arithmetic; pow is within 2 ulp in CUDA's documentation and within 1 in glibc's). */
static int same_values(const unsigned char *x, const unsigned char *y, int t, int64_t n, int64_t ulps)
{
    for (int64_t i = 0; i < n; i++) {
        if (t == MT_F64) {
            double u, v;
            int64_t bu, bv;
            memcpy(&u, x + 8 * i, 8), memcpy(&v, y + 8 * i, 8);
            if (isnan(u) && isnan(v)) continue;
            memcpy(&bu, &u, 8), memcpy(&bv, &v, 8);
            if (memcmp(&u, &v, 8) != 0 && !((bu < 0) == (bv < 0) && llabs(bu - bv) <= ulps)) return 0;
        } else if (t == MT_F32) {
            float u, v;
            int32_t bu, bv;
            memcpy(&u, x + 4 * i, 4), memcpy(&v, y + 4 * i, 4);
            if (isnan(u) && isnan(v)) continue;
            memcpy(&bu, &u, 4), memcpy(&bv, &v, 4);
            if (memcmp(&u, &v, 4) != 0 && !((bu < 0) == (bv < 0) && llabs((int64_t)bu - bv) <= ulps)) return 0;
        } else if (memcmp(x + i * (int64_t)oc_mt_size(t), y + i * (int64_t)oc_mt_size(t), oc_mt_size(t)) != 0) {
            return 0;
        }
    }
    return 1;
}

#endif
