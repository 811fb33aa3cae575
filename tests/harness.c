#include "harness.h"

#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

int oc_test_failures = 0;
int oc_test_checks = 0;
static int skipped = 0;

void oc_test_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    if (++oc_test_failures > 50) {
        fprintf(stderr, "too many failures, stopping\n");
        exit(1);
    }
}

void oc_test_skip(const char *reason)
{
    printf("SKIPPED: %s\n", reason);
    skipped = 1;
}

int oc_test_finish(void)
{
    if (oc_test_failures) {
        fprintf(stderr, "%d of %d checks failed\n", oc_test_failures, oc_test_checks);
        return 1;
    }
    if (skipped && oc_test_checks == 0) return 77;
    if (oc_test_checks == 0) {
        fprintf(stderr, "no checks ran\n");
        return 1;
    }
    printf("ok: %d checks\n", oc_test_checks);
    return 0;
}

const char *oc_test_data_path(const char *name, char *buf, size_t size)
{
    const char *src = getenv("OUTCORE_SOURCE_DIR");
    snprintf(buf, size, "%s/../shared/data/%s", src ? src : ".", name);
    return access(buf, R_OK) == 0 ? buf : NULL;
}

const oc_test_output oc_test_outputs[OC_TEST_OUTPUT_COUNT] = {
    {OC_METRIC_COUNTS, OC_DTYPE_INT32},  {OC_METRIC_COUNTS, OC_DTYPE_UINT16},  {OC_METRIC_HAMMING, OC_DTYPE_INT32},
    {OC_METRIC_HAMMING, OC_DTYPE_UINT16}, {OC_METRIC_JACCARD, OC_DTYPE_FLOAT32}, {OC_METRIC_COSINE, OC_DTYPE_FLOAT32},
};

uint64_t oc_test_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}
