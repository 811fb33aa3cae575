/* Freeing a large input: one munmap against oc_pages_discard_on (src/core/pages.h) on 2, 4 ...
 * threads before the free, as oc_matrix_free does. Each round allocates SIZE bytes as the
 * reader does (aligned_alloc), writes every page, then times the discard and the free.
 *
 *   build/bench/bench_discard [SIZE_GIB (default 8)] [MAX_THREADS (default 32)]
 *
 * Prints one line per thread count: the discard's seconds, the free's, and the rate of both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/pages.h"
#include "core/threads.h"

int main(int argc, char **argv)
{
    double gib = argc > 1 ? atof(argv[1]) : 8.0;
    int most = argc > 2 ? atoi(argv[2]) : 32;
    size_t bytes = (size_t)(gib * 1073741824.0);
    if (bytes < 4096 || most < 1) {
        fprintf(stderr, "usage: bench_discard [SIZE_GIB > 0] [MAX_THREADS >= 1]\n");
        return 2;
    }
    for (int threads = 1; threads <= most; threads *= 2) {
        char *p = aligned_alloc(64, bytes);
        if (!p) {
            fprintf(stderr, "bench_discard: cannot allocate %.1f GiB\n", gib);
            return 1;
        }
        memset(p, 1, bytes);
        double t0 = oc_now();
        if (threads > 1) oc_pages_discard_on(p, bytes, threads);
        double t1 = oc_now();
        free(p);
        double t2 = oc_now();
        printf("%.1f GiB, %2d thread%s: discard %.3f s, free %.3f s, %.1f GB/s\n", gib, threads,
               threads > 1 ? "s" : " ", t1 - t0, t2 - t1, (double)bytes / (t2 - t0) / 1e9);
    }
    return 0;
}
