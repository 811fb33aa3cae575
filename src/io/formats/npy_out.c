/*
 * npy_out.c - the .npy writer: the dense result of a job (oc_npy_out_create), a resumable
 * job's file (kept, synced and reopened), and an array of any dtype and shape (map).
 *
 * The writer sizes its temporary file up front and hands out a shared mapping of it: the
 * result goes straight to the page cache and the disk, never through anonymous memory. It
 * creates, sizes, maps, flushes and renames only through sysio.h, so the tests' fault plan
 * reaches each of those failures; its header, like every header the library writes, comes
 * from npy_header.c. The reader is npy.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "core/error.h"
#include "matrix/matrix.h"
#include "core/pages.h"
#include "core/threads.h"
#include "core/trace.h"
#include "io/io.h"
#include "io/formats/npy_array.h"
#include "io/formats/npy_header.h"
#include "io/sysio.h"

struct oc_npy_out {
    oc_tmpfile file;
    unsigned char *map;
    size_t map_len;
    size_t offset;  /* the header's bytes: where the data starts */
    int prefaulted; /* the whole mapping was populated at creation */
    /* Reserving ahead (oc_npy_out_create_nd_ahead): a thread reserves the file's blocks
     * chunk after chunk from the start while the job runs; writers wait for theirs. */
    int ahead; /* the thread runs until joined */
    pthread_t reserver;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_size_t reserved; /* bytes [0, reserved) of the file hold their blocks */
    int err;                /* errno of the failed reservation, else 0 (under mu) */
    int stop;               /* abort or keep: reserve no more (under mu) */
    oc_context *ctx;        /* the fault plan's (sysio.h): the creator's, which outlives the writer */
    /* OUTCORE_TRACE: when the reservation began and ended (under mu), and how long writers
     * waited for it in all (nanoseconds). */
    double began, ended;
    atomic_llong waited_ns;
};

/* Each first write to a page of a fresh shared mapping is a page fault, one 4 KB page after
 * another. On memory file systems (tmpfs, ramfs), where fallocate has already allocated the
 * pages, the writer maps them all in up front on every core, MADV_POPULATE_WRITE per 64 MB
 * (one call per chunk instead of one exception per page), so the sinks' writes are plain
 * stores. fallocate stays the reservation: populating pages that tmpfs has not allocated
 * yet does not scale with threads (the allocation serialises) and was slower than fallocate
 * followed by the populate. On a disk file the writer does not populate: a populated page
 * is a dirty page of zeros that write-back may send to the disk before the job's data.
 * docs/design-log.md has the measurements. */
#define PREFAULT_MIN_BYTES ((size_t)64 << 20)
#define PREFAULT_CHUNK ((int64_t)64 << 20)

static int on_memory_file_system(int fd)
{
    struct statfs fs;
    if (fstatfs(fd, &fs) != 0) return 0;
    return fs.f_type == 0x01021994 /* TMPFS_MAGIC */ || fs.f_type == (typeof(fs.f_type))0x858458f6 /* RAMFS_MAGIC */;
}

typedef struct prefault_job {
    unsigned char *map;
    size_t len;
    atomic_int failed;
} prefault_job;

static oc_status prefault_task(void *arg, int64_t task, int worker)
{
    (void)worker;
    prefault_job *job = arg;
    size_t begin = (size_t)(task * PREFAULT_CHUNK), len = job->len - begin;
    if (len > (size_t)PREFAULT_CHUNK) len = (size_t)PREFAULT_CHUNK;
    /* Not oc_pages_populate_write: the writer needs to know whether every chunk went in. */
    if (madvise(job->map + begin, len, MADV_POPULATE_WRITE) != 0) atomic_store(&job->failed, 1);
    return OC_OK;
}

/* Advice only: a page it leaves out (a kernel before 5.14, a thread that could not start)
 * faults when the job writes it, as before. Returns whether the whole mapping was faulted in. */
static int prefault_mapping(unsigned char *map, size_t len)
{
    prefault_job job = {.map = map, .len = len};
    atomic_init(&job.failed, 0);
    int64_t tasks = ((int64_t)len + PREFAULT_CHUNK - 1) / PREFAULT_CHUNK;
    oc_status st = oc_parallel_run(NULL, oc_threads_resolve(0), tasks, prefault_task, &job, NULL, NULL);
    return st == OC_OK && !atomic_load(&job.failed);
}

/* Outputs larger than this are reserved ahead by oc_npy_out_create_nd_ahead: fallocate
 * zeroes a memory file system's pages on one thread, which would otherwise come before the
 * job's first product (bench/RESULTS.md, "A result reserved as the job runs"). The first
 * chunk is reserved before the header is written; the rest chunk after chunk, each before any
 * writer touches it. A chunk is small enough that the first writers wait little, and large
 * enough that a call per chunk costs nothing beside its zeroing. */
#define RESERVE_CHUNK ((size_t)16 << 20)

/* Reserves bytes [off, off + len) of fd's file (fallocate, through the fault plan): 0, or the
 * errno of the failure. A file system without fallocate keeps its sparse file: 0 too. */
static int reserve(oc_context *ctx, int fd, size_t off, size_t len)
{
    if (oc_sys_fallocate(ctx, fd, (off_t)off, (off_t)len) == 0 || errno == EOPNOTSUPP || errno == ENOSYS) return 0;
    return errno ? errno : EIO;
}

static void *reserver_main(void *arg)
{
    oc_npy_out *w = arg;
    for (size_t off = atomic_load(&w->reserved); off < w->map_len;) {
        pthread_mutex_lock(&w->mu);
        const int stop = w->stop;
        pthread_mutex_unlock(&w->mu);
        if (stop) break;
        const size_t len = w->map_len - off < RESERVE_CHUNK ? w->map_len - off : RESERVE_CHUNK;
        const int err = reserve(w->ctx, w->file.fd, off, len);
        pthread_mutex_lock(&w->mu);
        if (err) w->err = err;
        else atomic_store(&w->reserved, off + len);
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        if (err) break;
        off += len;
    }
    pthread_mutex_lock(&w->mu);
    w->ended = oc_now();
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Starts reserving [reserved, map_len) on a thread of its own; 0 when none could start. */
static int start_reserver(oc_npy_out *w, oc_context *ctx)
{
    w->ctx = ctx;
    w->began = oc_now();
    if (pthread_mutex_init(&w->mu, NULL) != 0) return 0;
    if (pthread_cond_init(&w->cv, NULL) != 0) {
        pthread_mutex_destroy(&w->mu);
        return 0;
    }
    if (oc_thread_start(&w->reserver, 0, reserver_main, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        return 0;
    }
    w->ahead = 1;
    return 1;
}

/* Stops (stop) or lets finish the reservation, and joins its thread: 0 when every byte holds
 * its blocks, else the errno of the failure (EINTR when stopped early). */
static int join_reserver(oc_npy_out *w, int stop)
{
    if (!w->ahead) return 0;
    pthread_mutex_lock(&w->mu);
    w->stop |= stop;
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->reserver, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    w->ahead = 0;
    if (!stop && oc_tracing())
        fprintf(stderr,
                "outcore output: %s reserved in %.6f s beside the job; its writers' waits for it add to %.6f s\n",
                w->file.path, w->ended - w->began, (double)atomic_load(&w->waited_ns) * 1e-9);
    return w->err ? w->err : atomic_load(&w->reserved) < w->map_len ? EINTR : 0;
}

int oc_npy_out_ready(oc_npy_out *w, size_t bytes, char *message, size_t size)
{
    const size_t end = w->offset + bytes < w->map_len ? w->offset + bytes : w->map_len;
    if (atomic_load(&w->reserved) >= end || !w->ahead) return 0;
    int err = 0;
    const double t = oc_now();
    pthread_mutex_lock(&w->mu);
    while (atomic_load(&w->reserved) < end && !w->err && !w->stop) pthread_cond_wait(&w->cv, &w->mu);
    if (atomic_load(&w->reserved) < end) err = w->err ? w->err : EINTR;
    pthread_mutex_unlock(&w->mu);
    atomic_fetch_add(&w->waited_ns, (long long)((oc_now() - t) * 1e9));
    if (err) oc_io_describe(message, size, "writing", w->file.path, err, -1, (int64_t)w->map_len, w->file.fd);
    return err;
}

/* Creates w's temporary file, total bytes long with its blocks reserved (with ahead and more
 * than a chunk, the first chunk now and the rest on a thread of its own), and maps it. On
 * failure the caller aborts w, which removes whatever was created. */
static oc_status npy_out_map(oc_context *ctx, const char *path, size_t total, int ahead, oc_npy_out *w)
{
    OC_CHECK(ctx, oc_tmpfile_open(ctx, path, &w->file));
    int fd = w->file.fd;
    /* A file that cannot fit is refused before it is sized: reserving it would fill the file
     * system first (and then find no free space to report). */
    OC_CHECK(ctx, oc_sys_check_space(ctx, fd, path, (int64_t)total));
    if (oc_sys_ftruncate(ctx, fd, (off_t)total) != 0)
        return oc_io_fail(ctx, "writing", path, errno, -1, (int64_t)total, fd);
    /* Reserve the blocks before they are written: a shared mapping of a sparse file that
     * later meets a full disk kills the process with SIGBUS instead of returning an error.
     * File systems without fallocate keep the sparse file (and that risk). */
    ahead = ahead && total > RESERVE_CHUNK;
    const size_t now = ahead ? RESERVE_CHUNK : total;
    int err = reserve(ctx, fd, 0, now);
    if (err) return oc_io_fail(ctx, "writing", path, err, -1, (int64_t)total, fd);
    atomic_store(&w->reserved, now);
    void *map = oc_sys_mmap_shared(ctx, fd, total);
    if (map == MAP_FAILED) return oc_io_fail(ctx, "mapping", path, errno, -1, -1, -1);
    w->map = map;
    w->map_len = total;
    /* The rest on a thread of its own, or here when none can start. Not populated: the
     * writers fault their pages in on their own threads as the job runs, which was faster
     * than populating each chunk after its reservation, on that thread or on every core
     * (docs/design-notes.md, "A matmul result is reserved as the job runs"). */
    if (ahead && !start_reserver(w, ctx)) {
        if ((err = reserve(ctx, fd, now, total - now)) != 0)
            return oc_io_fail(ctx, "writing", path, err, -1, (int64_t)total, fd);
        atomic_store(&w->reserved, total);
    }
    if (!ahead && total >= PREFAULT_MIN_BYTES && on_memory_file_system(fd))
        w->prefaulted = prefault_mapping(map, total);
    return OC_OK;
}

int oc_npy_out_prefaulted(const oc_npy_out *w) { return w && w->prefaulted; }

/* The bytes of a rows x cols .npy of dtype, header included, in *total and its header in
 * header (*offset bytes): OC_ERR_INPUT naming path when they pass 64-bit sizes. */
static oc_status npy_out_size(oc_context *ctx, const char *path, int dtype, int64_t rows, int64_t cols,
                              unsigned char *header, size_t *offset, size_t *total)
{
    const oc_element *e = oc_element_of(dtype);
    if (!e) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: no .npy output for dtype code %d", path, dtype);
    const int64_t elem = (int64_t)e->size;
    int64_t count, bytes;
    if (rows <= 0 || cols <= 0)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: output shape %" PRId64 " x %" PRId64 " is not positive", path,
                       rows, cols);
    if (!oc_mul_i64(rows, cols, &count) || !oc_mul_i64(count, elem, &bytes) || bytes > INT64_MAX - OC_NPY_HEADER_MAX ||
        (uint64_t)bytes > SIZE_MAX / 2)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: output %" PRId64 " x %" PRId64 " overflows 64-bit sizes", path, rows,
                       cols);
    *offset = oc_npy_header(header, dtype, rows, cols, 0);
    *total = *offset + (size_t)bytes;
    return OC_OK;
}

oc_status oc_npy_out_check_room(oc_context *ctx, const char *path, const char *what, int64_t bytes)
{
    char folder[4096];
    oc_path_folder(path, folder, sizeof folder);
    int64_t avail = oc_folder_free_bytes(folder);
    if (avail < 0 || bytes <= avail) return OC_OK;
    char need[40], have[40];
    oc_size_text(need, sizeof need, bytes);
    oc_size_text(have, sizeof have, avail);
    return oc_fail(ctx, OC_ERR_INPUT,
                   "%s: the %s result needs %s (%" PRId64 " bytes), but its file system has %s (%" PRId64
                   " bytes) free",
                   path, what, need, bytes, have, avail);
}

oc_status oc_npy_out_check_fits(oc_context *ctx, const char *path, int dtype, int64_t rows, int64_t cols, int space)
{
    unsigned char header[OC_NPY_HEADER_MAX];
    size_t offset = 0, total = 0;
    OC_CHECK(ctx, npy_out_size(ctx, path, dtype, rows, cols, header, &offset, &total));
    if (!space) return OC_OK;
    char what[96];
    snprintf(what, sizeof what, "dense %" PRId64 " x %" PRId64 " %s", rows, cols, oc_element_of(dtype)->name);
    return oc_npy_out_check_room(ctx, path, what, (int64_t)total);
}

oc_status oc_npy_out_create(oc_context *ctx, const char *path, int dtype, int64_t rows, int64_t cols, oc_npy_out **out,
                            void **data)
{
    if (!path || !out || !data) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_npy_out_create: NULL argument");
    unsigned char header[OC_NPY_HEADER_MAX];
    size_t offset = 0, total = 0;
    OC_CHECK(ctx, npy_out_size(ctx, path, dtype, rows, cols, header, &offset, &total));

    oc_npy_out *w = calloc(1, sizeof *w);
    if (!w) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory", path);
    w->file.fd = -1;
    oc_status st = npy_out_map(ctx, path, total, 0, w);
    if (st != OC_OK) {
        oc_npy_out_abort(w);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    w->offset = offset;
    memcpy(w->map, header, offset);
    *out = w;
    *data = w->map + offset;
    return OC_OK;
}

oc_status oc_npy_out_commit(oc_context *ctx, oc_npy_out *w)
{
    if (!w) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_npy_out_commit: NULL writer");
    const int err = join_reserver(w, 0);
    if (err) {
        oc_status st = oc_io_fail(ctx, "writing", w->file.path, err, -1, (int64_t)w->map_len, w->file.fd);
        oc_npy_out_abort(w);
        return st;
    }
    /* msync is where a failed write-back (full disk, I/O error) shows; munmap never says. */
    if (oc_sys_msync(ctx, w->map, w->map_len) != 0) {
        oc_status st = oc_io_fail(ctx, "writing", w->file.path, errno, -1, -1, -1);
        oc_npy_out_abort(w);
        return st;
    }
    munmap(w->map, w->map_len);
    w->map = NULL;
    oc_status st = oc_tmpfile_commit(ctx, &w->file);
    if (st != OC_OK) oc_trace_at(ctx, st, __FILE__, __LINE__);
    free(w);
    return st;
}

void oc_npy_out_abort(oc_npy_out *w)
{
    if (!w) return;
    join_reserver(w, 1);
    if (w->map) munmap(w->map, w->map_len);
    oc_tmpfile_abort(&w->file);
    free(w);
}

/* ---------------------------------------------------------------- resumable jobs */
const char *oc_npy_out_temp_path(const oc_npy_out *w) { return w->file.tmp_path; }

oc_status oc_npy_out_sync(oc_context *ctx, oc_npy_out *w)
{
    if (oc_sys_msync(ctx, w->map, w->map_len) != 0) return oc_io_fail(ctx, "writing", w->file.path, errno, -1, -1, -1);
    return OC_OK;
}

void oc_npy_out_keep(oc_npy_out *w)
{
    if (!w) return;
    join_reserver(w, 1); /* a resumed run reserves what this one did not (reopen_as) */
    if (w->map) munmap(w->map, w->map_len);
    oc_tmpfile_release(&w->file);
    free(w);
}

/* Reopens temp_path, which must hold `header` (offset bytes) and be total bytes long. */
static oc_status reopen_as(oc_context *ctx, const char *path, const char *temp_path, const unsigned char *header,
                           size_t offset, size_t total, oc_npy_out **out, void **data)
{
    unsigned char have[OC_NPY_HEADER_ND_MAX];
    oc_npy_out *w = calloc(1, sizeof *w);
    if (w) {
        w->file.fd = w->file.dir = -1;
        w->file.path = strdup(path);
        w->file.tmp_path = strdup(temp_path);
    }
    if (!w || !w->file.path || !w->file.tmp_path) {
        oc_npy_out_keep(w);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    /* Never through a link; held (flock) while this run uses it, as a new temporary is. */
    w->file.fd = oc_sys_open(ctx, temp_path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
    w->file.dir = oc_tmpfile_folder_open(temp_path); /* -1: renamed and removed by its path */
    const char *problem = NULL;
    struct stat sb;
    int unlocked = 0;
    if (w->file.fd < 0) problem = errno == ELOOP ? "it is a symbolic link" : strerror(errno);
    else if (fstat(w->file.fd, &sb) != 0 || !S_ISREG(sb.st_mode)) problem = "it is not a regular file";
    /* A temporary this library made has one name; another would be written through. */
    else if (sb.st_nlink != 1) problem = "it has other names (hard links)";
    else if (oc_sys_file_held_here(w->file.fd)) problem = "this process has it open: it is an input, not a temporary";
    else if ((unlocked = oc_sys_lock_released(w->file.fd, ctx)) != 0 && errno == ECANCELED) {
        oc_npy_out_keep(w);
        return oc_fail(ctx, OC_ERR_CANCELLED, "cancelled while waiting for the temporary output %s", temp_path);
    } else if (unlocked != 0 && errno == EWOULDBLOCK) problem = "a running job holds it";
    else if (oc_sys_file_size(w->file.fd) != (int64_t)total) problem = "its size is not the result's";
    else if (pread(w->file.fd, have, offset, 0) != (ssize_t)offset || memcmp(have, header, offset) != 0)
        problem = "its header is not the result's";
    /* The file it replaces gives its mode at commit, as to a new temporary (io.h). */
    struct stat old;
    if (!problem && stat(path, &old) == 0 && S_ISREG(old.st_mode)) w->file.mode = (unsigned)(old.st_mode & 0777);
    if (problem) {
        oc_npy_out_keep(w);
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: cannot resume from the temporary output %s: %s; remove the journal "
                       "%s.outcore-journal to start over",
                       path, temp_path, problem, path);
    }
    /* A run stopped while it reserved its file ahead left the rest sparse: reserved now. */
    const int err = sb.st_blocks * 512 < (off_t)total ? reserve(ctx, w->file.fd, 0, total) : 0;
    if (err) {
        oc_status st = oc_io_fail(ctx, "writing", path, err, -1, (int64_t)total, w->file.fd);
        oc_npy_out_keep(w);
        return st;
    }
    void *map = oc_sys_mmap_shared(ctx, w->file.fd, total);
    if (map == MAP_FAILED) {
        oc_status st = oc_io_fail(ctx, "mapping", path, errno, -1, -1, -1);
        oc_npy_out_keep(w);
        return st;
    }
    w->map = map;
    w->map_len = total;
    w->offset = offset;
    atomic_store(&w->reserved, total);
    *out = w;
    *data = w->map + offset;
    return OC_OK;
}

oc_status oc_npy_out_reopen(oc_context *ctx, const char *path, const char *temp_path, int dtype, int64_t rows,
                            int64_t cols, oc_npy_out **out, void **data)
{
    const int64_t elem = (int64_t)oc_element_of(dtype)->size;
    unsigned char header[OC_NPY_HEADER_MAX];
    size_t offset = oc_npy_header(header, dtype, rows, cols, 0);
    return reopen_as(ctx, path, temp_path, header, offset, offset + (size_t)(rows * cols * elem), out, data);
}

/* ---------------------------------------------------------------- any dtype and shape (map) */
/* The header of the array and the bytes of its data (OC_ERR_INPUT when they overflow). */
static oc_status nd_header(oc_context *ctx, const char *path, const char *descr, size_t elem, int ndim,
                           const int64_t *shape, int fortran_order, unsigned char *header, size_t size, size_t *offset,
                           int64_t *bytes)
{
    int64_t count = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0 || !oc_mul_i64(count, shape[i], &count))
            return oc_fail(ctx, OC_ERR_INPUT, "%s: the output shape overflows 64-bit sizes", path);
    if (!oc_mul_i64(count, (int64_t)elem, bytes) || (uint64_t)*bytes > SIZE_MAX / 2)
        return oc_fail(ctx, OC_ERR_INPUT, "%s: the output shape overflows 64-bit sizes", path);
    *offset = oc_npy_header_nd(header, size, descr, ndim, shape, fortran_order);
    if (*offset == 0) return oc_fail(ctx, OC_ERR_INTERNAL, "%s: the .npy header does not fit", path);
    return OC_OK;
}

oc_status oc_npy_out_reopen_nd(oc_context *ctx, const char *path, const char *temp_path, const char *descr, size_t elem,
                               int ndim, const int64_t *shape, oc_npy_out **out, void **data)
{
    unsigned char header[OC_NPY_HEADER_ND_MAX];
    size_t offset = 0;
    int64_t bytes = 0;
    OC_CHECK(ctx, nd_header(ctx, path, descr, elem, ndim, shape, 0, header, sizeof header, &offset, &bytes));
    return reopen_as(ctx, path, temp_path, header, offset, offset + (size_t)bytes, out, data);
}

static oc_status create_nd(oc_context *ctx, const char *path, const char *descr, size_t elem, int ndim,
                           const int64_t *shape, int fortran_order, int ahead, oc_npy_out **out, void **data)
{
    unsigned char header[OC_NPY_HEADER_ND_MAX];
    size_t offset = 0;
    int64_t bytes = 0;
    OC_CHECK(ctx,
             nd_header(ctx, path, descr, elem, ndim, shape, fortran_order, header, sizeof header, &offset, &bytes));
    oc_npy_out *w = calloc(1, sizeof *w);
    if (!w) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory", path);
    w->file.fd = -1;
    oc_status st = npy_out_map(ctx, path, offset + (size_t)bytes, ahead, w);
    if (st != OC_OK) {
        oc_npy_out_abort(w);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    w->offset = offset;
    memcpy(w->map, header, offset);
    *out = w;
    *data = w->map + offset;
    return OC_OK;
}

oc_status oc_npy_out_create_nd(oc_context *ctx, const char *path, const char *descr, size_t elem, int ndim,
                               const int64_t *shape, int fortran_order, oc_npy_out **out, void **data)
{
    return create_nd(ctx, path, descr, elem, ndim, shape, fortran_order, 0, out, data);
}

oc_status oc_npy_out_create_nd_ahead(oc_context *ctx, const char *path, const char *descr, size_t elem, int ndim,
                                     const int64_t *shape, oc_npy_out **out, void **data)
{
    return create_nd(ctx, path, descr, elem, ndim, shape, 0, 1, out, data);
}
