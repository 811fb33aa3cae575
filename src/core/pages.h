/*
 * pages.h - whole pages of large private memory faulted in for writing with one call
 * instead of one fault per page, and given back on several threads before a free.
 */
#ifndef OC_CORE_PAGES_H
#define OC_CORE_PAGES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack the name */
#endif

/* The whole 4 KB pages inside [p, p + n): [*begin, *end), empty when *end <= *begin. */
static inline void oc_pages_inside(const void *p, size_t n, uintptr_t *begin, uintptr_t *end)
{
    const uintptr_t page = 4096;
    *begin = ((uintptr_t)p + page - 1) & ~(page - 1);
    *end = ((uintptr_t)p + n) & ~(page - 1);
}

/* Faults the whole pages inside [p, p + n) in for writing (MADV_POPULATE_WRITE): for memory
 * the caller is about to overwrite completely, which would otherwise take one exception per
 * 4 KB page. Advice only: where the kernel refuses it (before 5.14: EINVAL) the pages fault
 * as they are written. */
static inline void oc_pages_populate_write(void *p, size_t n)
{
    uintptr_t begin, end;
    oc_pages_inside(p, n, &begin, &end);
    if (end > begin) madvise((void *)begin, end - begin, MADV_POPULATE_WRITE);
}

/* Gives the whole pages inside [p, p + n) back to the kernel (MADV_DONTNEED) before the
 * memory is freed, on several threads when n is large: the kernel zaps and frees the pages
 * of one munmap on one core, so a large input held the process's exit noticeably
 * (bench/RESULTS.md, "The tail of a job and a packed input left in its file"). Only for private memory the caller is about to free: its contents are gone. Pages
 * partly outside the range (an allocator's header) are left alone. Where a thread cannot
 * start, its share is zapped on the caller's. */
void oc_pages_discard(void *p, size_t n);
/* The same on exactly `threads` threads (the caller's included), whatever n: for the tests. */
void oc_pages_discard_on(void *p, size_t n, int threads);

#endif
