/*
 * matmul_product.c - one product of random operands through oc_matmul against its float64
 * reference (matmul_product.h).
 */
#include "matmul_product.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "matmul_array.h"
#include "matmul/matmul_dtype.h"
#include "matmul/mm_half.h"

static uint64_t seed = 12345;

void *mm_random_matrix(oc_matmul_dtype t, int64_t rows, int64_t cols)
{
    const size_t e = oc_matmul_dtype_size(t);
    unsigned char *p = malloc((size_t)(rows * cols) * e + 1);
    for (int64_t i = 0; i < rows * cols; i++) {
        const double v = (double)(oc_test_rand(&seed) % 2001) / 1000.0 - 1.0;
        const int iv = (int)(oc_test_rand(&seed) % 256) - 128;
        unsigned char *x = p + (size_t)i * e;
        switch (t) {
        case OC_MATMUL_FLOAT64: {
            const double d = v;
            memcpy(x, &d, 8);
            break;
        }
        case OC_MATMUL_FLOAT32: {
            const float f = (float)v;
            memcpy(x, &f, 4);
            break;
        }
        case OC_MATMUL_FLOAT16:
        case OC_MATMUL_BFLOAT16: {
            const uint16_t h = t == OC_MATMUL_FLOAT16 ? oc_mm_float_to_half((float)v) : oc_mm_float_to_bf16((float)v);
            memcpy(x, &h, 2);
            break;
        }
        case OC_MATMUL_INT8:
        case OC_MATMUL_INT16:
        case OC_MATMUL_INT32:
        case OC_MATMUL_INT64: { /* int8's range; wider types a hundred times it */
            const int64_t w = t == OC_MATMUL_INT8 ? iv : (int64_t)iv * 100;
            memcpy(x, (const char *)&w, e); /* the low bytes: this host is little-endian (.npy "<") */
            break;
        }
        case OC_MATMUL_BOOL: { /* seven in eight zeros (a bool result of any k but the longest
                                * holds both values); the rest 1, and bytes numpy also reads as true */
            static const unsigned char truths[] = {1, 1, 2, 255};
            *x = iv < 96 ? 0 : truths[iv % 4];
            break;
        }
        default: { /* the unsigned types: 0 .. 255 */
            const uint64_t w = (uint64_t)(iv + 128);
            memcpy(x, (const char *)&w, e);
            break;
        }
        }
    }
    return p;
}

double mm_value(oc_matmul_dtype t, const void *p, int64_t i)
{
    if (t == OC_MATMUL_BOOL) return ((const unsigned char *)p)[i] != 0; /* numpy's rule, not the library's */
    double d;
    oc_matmul_convert(t, (const char *)p + (size_t)i * oc_matmul_dtype_size(t), 1, OC_MM_FLOAT64, &d, 1);
    return d;
}

/* Checks C (rt) of product p against the reference computed here from its operands a and b,
 * within rt's tolerance (int32: exactly); reports the first element off it. Returns 1 when
 * one is. */
int mm_off_reference(const mm_product *p, const void *a, const void *b, const void *c, oc_matmul_dtype rt)
{
    const int64_t ac = p->transpose_a ? p->m : p->k, bc = p->transpose_b ? p->k : p->n;
    /* docs/matmul.md, "Accuracy": |C - C64| <= c k u sum|a b| + u_out |C64|, c = MM_ACCURACY_C, u the
     * unit roundoff of the sums (float64's for a float64 result, float32's for the others),
     * u_out that of the rounding into a half-precision result (and half its smallest
     * subnormal, float16's 2^-25, for a result that lands there). */
    const double u = rt == OC_MATMUL_FLOAT64 ? 0x1p-53 : 0x1p-24;
    const double u_out = rt == OC_MATMUL_FLOAT16 ? 0x1p-11 : rt == OC_MATMUL_BFLOAT16 ? 0x1p-8 : 0;
    const double floor_out = rt == OC_MATMUL_FLOAT16 ? 0x1p-25 : 0;
    int bad = 0;
    for (int64_t i = 0; i < p->m && !bad; i++)
        for (int64_t j = 0; j < p->n && !bad; j++) {
            double ref = 0, mag = 0;
            for (int64_t l = 0; l < p->k; l++) {
                const double x = mm_value(p->ta, a, p->transpose_a ? l * ac + i : i * ac + l);
                const double y = mm_value(p->tb, b, p->transpose_b ? j * bc + l : l * bc + j);
                double xc = x, yc = y;
                if (rt != OC_MATMUL_FLOAT64 && rt != OC_MATMUL_INT32 &&
                    rt != OC_MATMUL_BOOL) { /* the operands as the compute type holds them */
                    float fx = (float)x, fy = (float)y;
                    if (rt == OC_MATMUL_FLOAT16)
                        fx = oc_mm_half_to_float(oc_mm_float_to_half(fx)),
                        fy = oc_mm_half_to_float(oc_mm_float_to_half(fy));
                    if (rt == OC_MATMUL_BFLOAT16)
                        fx = oc_mm_bf16_to_float(oc_mm_float_to_bf16(fx)),
                        fy = oc_mm_bf16_to_float(oc_mm_float_to_bf16(fy));
                    xc = fx, yc = fy;
                }
                ref += xc * yc;
                mag += fabs(xc * yc);
            }
            if (rt == OC_MATMUL_BOOL) ref = ref != 0; /* numpy's bool: any of the ANDs */
            const double got = mm_value(rt, c, i * p->n + j);
            const double sums = MM_ACCURACY_C * (double)p->k * u * mag;
            const double tol = rt == OC_MATMUL_INT32 || rt == OC_MATMUL_BOOL
                                   ? 0
                                   : sums + u_out * (fabs(ref) + sums) + floor_out + 1e-300;
            if (fabs(got - ref) > tol) {
                CHECK_MSG(0, "%s x %s -> %s, %lldx%lldx%lld t%d%d: C[%lld][%lld] = %.17g, reference %.17g",
                          oc_matmul_dtype_name(p->ta), oc_matmul_dtype_name(p->tb), oc_matmul_dtype_name(rt),
                          (long long)p->m, (long long)p->n, (long long)p->k, p->transpose_a, p->transpose_b,
                          (long long)i, (long long)j, got, ref);
                bad = 1;
            }
        }
    return bad;
}

void *mm_run_product(const mm_product *p, const mm_run *r, oc_matmul_dtype *rt, int check, oc_matmul_stats *stats)
{
    oc_context *ctx = NULL;
    oc_context_create(&ctx);
    const int64_t ar = p->transpose_a ? p->k : p->m, ac = p->transpose_a ? p->m : p->k;
    const int64_t br = p->transpose_b ? p->n : p->k, bc = p->transpose_b ? p->k : p->n;
    uint64_t keep = seed;
    void *a = mm_random_matrix(p->ta, ar, ac), *b = mm_random_matrix(p->tb, br, bc);
    seed = keep; /* the same operands for every run */
    oc_matmul_array A = mem(p->ta, a, ar, ac), B = mem(p->tb, b, br, bc);
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.transpose_a = p->transpose_a;
    o.transpose_b = p->transpose_b;
    o.dtype = p->requested;
    o.backend = r->backend;
    o.devices = r->devices;
    o.host_mem_bytes = r->host_mem;
    o.gpu_mem_bytes = r->gpu_mem;
    o.tile = r->tile;
    int64_t rows = 0, cols = 0;
    CHECK(oc_matmul_result(ctx, &A, &B, &o, rt, &rows, &cols) == OC_OK);
    CHECK_EQ_I64(rows, p->m);
    CHECK_EQ_I64(cols, p->n);
    const size_t e = oc_matmul_dtype_size(*rt);
    void *c = calloc((size_t)(p->m * p->n) + 1, e);
    oc_matmul_array C = mem(*rt, c, p->m, p->n);
    oc_matmul_stats st = {.struct_size = sizeof st};
    oc_status s = oc_matmul(ctx, &A, &B, &C, &o, &st);
    CHECK_MSG(s == OC_OK, "oc_matmul %s x %s, %lldx%lldx%lld: %s", oc_matmul_dtype_name(p->ta),
              oc_matmul_dtype_name(p->tb), (long long)p->m, (long long)p->n, (long long)p->k,
              oc_context_last_error(ctx));
    CHECK(st.tiles >= 1 || p->m * p->n * p->k == 0); /* k = 0: zeros, no tile computed on a GPU */
    if (check && s == OC_OK) mm_off_reference(p, a, b, c, *rt);
    if (stats) *stats = st;
    free(a);
    free(b);
    oc_context_free(ctx);
    return c;
}
