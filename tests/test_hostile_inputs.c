/*
 * test_hostile_inputs.c - inputs that change or are not files: a mapped input cut while a
 * reader reads it (a real truncation, and OUTCORE_FAULT_SHRINK through the readers), the
 * SIGBUS handler lent to the process only while mappings exist and chaining to the one before
 * it, and inputs that are not regular files, refused at once.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/context.h"
#include "core/error.h"
#include "core/fault.h"
#include "harness.h"
#include "io/mapped_file.h"
#include "outcore.h"

static oc_context *ctx;

#define FILE_BYTES (1 << 20)
#define CUT_BYTES 1000

static const char *write_bytes(const char *name, const void *head, size_t head_len, size_t len)
{
    const char *path = oc_test_tmp_path(name);
    unsigned char *buf = calloc(1, len);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!buf || fd < 0) exit(1);
    for (size_t i = 0; i < len; i++) buf[i] = (unsigned char)(i * 7 + 1);
    memcpy(buf, head, head_len);
    if (write(fd, buf, len) != (ssize_t)len) exit(1);
    close(fd);
    free(buf);
    return path;
}

/* A reader that, halfway, sees its file cut to CUT_BYTES and reads on to the end. */
static oc_status cut_then_read(oc_context *c, const char *path, oc_mapped_file *f, void *arg, oc_matrix **m)
{
    (void)arg;
    (void)m;
    unsigned long sum = 0;
    for (size_t i = 0; i < f->size / 2; i += 512) sum += f->data[i];
    if (truncate(path, CUT_BYTES) != 0) return oc_fail(c, OC_ERR_IO, "cannot truncate %s", path);
    for (size_t i = f->size / 2; i < f->size; i += 512) sum += f->data[i];
    /* Pages past the cut read as zeros, and the reader goes on. */
    CHECK(f->data[f->size - 1] == 0);
    CHECK(oc_mapped_file_faulted(f));
    CHECK(sum > 0);
    return OC_OK;
}

static void expect_changed(oc_status st, const char *now_expected)
{
    const char *msg = oc_context_last_error(ctx);
    CHECK_EQ_I64(st, OC_ERR_INPUT);
    CHECK_MSG(strstr(msg, "the file changed while being read") && strstr(msg, now_expected), "message: %s", msg);
}

static void test_cut_while_read(void)
{
    const char *path = write_bytes("cut.bin", "", 0, FILE_BYTES);
    oc_matrix *m = NULL;
    oc_status st = oc_mapped_read(ctx, path, cut_then_read, NULL, &m);
    expect_changed(st, "(now 1000 bytes, expected 1048576)");
    CHECK(m == NULL);
}

/* A .npy of 0/1 bytes, 1024 rows of 1024: the whole-file reader and map both read it. */
static const char *write_npy01(const char *name)
{
    static const char head[] =
        "\x93NUMPY\x01\x00\x76\x00{'descr': '|u1', 'fortran_order': False, 'shape': (1024, 1024), }";
    unsigned char img[128];
    memset(img, ' ', sizeof img);
    memcpy(img, head, sizeof head - 1);
    img[127] = '\n';
    const char *path = oc_test_tmp_path(name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    unsigned char *data = calloc(1, 1024 * 1024);
    if (fd < 0 || !data) exit(1);
    for (int i = 0; i < 1024 * 1024; i++) data[i] = (unsigned char)((i % 3) == 0);
    if (write(fd, img, sizeof img) != (ssize_t)sizeof img || write(fd, data, 1024 * 1024) != 1024 * 1024) exit(1);
    close(fd);
    free(data);
    return path;
}

static void test_fault_shrink_readers(void)
{
    const char *npy = write_npy01("a.npy");
    static const char mtx_head[] = "%%MatrixMarket matrix coordinate pattern general\n";
    /* Entry lines after the banner would be parsed; a comment body keeps the size line last. */
    const char *mtx = oc_test_tmp_path("a.mtx");
    FILE *f = fopen(mtx, "w");
    if (!f) exit(1);
    fputs(mtx_head, f);
    fprintf(f, "2000 2000 100000\n");
    for (int k = 0; k < 100000; k++) fprintf(f, "%d %d\n", k % 2000 + 1, (k * 7) % 2000 + 1);
    fclose(f);
    const char *paths[] = {npy, mtx};
    for (int i = 0; i < 2; i++) {
        struct stat before, after;
        stat(paths[i], &before);
        CHECK(oc_fault_arm(ctx, OC_FAULT_SHRINK, "1") == OC_OK);
        oc_matrix *m = NULL;
        oc_status st = oc_matrix_open(ctx, paths[i], 0, &m);
        CHECK(oc_fault_arm(ctx, OC_FAULT_SHRINK, NULL) == OC_OK);
        expect_changed(st, "expected");
        CHECK(m == NULL);
        /* The input itself is untouched, and reads whole without the fault. */
        stat(paths[i], &after);
        CHECK_EQ_I64(after.st_size, before.st_size);
        CHECK(oc_matrix_open(ctx, paths[i], 0, &m) == OC_OK);
        oc_matrix_free(m);
    }
}

/* A program that blocks every signal on its threads (one thread waits for them with sigwait):
 * a fault on a thread that blocks SIGBUS would end the process whatever the handler, so the
 * calls that read mapped files leave it deliverable on their threads, and the caller's mask is
 * as it was afterwards. */
static void test_cut_with_signals_blocked(void)
{
    const char *npy = write_npy01("blocked.npy");
    sigset_t all, before, after;
    sigfillset(&all);
    CHECK(pthread_sigmask(SIG_BLOCK, &all, &before) == 0);
    /* A call that reads no file starts the context's pool here, its threads born blocking. */
    enum { SIDE = 4096 };
    uint8_t *ones = calloc(SIDE, SIDE);
    oc_matrix *dense = NULL;
    CHECK(ones && oc_matrix_from_dense(ctx, ones, SIDE, SIDE, SIDE, &dense) == OC_OK);
    oc_matrix_free(dense);
    free(ones);

    CHECK(oc_fault_arm(ctx, OC_FAULT_SHRINK, "1") == OC_OK);
    oc_matrix *m = NULL;
    expect_changed(oc_matrix_open(ctx, npy, 0, &m), "expected");
    CHECK(m == NULL);

    oc_map_array in = OC_MAP_ARRAY_INIT;
    in.name = "a", in.path = npy;
    oc_map_options mo = OC_MAP_OPTIONS_INIT;
    mo.threads = 2, mo.reduce = OC_MAP_REDUCE_SUM, mo.host_mem_bytes = 64 << 20;
    oc_map *map = NULL;
    CHECK(oc_fault_arm(ctx, OC_FAULT_SHRINK, "1") == OC_OK);
    CHECK(oc_map_create(ctx, "a + 1", &in, 1, NULL, 0, &mo, &map) == OC_OK);
    double sum = 0;
    expect_changed(oc_map_run(ctx, map, NULL, &sum, NULL), "expected");
    oc_map_free(map);

    /* A header read from its mapping: a file of one page, the cut at its first byte. */
    static const char tiny_head[] =
        "\x93NUMPY\x01\x00\x76\x00{'descr': '|u1', 'fortran_order': False, 'shape': (10,), }";
    unsigned char head[128];
    memset(head, ' ', sizeof head);
    memcpy(head, tiny_head, sizeof tiny_head - 1);
    head[127] = '\n';
    in.path = write_bytes("tiny.npy", head, sizeof head, sizeof head + 10);
    CHECK(oc_fault_arm(ctx, OC_FAULT_SHRINK, "1") == OC_OK);
    expect_changed(oc_map_create(ctx, "a + 1", &in, 1, NULL, 0, &mo, &map), "expected");
    CHECK(oc_fault_arm(ctx, OC_FAULT_SHRINK, NULL) == OC_OK);

    CHECK(pthread_sigmask(SIG_SETMASK, &before, &after) == 0);
    CHECK(sigismember(&after, SIGBUS) && sigismember(&after, SIGINT)); /* the caller's mask, kept */
}

/* ------------------------------------------------------------ the SIGBUS handler's lifetime */

static volatile sig_atomic_t earlier_calls;

static void earlier_handler(int sig, siginfo_t *info, void *uctx)
{
    (void)sig, (void)info, (void)uctx;
    earlier_calls++;
}

static int installed_is_earlier(void)
{
    struct sigaction now;
    return sigaction(SIGBUS, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == earlier_handler;
}

static void test_handler_lent_and_chained(void)
{
    struct sigaction mine, saved;
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = earlier_handler;
    mine.sa_flags = SA_SIGINFO;
    sigemptyset(&mine.sa_mask);
    CHECK(sigaction(SIGBUS, &mine, &saved) == 0);

    const char *path = write_bytes("lent.bin", "", 0, 3 * 4096);
    oc_mapped_file f;
    CHECK(oc_mapped_file_open(ctx, path, &f) == OC_OK);
    /* While the mapping is open the process's handler is outcore's... */
    CHECK(!installed_is_earlier());
    /* ...which hands a SIGBUS that is not a fault in its mappings to the one before it. */
    raise(SIGBUS);
    CHECK_EQ_I64(earlier_calls, 1);
    CHECK(oc_mapped_file_check(ctx, path, &f) == OC_OK);
    oc_mapped_file_close(&f);
    /* The last mapping gone, the earlier handler is back. */
    CHECK(installed_is_earlier());
    sigaction(SIGBUS, &saved, NULL);
}

/* More mappings open at once than one chunk of guard slots holds: the last one cut and read
 * past its end is a fault the guard turns into a flag, not SIGBUS ending the process. */
static void test_many_mappings_guarded(void)
{
    enum { OPEN = 300 };
    static oc_mapped_file files[OPEN];
    const char *path = write_bytes("many.bin", "", 0, 2 * 4096);
    for (int i = 0; i < OPEN; i++) CHECK(oc_mapped_file_open(ctx, path, &files[i]) == OC_OK);
    const char *last = write_bytes("many_last.bin", "", 0, 3 * 4096);
    oc_mapped_file f;
    CHECK(oc_mapped_file_open(ctx, last, &f) == OC_OK);
    CHECK(truncate(last, 100) == 0);
    volatile unsigned char past = f.data[2 * 4096 + 5];
    CHECK(past == 0);
    CHECK(oc_mapped_file_faulted(&f));
    for (int i = 0; i < OPEN; i++) CHECK(!oc_mapped_file_faulted(&files[i]));
    oc_mapped_file_close(&f);
    for (int i = 0; i < OPEN; i++) oc_mapped_file_close(&files[i]);
}

/* ------------------------------------------------------------ not regular files */

static void expect_not_regular(const char *path, const char *kind)
{
    oc_matrix *m = NULL;
    oc_status st = oc_matrix_open(ctx, path, 0, &m);
    const char *msg = oc_context_last_error(ctx);
    CHECK_EQ_I64(st, OC_ERR_INPUT);
    CHECK_MSG(strstr(msg, "not a regular file") && strstr(msg, kind) && strstr(msg, path), "%s: %s", path, msg);
    CHECK(m == NULL);
}

static void test_not_regular_files(void)
{
    const char *fifo = oc_test_tmp_path("pipe.npy");
    CHECK(mkfifo(fifo, 0600) == 0);
    /* Refused at once: no writer ever opens the pipe, so a blocking open would hang here. */
    alarm(20);
    expect_not_regular(fifo, "a named pipe");
    const char *dir = oc_test_tmp_path("dir.mtx");
    CHECK(mkdir(dir, 0700) == 0);
    expect_not_regular(dir, "a directory");
    const char *dev = oc_test_tmp_path("null.npy");
    CHECK(symlink("/dev/null", dev) == 0);
    expect_not_regular(dev, "a device");
    const char *sock_path = oc_test_tmp_path("sock.txt");
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock_path);
    if (sock >= 0 && strlen(sock_path) < sizeof addr.sun_path && bind(sock, (struct sockaddr *)&addr, sizeof addr) == 0)
        expect_not_regular(sock_path, "a socket");
    if (sock >= 0) close(sock);
    alarm(0);
}

int main(void)
{
    if (!oc_test_tmp_create("oc_test_hostile_inputs")) return 1;
    if (oc_context_create(&ctx) != OC_OK) return 1;
    test_cut_while_read();
    test_fault_shrink_readers();
    test_handler_lent_and_chained();
    test_cut_with_signals_blocked();
    test_many_mappings_guarded();
    test_not_regular_files();
    oc_context_free(ctx);
    oc_test_tmp_remove();
    return oc_test_finish();
}
