/*
 * pages.h - faulting memory in for writing with one call instead of one fault per page.
 */
#ifndef OC_CORE_PAGES_H
#define OC_CORE_PAGES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack the name */
#endif

/* Faults the whole pages inside [p, p + n) in for writing (MADV_POPULATE_WRITE): for memory
 * the caller is about to overwrite completely, which would otherwise take one exception per
 * 4 KB page. Advice only: where the kernel refuses it (before 5.14: EINVAL) the pages fault
 * as they are written. */
static inline void oc_pages_populate_write(void *p, size_t n)
{
    const uintptr_t page = 4096;
    uintptr_t begin = ((uintptr_t)p + page - 1) & ~(page - 1), end = ((uintptr_t)p + n) & ~(page - 1);
    if (end > begin) madvise((void *)begin, end - begin, MADV_POPULATE_WRITE);
}

#endif
