/*
 * select_sort.h - sorting and selecting 64-bit selection keys in descending order (keys of
 * one list are distinct: select_key.h), without a comparison callback: qsort's call per
 * comparison costs more than the sort here. Top-k (select_topk.c) trims its buffers and
 * seeds its floors with these.
 */
#ifndef OC_GRAM_SELECT_SELECT_SORT_H
#define OC_GRAM_SELECT_SELECT_SORT_H

#include <stdint.h>

/* Sorts a[0..n) descending (quicksort; insertion sort for short runs). */
void oc_keys_sort_desc(uint64_t *a, int64_t n);

/* Rearranges a[0..n) so that a[k-1] is the k-th largest, a[0..k-1) hold larger keys and
 * a[k..n) smaller ones (quickselect, 1 <= k <= n; keys are distinct). */
void oc_keys_select_desc(uint64_t *a, int64_t n, int64_t k);

#endif
