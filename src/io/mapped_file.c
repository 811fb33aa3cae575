#include "io/mapped_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/matrix.h"

oc_status oc_mapped_file_open(oc_context *ctx, const char *path, oc_mapped_file *f)
{
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        if (err == ENOENT) return oc_fail(ctx, OC_ERR_INPUT, "%s: no such file", path);
        if (err == EACCES) return oc_fail(ctx, OC_ERR_INPUT, "%s: permission denied", path);
        return oc_fail(ctx, OC_ERR_INPUT, "%s: cannot open: %s", path, strerror(err));
    }
    struct stat sb;
    oc_status st = OC_OK;
    if (fstat(fd, &sb) != 0) {
        st = oc_fail(ctx, OC_ERR_INPUT, "%s: cannot stat: %s", path, strerror(errno));
    } else if (S_ISDIR(sb.st_mode)) {
        st = oc_fail(ctx, OC_ERR_INPUT, "%s: is a directory, not a matrix file", path);
    } else if (!S_ISREG(sb.st_mode)) {
        /* Pipes and devices cannot be mapped, and a reader needs to know the size. */
        st = oc_fail(ctx, OC_ERR_INPUT, "%s: not a regular file", path);
    } else if (sb.st_size == 0) {
        st = oc_fail(ctx, OC_ERR_INPUT, "%s: the file is empty", path);
    } else {
        void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED) {
            st = oc_fail(ctx, OC_ERR_INPUT, "%s: cannot map %lld bytes: %s", path, (long long)sb.st_size,
                         strerror(errno));
        } else {
            f->data = map;
            f->size = (size_t)sb.st_size;
            f->dev = (uint64_t)sb.st_dev;
            f->ino = (uint64_t)sb.st_ino;
        }
    }
    /* The mapping keeps the file alive; the descriptor is no longer needed. */
    close(fd);
    return st;
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
    if (f->data && !f->borrowed) munmap((void *)f->data, f->size);
    memset(f, 0, sizeof *f);
}

/* Runs parse over an opened file and closes it; *out is set only on success. */
static oc_status parse_and_close(oc_context *ctx, const char *path, oc_mapped_file *file, oc_mapped_parse_fn parse,
                                 void *arg, oc_matrix **out)
{
    oc_matrix *m = NULL;
    oc_status st = parse(ctx, path, file, arg, &m);
    int from_file = !file->borrowed;
    uint64_t dev = file->dev, ino = file->ino;
    oc_mapped_file_close(file);
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
    OC_CHECK(oc_mapped_file_open(ctx, path, &file));
    OC_CHECK(parse_and_close(ctx, path, &file, parse, arg, out));
    return OC_OK;
}

oc_status oc_buffer_read(oc_context *ctx, const char *name, const void *data, size_t size, oc_mapped_parse_fn parse,
                         void *arg, oc_matrix **out)
{
    if (size == 0) return oc_fail(ctx, OC_ERR_INPUT, "%s: the file is empty", name);
    oc_mapped_file file = {.data = data, .size = size, .borrowed = 1};
    OC_CHECK(parse_and_close(ctx, name, &file, parse, arg, out));
    return OC_OK;
}
