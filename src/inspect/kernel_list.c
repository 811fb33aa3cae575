/* kernel_list.c - the list of kernels that inspect's readers fill (see kernel_list.h). */
#include "inspect/kernel_list.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

oc_status oc_kernel_list_add(oc_context *ctx, oc_kernel_list *list, const char *name, size_t name_len,
                             oc_kernel_entry **entry)
{
    if (list->count == list->capacity) {
        int capacity = list->capacity ? list->capacity * 2 : 8;
        oc_kernel_entry *items = realloc(list->items, (size_t)capacity * sizeof *items);
        if (!items) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of host memory listing kernels");
        list->items = items;
        list->capacity = capacity;
    }
    char *copy = malloc(name_len + 1);
    if (!copy) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of host memory listing kernels");
    memcpy(copy, name, name_len);
    copy[name_len] = '\0';
    oc_kernel_entry *e = &list->items[list->count++];
    memset(e, 0, sizeof *e);
    e->name = copy;
    e->spill_store_bytes = -1;
    e->spill_load_bytes = -1;
    e->const_bytes = -1;
    e->driver_blocks_per_sm = -1;
    *entry = e;
    return OC_OK;
}

oc_kernel_entry *oc_kernel_list_find(oc_kernel_list *list, const char *name, size_t name_len)
{
    for (int i = 0; i < list->count; i++)
        if (strlen(list->items[i].name) == name_len && memcmp(list->items[i].name, name, name_len) == 0)
            return &list->items[i];
    return NULL;
}

void oc_kernel_list_clear(oc_kernel_list *list)
{
    for (int i = 0; i < list->count; i++) free(list->items[i].name);
    free(list->items);
    memset(list, 0, sizeof *list);
}
