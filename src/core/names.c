/* names.c - the names of metrics, dtypes and backends, shared by the CLI and the binding. */
#include <string.h>

#include "outcore.h"

static const char *const metric_names[] = {"counts", "jaccard", "cosine", "hamming"};
static const char *const dtype_names[] = {"default", "int32", "uint16", "float32"};
static const char *const backend_names[] = {"auto", "cpu", "cuda"};
static const char *const algorithm_names[] = {"auto", "dense", "sparse"};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int find_name(const char *const *names, int count, const char *name)
{
    if (!name) return -1;
    for (int i = 0; i < count; ++i)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

const char *oc_metric_name(oc_metric m) { return (unsigned)m < COUNT(metric_names) ? metric_names[m] : NULL; }
const char *oc_dtype_name(oc_dtype d) { return (unsigned)d < COUNT(dtype_names) ? dtype_names[d] : NULL; }
const char *oc_backend_name(oc_backend b) { return (unsigned)b < COUNT(backend_names) ? backend_names[b] : NULL; }
const char *oc_algorithm_name(oc_algorithm a)
{
    return (unsigned)a < COUNT(algorithm_names) ? algorithm_names[a] : NULL;
}

oc_status oc_metric_parse(const char *name, oc_metric *out)
{
    int i = find_name(metric_names, COUNT(metric_names), name);
    if (i < 0) return OC_ERR_INVALID_ARGUMENT;
    *out = (oc_metric)i;
    return OC_OK;
}

oc_status oc_dtype_parse(const char *name, oc_dtype *out)
{
    /* Short spellings as numpy users write them. */
    static const char *const aliases[][2] = {{"i32", "int32"}, {"u16", "uint16"}, {"f32", "float32"}};
    for (int k = 0; k < COUNT(aliases); ++k)
        if (name && strcmp(name, aliases[k][0]) == 0) name = aliases[k][1];
    int i = find_name(dtype_names, COUNT(dtype_names), name);
    if (i < 0) return OC_ERR_INVALID_ARGUMENT;
    *out = (oc_dtype)i;
    return OC_OK;
}

oc_status oc_backend_parse(const char *name, oc_backend *out)
{
    int i = find_name(backend_names, COUNT(backend_names), name);
    if (i < 0) return OC_ERR_INVALID_ARGUMENT;
    *out = (oc_backend)i;
    return OC_OK;
}

oc_status oc_algorithm_parse(const char *name, oc_algorithm *out)
{
    int i = find_name(algorithm_names, COUNT(algorithm_names), name);
    if (i < 0) return OC_ERR_INVALID_ARGUMENT;
    *out = (oc_algorithm)i;
    return OC_OK;
}

size_t oc_dtype_size(oc_dtype d)
{
    switch (d) {
    case OC_DTYPE_INT32:
    case OC_DTYPE_FLOAT32: return 4;
    case OC_DTYPE_UINT16: return 2;
    default: return 0;
    }
}

oc_dtype oc_gram_result_dtype(oc_metric metric, oc_dtype dtype)
{
    int integer_metric = metric == OC_METRIC_COUNTS || metric == OC_METRIC_HAMMING;
    if ((unsigned)metric > OC_METRIC_HAMMING) return OC_DTYPE_DEFAULT;
    if (dtype == OC_DTYPE_DEFAULT) return integer_metric ? OC_DTYPE_INT32 : OC_DTYPE_FLOAT32;
    if (integer_metric) return (dtype == OC_DTYPE_INT32 || dtype == OC_DTYPE_UINT16) ? dtype : OC_DTYPE_DEFAULT;
    return dtype == OC_DTYPE_FLOAT32 ? dtype : OC_DTYPE_DEFAULT;
}
