/*
 * harness.h - the tiny test harness of outcore's C tests.
 *
 * CHECK(cond) and CHECK_EQ_I64(a, b) record a failure with file:line and go on, so one run
 * shows every broken case; main() returns oc_test_finish(), which is 1 after any failure,
 * 77 (ctest's "skipped") when the test called oc_test_skip() and checked nothing, else 0.
 */
#ifndef OC_TEST_HARNESS_H
#define OC_TEST_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "outcore.h"

extern int oc_test_failures;
extern int oc_test_checks;

void oc_test_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define CHECK(cond)                                                        \
    do {                                                                   \
        oc_test_checks++;                                                  \
        if (!(cond)) oc_test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); \
    } while (0)

#define CHECK_MSG(cond, ...)                                        \
    do {                                                            \
        oc_test_checks++;                                           \
        if (!(cond)) oc_test_fail(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

#define CHECK_EQ_I64(a, b)                                                                                             \
    do {                                                                                                               \
        long long oc_a_ = (long long)(a), oc_b_ = (long long)(b);                                                      \
        oc_test_checks++;                                                                                              \
        if (oc_a_ != oc_b_) oc_test_fail(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", #a, oc_a_, #b, oc_b_); \
    } while (0)

/* Checks that the call `st` failed with status `want` and that ctx's message is one line
 * holding every given part (strings). */
#define CHECK_FAILED(ctx, st, want, ...)                                                                      \
    do {                                                                                                      \
        oc_status st_ = (st);                                                                                 \
        const char *msg_ = oc_context_last_error(ctx);                                                        \
        CHECK_MSG(st_ == (want), "status %d (%s), expected %d; message: %s", (int)st_, oc_status_string(st_), \
                  (int)(want), msg_);                                                                         \
        const char *parts_[] = {__VA_ARGS__};                                                                 \
        for (size_t k_ = 0; k_ < sizeof parts_ / sizeof parts_[0]; ++k_)                                      \
            CHECK_MSG(strstr(msg_, parts_[k_]) != NULL, "message '%s' lacks '%s'", msg_, parts_[k_]);         \
        CHECK_MSG(!strchr(msg_, '\n'), "message is not one line");                                            \
    } while (0)

/* Marks the test as skipped with a reason (printed). */
void oc_test_skip(const char *reason);
int oc_test_finish(void);

/* tests/data/<name> of the source tree (tests/data/README.md), or NULL when it cannot be read. */
const char *oc_test_data_path(const char *name, char *buf, size_t size);

/* Entries of dir other than . and .. (-1 when it cannot be read): what a writer left there. */
int oc_test_dir_entries(const char *dir);

/* A scratch directory for one test binary: created under $TMPDIR (else /tmp) with the prefix,
 * its path kept in oc_test_tmpdir; NULL (after a message) when it cannot be made.
 * oc_test_tmp_path joins a name to it (eight results stay valid at once); oc_test_tmp_remove
 * removes it with everything in it. */
extern char oc_test_tmpdir[256];
const char *oc_test_tmp_create(const char *prefix);
const char *oc_test_tmp_path(const char *name);
void oc_test_tmp_remove(void);

/* The whole file (malloc'ed, *len bytes and a terminating NUL), or NULL when it cannot be opened. */
unsigned char *oc_test_read_file(const char *path, size_t *len);

/* A deterministic xorshift generator for test data. */
uint64_t oc_test_rand(uint64_t *state);

/* A rows x cols 0/1 matrix, each entry 1 with probability 1/4 (from seed); NULL when it
 * cannot be made. */
oc_matrix *oc_test_random01(oc_context *ctx, int64_t rows, int64_t cols, uint64_t seed);

#endif
