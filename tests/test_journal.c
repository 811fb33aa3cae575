/*
 * test_journal.c - the resume journal's file format (src/io/journal.h): records read back in
 * order, a journal of another job refused naming the line that differs, a torn or damaged
 * record ending the journal (and cut off before the next append), a damaged header refused,
 * a failed write reported as an I/O error naming the journal, and a journal whose lock a
 * process gives up a moment later (a job just killed) opened once that lock is free.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/context.h"
#include "core/fault.h"
#include "core/threads.h"
#include "harness.h"
#include "io/journal.h"
#include "io/sysio.h"
#include "outcore.h"

static oc_context *ctx;
static const char *JOB = "output C.npy\nmetric counts\na.shape 10 20\n";

typedef struct seen {
    int count;
    uint32_t types[8];
    uint64_t units[8];
    char payloads[8][16];
    int64_t offsets[8];
} seen;

static int on_record(void *user, uint32_t type, uint64_t unit, const void *payload, uint32_t len, int64_t offset)
{
    seen *s = user;
    if (s->count == 8) return 1;
    s->types[s->count] = type;
    s->units[s->count] = unit;
    snprintf(s->payloads[s->count], sizeof s->payloads[0], "%.*s", (int)len, (const char *)payload);
    s->offsets[s->count++] = offset;
    return 0;
}

static oc_status reopen(const char *path, const char *job, seen *s)
{
    memset(s, 0, sizeof *s);
    oc_journal *j = NULL;
    oc_status st = oc_journal_open(ctx, path, job, NULL, on_record, s, &j);
    oc_journal_close(j);
    return st;
}

static void rewrite(const char *path, long at, int flip, long truncate_by)
{
    size_t len;
    unsigned char *bytes = oc_test_read_file(path, &len);
    if (!bytes) return;
    if (flip) bytes[at < 0 ? (long)len + at : at] ^= 0x20;
    FILE *f = fopen(path, "wb");
    fwrite(bytes, 1, len - (size_t)truncate_by, f);
    fclose(f);
    free(bytes);
}

static void test_records_round_trip(const char *path)
{
    oc_journal *j = NULL;
    CHECK(oc_journal_create(ctx, path, JOB, &j) == OC_OK);
    CHECK(oc_journal_append(ctx, j, 1, 7, "alpha", 5) == OC_OK);
    CHECK(oc_journal_append(ctx, j, 2, 8, "beta", 4) == OC_OK);
    CHECK(oc_journal_pending(j) > 0);
    CHECK(oc_journal_flush(ctx, j) == OC_OK);
    CHECK(oc_journal_pending(j) == 0);
    CHECK(oc_journal_append(ctx, j, 3, 9, "", 0) == OC_OK);
    CHECK(oc_journal_flush(ctx, j) == OC_OK);
    oc_journal_close(j);
    seen s;
    CHECK(reopen(path, JOB, &s) == OC_OK);
    CHECK_EQ_I64(s.count, 3);
    CHECK(s.types[0] == 1 && s.units[0] == 7 && strcmp(s.payloads[0], "alpha") == 0);
    CHECK(s.types[1] == 2 && s.units[1] == 8 && strcmp(s.payloads[1], "beta") == 0);
    CHECK(s.types[2] == 3 && s.units[2] == 9 && s.payloads[2][0] == '\0');
    /* the payload offsets read the payloads back */
    CHECK(oc_journal_open(ctx, path, JOB, NULL, NULL, NULL, &j) == OC_OK);
    char buf[5];
    CHECK(oc_journal_read(ctx, j, s.offsets[0], buf, 5) == OC_OK && memcmp(buf, "alpha", 5) == 0);
    oc_journal_close(j);
}

static void test_another_job(const char *path)
{
    seen s;
    CHECK(reopen(path, "output C.npy\nmetric jaccard\na.shape 10 20\n", &s) == OC_ERR_INPUT);
    const char *msg = oc_context_last_error(ctx);
    CHECK_MSG(strstr(msg, path) && strstr(msg, "'metric counts' (journal)") &&
                  strstr(msg, "'metric jaccard' (this job)"),
              "message: %s", msg);
    CHECK(strchr(msg, '\n') == NULL);
}

static void test_torn_and_damaged_records(const char *path)
{
    seen s;
    rewrite(path, 0, 0, 3); /* the last record torn by a crash */
    CHECK(reopen(path, JOB, &s) == OC_OK);
    CHECK_EQ_I64(s.count, 2);
    /* an append after the torn record replaces it */
    oc_journal *j = NULL;
    CHECK(oc_journal_open(ctx, path, JOB, NULL, NULL, NULL, &j) == OC_OK);
    CHECK(oc_journal_append(ctx, j, 4, 10, "gamma", 5) == OC_OK && oc_journal_flush(ctx, j) == OC_OK);
    oc_journal_close(j);
    CHECK(reopen(path, JOB, &s) == OC_OK);
    CHECK(s.count == 3 && s.types[2] == 4 && strcmp(s.payloads[2], "gamma") == 0);
    /* records from one whose payload starts at an offset on are dropped */
    CHECK(oc_journal_open(ctx, path, JOB, NULL, NULL, NULL, &j) == OC_OK);
    CHECK(oc_journal_truncate_before(ctx, j, s.offsets[2]) == OC_OK);
    oc_journal_close(j);
    CHECK(reopen(path, JOB, &s) == OC_OK && s.count == 2);
    /* a flipped byte in the second record's payload: it and what follows are not the journal's */
    rewrite(path, -2, 1, 0);
    CHECK(reopen(path, JOB, &s) == OC_OK);
    CHECK_EQ_I64(s.count, 1);
    /* a damaged header is refused */
    rewrite(path, 20, 1, 0);
    CHECK(reopen(path, JOB, &s) == OC_ERR_INPUT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "damaged") != NULL, "%s", oc_context_last_error(ctx));
}

static void test_write_failure(const char *path)
{
    oc_journal *j = NULL;
    /* Never made over a journal another job made since the caller looked: that job holds it. */
    CHECK(oc_journal_create(ctx, path, JOB, &j) == OC_ERR_INPUT);
    CHECK_MSG(strstr(oc_context_last_error(ctx), "another job made this resume journal") != NULL, "%s",
              oc_context_last_error(ctx));
    CHECK(j == NULL);
    unlink(path);
    CHECK(oc_journal_create(ctx, path, JOB, &j) == OC_OK);
    CHECK(oc_journal_append(ctx, j, 1, 1, "x", 1) == OC_OK);
    oc_fault_arm(ctx, OC_FAULT_WRITE, "1:enospc");
    oc_context_begin_job(ctx); /* the plan takes effect at the start of a job */
    CHECK(oc_journal_flush(ctx, j) == OC_ERR_IO);
    CHECK_MSG(strstr(oc_context_last_error(ctx), path) && strstr(oc_context_last_error(ctx), "disk full"), "%s",
              oc_context_last_error(ctx));
    oc_fault_arm(ctx, OC_FAULT_WRITE, NULL);
    oc_journal_close(j);
}

/* Another process holds the journal's lock for HELD_SECONDS, as a job killed a moment ago
 * may while the system tears it down: the open waits for the lock instead of calling it a
 * running job's. */
#define HELD_SECONDS 0.2
static void test_lock_released_later(const char *path)
{
    int ready[2];
    if (pipe(ready) != 0) return;
    pid_t child = fork();
    if (child == 0) {
        int fd = open(path, O_RDONLY);
        char one = 1;
        if (fd < 0 || flock(fd, LOCK_EX) != 0 || write(ready[1], &one, 1) != 1) _exit(1);
        usleep((useconds_t)(HELD_SECONDS * 1e6));
        /* The lock goes with the process, after this moment (a monotonic clock, one for all
         * processes). */
        const double letting_go = oc_now();
        _exit(write(ready[1], &letting_go, sizeof letting_go) == (ssize_t)sizeof letting_go ? 0 : 1);
    }
    char got = 0;
    CHECK(child > 0 && read(ready[0], &got, 1) == 1 && got == 1);
    seen s;
    CHECK_MSG(reopen(path, JOB, &s) == OC_OK, "%s", oc_context_last_error(ctx));
    const double opened = oc_now();
    double letting_go = 0;
    CHECK(read(ready[0], &letting_go, sizeof letting_go) == (ssize_t)sizeof letting_go);
    CHECK_MSG(opened >= letting_go, "opened %.3f s before the holder let go", letting_go - opened);
    int status = 1;
    CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(ready[0]);
    close(ready[1]);
}

/* A job that reads its inputs whole before it compares them with the journal holds the
 * journal from the start (oc_journal_hold): meanwhile another run and `outcore clean` are
 * refused (after the wait for a lock of a job that has just ended), and the held journal
 * then loads as oc_journal_open would. */
static void test_held_from_the_start(const char *path)
{
    oc_journal *held = NULL, *other = NULL;
    CHECK(oc_journal_hold(ctx, path, &held) == OC_OK && held);
    CHECK_FAILED(ctx, oc_journal_hold(ctx, path, &other), OC_ERR_INPUT, "a running job holds this resume journal");
    CHECK(other == NULL);
    char *out = strdup(path);
    *strstr(out, ".outcore-journal") = '\0';
    int64_t removed = -1;
    CHECK_FAILED(ctx, oc_output_clean(ctx, out, NULL, NULL, &removed), OC_ERR_INPUT, "a running job holds");
    /* A cancel ends the wait for the lock at once; the next call waits again. */
    oc_context *other_ctx = NULL;
    CHECK(oc_context_create(&other_ctx) == OC_OK);
    oc_context_cancel(other_ctx);
    const double t0 = oc_now();
    CHECK_FAILED(other_ctx, oc_journal_hold(other_ctx, path, &other), OC_ERR_CANCELLED, "cancelled while waiting");
    CHECK_MSG(oc_now() - t0 < OC_LOCK_RELEASE_WAIT / 2, "cancelled after %.3f s", oc_now() - t0);
    CHECK(other == NULL);
    oc_context_free(other_ctx);
    struct stat sb;
    CHECK(stat(path, &sb) == 0);
    seen s = {0};
    CHECK_MSG(oc_journal_load(ctx, held, JOB, NULL, on_record, &s) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK(s.count > 0);
    oc_journal_close(held);
    free(out);
}

int main(void)
{
    if (oc_context_create(&ctx) != OC_OK) return 1;
    oc_test_tmp_create("oc_journal");
    char *path = strdup(oc_test_tmp_path("C.npy.outcore-journal"));
    char *for_output = oc_journal_path_for("dir/C.npy");
    CHECK(for_output && strcmp(for_output, "dir/C.npy.outcore-journal") == 0);
    free(for_output);
    test_records_round_trip(path);
    test_another_job(path);
    test_lock_released_later(path);
    test_held_from_the_start(path);
    test_torn_and_damaged_records(path);
    test_write_failure(path);
    unlink(path);
    free(path);
    oc_test_tmp_remove();
    oc_context_free(ctx);
    return oc_test_finish();
}
