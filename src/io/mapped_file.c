#include "io/mapped_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/context.h"
#include "core/error.h"
#include "matrix/matrix.h"
#include "matrix/matrix_build.h"
#include "io/input_file.h"
#include "io/map_guard.h"
#include "io/sysio.h"

/* OUTCORE_FAULT_SHRINK (fault.h): the mapping from about half the file on is replaced by one
 * of an anonymous file that is then emptied, so reading there faults exactly as it would had
 * the input itself been cut; the input is not touched. */
static void shrink_for_test(oc_mapped_file *f)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), cut = f->size / 2 / page * page;
    size_t len = (f->size + page - 1) / page * page - cut;
    int fd = memfd_create("outcore-shrink", MFD_CLOEXEC);
    if (fd < 0) return;
    if (ftruncate(fd, (off_t)len) == 0 &&
        mmap((void *)(f->data + cut), len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED &&
        ftruncate(fd, 0) == 0)
        f->shrunk_to = (int64_t)cut;
    close(fd);
}

/* Why a mapping of size bytes failed: the address space limit (ulimit -v) when one is set
 * and that is what ran out, else the system's reason. */
static oc_status map_failed(oc_context *ctx, const char *path, size_t size, int err)
{
    int64_t limit = err == ENOMEM ? oc_address_space_limit() : -1;
    if (limit >= 0)
        return oc_fail(ctx, OC_ERR_NO_MEMORY,
                       "%s: cannot map its %zu bytes: the address space limit (ulimit -v, %lld bytes) is too small",
                       path, size, (long long)limit);
    return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot map %zu bytes: %s", path, size, strerror(err));
}

/* Maps path; faults: whether the fault plan's OUTCORE_FAULT_SHRINK may cut this mapping. */
static oc_status map_file(oc_context *ctx, const char *path, oc_mapped_file *f, int faults)
{
    memset(f, 0, sizeof *f);
    f->fd = f->guard = -1;
    f->shrunk_to = -1;
    int fd;
    struct stat sb;
    OC_CHECK(ctx, oc_input_open(ctx, path, &fd, &sb));
    if (sb.st_size == 0) {
        close(fd);
        return oc_fail(ctx, OC_ERR_INPUT, "%s: the file is empty", path);
    }
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        int err = errno;
        close(fd);
        return map_failed(ctx, path, (size_t)sb.st_size, err);
    }
    f->data = map;
    f->size = (size_t)sb.st_size;
    f->dev = (uint64_t)sb.st_dev;
    f->ino = (uint64_t)sb.st_ino;
    /* Kept open: its size after reading says whether the file changed meanwhile. */
    f->fd = fd;
    f->guard = oc_map_guard_add(f->data, f->size);
    if (f->guard < 0) {
        /* Unguarded, a file cut while it is read would end the process (SIGBUS). */
        oc_mapped_file_close(f);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: cannot guard its mapping against the file being cut", path);
    }
    if (faults && ctx && oc_fault_plan_next(&ctx->faults, OC_FAULT_SHRINK) != OC_FAULT_NONE) shrink_for_test(f);
    return OC_OK;
}

oc_status oc_mapped_file_open(oc_context *ctx, const char *path, oc_mapped_file *f)
{
    OC_CHECK(ctx, map_file(ctx, path, f, 1));
    return OC_OK;
}

int oc_mapped_file_faulted(const oc_mapped_file *f)
{
    return f->data && !f->borrowed && oc_map_guard_faulted(f->guard);
}

oc_status oc_mapped_file_check(oc_context *ctx, const char *path, const oc_mapped_file *f)
{
    if (!f->data || f->borrowed) return OC_OK;
    struct stat sb;
    int64_t now = f->shrunk_to >= 0 ? f->shrunk_to : fstat(f->fd, &sb) == 0 ? (int64_t)sb.st_size : -1;
    if (!oc_mapped_file_faulted(f) && now == (int64_t)f->size) return OC_OK;
    return oc_input_changed(ctx, path, now, (int64_t)f->size);
}

void oc_mapped_file_advise_sequential(oc_mapped_file *f)
{
    if (f->data && !f->borrowed) madvise((void *)f->data, f->size, MADV_SEQUENTIAL);
}

void oc_mapped_file_release_before(oc_mapped_file *f, size_t offset)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t end = (offset < f->size ? offset : f->size) / page * page;
    if (!f->data || f->borrowed || end <= f->released) return;
    /* Advice only: a failure changes nothing but the resident size. */
    madvise((void *)(f->data + f->released), end - f->released, MADV_DONTNEED);
    f->released = end;
}

void oc_mapped_file_release_range(const oc_mapped_file *f, size_t begin, size_t end)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    begin = (begin + page - 1) / page * page;
    end = (end < f->size ? end : f->size) / page * page;
    if (!f->data || f->borrowed || end <= begin) return;
    madvise((void *)(f->data + begin), end - begin, MADV_DONTNEED);
}

void oc_mapped_file_close(oc_mapped_file *f)
{
    if (f->data && !f->borrowed) {
        oc_map_guard_remove(f->guard);
        munmap((void *)f->data, f->size);
        close(f->fd);
    }
    memset(f, 0, sizeof *f);
}

/* Runs parse over an opened file and closes it; *out is set only on success. */
static oc_status parse_and_close(oc_context *ctx, const char *path, oc_mapped_file *file, oc_mapped_parse_fn parse,
                                 void *arg, oc_matrix **out)
{
    oc_matrix *m = NULL;
    oc_status st = parse(ctx, path, file, arg, &m);
    /* A parser that read zeros where the file was cut may fail for them, or succeed: either
     * way the change is what is reported. */
    oc_status changed = oc_mapped_file_check(ctx, path, file);
    if (changed != OC_OK) st = changed;
    int from_file = !file->borrowed;
    uint64_t dev = file->dev, ino = file->ino;
    oc_mapped_file_close(file);
    /* A Ctrl-C that came while the file was open cancels the read, even where the parser's
     * last look for it came first: what was read is dropped, as at any other cancel point. */
    if (st == OC_OK && oc_cancelled(ctx)) st = oc_read_cancelled(ctx, path);
    if (st != OC_OK) {
        oc_matrix_free(m);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    m->has_source = from_file;
    m->source_dev = dev;
    m->source_ino = ino;
    *out = m;
    return OC_OK;
}

oc_status oc_mapped_read(oc_context *ctx, const char *path, oc_mapped_parse_fn parse, void *arg, oc_matrix **out)
{
    oc_mapped_file file;
    OC_CHECK(ctx, oc_mapped_file_open(ctx, path, &file));
    OC_CHECK(ctx, parse_and_close(ctx, path, &file, parse, arg, out));
    return OC_OK;
}

oc_status oc_buffer_read(oc_context *ctx, const char *name, const void *data, size_t size, oc_mapped_parse_fn parse,
                         void *arg, oc_matrix **out)
{
    if (size == 0) return oc_fail(ctx, OC_ERR_INPUT, "%s: the file is empty", name);
    oc_mapped_file file = {.data = data, .size = size, .borrowed = 1, .fd = -1, .guard = -1, .shrunk_to = -1};
    OC_CHECK(ctx, parse_and_close(ctx, name, &file, parse, arg, out));
    return OC_OK;
}

oc_status oc_mapped_head(oc_context *ctx, const char *path, oc_mapped_head_fn head, const oc_read_options *opts,
                         int64_t *rows, int64_t *cols)
{
    oc_mapped_file file;
    OC_CHECK(ctx, map_file(ctx, path, &file, 0));
    int64_t r = -1, c = -1;
    oc_status st = head(ctx, path, &file, opts, &r, &c);
    oc_status changed = oc_mapped_file_check(ctx, path, &file);
    if (changed != OC_OK) st = changed;
    oc_mapped_file_close(&file);
    if (st != OC_OK) return oc_trace_at(ctx, st, __FILE__, __LINE__);
    *rows = r, *cols = c;
    return OC_OK;
}
