/*
 * fuzz_matmul_npy.c - `outcore matmul`'s .npy operands (src/matmul/matmul_source.c, through
 * the header parser of src/io/formats/npy_array.c): the header, the dtype (bool's bytes among
 * them), the shape and Fortran order, the data's size against the file, and the promotion of
 * the pair; then, where the result is small, the product itself on the CPU.
 *
 * Input: one selector byte, then the file, read as A. Selector bits 0-1: B is none (A·Aᵀ),
 * the same file transposed (A·Aᵀ again, found from the two operands), the same file, or the
 * same file with op(A) = Aᵀ; bits 2-3: the dtype asked for (numpy's, float32, float64,
 * int32); bit 4: the reference loops instead of the BLAS.
 */
#include <stdint.h>
#include <stdlib.h>

#include "common.h"

/* A result of at most this many elements is computed: the product of a file that fits the
 * input is small, but a k of 0 lets a header ask for any m and n. */
#define RUN_MAX_CELLS 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const oc_status allowed[] = {OC_ERR_INPUT, OC_OK};
    static const oc_matmul_dtype asked[] = {OC_MATMUL_DEFAULT, OC_MATMUL_FLOAT32, OC_MATMUL_FLOAT64, OC_MATMUL_INT32};
    if (size < 1) return 0;
    const unsigned sel = data[0];
    oc_context *ctx = fuzz_context();
    const char *path = fuzz_file(data + 1, size - 1);
    oc_matmul_array a = OC_MATMUL_ARRAY_INIT, b = OC_MATMUL_ARRAY_INIT;
    a.path = b.path = path;
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.backend = OC_BACKEND_CPU;
    o.threads = 1;
    o.dtype = asked[(sel >> 2) & 3];
    const unsigned how = sel & 3;
    o.gram = how == 0;
    o.transpose_b = how == 1;
    o.transpose_a = how == 3;
    const oc_matmul_array *bp = how == 0 ? NULL : &b;
    oc_matmul_dtype rt = OC_MATMUL_DEFAULT;
    int64_t rows = -1, cols = -1;
    oc_status st = oc_matmul_result(ctx, &a, bp, &o, &rt, &rows, &cols);
    fuzz_check_status(st, path, allowed);
    if (st != OC_OK) return 0;
    if (rows < 0 || cols < 0 || (how < 2 && rows != cols) || rt == OC_MATMUL_DEFAULT || rt > OC_MATMUL_BOOL)
        fuzz_fail("oc_matmul_result: a %lld x %lld result of dtype %d", (long long)rows, (long long)cols, (int)rt);
    int64_t cells;
    if (__builtin_mul_overflow(rows, cols, &cells) || cells > RUN_MAX_CELLS) return 0; /* k may be 0 */
    static const int elem[] = {[OC_MATMUL_FLOAT64] = 8,  [OC_MATMUL_FLOAT32] = 4, [OC_MATMUL_FLOAT16] = 2,
                               [OC_MATMUL_BFLOAT16] = 2, [OC_MATMUL_INT32] = 4,   [OC_MATMUL_BOOL] = 1};
    if ((unsigned)rt >= sizeof elem / sizeof elem[0] || elem[rt] == 0)
        fuzz_fail("oc_matmul_result: a result of dtype %d", (int)rt);
    void *out = malloc((size_t)(cells * elem[rt]) + 1);
    if (!out) return 0;
    if (sel & 16) setenv("OUTCORE_BLAS", "none", 1);
    oc_matmul_array c = OC_MATMUL_ARRAY_INIT;
    c.data = out, c.dtype = rt, c.rows = rows, c.cols = cols;
    /* A file whose header and size pass holds the data a product reads: it must run. */
    st = oc_matmul(ctx, &a, bp, &c, &o, NULL);
    if (sel & 16) unsetenv("OUTCORE_BLAS");
    if (st != OC_OK) fuzz_fail("oc_matmul after oc_matmul_result passed: %s", oc_context_last_error(ctx));
    free(out);
    return 0;
}
