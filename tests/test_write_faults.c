/*
 * test_write_faults.c - every write-side system call of every writer fails once, and the job
 * fails cleanly each time.
 *
 * For each output (dense .npy, a saved matrix, top-k .npz/.tsv, threshold .npz/.mtx/.tsv,
 * threshold jobs whose pairs spill to the temporary file, and matmul's product and A·Aᵀ, whose
 * result is large enough to be reserved as the job runs), each kind of call (src/core/fault.h)
 * and each way of failing, the k-th call is made to fail for k = 1, 2, ... until the job
 * succeeds. Every failed job must return OC_ERR_IO with one line naming the file and the
 * cause, and leave nothing in the output directory (which is also TMPDIR, where the spill
 * file goes); the job that succeeds must not have reached its fault and must write the same
 * bytes as a job without faults. Short writes must never fail a job; a short write followed
 * by a full disk must, and a temporary removed before its lock is taken (another host's sweep
 * of stale temporaries, OUTCORE_FAULT_SWEEP) is made anew, the job writing the same bytes. Under ASan (make test's second pass) every failure is also leak-free.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/context.h"
#include "core/fault.h"
#include "harness.h"
#include "io/sysio.h"
#include "outcore.h"

typedef enum job_kind { JOB_DENSE, JOB_SAVE, JOB_TOPK, JOB_PAIRS, JOB_MATMUL, JOB_MATMUL_GRAM } job_kind;

typedef struct out_case {
    const char *name;
    const char *file;
    job_kind kind;
    int spill; /* threshold pairs through the spill file (a one-byte pair buffer) */
} out_case;

static const out_case cases[] = {
    {"dense", "C.npy", JOB_DENSE, 0},
    {"saved matrix", "A.npy", JOB_SAVE, 0},
    {"top-k npz", "nn.npz", JOB_TOPK, 0},
    {"top-k tsv", "nn.tsv", JOB_TOPK, 0},
    {"threshold npz", "pairs.npz", JOB_PAIRS, 0},
    {"threshold mtx", "pairs.mtx", JOB_PAIRS, 0},
    {"threshold tsv", "pairs.tsv", JOB_PAIRS, 0},
    {"threshold npz spilled", "pairs.npz", JOB_PAIRS, 1},
    {"threshold mtx spilled", "pairs.mtx", JOB_PAIRS, 1},
    {"matmul", "P.npy", JOB_MATMUL, 0},
    {"matmul gram", "G.npy", JOB_MATMUL_GRAM, 0},
};

/* matmul's operands: A (MM_N x 1) and B (1 x MM_N), so that the float32 result (16.8 MiB) is
 * more than the one chunk (16 MiB) its file reserves before the job starts (npy_array.h). */
enum { MM_N = 2100 };
static float mm_a[MM_N], mm_b[MM_N];

/* The ways a call fails, and what the message must say. */
typedef struct fail_way {
    const char *mode;  /* appended to k in the spec */
    const char *cause; /* in the message */
} fail_way;

static const fail_way ways[] = {{"enospc", "disk full"}, {"eio", "I/O error"}};

static oc_context *ctx;
static char outdir[512];
static const oc_matrix *input;
static oc_backend backend;

/* ---------------------------------------------------------------- helpers */

/* A zip member's DOS time and date say when it was written: blank them (local headers at
 * +10, central headers at +12) so that two runs compare equal. A signature inside the data
 * only blanks the same bytes in both files. Other files (the .npy results, up to 16.8 MiB)
 * are left as they are: nothing in them depends on the time. */
static void blank_zip_times(const char *file, unsigned char *b, size_t len)
{
    const size_t n = strlen(file);
    if (n < 4 || strcmp(file + n - 4, ".npz") != 0) return;
    for (size_t i = 0; i + 16 <= len; ++i) {
        if (b[i] != 'P' || b[i + 1] != 'K') continue;
        if (b[i + 2] == 3 && b[i + 3] == 4) memset(b + i + 10, 0, 4);
        if (b[i + 2] == 1 && b[i + 3] == 2) memset(b + i + 12, 0, 4);
    }
}

static const char *out_path(const out_case *c)
{
    static char path[700];
    snprintf(path, sizeof path, "%s/%s", outdir, c->file);
    return path;
}

static oc_status run_matmul(const out_case *c)
{
    oc_matmul_array A = OC_MATMUL_ARRAY_INIT, B = OC_MATMUL_ARRAY_INIT, C = OC_MATMUL_ARRAY_INIT;
    A.data = mm_a, A.dtype = OC_MATMUL_FLOAT32, A.rows = MM_N, A.cols = 1;
    B.data = mm_b, B.dtype = OC_MATMUL_FLOAT32, B.rows = 1, B.cols = MM_N;
    C.path = out_path(c);
    oc_matmul_options o = OC_MATMUL_OPTIONS_INIT;
    o.backend = backend;
    o.threads = 1;
    o.gram = c->kind == JOB_MATMUL_GRAM;
    return oc_matmul(ctx, &A, o.gram ? NULL : &B, &C, &o, NULL);
}

/* Runs the case's job once with whatever the context's fault plan says. */
static oc_status run_job(const out_case *c)
{
    if (c->kind == JOB_SAVE) return oc_matrix_save(ctx, input, out_path(c), 0);
    if (c->kind == JOB_MATMUL || c->kind == JOB_MATMUL_GRAM) return run_matmul(c);
    oc_gram_options o = OC_GRAM_OPTIONS_INIT;
    o.backend = backend;
    o.threads = 1;                              /* the calls come in the same order in every run */
    if (backend == OC_BACKEND_CPU) o.tile = 48; /* several row blocks, so several spilled chunks */
    if (c->kind == JOB_TOPK) o.topk = 5;
    if (c->kind == JOB_PAIRS) {
        o.use_threshold = 1;
        o.threshold = 0.25;
        o.metric = OC_METRIC_JACCARD;
    }
    oc_output out = OC_OUTPUT_INIT;
    out.kind = OC_OUTPUT_FILE;
    out.path = out_path(c);
    if (c->spill) setenv("OUTCORE_PAIRS_BUFFER", "1", 1);
    oc_status st = oc_gram(ctx, input, NULL, &o, &out, NULL);
    unsetenv("OUTCORE_PAIRS_BUFFER");
    return st;
}

static long calls_made(oc_fault_call call) { return atomic_load(&ctx->faults.calls[call]); }

static void arm(oc_fault_call call, const char *spec)
{
    oc_status st = oc_fault_arm(ctx, call, spec);
    CHECK_MSG(st == OC_OK, "arming %s=%s: %s", oc_fault_variable(call), spec ? spec : "", oc_context_last_error(ctx));
}

/* After a successful job: its output alone in the directory, equal to the reference. */
static void check_success(const out_case *c, const unsigned char *ref, size_t ref_len, const char *what)
{
    CHECK_MSG(oc_test_dir_entries(outdir) == 1, "%s %s: %d entries in the output directory, expected the output alone",
              c->name, what, oc_test_dir_entries(outdir));
    size_t len = 0;
    unsigned char *got = oc_test_read_file(out_path(c), &len);
    if (got) blank_zip_times(c->file, got, len);
    CHECK_MSG(got && len == ref_len && memcmp(got, ref, len) == 0,
              "%s %s: the output differs from the one written "
              "without faults (%zu bytes against %zu)",
              c->name, what, len, ref_len);
    free(got);
    unlink(out_path(c));
}

/* After a failed job: OC_ERR_IO, one line naming the file and the cause, nothing left. */
static void check_failure(const out_case *c, oc_status st, const char *cause, const char *what, int *spilled)
{
    const char *msg = oc_context_last_error(ctx);
    char spill_name[600];
    snprintf(spill_name, sizeof spill_name, "temporary file of threshold pairs in %s", outdir);
    int names_spill = strstr(msg, spill_name) != NULL;
    *spilled |= names_spill;
    CHECK_MSG(st == OC_ERR_IO, "%s %s: status %s (%s), expected an i/o error", c->name, what, oc_status_string(st),
              msg);
    CHECK_MSG(strchr(msg, '\n') == NULL && (strstr(msg, out_path(c)) || names_spill),
              "%s %s: the message '%s' is not one line naming %s", c->name, what, msg, out_path(c));
    CHECK_MSG(strncmp(msg, cause, strlen(cause)) == 0, "%s %s: the message '%s' does not start with '%s'", c->name,
              what, msg, cause);
    CHECK_MSG(oc_test_dir_entries(outdir) == 0, "%s %s: %d files left in the output directory", c->name, what,
              oc_test_dir_entries(outdir));
}

/* ---------------------------------------------------------------- the loops */

/* Fails the k-th call of `call` for k = 1, 2, ... until the job succeeds; returns how many
 * calls failed it. */
static int fail_each_call(const out_case *c, oc_fault_call call, const fail_way *way, const unsigned char *ref,
                          size_t ref_len, int *spilled)
{
    for (int k = 1; k < 10000; ++k) {
        char spec[32], what[96];
        snprintf(spec, sizeof spec, "%d:%s", k, way->mode);
        snprintf(what, sizeof what, "%s=%s", oc_fault_variable(call), spec);
        arm(call, spec);
        oc_status st = run_job(c);
        arm(call, NULL);
        if (st == OC_OK) {
            /* Success means the k-th call was never made: no failure was swallowed. */
            CHECK_MSG(calls_made(call) < k, "%s %s: the job succeeded though call %d failed", c->name, what, k);
            check_success(c, ref, ref_len, what);
            return k - 1;
        }
        check_failure(c, st, way->cause, what, spilled);
    }
    CHECK_MSG(0, "%s: the job never succeeded", c->name);
    return 0;
}

/* A short k-th write is retried and the job succeeds with the same bytes; a short k-th write
 * followed by a full disk fails it. Returns the number of writes. */
static int short_writes(const out_case *c, const unsigned char *ref, size_t ref_len, int *spilled)
{
    int k = 1;
    for (;; ++k) {
        char spec[48], what[96];
        snprintf(spec, sizeof spec, "%d:short", k);
        snprintf(what, sizeof what, "OUTCORE_FAULT_WRITE=%s", spec);
        arm(OC_FAULT_WRITE, spec);
        oc_status st = run_job(c);
        arm(OC_FAULT_WRITE, NULL);
        CHECK_MSG(st == OC_OK, "%s %s: %s", c->name, what, oc_context_last_error(ctx));
        if (st != OC_OK) break;
        check_success(c, ref, ref_len, what);
        if (calls_made(OC_FAULT_WRITE) < k) break;

        snprintf(spec, sizeof spec, "%d:short,%d:enospc", k, k + 1);
        snprintf(what, sizeof what, "OUTCORE_FAULT_WRITE=%s", spec);
        arm(OC_FAULT_WRITE, spec);
        st = run_job(c);
        arm(OC_FAULT_WRITE, NULL);
        check_failure(c, st, "disk full", what, spilled);
    }
    return k - 1;
}

/* The commit's two flushes: its fsync (the last call of its kind) failing fails the job with
 * the flush named; the folder's after the rename is reached once, and its failure leaves
 * the job done with the same bytes. */
static void check_commit_flushes(const out_case *c, int fsyncs, const unsigned char *ref, size_t ref_len)
{
    if (fsyncs >= 1) {
        char spec[32], want[800];
        snprintf(spec, sizeof spec, "%d:eio", fsyncs);
        arm(OC_FAULT_FSYNC, spec);
        oc_status st = run_job(c);
        arm(OC_FAULT_FSYNC, NULL);
        snprintf(want, sizeof want, "I/O error flushing %s", out_path(c));
        CHECK_MSG(st == OC_ERR_IO && strcmp(oc_context_last_error(ctx), want) == 0,
                  "%s OUTCORE_FAULT_FSYNC=%s: '%s', expected '%s'", c->name, spec, oc_context_last_error(ctx), want);
        CHECK_MSG(oc_test_dir_entries(outdir) == 0, "%s OUTCORE_FAULT_FSYNC=%s: files left", c->name, spec);
    }
    arm(OC_FAULT_FLUSH_FOLDER, "1:eio");
    oc_status st = run_job(c);
    arm(OC_FAULT_FLUSH_FOLDER, NULL);
    CHECK_MSG(st == OC_OK, "%s OUTCORE_FAULT_FLUSH_FOLDER=1:eio: %s", c->name, oc_context_last_error(ctx));
    CHECK_MSG(calls_made(OC_FAULT_FLUSH_FOLDER) == 1, "%s: the folder was flushed %ld times after the rename, not once",
              c->name, calls_made(OC_FAULT_FLUSH_FOLDER));
    if (st == OC_OK) check_success(c, ref, ref_len, "OUTCORE_FAULT_FLUSH_FOLDER=1:eio");
}

static void run_case(const out_case *c)
{
    CHECK_MSG(run_job(c) == OC_OK, "%s without faults: %s", c->name, oc_context_last_error(ctx));
    size_t ref_len = 0;
    unsigned char *ref = oc_test_read_file(out_path(c), &ref_len);
    CHECK_MSG(ref != NULL, "%s: no output", c->name);
    if (!ref) return;
    blank_zip_times(c->file, ref, ref_len);
    unlink(out_path(c));

    int points[OC_FAULT_CALLS] = {0}, spilled = 0;
    int mapped = c->kind == JOB_DENSE || c->kind == JOB_SAVE || c->kind == JOB_MATMUL || c->kind == JOB_MATMUL_GRAM;
    /* OUTCORE_TEST_QUICK (the ThreadSanitizer run, where a job writing the 16.8 MiB result
     * takes a tenth of a second): every call of every kind fails one way, a full disk, not
     * both; the writers' threads run the same paths either way. */
    const size_t nways = getenv("OUTCORE_TEST_QUICK") ? 1 : sizeof ways / sizeof *ways;
    for (int call = 0; call < OC_FAULT_CALLS; ++call)
        for (size_t w = 0; call != OC_FAULT_FLUSH_FOLDER && call != OC_FAULT_SWEEP && w < nways; ++w) {
            int n = fail_each_call(c, (oc_fault_call)call, &ways[w], ref, ref_len, &spilled);
            CHECK_MSG(w == 0 || n == points[call], "%s: %s fails %d calls with %s but %d with %s", c->name,
                      oc_fault_variable((oc_fault_call)call), n, ways[w].mode, points[call], ways[0].mode);
            points[call] = n;
        }
    int writes = short_writes(c, ref, ref_len, &spilled);
    /* A temporary removed by another host's sweep before its lock is taken is made anew,
     * and the job writes the same bytes into the new one. */
    arm(OC_FAULT_SWEEP, "1,2");
    oc_status swept = run_job(c);
    arm(OC_FAULT_SWEEP, NULL);
    CHECK_MSG(swept == OC_OK, "%s with its temporary swept twice: %s", c->name, oc_context_last_error(ctx));
    if (swept == OC_OK) check_success(c, ref, ref_len, "OUTCORE_FAULT_SWEEP=1,2");
    printf("  %-22s calls failed: open %d, write %d (short %d), truncate %d, mmap %d, fsync %d, close %d, rename %d\n",
           c->name, points[OC_FAULT_OPEN], points[OC_FAULT_WRITE], writes, points[OC_FAULT_TRUNCATE],
           points[OC_FAULT_MMAP], points[OC_FAULT_FSYNC], points[OC_FAULT_CLOSE], points[OC_FAULT_RENAME]);

    /* What each writer must have gone through: the call kinds its design says it makes. */
    /* A result reserved as the job runs: sized, its first chunk reserved, then the rest. */
    if (c->kind == JOB_MATMUL || c->kind == JOB_MATMUL_GRAM)
        CHECK_MSG(points[OC_FAULT_TRUNCATE] == 3, "%s: %d sizing calls, expected 3", c->name,
                  points[OC_FAULT_TRUNCATE]);
    CHECK_MSG(points[OC_FAULT_OPEN] >= 1 && points[OC_FAULT_CLOSE] == 1 && points[OC_FAULT_RENAME] == 1,
              "%s: open, close and rename were not all reached", c->name);
    /* The flushes: a mapped file's msync, then the commit's fsync of every output. */
    CHECK_MSG(points[OC_FAULT_FSYNC] == (mapped ? 2 : 1), "%s: %d flushes, expected %d", c->name,
              points[OC_FAULT_FSYNC], mapped ? 2 : 1);
    check_commit_flushes(c, points[OC_FAULT_FSYNC], ref, ref_len);
    CHECK_MSG(mapped ? points[OC_FAULT_TRUNCATE] >= 1 && points[OC_FAULT_MMAP] == 1 && points[OC_FAULT_WRITE] == 0
                     : points[OC_FAULT_WRITE] >= 1 && writes == points[OC_FAULT_WRITE],
              "%s: the writes, sizing and mapping reached are not the writer's", c->name);
    /* .npz pairs: the file and its two side files; the spill file besides. */
    if (c->kind == JOB_PAIRS && strstr(c->file, ".npz")) CHECK(points[OC_FAULT_OPEN] >= 3);
    if (c->spill) CHECK_MSG(spilled, "%s: no failure reached the spill file", c->name);
    free(ref);
}

/* ---------------------------------------------------------------- the plan and the messages */

static void check_plan(void)
{
    /* Specs that do not parse arm nothing and say so. */
    const char *bad[] = {"0", "x", "3:", "3:full", "1,", "-2", "1,2,3,4,5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; ++i)
        CHECK_MSG(oc_fault_arm(ctx, OC_FAULT_WRITE, bad[i]) == OC_ERR_INVALID_ARGUMENT, "spec '%s' accepted", bad[i]);
    CHECK(oc_fault_arm(ctx, OC_FAULT_RENAME, "1:short") == OC_ERR_INVALID_ARGUMENT); /* short is for writes */
    CHECK(oc_fault_arm(ctx, OC_FAULT_WRITE, "2:short,3:enospc,9") == OC_OK);
    oc_context_begin_job(ctx);
    const oc_fault_mode want[] = {OC_FAULT_NONE, OC_FAULT_SHORT, OC_FAULT_ENOSPC, OC_FAULT_NONE, OC_FAULT_NONE,
                                  OC_FAULT_NONE, OC_FAULT_NONE,  OC_FAULT_NONE,   OC_FAULT_EIO,  OC_FAULT_NONE};
    for (size_t i = 0; i < sizeof want / sizeof *want; ++i)
        CHECK_MSG(oc_fault_plan_next(&ctx->faults, OC_FAULT_WRITE) == want[i], "write call %zu", i + 1);
    CHECK(oc_fault_plan_next(&ctx->faults, OC_FAULT_OPEN) == OC_FAULT_NONE);

    /* A variable overrides the armed plan of its kind for the job, and is read at its start. */
    setenv("OUTCORE_FAULT_WRITE", "1:enospc", 1);
    oc_context_begin_job(ctx);
    unsetenv("OUTCORE_FAULT_WRITE");
    CHECK(oc_fault_plan_next(&ctx->faults, OC_FAULT_WRITE) == OC_FAULT_ENOSPC);
    CHECK(oc_fault_plan_next(&ctx->faults, OC_FAULT_WRITE) == OC_FAULT_NONE);
    setenv("OUTCORE_FAULT_WRITE", "garbage", 1); /* arms nothing, not even the armed plan */
    oc_context_begin_job(ctx);
    unsetenv("OUTCORE_FAULT_WRITE");
    CHECK(oc_fault_plan_next(&ctx->faults, OC_FAULT_WRITE) == OC_FAULT_NONE);
    CHECK(oc_fault_plan_next(&ctx->faults, OC_FAULT_WRITE) == OC_FAULT_NONE);
    arm(OC_FAULT_WRITE, NULL);
    oc_context_begin_job(ctx);
    CHECK(oc_fault_plan_next(&ctx->faults, OC_FAULT_WRITE) == OC_FAULT_NONE);
    CHECK(oc_fault_plan_next(&ctx->faults, OC_FAULT_WRITE) == OC_FAULT_NONE);
}

/* The folder flush after a rename: done where the folder is, its errno where it is not. */
static void check_flush_folder(void)
{
    CHECK_EQ_I64(oc_sys_flush_folder(NULL, outdir), 0);
    char missing[600];
    snprintf(missing, sizeof missing, "%s/no-such-folder", outdir);
    CHECK_EQ_I64(oc_sys_flush_folder(NULL, missing), ENOENT);
}

static void check_write_all(void)
{
    /* Short writes are retried to the last byte; the failure after one is reported. */
    char path[600];
    snprintf(path, sizeof path, "%s/w.bin", outdir);
    int fd = oc_sys_open(NULL, path, O_RDWR | O_CREAT | O_TRUNC, 0666);
    CHECK(fd >= 0);
    unsigned char buf[1000];
    for (size_t i = 0; i < sizeof buf; ++i) buf[i] = (unsigned char)(i * 13);
    arm(OC_FAULT_WRITE, "1:short,2:short,3:short");
    oc_context_begin_job(ctx);
    CHECK(oc_sys_write_all(ctx, fd, buf, sizeof buf, -1) == 0);
    CHECK_EQ_I64(calls_made(OC_FAULT_WRITE), 4); /* three halves, then the rest */
    CHECK_EQ_I64(oc_sys_file_size(fd), sizeof buf);
    arm(OC_FAULT_WRITE, "1:short,2:enospc");
    oc_context_begin_job(ctx);
    CHECK(oc_sys_write_all(ctx, fd, buf, sizeof buf, 0) == ENOSPC);
    arm(OC_FAULT_WRITE, NULL);
    close(fd);
    size_t len = 0;
    unsigned char *back = oc_test_read_file(path, &len);
    CHECK(back && len == sizeof buf && memcmp(back, buf, len) == 0);
    free(back);
    unlink(path);
}

static void check_messages(void)
{
    char msg[256];
    oc_io_describe(msg, sizeof msg, "writing", "C.npy", ENOSPC, 1200000000, 4000000000, -1);
    CHECK_MSG(strcmp(msg, "disk full writing C.npy: 1.2 of 4.0 GB written") == 0, "%s", msg);
    oc_io_describe(msg, sizeof msg, "writing", "p.tsv", EIO, 1500, -1, -1);
    CHECK_MSG(strcmp(msg, "I/O error writing p.tsv: 1.5 kB written") == 0, "%s", msg);
    oc_io_describe(msg, sizeof msg, "writing", "p.tsv", EDQUOT, 512, 900, -1);
    CHECK_MSG(strcmp(msg, "disk quota exceeded writing p.tsv: 512 of 900 bytes written") == 0, "%s", msg);
    oc_io_describe(msg, sizeof msg, "creating", "C.npy", EROFS, -1, -1, -1);
    CHECK_MSG(strcmp(msg, "creating C.npy failed: Read-only file system") == 0, "%s", msg);
    oc_io_describe(msg, sizeof msg, "writing", "C.npy", ENOSPC, -1, 4000000000, -1);
    CHECK_MSG(strcmp(msg, "disk full writing C.npy: 4.0 GB needed") == 0, "%s", msg);
}

/* ---------------------------------------------------------------- main */

/* argv[1]: the backend, "cpu" (the unit test) or "cuda" (the gpu test, tests/CMakeLists.txt:
 * skipped, exit 77, without a usable GPU). */
int main(int argc, char **argv)
{
    backend = argc > 1 && strcmp(argv[1], "cuda") == 0 ? OC_BACKEND_CUDA : OC_BACKEND_CPU;
    if (backend == OC_BACKEND_CUDA && oc_cuda_device_count() == 0) {
        oc_test_skip("backend cuda: no usable GPU");
        return oc_test_finish();
    }
    const char *base = getenv("TMPDIR");
    snprintf(outdir, sizeof outdir, "%s/oc_test_write_faults_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(outdir)) {
        perror("mkdtemp");
        return 1;
    }
    /* The spill file goes to TMPDIR: there it is seen if it stays. */
    setenv("TMPDIR", outdir, 1);
    if (oc_context_create(&ctx) != OC_OK) return 1;
    check_plan();
    check_write_all();
    check_flush_folder();
    check_messages();

    enum { N = 150, M = 64 };
    static unsigned char dense[N * M];
    uint64_t seed = 0x3a11f0;
    for (int i = 0; i < N * M; ++i) dense[i] = oc_test_rand(&seed) % 10 < 3;
    for (int i = 0; i < MM_N; ++i) mm_a[i] = (float)(i % 7) - 3, mm_b[i] = (float)(i % 5);
    oc_matrix *a = NULL;
    CHECK(oc_matrix_from_dense(ctx, dense, N, M, M, &a) == OC_OK);
    input = a;

    printf("backend %s\n", oc_backend_name(backend));
    for (size_t c = 0; c < sizeof cases / sizeof *cases && a; ++c) {
        if (backend == OC_BACKEND_CUDA && cases[c].kind == JOB_SAVE) continue; /* no backend in it */
        run_case(&cases[c]);
    }
    oc_matrix_free(a);
    oc_context_free(ctx);
    rmdir(outdir); /* empty unless a check above failed: then it stays to be looked at */
    return oc_test_finish();
}
