/*
 * bench_mirror.c - the mirror of a symmetric result's tile on one core (oc_tile_mirror,
 * engine/sink.h: what gram's sinks and matmul's A·Aᵀ write below the diagonal) against an
 * element loop down the result's rows (matmul's A·Aᵀ wrote so before) and a plain loop over
 * 32 x 32 blocks, for 2-, 4- and 8-byte elements: a whole N x N tile above the diagonal into a
 * destination already touched, and into fresh memory (each first write to a page is a
 * fault). The best of ROUNDS rounds; the results are compared in full.
 *
 * Usage: bench_mirror [N] [ROUNDS]   (default 8192, 3)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "engine/sink.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The element loop: element (r, c) of the tile to row c, column r of dst. */
static inline __attribute__((always_inline)) void element_loop(unsigned char *dst, int64_t n, const unsigned char *tile,
                                                               size_t e)
{
    for (int64_t c = 0; c < n; c++)
        for (int64_t r = 0; r < n; r++)
            memcpy(dst + ((size_t)c * (size_t)n + (size_t)r) * e, tile + ((size_t)r * (size_t)n + (size_t)c) * e, e);
}

/* ... in 32 x 32 blocks, 32 rows of dst at a time. */
static inline __attribute__((always_inline)) void block_loop(unsigned char *dst, int64_t n, const unsigned char *tile,
                                                             size_t e)
{
    for (int64_t cb = 0; cb < n; cb += 32)
        for (int64_t rb = 0; rb < n; rb += 32)
            for (int64_t c = cb; c < cb + 32 && c < n; c++)
                for (int64_t r = rb; r < rb + 32 && r < n; r++)
                    memcpy(dst + ((size_t)c * (size_t)n + (size_t)r) * e,
                           tile + ((size_t)r * (size_t)n + (size_t)c) * e, e);
}

/* The loops with the element size a constant, as the library's are (memcpy of e bytes one
 * move): v 0 the element loop, 1 the blocks. */
static void reference(int v, unsigned char *dst, int64_t n, const unsigned char *tile, size_t e)
{
    switch (e * 2 + (size_t)v) {
    case 4:
        element_loop(dst, n, tile, 2);
        break;
    case 5:
        block_loop(dst, n, tile, 2);
        break;
    case 8:
        element_loop(dst, n, tile, 4);
        break;
    case 9:
        block_loop(dst, n, tile, 4);
        break;
    case 16:
        element_loop(dst, n, tile, 8);
        break;
    default:
        block_loop(dst, n, tile, 8);
        break;
    }
}

static unsigned char *fresh(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    const int64_t n = argc > 1 ? atoll(argv[1]) : 8192;
    const int rounds = argc > 2 ? atoi(argv[2]) : 3;
    if (n < 1 || rounds < 1) {
        fprintf(stderr, "usage: bench_mirror [N] [ROUNDS]\n");
        return 2;
    }
    static const size_t sizes[] = {2, 4, 8};
    printf("# a %lld x %lld tile wholly above the diagonal, one core, best of %d\n", (long long)n, (long long)n,
           rounds);
    printf("%-5s %-8s %13s %13s %13s  %s\n", "bytes", "dst", "element GB/s", "blocks GB/s", "mirror GB/s", "result");
    int failed = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const size_t e = sizes[s], bytes = (size_t)(n * n) * e;
        unsigned char *tile = malloc(bytes);
        if (!tile) return 1;
        for (size_t i = 0; i < bytes; i++) tile[i] = (unsigned char)(i * 131 + i / 7);
        for (int touched = 1; touched >= 0; touched--) {
            double best[3] = {1e30, 1e30, 1e30};
            unsigned char *out[3] = {NULL, NULL, NULL};
            for (int r = 0; r < rounds; r++)
                for (int v = 0; v < 3; v++) {
                    unsigned char *dst = fresh(bytes);
                    if (touched) memset(dst, 0, bytes);
                    const double t = now();
                    if (v < 2) reference(v, dst, n, tile, e);
                    else oc_tile_mirror(dst, n, tile, n, n, n, -n, e); /* every element above the diagonal */
                    const double dt = now() - t;
                    if (dt < best[v]) best[v] = dt;
                    if (out[v]) munmap(out[v], bytes);
                    out[v] = dst;
                }
            const int same = memcmp(out[0], out[1], bytes) == 0;
            failed |= !same;
            printf("%-5zu %-8s %14.2f %14.2f %8.2f  %s\n", e, touched ? "touched" : "fresh",
                   (double)bytes / best[0] / 1e9, (double)bytes / best[1] / 1e9, best[0] / best[1],
                   same ? "same bytes" : "DIFFERENT");
            munmap(out[0], bytes);
            munmap(out[1], bytes);
        }
        free(tile);
    }
    return failed;
}
