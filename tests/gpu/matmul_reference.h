/*
 * matmul_reference.h - what the GPU matmul tests share: operands of every type whose product
 * is computed here in float64 (the reference), the check of a result against it within the
 * type's tolerance (int8 exactly), and the check that a job left nothing allocated.
 */
#ifndef OC_TEST_MATMUL_REFERENCE_H
#define OC_TEST_MATMUL_REFERENCE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "outcore.h"
#include "engine/cuda/device.h"
/* The GPU tests are built only with CUDA, but their targets do not carry the library's
 * OC_HAVE_CUDA, which declares the CUDA backend's table (include this before matmul_job.h). */
#ifndef OC_HAVE_CUDA
#define OC_HAVE_CUDA 1
#endif
#include "matmul/matmul_job.h"
#include "matmul/matmul_dtype.h"

/* ---------------------------------------------------------------- element conversions */
static uint16_t to_half(float f)
{
    /* Exact for the values used here: normal halves whose mantissa fits 10 bits, and 0. */
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint32_t sign = (x >> 16) & 0x8000u;
    if ((x & 0x7fffffffu) == 0) return (uint16_t)sign;
    const int exp = (int)((x >> 23) & 0xff) - 127 + 15;
    return (uint16_t)(sign | (uint32_t)exp << 10 | (x & 0x7fffffu) >> 13);
}

static float from_half(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    uint32_t x;
    if (exp == 0 && man == 0) x = sign;
    else if (exp == 0) { /* subnormal */ float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    } else if (exp == 31) x = sign | 0x7f800000u | man << 13;
    else x = sign | (exp - 15 + 127) << 23 | man << 13;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    return (uint16_t)(x >> 16); /* exact for the values used here */
}

static float from_bf16(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static void store(oc_mm_type t, void *base, int64_t i, double v)
{
    switch (t) {
    case OC_MM_FLOAT64:
        ((double *)base)[i] = v;
        break;
    case OC_MM_FLOAT32:
        ((float *)base)[i] = (float)v;
        break;
    case OC_MM_FLOAT16:
        ((uint16_t *)base)[i] = to_half((float)v);
        break;
    case OC_MM_BFLOAT16:
        ((uint16_t *)base)[i] = to_bf16((float)v);
        break;
    case OC_MM_INT8:
        ((int8_t *)base)[i] = (int8_t)v;
        break;
    default:
        ((int32_t *)base)[i] = (int32_t)v;
        break;
    }
}

static double load(oc_mm_type t, const void *base, int64_t i)
{
    switch (t) {
    case OC_MM_FLOAT64:
        return ((const double *)base)[i];
    case OC_MM_FLOAT32:
        return ((const float *)base)[i];
    case OC_MM_FLOAT16:
        return from_half(((const uint16_t *)base)[i]);
    case OC_MM_BFLOAT16:
        return from_bf16(((const uint16_t *)base)[i]);
    case OC_MM_INT8:
        return ((const int8_t *)base)[i];
    default:
        return ((const int32_t *)base)[i];
    }
}

typedef struct operands {
    int64_t m, n, k;
    oc_mm_type in, out;
    int symmetric;
    void *a, *b;
    double *ref, *mag; /* the exact product and sum |a||b| per element */
} operands;

/* Small values every type holds exactly: integers for int8, multiples of 1/8 in [-2, 2] else. */
static operands make_operands(int64_t m, int64_t n, int64_t k, oc_mm_type in, oc_mm_type out, int symmetric,
                              uint64_t seed)
{
    operands o = {m, n, k, in, out, symmetric, NULL, NULL, NULL, NULL};
    const size_t es = oc_mm_type_size(in);
    o.a = malloc((size_t)(m * k) * es);
    o.b = symmetric ? NULL : malloc((size_t)(k * n) * es);
    o.ref = calloc((size_t)(m * n), sizeof(double));
    o.mag = calloc((size_t)(m * n), sizeof(double));
    double *da = malloc((size_t)(m * k) * sizeof(double)), *db = malloc((size_t)(k * n) * sizeof(double));
    if (!o.a || (!symmetric && !o.b) || !o.ref || !o.mag || !da || !db) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < m * k; ++i) {
        const int64_t r = (int64_t)(oc_test_rand(&seed) % 33) - 16;
        da[i] = in == OC_MM_INT8 ? (double)(r * 8 % 128) : (double)r / 8.0;
        store(in, o.a, i, da[i]);
    }
    for (int64_t i = 0; i < k * n; ++i) {
        if (symmetric) {
            const int64_t kk = i / n, j = i % n;
            db[i] = da[j * k + kk];
            continue;
        }
        const int64_t r = (int64_t)(oc_test_rand(&seed) % 33) - 16;
        db[i] = in == OC_MM_INT8 ? (double)(r * 7 % 128) : (double)r / 8.0;
        store(in, o.b, i, db[i]);
    }
    for (int64_t i = 0; i < m; ++i)
        for (int64_t kk = 0; kk < k; ++kk) {
            const double x = da[i * k + kk];
            if (x == 0) continue;
            for (int64_t j = 0; j < n; ++j) {
                o.ref[i * n + j] += x * db[kk * n + j];
                o.mag[i * n + j] += fabs(x * db[kk * n + j]);
            }
        }
    free(da);
    free(db);
    return o;
}

static void free_operands(operands *o)
{
    free(o->a);
    free(o->b);
    free(o->ref);
    free(o->mag);
}

static const char *type_name(oc_mm_type t)
{
    static const char *const names[] = {"float64", "float32", "float16", "bfloat16", "int8", "int32"};
    return (unsigned)t < OC_MM_TYPE_COUNT ? names[t] : "?";
}

/* The relative error allowed against sum |a||b|: the accumulation's and the output's rounding. */
static double tolerance(oc_mm_type in, oc_mm_type out, int tf32)
{
    if (in == OC_MM_INT8) return 0;
    if (out == OC_MM_FLOAT16) return 2e-3;
    if (out == OC_MM_BFLOAT16) return 1e-2;
    if (in == OC_MM_FLOAT64) return 1e-13;
    if (tf32) return 2e-3; /* the values here are exact in TF32; its products are not rounded further */
    return 1e-5;
}

/* Checks C against the reference: every element of the computed part written once, within
 * tolerance (int8: exactly); a symmetric job's lower tiles untouched. Returns the failures. */
static int check_result(const operands *o, const void *c, const unsigned char *writes, int tf32, const char *what)
{
    const double tol = tolerance(o->in, o->out, tf32);
    int bad = 0;
    for (int64_t i = 0; i < o->m; ++i)
        for (int64_t j = 0; j < o->n; ++j) {
            const int64_t e = i * o->n + j;
            if (writes[e] > 1 || (writes[e] == 0 && (!o->symmetric || j >= i))) {
                if (bad++ < 5)
                    fprintf(stderr, "%s: C[%lld][%lld] written %d times\n", what, (long long)i, (long long)j,
                            writes[e]);
                continue;
            }
            if (!writes[e]) continue;
            const double got = load(o->out, c, e), err = fabs(got - o->ref[e]);
            if (!(err <= tol * o->mag[e])) {
                if (bad++ < 5)
                    fprintf(stderr, "%s: C[%lld][%lld] = %.17g, expected %.17g (|error| %.3g > %.3g)\n", what,
                            (long long)i, (long long)j, got, o->ref[e], err, tol * o->mag[e]);
            }
        }
    CHECK_MSG(bad == 0, "%s: %d elements wrong", what, bad);
    return bad;
}

/* Nothing of the job left allocated once ctx's cached pinned memory is released. */
static void check_clean(oc_context *ctx, const char *what)
{
    oc_context_release_cached_memory(ctx);
    CHECK_MSG(oc_cuda_live_device_bytes() == 0 && oc_cuda_live_pinned_bytes() == 0,
              "%s: %lld device and %lld pinned bytes left allocated", what, (long long)oc_cuda_live_device_bytes(),
              (long long)oc_cuda_live_pinned_bytes());
}

#endif
