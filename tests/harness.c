#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
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
    snprintf(buf, size, "%s/tests/data/%s", src ? src : ".", name);
    return access(buf, R_OK) == 0 ? buf : NULL;
}

int oc_test_dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) ++n;
    closedir(d);
    return n;
}

unsigned char *oc_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) n = 0;
    if (buf) buf[n] = '\0'; /* callers may read it as a string */
    fclose(f);
    *len = (size_t)n;
    return buf;
}

uint64_t oc_test_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

char oc_test_tmpdir[256];

const char *oc_test_tmp_create(const char *prefix)
{
    const char *base = getenv("TMPDIR");
    snprintf(oc_test_tmpdir, sizeof oc_test_tmpdir, "%s/%s_XXXXXX", base && *base ? base : "/tmp", prefix);
    if (!mkdtemp(oc_test_tmpdir)) {
        perror("mkdtemp");
        return NULL;
    }
    return oc_test_tmpdir;
}

const char *oc_test_tmp_path(const char *name)
{
    static char buf[8][512];
    static int next;
    char *p = buf[next++ % 8];
    snprintf(p, 512, "%s/%s", oc_test_tmpdir, name);
    return p;
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (unlink(p) != 0 && errno == EISDIR) remove_tree(p);
    }
    closedir(d);
    rmdir(dir);
}

void oc_test_tmp_remove(void) { remove_tree(oc_test_tmpdir); }

oc_matrix *oc_test_random01(oc_context *ctx, int64_t rows, int64_t cols, uint64_t seed)
{
    unsigned char *bytes = malloc((size_t)(rows * cols));
    if (!bytes) return NULL;
    for (int64_t i = 0; i < rows * cols; ++i) bytes[i] = (oc_test_rand(&seed) & 3) == 0;
    oc_matrix *m = NULL;
    if (oc_matrix_from_dense(ctx, bytes, rows, cols, cols, &m) != OC_OK) m = NULL;
    free(bytes);
    return m;
}
