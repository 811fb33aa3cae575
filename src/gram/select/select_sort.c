/* select_sort.c - descending sort and selection of selection keys (select_sort.h). */
#include "gram/select/select_sort.h"

#define SMALL_SORT 24 /* runs up to this many keys end in an insertion sort */

static void insertion_sort_desc(uint64_t *a, int64_t n)
{
    for (int64_t i = 1; i < n; ++i) {
        uint64_t v = a[i];
        int64_t j = i;
        for (; j > 0 && a[j - 1] < v; --j) a[j] = a[j - 1];
        a[j] = v;
    }
}

/* Hoare partition of a[lo..hi] (descending) around a median-of-three pivot: afterwards
 * a[lo..*pj] >= pivot >= a[*pi..hi], and what lies between equals the pivot. */
static void partition_desc(uint64_t *a, int64_t lo, int64_t hi, int64_t *pi, int64_t *pj)
{
    int64_t mid = lo + (hi - lo) / 2;
    uint64_t x = a[lo], y = a[mid], z = a[hi];
    uint64_t pivot = x > y ? (y > z ? y : (x > z ? z : x)) : (x > z ? x : (y > z ? z : y));
    int64_t i = lo, j = hi;
    while (i <= j) {
        while (a[i] > pivot) i++;
        while (a[j] < pivot) j--;
        if (i <= j) {
            uint64_t t = a[i];
            a[i++] = a[j], a[j--] = t;
        }
    }
    *pi = i, *pj = j;
}

void oc_keys_sort_desc(uint64_t *a, int64_t n)
{
    int64_t lo = 0, hi = n - 1;
    while (hi - lo > SMALL_SORT) {
        int64_t i, j;
        partition_desc(a, lo, hi, &i, &j);
        /* Recursing into the smaller side keeps the depth below log2(n). */
        if (j - lo < hi - i) {
            oc_keys_sort_desc(a + lo, j - lo + 1);
            lo = i;
        } else {
            oc_keys_sort_desc(a + i, hi - i + 1);
            hi = j;
        }
    }
    insertion_sort_desc(a + lo, hi - lo + 1);
}

void oc_keys_select_desc(uint64_t *a, int64_t n, int64_t k)
{
    int64_t lo = 0, hi = n - 1, want = k - 1;
    while (hi - lo > SMALL_SORT) {
        int64_t i, j;
        partition_desc(a, lo, hi, &i, &j);
        if (want <= j) hi = j;
        else if (want >= i) lo = i;
        else return;
    }
    insertion_sort_desc(a + lo, hi - lo + 1);
}
