/*
 * fuzz_npy.c - the .npy reader (src/io/formats/npy.c), versions 1.0, 2.0 and 3.0, dense and packed.
 *
 * Input: one selector byte, then the file. Selector 0 reads the file as a dense 0/1 matrix;
 * 1..239 read it as numpy.packbits output with that many columns (--bits); 240..255 ask for
 * very large bit counts (2^63-1 halved 0..15 times), for the size arithmetic.
 */
#include <stdint.h>

#include "common.h"
#include "io/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    oc_read_options opts = OC_READ_OPTIONS_INIT;
    opts.bits = data[0] < 240 ? data[0] : INT64_MAX >> (data[0] - 240);
    opts.binarize = data[0] == 1; /* bits=1 is the least useful packed case: read it binarized instead */
    if (opts.binarize) opts.bits = 0;
    oc_matrix *m = NULL;
    oc_status st = oc_npy_read_buffer(fuzz_context(), "fuzz.npy", data + 1, size - 1, &opts, &m);
    fuzz_check_read(st, "fuzz.npy", m, opts.bits);
    return 0;
}
