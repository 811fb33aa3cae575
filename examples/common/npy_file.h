/*
 * npy_file.h - the examples' .npy files of float64, memory-mapped, so that outcore streams
 * chunks straight between the file's pages and its pinned staging. Example code, not the
 * library's reader or writer: it knows only C-order '<f8' arrays of one or two dimensions.
 *
 *   npy_create: a new file under a temporary name (path.tmp), sized and mapped for writing;
 *               npy_commit flushes it and renames it into place, npy_discard removes it
 *   npy_open:   an existing file mapped read-only, its shape checked
 */
#ifndef OC_EXAMPLE_NPY_FILE_H
#define OC_EXAMPLE_NPY_FILE_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct npy_file {
    char path[1024], tmp[1100];
    void *map;
    size_t map_bytes;
    double *data;
    int64_t shape[2];
    int ndim;
} npy_file;

/* d1 < 0: a 1-d array of d0. Returns 0, or -1 after printing why. */
static int npy_create(npy_file *f, const char *path, int64_t d0, int64_t d1)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp", path);
    char dict[200];
    int len = d1 < 0 ? snprintf(dict, sizeof dict, "{'descr': '<f8', 'fortran_order': False, 'shape': (%lld,), }",
                                (long long)d0)
                     : snprintf(dict, sizeof dict, "{'descr': '<f8', 'fortran_order': False, 'shape': (%lld, %lld), }",
                                (long long)d0, (long long)d1);
    size_t header = (10 + (size_t)len + 1 + 63) / 64 * 64;
    size_t bytes = header + (size_t)(d0 * (d1 < 0 ? 1 : d1)) * 8;
    int fd = open(f->tmp, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) {
        perror(f->tmp);
        if (fd >= 0) close(fd), unlink(f->tmp);
        return -1;
    }
    f->map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (f->map == MAP_FAILED) {
        perror(f->tmp);
        unlink(f->tmp);
        return -1;
    }
    unsigned char *h = (unsigned char *)f->map;
    memcpy(h, "\x93NUMPY\x01\x00", 8);
    h[8] = (unsigned char)((header - 10) & 0xff), h[9] = (unsigned char)((header - 10) >> 8);
    memcpy(h + 10, dict, (size_t)len);
    memset(h + 10 + len, ' ', header - 10 - (size_t)len - 1);
    h[header - 1] = '\n';
    f->map_bytes = bytes;
    f->data = (double *)(h + header);
    f->shape[0] = d0, f->shape[1] = d1;
    f->ndim = d1 < 0 ? 1 : 2;
    return 0;
}

static int npy_commit(npy_file *f)
{
    int ok = msync(f->map, f->map_bytes, MS_SYNC) == 0;
    munmap(f->map, f->map_bytes);
    f->map = NULL;
    if (!ok || rename(f->tmp, f->path) != 0) {
        perror(f->path);
        unlink(f->tmp);
        return -1;
    }
    return 0;
}

static void npy_discard(npy_file *f)
{
    if (f->map) munmap(f->map, f->map_bytes), unlink(f->tmp);
    f->map = NULL;
}

/* Maps path read-only; it must hold a C-order '<f8' array of two dimensions. */
static int npy_open(npy_file *f, const char *path)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || sb.st_size < 16) {
        fprintf(stderr, "%s: cannot read it\n", path);
        if (fd >= 0) close(fd);
        return -1;
    }
    f->map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (f->map == MAP_FAILED) {
        f->map = NULL;
        perror(path);
        return -1;
    }
    f->map_bytes = (size_t)sb.st_size;
    const unsigned char *h = (const unsigned char *)f->map;
    size_t header = h[6] == 1 ? 10 + (h[8] | (size_t)h[9] << 8) : 12 + (h[8] | (size_t)h[9] << 8 | (size_t)h[10] << 16);
    size_t dl = header - (h[6] == 1 ? 10 : 12);
    char dict[512] = "";
    long long d0 = 0, d1 = 0;
    const char *shape = NULL;
    if (memcmp(h, "\x93NUMPY", 6) == 0 && header <= f->map_bytes && dl < sizeof dict) {
        memcpy(dict, h + header - dl, dl);
        shape = strstr(dict, "'shape': (");
        if (strstr(dict, "'descr': '<f8'") && strstr(dict, "'fortran_order': False") && shape &&
            sscanf(shape, "'shape': (%lld, %lld)", &d0, &d1) == 2 && d0 > 0 && d1 > 0 &&
            header + (size_t)(d0 * d1) * 8 == f->map_bytes) {
            f->data = (double *)(h + header);
            f->shape[0] = d0, f->shape[1] = d1, f->ndim = 2;
            return 0;
        }
    }
    fprintf(stderr, "%s: expected a C-order float64 .npy of two dimensions\n", path);
    munmap(f->map, f->map_bytes);
    f->map = NULL;
    return -1;
}

static void npy_close(npy_file *f)
{
    if (f->map) munmap(f->map, f->map_bytes);
    f->map = NULL;
}

#endif
