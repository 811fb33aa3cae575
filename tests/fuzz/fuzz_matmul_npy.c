/*
 * fuzz_matmul_npy.c - `outcore matmul`'s .npy operands (src/matmul/matmul_source.c, through
 * the header parser of src/io/formats/npy_array.c): the header, the dtype (bool's bytes among
 * them), the shape and Fortran order, the data's size against the file, and the promotion of
 * the pair; then, where the result is small, the product itself on the CPU.
 *
 * Input: one selector byte, then the file, read as A. Selector bits 0-1: B is none (A·Aᵀ),
 * the same file transposed (A·Aᵀ again, found from the two operands), the same file, or the
 * same file with op(A) = Aᵀ; bits 2-3: the dtype asked for (numpy's, float32, float64,
 * int32); bit 4: the reference loops instead of the BLAS; bits 5 and 6 both set: the product
 * is also written to a .npy file, which must have a header of its shape (a vector's dimension
 * dropped) and its size, hold the memory result's bytes where no plan changes them (integer
 * and bool results, the reference loops), and leave nothing else behind.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "io/formats/npy_array.h"

/* A folder of the process' own for the result files, made on first use and removed at exit. */
static char dir[64];
static void remove_out_dir(void) { rmdir(dir); }
static const char *out_dir(void)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fuzz_matmul_npy.XXXXXX");
        if (!mkdtemp(dir)) fuzz_fail("mkdtemp: cannot make a folder for result files");
        atexit(remove_out_dir);
    }
    return dir;
}

/* The product written to a file: the same status as into memory, a header whose shape holds
 * rows x cols elements in at most two dimensions, the data's size, the memory result's bytes
 * when `exact` (a file's plan may cut other tiles than memory's, which moves float bits on a
 * BLAS), and the folder empty again once the file is removed (no temporary left). */
static void check_file_result(oc_context *ctx, const oc_matmul_array *a, const oc_matmul_array *b,
                              const oc_matmul_options *o, int64_t rows, int64_t cols, const void *want, size_t bytes,
                              int exact)
{
    char path[128];
    snprintf(path, sizeof path, "%s/c.npy", out_dir());
    oc_matmul_array c = OC_MATMUL_ARRAY_INIT;
    c.path = path;
    if (oc_matmul(ctx, a, b, &c, o, NULL) != OC_OK)
        fuzz_fail("oc_matmul into a file after memory passed: %s", oc_context_last_error(ctx));
    FILE *f = fopen(path, "rb");
    if (!f) fuzz_fail("the result file is not there");
    unsigned char *got = malloc(bytes + 4096);
    const size_t len = got ? fread(got, 1, bytes + 4096, f) : 0;
    fclose(f);
    oc_npy_array_info info;
    if (!got || oc_npy_array_parse(ctx, path, got, len, &info) != OC_OK)
        fuzz_fail("the result file's header does not parse: %s", oc_context_last_error(ctx));
    int64_t cells = 1;
    for (int d = 0; d < info.ndim; d++) cells *= info.shape[d];
    if (info.ndim > 2 || cells != rows * cols || (info.ndim == 2 && (info.shape[0] != rows || info.shape[1] != cols)))
        fuzz_fail("a %lld x %lld result written with %d dimensions", (long long)rows, (long long)cols, info.ndim);
    if (len != info.data_offset + bytes || (exact && memcmp(got + info.data_offset, want, bytes) != 0))
        fuzz_fail("the result file does not hold the memory result's %zu bytes", bytes);
    free(got);
    unlink(path);
    if (rmdir(out_dir()) != 0 || mkdir(out_dir(), 0700) != 0) fuzz_fail("a file beside the result was left behind");
}

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
    if ((sel & 0x60) == 0x60) { /* the file result holds the same bytes (the same loops ran) */
        if (sel & 16) setenv("OUTCORE_BLAS", "none", 1);
        const int exact = rt == OC_MATMUL_INT32 || rt == OC_MATMUL_BOOL || (sel & 16);
        check_file_result(ctx, &a, bp, &o, rows, cols, out, (size_t)(cells * elem[rt]), exact);
        if (sel & 16) unsetenv("OUTCORE_BLAS");
    }
    free(out);
    return 0;
}
