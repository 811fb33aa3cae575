/*
 * fuzz_map_npy.c - `outcore map`'s .npy operands (src/map/map_plan.c's inputs, through the
 * header parser of src/io/formats/npy_array.c): the header, the dtype, any number of
 * dimensions, the data's size against the file, broadcasting against an array in memory, and
 * the type of the expression over them; then, where the result is small, its evaluation on
 * the CPU, element-wise or reduced.
 *
 * Input: one selector byte, then the file, bound to `a`. Selector bits 0-2: the expression
 * (EXPRS); bits 3-5: none, or the reduction (sum, mean, min, max), bit 6 over axis 0; b is a
 * float64 array in memory: of 3, or with bit 7 of 4 x 3 in Fortran order (given with
 * oc_map_array.fortran_order, planned as a Fortran-order file is).
 */
#include <stdint.h>
#include <stdlib.h>

#include "common.h"
#include "map/map_plan.h"
#include "map/map_types.h"

static const char *const EXPRS[] = {
    "a * 2", "a + b", "where(a > 0, a, -a)", "a // 3", "sqrt(abs(a)) + 1", "a == a", "minimum(a, b) * 0.5", "-a",
};

/* A result of at most this many elements is evaluated: a file that fits the input holds few
 * elements, but a dimension of 0 lets a header name any other. */
#define RUN_MAX_CELLS 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const oc_status allowed[] = {OC_ERR_INPUT, OC_ERR_NO_MEMORY, OC_OK};
    if (size < 1) return 0;
    const unsigned sel = data[0];
    oc_context *ctx = fuzz_context();
    const char *path = fuzz_file(data + 1, size - 1);
    static const double b_values[12] = {1.5, -2.0, 0.25, 3.0, -0.5, 8.0, 0.0, -1.0, 2.5, 4.0, -6.0, 0.75};
    static const int64_t b_shape[1] = {3}, b_grid[2] = {4, 3};
    oc_map_array in[2] = {OC_MAP_ARRAY_INIT, OC_MAP_ARRAY_INIT};
    in[0].name = "a", in[0].path = path;
    in[1].name = "b", in[1].data = b_values, in[1].dtype = OC_MAP_FLOAT64, in[1].ndim = 1, in[1].shape = b_shape;
    if (sel & 128) in[1].ndim = 2, in[1].shape = b_grid, in[1].fortran_order = 1;
    oc_map_options opts = OC_MAP_OPTIONS_INIT;
    opts.backend = OC_BACKEND_CPU;
    opts.threads = 1;
    const unsigned r = (sel >> 3) & 7;
    opts.reduce = r <= 4 ? (oc_map_reduce)r : OC_MAP_REDUCE_NONE;
    opts.has_axis = opts.reduce != OC_MAP_REDUCE_NONE && (sel & 64);
    opts.axis = 0;
    oc_map *m = NULL;
    oc_status st = oc_map_create(ctx, EXPRS[sel & 7], in, 2, NULL, 0, &opts, &m);
    fuzz_check_status(st, "", allowed); /* a shape that does not broadcast names no file */
    if (st != OC_OK) {
        if (m) fuzz_fail("a failed oc_map_create returned a plan");
        return 0;
    }
    int64_t shape[OC_MAP_MAX_DIMS], cells = 1;
    const int ndim = oc_map_result_shape(m, shape);
    const int dtype = (int)oc_map_result_dtype(m);
    if (ndim < 0 || ndim > OC_MAP_MAX_DIMS || dtype < 0 || dtype >= OC_MT_COUNT)
        fuzz_fail("a result of %d dimensions and dtype %d", ndim, dtype);
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) fuzz_fail("dimension %d of the result is %lld", d, (long long)shape[d]);
        if (__builtin_mul_overflow(cells, shape[d], &cells)) cells = INT64_MAX;
    }
    if (cells <= RUN_MAX_CELLS) {
        void *out = malloc((size_t)cells * oc_mt_size(dtype) + 8);
        if (!out) fuzz_fail("out of memory for %lld elements", (long long)cells);
        /* A file whose header and size pass holds what the expression reads: it evaluates
         * (an integer division by zero is numpy's 0, not an error). */
        st = oc_map_run(ctx, m, NULL, out, NULL);
        /* A result in Fortran order (Fortran-order inputs) of 2 dimensions or more is refused
         * in memory, which is C order (docs/map.md). */
        const int refused_in_memory = m->fortran && ndim > 1 && st == OC_ERR_INVALID_ARGUMENT;
        if (st != OC_OK && !refused_in_memory)
            fuzz_fail("oc_map_run after oc_map_create passed: %s", oc_context_last_error(ctx));
        free(out);
    }
    oc_map_free(m);
    return 0;
}
