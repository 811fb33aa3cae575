/*
 * common.h - what every fuzz target shares (tests/fuzz, docs/testing.md).
 *
 * A target feeds its input to one reader and checks the reader's contract, not only that it
 * does not crash: the status is one a reader may return for bad input, and a failure carries
 * a one-line message, and bad input (OC_ERR_INPUT) names the file. A broken contract aborts, which libFuzzer reports
 * as a crash with the input that caused it.
 */
#ifndef OC_FUZZ_COMMON_H
#define OC_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "outcore.h"

/* The process' one context, created on first use. */
oc_context *fuzz_context(void);

/* Aborts unless st is OC_OK or one of the `allowed` failures (a list ended by OC_OK) and,
 * on failure, the context's message is one non-empty line, which starts with name when st
 * is OC_ERR_INPUT. */
void fuzz_check_status(oc_status st, const char *name, const oc_status *allowed);

/* Aborts with a message; for contracts checked by the targets themselves. */
void fuzz_fail(const char *what, ...) __attribute__((format(printf, 1, 2), noreturn));

/* A path that reads as exactly these bytes (a memfd, rewritten on each call), for readers
 * that take a path and copy the file into a buffer of its own size. */
const char *fuzz_file(const uint8_t *data, size_t size);

/* Checks a matrix a reader returned: positive dimensions, cols columns when cols > 0, and
 * (for matrices small enough to walk) no bit set past the last column, where kernels would
 * count it. Frees nothing. */
void fuzz_check_matrix(const oc_matrix *m, int64_t cols);

/* Runs a matrix reader's result through fuzz_check_status and fuzz_check_matrix, then frees m. */
void fuzz_check_read(oc_status st, const char *name, oc_matrix *m, int64_t cols);

/* Reads data with one of the in-memory matrix readers of io.h and checks the result. */
typedef oc_status (*fuzz_matrix_reader)(oc_context *ctx, const char *name, const void *data, size_t size,
                                        const oc_read_options *opts, oc_matrix **out);
void fuzz_read_matrix(fuzz_matrix_reader read, const char *name, const uint8_t *data, size_t size);

#endif
