/* fuzz_mtx.c - the MatrixMarket coordinate reader (src/io/formats/mtx.c); the input is the file. */
#include <stdint.h>

#include "common.h"
#include "io/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_read_matrix(oc_mtx_read_buffer, "fuzz.mtx", data, size);
    return 0;
}
