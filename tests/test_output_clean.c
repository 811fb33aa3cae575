/*
 * test_output_clean.c - `outcore clean` (oc_output_clean) when another process removes a file
 * while this one waits for its lock: a lock is taken on an open file, but files are removed
 * by name.
 *
 * Checked, each with a second process that holds the file's lock until this one has it open:
 * a journal or a stale temporary that the other process removes meanwhile leaves nothing to
 * remove (no failure, nothing counted).
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
 * this process has path open (and waits for the lock), it removes path and lets its lock go. */
static pid_t start_other(const char *path)
{
    int ready[2];
    if (pipe(ready) != 0) return -1;
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
        struct stat sb;
        int fd = open(path, O_RDONLY);
        char one = 1;
        if (fd < 0 || flock(fd, LOCK_EX) != 0 || fstat(fd, &sb) != 0 || write(ready[1], &one, 1) != 1) _exit(1);
        const double give_up = oc_now() + 30;
        while (!opened_by(parent, &sb))
            if (oc_now() > give_up) _exit(2);
        if (unlink(path) != 0) _exit(4);
        close(fd);
        _exit(0);
    }
    char got = 0;
    CHECK(pid > 0 && read(ready[0], &got, 1) == 1 && got == 1);
    close(ready[0]);
    close(ready[1]);
    return pid;
}

static void end_other(pid_t pid)
{
    int status = 1;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the other process ended with %d", status);
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
    const pid_t other = start_other(journal);
    int64_t removed = -1;
    CHECK_MSG(oc_output_clean(ctx, out, NULL, NULL, &removed) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK_EQ_I64(removed, 0);
    end_other(other);
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
    const pid_t other = start_other(temp);
    int64_t removed = -1;
    CHECK_MSG(oc_output_clean(ctx, out, NULL, NULL, &removed) == OC_OK, "%s", oc_context_last_error(ctx));
    CHECK_EQ_I64(removed, 0);
    end_other(other);
    CHECK(access(temp, F_OK) != 0);
}

int main(void)
{
    if (oc_context_create(&ctx) != OC_OK) return 1;
    oc_test_tmp_create("oc_output_clean");
    char *out = strdup(oc_test_tmp_path("C.npy"));
    char *journal = oc_journal_path_for(out);
    test_clean_journal_removed(out, journal);
    test_clean_temp_removed(out);
    free(out);
    free(journal);
    oc_test_tmp_remove();
    oc_context_free(ctx);
    return oc_test_finish();
}
