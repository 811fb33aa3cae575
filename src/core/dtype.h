/*
 * dtype.h - the element types of the arrays a Gram job and the .npy writer produce, in one
 * table (names.c): a result's oc_dtype and the two types the writer adds for itself (uint8
 * 0/1 rows, oc_matrix_save's; int64 indices and pairs of selection results), by one code.
 * The public oc_dtype_name and oc_dtype_size read the same rows. Also the other tables'
 * names joined for a message (oc_names_text, oc_names_join for a table kept elsewhere).
 */
#ifndef OC_CORE_DTYPE_H
#define OC_CORE_DTYPE_H

#include <stddef.h>

#include "outcore.h"

/* The writer's own types, numbered after oc_dtype's. */
enum { OC_NPY_UINT8 = OC_DTYPE_COUNT, OC_NPY_INT64, OC_NPY_TYPE_COUNT };

typedef struct oc_element {
    const char *name; /* numpy's ("int32") */
    size_t size;      /* bytes */
    char kind;        /* numpy's kind letter: 'i', 'u' or 'f' ('<i4' without its byte order and size) */
} oc_element;

#ifdef __cplusplus
extern "C" {
#endif

/* The row of an oc_dtype other than OC_DTYPE_DEFAULT, or of OC_NPY_UINT8 or OC_NPY_INT64;
 * NULL for any other code. */
const oc_element *oc_element_of(int type);

/* The other name tables of names.c whose names a message lists. */
typedef enum oc_name_list {
    OC_NAMES_BACKENDS,
    OC_NAMES_ALGORITHMS,
    OC_NAMES_GPU_MEM_MODES,
    OC_NAME_LIST_COUNT
} oc_name_list;

/* Every name of the table in its order, joined for a message ("auto, cpu or cuda"), in text
 * (truncated to size; empty for an unknown list). Returns text. */
const char *oc_names_text(oc_name_list list, char *text, size_t size);
/* The same for a table kept beside the code it names (count names; NULL rows left out). */
const char *oc_names_join(const char *const *names, int count, char *text, size_t size);
/* The index of name in names[0..count) (NULL rows never match), or -1. */
int oc_names_find(const char *const *names, int count, const char *name);

#ifdef __cplusplus
}
#endif

#endif
