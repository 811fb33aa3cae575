/* common.c - see common.h. */
#include "common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "matrix/matrix.h"

/* Compiled-in sanitizer settings, so that a copied build folder runs the same anywhere.
 * Readers size their allocations from the input (an .mtx size line, a fatbinary's stated
 * size); an allocation past 256 MiB fails as it would on a small machine (the reader must
 * then say "out of memory"), instead of ending the run as libFuzzer's malloc limit would. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1:max_allocation_size_mb=256:detect_leaks=1";
}
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void) { return "print_stacktrace=1:halt_on_error=1"; }

/* The targets never start processes: a fatbinary's PTX entry would otherwise run the
 * toolkit's ptxas once per input. This definition takes the place of the C library's, so
 * ptxas.c meets a failed fork and reports ptxas as unusable (OC_ERR_UNSUPPORTED). The PTX
 * readers that parse ptxas' report are fuzzed directly (fuzz_ptx.c). */
pid_t fork(void)
{
    errno = ENOSYS;
    return -1;
}

/* libFuzzer comes with libstdc++, linked statically (CMakeLists.txt) so that the binaries
 * run where this compiler's libstdc++ is missing; libstdc++ 12 seeds std::random_device with
 * arc4random, which glibc has only since 2.36. This definition takes its place, so that
 * the binaries need glibc 2.34 only (Ubuntu 22.04, RHEL 9) when a build folder is copied to
 * another host (bench/fuzz_long.sh --prebuilt). */
uint32_t arc4random(void)
{
    uint32_t v;
    while (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {}
    return v;
}

oc_context *fuzz_context(void)
{
    static oc_context *ctx;
    if (!ctx && oc_context_create(&ctx) != OC_OK) fuzz_fail("oc_context_create failed");
    return ctx;
}

void fuzz_fail(const char *what, ...)
{
    va_list ap;
    va_start(ap, what);
    fprintf(stderr, "fuzz contract broken: ");
    vfprintf(stderr, what, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    abort();
}

void fuzz_check_status(oc_status st, const char *name, const oc_status *allowed)
{
    /* FUZZ_VERBOSE=1 says what each input came to: to see what a seed reaches. */
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("FUZZ_VERBOSE") && atoi(getenv("FUZZ_VERBOSE")) > 0;
    const char *msg = oc_context_last_error(fuzz_context());
    if (verbose) fprintf(stderr, "fuzz: %s: %s\n", oc_status_string(st), st == OC_OK ? "read" : msg);
    if (st == OC_OK) return;
    int ok = 0;
    for (const oc_status *a = allowed; *a != OC_OK; ++a) ok |= *a == st;
    if (!ok)
        fuzz_fail("status %d (%s) is not one a reader returns for bad input: %s", (int)st, oc_status_string(st), msg);
    if (!msg[0] || strchr(msg, '\n')) fuzz_fail("the message '%s' is not one non-empty line", msg);
    /* Bad input names the file (design.md, Reliability); other failures (out of memory, no
     * usable ptxas) need only say what went wrong. */
    if (st == OC_ERR_INPUT && strncmp(msg, name, strlen(name)) != 0)
        fuzz_fail("the message '%s' does not start with the file name %s", msg, name);
}

const char *fuzz_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("outcore-fuzz", MFD_CLOEXEC);
        if (fd < 0) fuzz_fail("memfd_create: %s", strerror(errno));
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0) fuzz_fail("ftruncate: %s", strerror(errno));
    for (size_t done = 0; done < size;) {
        ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
        if (n <= 0) fuzz_fail("pwrite: %s", strerror(errno));
        done += (size_t)n;
    }
    return path;
}

void fuzz_check_matrix(const oc_matrix *m, int64_t cols)
{
    if (!m) fuzz_fail("a reader returned OC_OK without a matrix");
    int64_t rows = oc_matrix_rows(m);
    if (rows <= 0 || oc_matrix_cols(m) <= 0 || (cols > 0 && oc_matrix_cols(m) != cols))
        fuzz_fail("a %lld x %lld matrix (expected %lld columns)", (long long)rows, (long long)oc_matrix_cols(m),
                  (long long)cols);
    if (rows > 4096 || m->words_per_row > 64) return;
    int64_t *pops = malloc((size_t)rows * sizeof *pops);
    if (!pops || oc_matrix_row_popcounts(NULL, m, 1, pops) != OC_OK) fuzz_fail("row popcounts failed");
    for (int64_t i = 0; i < rows; ++i) {
        int64_t ones = 0;
        for (int64_t j = 0; j < m->cols; ++j) ones += oc_matrix_get(m, i, j);
        if (ones != pops[i])
            fuzz_fail("row %lld has %lld ones in its %lld columns but popcount %lld: bits set in the padding",
                      (long long)i, (long long)ones, (long long)m->cols, (long long)pops[i]);
    }
    free(pops);
}

void fuzz_check_read(oc_status st, const char *name, oc_matrix *m, int64_t cols)
{
    static const oc_status allowed[] = {OC_ERR_INPUT, OC_ERR_NO_MEMORY, OC_OK};
    fuzz_check_status(st, name, allowed);
    if (st == OC_OK) fuzz_check_matrix(m, cols);
    else if (m) fuzz_fail("a failed read returned a matrix");
    oc_matrix_free(m);
}

void fuzz_read_matrix(fuzz_matrix_reader read, const char *name, const uint8_t *data, size_t size)
{
    /* Each input is read as it is and binarized: the value checks and the binarize paths. */
    for (int binarize = 0; binarize < 2; ++binarize) {
        oc_read_options opts = OC_READ_OPTIONS_INIT;
        opts.binarize = binarize;
        oc_matrix *m = NULL;
        oc_status st = read(fuzz_context(), name, data, size, &opts, &m);
        fuzz_check_read(st, name, m, 0);
    }
}
