/* fuzz_text.c - the 0/1 text reader of .txt and .csv files (src/io/formats/text.c); the input is the
 * file (one reader serves both extensions: whitespace or commas separate the values). */
#include <stdint.h>

#include "common.h"
#include "io/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_read_matrix(oc_text_read_buffer, "fuzz.csv", data, size);
    return 0;
}
