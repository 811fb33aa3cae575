/*
 * select_key.h - the total order of top-k and threshold selection, written once for the
 * host and the device.
 *
 * Every candidate (score, index) of a row becomes one 64-bit key, larger = better:
 *
 *     key = score_key(score) << 32 | (0xFFFFFFFF - index)
 *
 * score_key maps the result dtype's value to a uint32 whose unsigned order is "better":
 * higher counts, Jaccard and cosine first; for Hamming, a distance, lower first. The low
 * half puts the lower column first among equal scores. Keys of one row are therefore all
 * distinct, the order is total, and any two exact selections (CPU, GPU, any tiling, any
 * thread count) keep the same keys. A key is never 0 (index < 0xFFFFFFFF), so 0 marks an
 * empty list slot. The score is recovered from the key: lists hold keys only.
 */
#ifndef OC_GRAM_SELECT_SELECT_KEY_H
#define OC_GRAM_SELECT_SELECT_KEY_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define OC_SK __host__ __device__ __forceinline__
#else
#define OC_SK static inline
#endif

/* How the scores of a job map to keys (chosen from metric and dtype by oc_select). */
typedef enum oc_key_kind {
    OC_KEY_F32 = 0,     /* float32 jaccard, cosine: higher first */
    OC_KEY_I32 = 1,     /* int32 counts: higher first */
    OC_KEY_U16 = 2,     /* uint16 counts */
    OC_KEY_I32_REV = 3, /* int32 hamming: lower first */
    OC_KEY_U16_REV = 4  /* uint16 hamming */
} oc_key_kind;

/* Indices must stay below this for the low half of a key to hold them. */
#define OC_KEY_MAX_INDEX 0xFFFFFFFEll

/* IEEE order as unsigned order: flip the sign bit of non-negative values, every bit of
 * negative ones (scores are never NaN). */
OC_SK uint32_t oc_key_f32(float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
OC_SK float oc_key_f32_value(uint32_t k)
{
    uint32_t b = (k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k;
    float v;
    memcpy(&v, &b, sizeof v);
    return v;
}
OC_SK uint32_t oc_key_i32(int32_t v) { return (uint32_t)v ^ 0x80000000u; }
OC_SK int32_t oc_key_i32_value(uint32_t k) { return (int32_t)(k ^ 0x80000000u); }

/* The score key of element e of a tile of the given kind. */
OC_SK uint32_t oc_key_score(int kind, const void *tile, int64_t e)
{
    switch (kind) {
    case OC_KEY_F32:
        return oc_key_f32(((const float *)tile)[e]);
    case OC_KEY_I32:
        return oc_key_i32(((const int32_t *)tile)[e]);
    case OC_KEY_U16:
        return ((const uint16_t *)tile)[e];
    case OC_KEY_I32_REV:
        return ~oc_key_i32(((const int32_t *)tile)[e]);
    default:
        return 0xFFFFu - ((const uint16_t *)tile)[e];
    }
}

/* Writes the score of score key k into element e of an array of the kind's dtype. */
OC_SK void oc_key_store_score(int kind, uint32_t k, void *out, int64_t e)
{
    switch (kind) {
    case OC_KEY_F32:
        ((float *)out)[e] = oc_key_f32_value(k);
        break;
    case OC_KEY_I32:
        ((int32_t *)out)[e] = oc_key_i32_value(k);
        break;
    case OC_KEY_U16:
        ((uint16_t *)out)[e] = (uint16_t)k;
        break;
    case OC_KEY_I32_REV:
        ((int32_t *)out)[e] = oc_key_i32_value(~k);
        break;
    default:
        ((uint16_t *)out)[e] = (uint16_t)(0xFFFFu - k);
        break;
    }
}

OC_SK uint64_t oc_key_make(uint32_t score_key, int64_t index)
{
    return (uint64_t)score_key << 32 | (uint32_t)(0xFFFFFFFFu - (uint32_t)index);
}
OC_SK int64_t oc_key_index(uint64_t key) { return (int64_t)(0xFFFFFFFFu - (uint32_t)key); }

#endif
