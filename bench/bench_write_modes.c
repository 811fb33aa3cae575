/* Ways of writing a large fresh file, timed phase by phase: what the dense .npy writer
 * (src/io/formats/npy.c) chooses from. Each mode creates the file, fills it with bytes copied from
 * a source buffer (as the writer copies from its staging), and closes it; the file is removed
 * after each mode. Standalone (POSIX threads only) so it runs where the library is not built:
 *
 *   cc -O2 -pthread bench/bench_write_modes.c -o /tmp/bench_write_modes
 *   /tmp/bench_write_modes /dev/shm 8G 16
 *
 * Prints one line per mode: setup seconds (reservation, population), fill seconds, close
 * seconds (munmap, close) and the rate over the three. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#define SRC_BYTES ((size_t)64 << 20)
#define BLOCK ((size_t)8 << 20)

typedef struct job {
    int mode;
    int fd;
    unsigned char *map;
    size_t total;
    int threads;
    const unsigned char *src;
} job;

typedef struct part {
    job *j;
    int index;
} part;

enum { FILL_MEMCPY, FILL_PWRITE, FILL_POPULATE };

static int fill_kind;

static void *fill_part(void *arg)
{
    part *p = arg;
    job *j = p->j;
    size_t blocks = (j->total + BLOCK - 1) / BLOCK;
    /* Interleaved blocks, as the writer's row spans arrive from the staging ring. */
    for (size_t b = (size_t)p->index; b < blocks; b += (size_t)j->threads) {
        size_t off = b * BLOCK, len = j->total - off < BLOCK ? j->total - off : BLOCK;
        const unsigned char *s = j->src + (off % SRC_BYTES);
        if (off % SRC_BYTES + len > SRC_BYTES) s = j->src;
        if (fill_kind == FILL_MEMCPY) {
            memcpy(j->map + off, s, len);
        } else if (fill_kind == FILL_POPULATE) {
            if (madvise(j->map + off, len, MADV_POPULATE_WRITE) != 0) {
                perror("madvise(MADV_POPULATE_WRITE)");
                exit(1);
            }
        } else {
            size_t done = 0;
            while (done < len) {
                ssize_t w = pwrite(j->fd, s + done, len - done, (off_t)(off + done));
                if (w <= 0) {
                    perror("pwrite");
                    exit(1);
                }
                done += (size_t)w;
            }
        }
    }
    return NULL;
}

static void run_parallel(job *j, int kind)
{
    fill_kind = kind;
    pthread_t th[256];
    part parts[256];
    for (int i = 0; i < j->threads; ++i) {
        parts[i] = (part){j, i};
        pthread_create(&th[i], NULL, fill_part, &parts[i]);
    }
    for (int i = 0; i < j->threads; ++i) pthread_join(th[i], NULL);
}

static const char *names[] = {
    "fallocate+mmap+populate+memcpy (today)",
    "ftruncate+mmap+memcpy (faults in parallel)",
    "ftruncate+mmap+populate+memcpy",
    "ftruncate+mmap+MADV_HUGEPAGE+memcpy",
    "fallocate+mmap+HUGEPAGE+populate+memcpy",
    "ftruncate+pwrite (threads)",
    "fallocate+pwrite (threads)",
    "write, one thread (dd-like)",
    "anonymous memory: memcpy into fresh pages",
};
#define MODES ((int)(sizeof names / sizeof names[0]))

static void run_mode(int mode, const char *dir, size_t total, int threads, const unsigned char *src)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/bench_write_modes.%d.tmp", dir, (int)getpid());
    double t0 = now();
    job j = {.mode = mode, .total = total, .threads = threads, .src = src, .fd = -1};
    if (mode == 8) {
        j.map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        double t1 = now();
        run_parallel(&j, FILL_MEMCPY);
        double t2 = now();
        munmap(j.map, total);
        double t3 = now();
        printf("%-46s setup %.3f  fill %.3f  close %.3f  total %.3f s  %.2f GB/s\n", names[mode], t1 - t0, t2 - t1,
               t3 - t2, t3 - t0, (double)total / (t3 - t0) / 1e9);
        return;
    }
    j.fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (j.fd < 0) {
        perror(path);
        exit(1);
    }
    int use_falloc = mode == 0 || mode == 4 || mode == 6;
    if (ftruncate(j.fd, (off_t)total) != 0) perror("ftruncate");
    if (use_falloc && fallocate(j.fd, 0, 0, (off_t)total) != 0) perror("fallocate");
    double tf = now();
    int mapped = mode <= 4;
    if (mapped) {
        j.map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, j.fd, 0);
        if (j.map == MAP_FAILED) {
            perror("mmap");
            exit(1);
        }
        if (mode == 3 || mode == 4) {
            if (madvise(j.map, total, MADV_HUGEPAGE) != 0) perror("madvise(MADV_HUGEPAGE)");
        }
        if (mode == 0 || mode == 2 || mode == 4) run_parallel(&j, FILL_POPULATE);
    }
    double t1 = now();
    if (mapped) {
        run_parallel(&j, FILL_MEMCPY);
    } else if (mode == 7) {
        for (size_t off = 0; off < total; off += BLOCK) {
            size_t len = total - off < BLOCK ? total - off : BLOCK;
            if (write(j.fd, src + (off % SRC_BYTES), len) != (ssize_t)len) {
                perror("write");
                exit(1);
            }
        }
    } else {
        run_parallel(&j, FILL_PWRITE);
    }
    double t2 = now();
    if (mapped) munmap(j.map, total);
    close(j.fd);
    double t3 = now();
    printf("%-46s setup %.3f (reserve %.3f)  fill %.3f  close %.3f  total %.3f s  %.2f GB/s\n", names[mode], t1 - t0,
           tf - t0, t2 - t1, t3 - t2, t3 - t0, (double)total / (t3 - t0) / 1e9);
    fflush(stdout);
    unlink(path);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s DIR SIZE[G] THREADS [MODE...]\n", argv[0]);
        return 2;
    }
    char *end;
    double g = strtod(argv[2], &end);
    size_t total = (size_t)(g * (*end == 'G' || *end == 'g' ? 1e9 : 1.0));
    total -= total % 4096;
    int threads = atoi(argv[3]);
    if (threads < 1 || threads > 256) return 2;
    unsigned char *src = aligned_alloc(4096, SRC_BYTES);
    for (size_t i = 0; i < SRC_BYTES; ++i) src[i] = (unsigned char)(i * 131u + 7u);
    printf("file %s, %.2f GB, %d threads\n", argv[1], (double)total / 1e9, threads);
    if (argc > 4) {
        for (int a = 4; a < argc; ++a) run_mode(atoi(argv[a]), argv[1], total, threads, src);
    } else {
        for (int m = 0; m < MODES; ++m) run_mode(m, argv[1], total, threads, src);
    }
    free(src);
    return 0;
}
