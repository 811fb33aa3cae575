/*
 * bench_fill.h - filling benchmark matrices of many GB in seconds: the caller draws the first
 * BENCH_FILL_BLOCK elements, bench_fill_repeat copies them over the rest, each later block
 * rotated by an offset of its own (the rates measured do not depend on the values).
 */
#ifndef OC_BENCH_GPU_BENCH_FILL_H
#define OC_BENCH_GPU_BENCH_FILL_H

#include <stdint.h>
#include <string.h>

#define BENCH_FILL_BLOCK (1 << 22)
#define BENCH_FILL_SHIFT 4099

/* Elements [BENCH_FILL_BLOCK, count) of p (es bytes each) from its first block. */
static inline void bench_fill_repeat(char *p, int64_t count, size_t es)
{
    for (int64_t i = BENCH_FILL_BLOCK; i < count; i += BENCH_FILL_BLOCK) {
        const int64_t n = count - i < BENCH_FILL_BLOCK ? count - i : BENCH_FILL_BLOCK;
        const int64_t r = (i / BENCH_FILL_BLOCK * BENCH_FILL_SHIFT) % BENCH_FILL_BLOCK;
        const int64_t head = BENCH_FILL_BLOCK - r < n ? BENCH_FILL_BLOCK - r : n;
        memcpy(p + (size_t)i * es, p + (size_t)r * es, (size_t)head * es);
        if (n > head) memcpy(p + (size_t)(i + head) * es, p, (size_t)(n - head) * es);
    }
}

#endif
