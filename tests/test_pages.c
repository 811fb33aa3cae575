/*
 * test_pages.c - oc_pages_discard (core/pages.h): the whole pages inside the range read back
 * as zeros afterwards (they went back to the kernel), while every byte of the pages the range
 * only partly covers, inside and outside it, keeps its value (an allocator's header lives
 * there); for ranges that start and end at every offset class and any thread count.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/pages.h"
#include "harness.h"

enum { PAGE = 4096 };

static void check_range(size_t pages, size_t head, size_t tail, int threads)
{
    size_t total = (pages + 3) * PAGE;
    unsigned char *base = aligned_alloc(PAGE, total);
    CHECK(base != NULL);
    if (!base) return;
    memset(base, 0x5A, total);
    /* The range starts `head` bytes into the first page and ends `tail` bytes before the end
     * of its last page. */
    unsigned char *p = base + head;
    size_t n = (pages + 2) * PAGE - head - tail;
    oc_pages_discard_on(p, n, threads);
    uintptr_t lo = ((uintptr_t)p + PAGE - 1) & ~(uintptr_t)(PAGE - 1), hi = ((uintptr_t)p + n) & ~(uintptr_t)(PAGE - 1);
    size_t kept_bad = 0, zero_bad = 0;
    for (size_t i = 0; i < total; ++i) {
        uintptr_t a = (uintptr_t)(base + i);
        int inside = a >= lo && a < hi;
        if (inside && base[i] != 0) ++zero_bad;
        if (!inside && base[i] != 0x5A) ++kept_bad;
    }
    CHECK_MSG(zero_bad == 0, "%zu pages, head %zu, tail %zu, %d threads: %zu discarded bytes not zero", pages, head,
              tail, threads, zero_bad);
    CHECK_MSG(kept_bad == 0, "%zu pages, head %zu, tail %zu, %d threads: %zu bytes outside changed", pages, head, tail,
              threads, kept_bad);
    free(base);
}

int main(void)
{
    const size_t heads[] = {0, 16, PAGE - 1}, tails[] = {0, 1, PAGE - 16};
    const size_t pages[] = {0, 1, 2, 7, 64};
    const int threads[] = {1, 2, 3, 16, 40};
    for (size_t a = 0; a < sizeof pages / sizeof *pages; ++a)
        for (size_t h = 0; h < 3; ++h)
            for (size_t t = 0; t < 3; ++t)
                for (size_t k = 0; k < sizeof threads / sizeof *threads; ++k)
                    check_range(pages[a], heads[h], tails[t], threads[k]);
    return oc_test_finish();
}
