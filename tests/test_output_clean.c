/*
 * test_output_clean.c - `outcore clean` (oc_output_clean) and the resume journal's lock
 * (oc_journal_hold) when another process removes or replaces a file while this one waits for
 * its lock: a lock is taken on an open file, but files are removed by name.
 *
 * Checked, each with a second process that holds the file's lock until this one has it open:
 * a journal or a stale temporary that the other process removes meanwhile leaves nothing to
 * remove (no failure, nothing counted); a journal replaced meanwhile by a running job's new
 * one is refused as that job's, never removed; and a resume that waited for a journal
 * removed meanwhile finds no journal, or holds the one now under its name.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/context.h"
#include "core/threads.h"
#include "harness.h"
#include "io/journal.h"
#include "outcore.h"

static oc_context *ctx;
static const char *JOB = "output C.npy\nmetric counts\na.shape 10 20\n";
static const char *OTHER_JOB = "output C.npy\nmetric counts\na.shape 30 40\n";

/* What the other process does once this one has the file open and waits for its lock. */
typedef enum meanwhile {
    REMOVE,       /* removes it */
    REPLACE,      /* renames `by` over it */
    REPLACE_HELD, /* renames `by` over it, holding by's lock until told to end (a running job's) */
} meanwhile;

typedef struct other {
    pid_t pid;
    int done[2]; /* this process writes a byte when the other may end */
} other;

/* Whether process pid has a descriptor open on the file `file` describes. */
static int opened_by(pid_t pid, const struct stat *file)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    if (!d) return 0;
    int open = 0;
    struct dirent *e;
    while (!open && (e = readdir(d))) {
        char fd[128];
        struct stat sb;
        snprintf(fd, sizeof fd, "%s/%.32s", dir, e->d_name);
        open = e->d_name[0] != '.' && stat(fd, &sb) == 0 && sb.st_dev == file->st_dev && sb.st_ino == file->st_ino;
    }
    closedir(d);
    return open;
}

/* Starts the other process: it locks path and returns once it holds the lock; then, once
 * this process has path open (and waits for the lock), it does `what` and lets path's lock
 * go. */
static other start_other(const char *path, meanwhile what, const char *by)
{
    other o = {.pid = -1};
    int ready[2];
    if (pipe(ready) != 0 || pipe(o.done) != 0) return o;
    const pid_t parent = getpid();
    o.pid = fork();
    if (o.pid == 0) {
        struct stat sb;
        int fd = open(path, O_RDONLY), held = by ? open(by, O_RDONLY) : -1;
        char one = 1;
        if (fd < 0 || flock(fd, LOCK_EX) != 0 || fstat(fd, &sb) != 0 || write(ready[1], &one, 1) != 1) _exit(1);
        const double give_up = oc_now() + 30;
        while (!opened_by(parent, &sb))
            if (oc_now() > give_up) _exit(2);
        if (what == REPLACE_HELD && (held < 0 || flock(held, LOCK_EX) != 0)) _exit(3);
        if ((what == REMOVE ? unlink(path) : rename(by, path)) != 0) _exit(4);
        close(fd);
        if (what == REPLACE_HELD && read(o.done[0], &one, 1) != 1) _exit(5);
        _exit(0);
    }
    char got = 0;
    CHECK(o.pid > 0 && read(ready[0], &got, 1) == 1 && got == 1);
    close(ready[0]);
    close(ready[1]);
    return o;
}

static void end_other(other *o)
{
    char one = 1;
    CHECK(write(o->done[1], &one, 1) == 1);
    int status = 1;
    CHECK(o->pid > 0 && waitpid(o->pid, &status, 0) == o->pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the other process ended with %d", status);
    close(o->done[0]);
    close(o->done[1]);
}

static void make_journal(const char *path, const char *job)
{
    oc_journal *j = NULL;
    CHECK_MSG(oc_journal_create(ctx, path, job, &j) == OC_OK, "%s", oc_context_last_error(ctx));
    oc_journal_close(j);
}

/* A journal whose job ends (or another clean removes it) while clean waits for its lock:
 * nothing to remove, not "cannot remove the resume journal: No such file or directory". */
static void test_clean_journal_removed(const char *out, const char *journal)
{
    make_journal(journal, JOB);
    other o = start_other(journal, REMOVE, NULL);
    int64_t removed = -1;
    CHECK_MSG(oc_output_clean(ctx, out, NULL, NULL, &removed) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK_EQ_I64(removed, 0);
    end_other(&o);
}

/* A journal replaced, while clean waits for its lock, by a new job's that the job holds: the
 * new journal is that job's, refused as a running job's, never removed. */
static void test_clean_journal_replaced(const char *out, const char *journal, const char *next)
{
    make_journal(journal, JOB);
    make_journal(next, OTHER_JOB);
    struct stat want, sb;
    CHECK(stat(next, &want) == 0);
    other o = start_other(journal, REPLACE_HELD, next);
    int64_t removed = -1;
    CHECK_FAILED(ctx, oc_output_clean(ctx, out, NULL, NULL, &removed), OC_ERR_INPUT, journal,
                 "a running job holds this resume journal");
    end_other(&o);
    CHECK_MSG(stat(journal, &sb) == 0 && sb.st_ino == want.st_ino, "the running job's journal was removed");
    unlink(journal);
}

/* A stale temporary (its process gone) that another clean removes while this one waits for
 * its lock: not "cannot remove it: No such file or directory", and not counted. */
static void test_clean_temp_removed(const char *out)
{
    const pid_t gone = fork();
    if (gone == 0) _exit(0);
    CHECK(gone > 0 && waitpid(gone, NULL, 0) == gone);
    char temp[4096];
    snprintf(temp, sizeof temp, "%s.tmp-%d-AbCd1234", out, (int)gone);
    FILE *f = fopen(temp, "w");
    CHECK(f && fputs("left by a killed job", f) >= 0 && fclose(f) == 0);
    other o = start_other(temp, REMOVE, NULL);
    int64_t removed = -1;
    CHECK_MSG(oc_output_clean(ctx, out, NULL, NULL, &removed) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK_EQ_I64(removed, 0);
    end_other(&o);
    CHECK(access(temp, F_OK) != 0);
}

/* A resume that waited for the lock of a journal removed meanwhile (`outcore clean`) holds
 * none: the job starts over instead of resuming from a journal no longer there. */
static void test_hold_journal_removed(const char *journal)
{
    make_journal(journal, JOB);
    other o = start_other(journal, REMOVE, NULL);
    oc_journal *j = NULL;
    CHECK_MSG(oc_journal_hold(ctx, journal, &j) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK_MSG(j == NULL, "held a journal that was removed");
    oc_journal_close(j);
    end_other(&o);
}

/* One replaced meanwhile by another journal: the one now under the name is held (it loads
 * with its own job, not the removed one's). */
static void test_hold_journal_replaced(const char *journal, const char *next)
{
    make_journal(journal, JOB);
    make_journal(next, OTHER_JOB);
    other o = start_other(journal, REPLACE, next);
    oc_journal *j = NULL;
    CHECK_MSG(oc_journal_hold(ctx, journal, &j) == OC_OK && j, "%s", oc_context_last_error(ctx));
    if (j) CHECK_MSG(oc_journal_load(ctx, j, OTHER_JOB, NULL, NULL, NULL) == OC_OK, "%s", oc_context_last_error(ctx));
    oc_journal_close(j);
    end_other(&o);
    unlink(journal);
}

int main(void)
{
    if (oc_context_create(&ctx) != OC_OK) return 1;
    oc_test_tmp_create("oc_output_clean");
    char *out = strdup(oc_test_tmp_path("C.npy"));
    char *journal = oc_journal_path_for(out);
    char *next = strdup(oc_test_tmp_path("next-journal"));
    test_clean_journal_removed(out, journal);
    test_clean_journal_replaced(out, journal, next);
    test_clean_temp_removed(out);
    test_hold_journal_removed(journal);
    test_hold_journal_replaced(journal, next);
    free(out);
    free(journal);
    free(next);
    oc_test_tmp_remove();
    oc_context_free(ctx);
    return oc_test_finish();
}
