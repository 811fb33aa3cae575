/* names.c - the names of metrics, dtypes (with their sizes: core/dtype.h), backends,
 * algorithms and GPU memory modes, shared by the CLI and the binding, joined for the
 * library's messages (oc_names_text, core/dtype.h), and the table of the metrics' properties
 * (core/metric.h). */
#include <stdio.h>
#include <string.h>

#include "core/dtype.h"
#include "core/metric.h"
#include "outcore.h"

#define INTEGER_DTYPES (1u << OC_DTYPE_INT32 | 1u << OC_DTYPE_UINT16)
#define FLOAT_DTYPES (1u << OC_DTYPE_FLOAT32)

/* The rows of the two kinds (the fields: core/metric.h). */
#define INTEGER(distance, pops, unshared)                                                  \
    .is_float = 0, .is_distance = distance, .popcounts = pops, .unshared_worst = unshared, \
    .range = OC_METRIC_RANGE_COLUMNS, .dtypes = INTEGER_DTYPES, .default_dtype = OC_DTYPE_INT32
#define SIMILARITY                                                                                       \
    .is_float = 1, .is_distance = 0, .popcounts = 1, .unshared_worst = 1, .range = OC_METRIC_RANGE_UNIT, \
    .dtypes = FLOAT_DTYPES, .default_dtype = OC_DTYPE_FLOAT32

static const oc_metric_info metrics[] = {
    [OC_METRIC_COUNTS] = {.name = "counts", INTEGER(0, 0, 1)},
    [OC_METRIC_JACCARD] = {.name = "jaccard", SIMILARITY, .empty_pair_best = 1},
    [OC_METRIC_COSINE] = {.name = "cosine", SIMILARITY},
    [OC_METRIC_HAMMING] = {.name = "hamming", INTEGER(1, 1, 0)},
#if defined(OC_TEST_PRETEND_METRIC) && !defined(OC_TEST_PRETEND_WITHOUT_ROW)
    [OC_METRIC_PRETEND] = {.name = "pretend", SIMILARITY},
#endif
};

/* A metric added to oc_metric without its row here (or the reverse) stops the build. */
_Static_assert(sizeof metrics / sizeof metrics[0] == OC_METRIC_COUNT, "metrics[] needs one row per oc_metric");

const oc_metric_info *oc_metric_info_of(oc_metric m)
{
    if ((unsigned)m >= OC_METRIC_COUNT || !metrics[m].name) return 0;
    return &metrics[m];
}

/* Appends s to text (size bytes, *len used), truncating at the end. */
static void put(char *text, size_t size, size_t *len, const char *s)
{
    int w = snprintf(text + *len, size - *len, "%s", s);
    if (w > 0) *len = *len + (size_t)w < size ? *len + (size_t)w : size - 1;
}

/* Appends "a", "a LAST b", "a, b LAST c" (NULL words left out). */
static void put_list(char *text, size_t size, size_t *len, const char *const *words, int n, const char *last)
{
    int total = 0, done = 0;
    for (int i = 0; i < n; ++i) total += words[i] != NULL;
    for (int i = 0; i < n; ++i) {
        if (!words[i]) continue;
        if (done > 0) put(text, size, len, done == total - 1 ? last : ", ");
        put(text, size, len, words[i]);
        ++done;
    }
}

void oc_metric_dtypes_text(char *text, size_t size)
{
    size_t len = 0;
    unsigned done = 0;
    if (!text || size == 0) return;
    text[0] = 0;
    for (int i = 0; i < OC_METRIC_COUNT; ++i) {
        if (done >> i & 1u) continue;
        const char *names[OC_METRIC_COUNT], *dtypes[32];
        int nn = 0, nd = 0;
        for (int j = i; j < OC_METRIC_COUNT; ++j)
            if (metrics[j].dtypes == metrics[i].dtypes) names[nn++] = metrics[j].name, done |= 1u << j;
        for (int d = 0; d < 32; ++d)
            if ((metrics[i].dtypes >> d & 1u) && oc_dtype_name((oc_dtype)d)) dtypes[nd++] = oc_dtype_name((oc_dtype)d);
        if (i > 0) put(text, size, &len, "; ");
        put_list(text, size, &len, names, nn, " and ");
        put(text, size, &len, ": ");
        put_list(text, size, &len, dtypes, nd, " or ");
    }
}

/* OC_DTYPE_DEFAULT's row holds its name alone. */
static const oc_element elements[] = {
    [OC_DTYPE_DEFAULT] = {"default", 0, 0}, [OC_DTYPE_INT32] = {"int32", 4, 'i'},
    [OC_DTYPE_UINT16] = {"uint16", 2, 'u'}, [OC_DTYPE_FLOAT32] = {"float32", 4, 'f'},
    [OC_NPY_UINT8] = {"uint8", 1, 'u'},     [OC_NPY_INT64] = {"int64", 8, 'i'},
};
static const char *const backend_names[] = {
    [OC_BACKEND_AUTO] = "auto", [OC_BACKEND_CPU] = "cpu", [OC_BACKEND_CUDA] = "cuda"};
static const char *const algorithm_names[] = {
    [OC_ALGORITHM_AUTO] = "auto", [OC_ALGORITHM_DENSE] = "dense", [OC_ALGORITHM_SPARSE] = "sparse"};
static const char *const gpu_mem_mode_names[] = {[OC_GPU_MEM_GROW] = "grow", [OC_GPU_MEM_RESERVE] = "reserve"};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

_Static_assert(COUNT(elements) == OC_NPY_TYPE_COUNT, "elements[] needs one row per oc_dtype and writer's type");
_Static_assert(COUNT(backend_names) == OC_BACKEND_COUNT, "backend_names[] needs one row per oc_backend");
_Static_assert(COUNT(algorithm_names) == OC_ALGORITHM_COUNT, "algorithm_names[] needs one row per oc_algorithm");
_Static_assert(COUNT(gpu_mem_mode_names) == OC_GPU_MEM_MODE_COUNT,
               "gpu_mem_mode_names[] needs one row per oc_gpu_mem_mode");

const char *oc_names_text(oc_name_list list, char *text, size_t size)
{
    static const struct {
        const char *const *names;
        int count;
    } lists[] = {
        [OC_NAMES_BACKENDS] = {backend_names, COUNT(backend_names)},
        [OC_NAMES_ALGORITHMS] = {algorithm_names, COUNT(algorithm_names)},
        [OC_NAMES_GPU_MEM_MODES] = {gpu_mem_mode_names, COUNT(gpu_mem_mode_names)},
    };
    _Static_assert(COUNT(lists) == OC_NAME_LIST_COUNT, "lists[] needs one row per oc_name_list");
    if ((unsigned)list >= OC_NAME_LIST_COUNT) {
        if (text && size > 0) text[0] = 0;
        return text;
    }
    return oc_names_join(lists[list].names, lists[list].count, text, size);
}

const char *oc_names_join(const char *const *names, int count, char *text, size_t size)
{
    size_t len = 0;
    if (!text || size == 0) return text;
    text[0] = 0;
    if (names) put_list(text, size, &len, names, count, " or ");
    return text;
}

const oc_element *oc_element_of(int type)
{
    return type > OC_DTYPE_DEFAULT && type < OC_NPY_TYPE_COUNT ? &elements[type] : NULL;
}

int oc_names_find(const char *const *names, int count, const char *name)
{
    if (!names || !name) return -1;
    for (int i = 0; i < count; ++i)
        if (names[i] && strcmp(names[i], name) == 0) return i;
    return -1;
}

const char *oc_metric_name(oc_metric m)
{
    const oc_metric_info *info = oc_metric_info_of(m);
    return info ? info->name : NULL;
}
const char *oc_dtype_name(oc_dtype d) { return (unsigned)d < OC_DTYPE_COUNT ? elements[d].name : NULL; }
const char *oc_backend_name(oc_backend b) { return (unsigned)b < COUNT(backend_names) ? backend_names[b] : NULL; }
const char *oc_algorithm_name(oc_algorithm a)
{
    return (unsigned)a < COUNT(algorithm_names) ? algorithm_names[a] : NULL;
}

const char *oc_gpu_mem_mode_name(oc_gpu_mem_mode m)
{
    return (unsigned)m < COUNT(gpu_mem_mode_names) ? gpu_mem_mode_names[m] : NULL;
}

/* The parsers refuse a NULL out as an unknown name: nothing is written. */
oc_status oc_metric_parse(const char *name, oc_metric *out)
{
    if (!out) return OC_ERR_INVALID_ARGUMENT;
    for (int i = 0; name && i < OC_METRIC_COUNT; ++i)
        if (strcmp(oc_metric_name((oc_metric)i), name) == 0) {
            *out = (oc_metric)i;
            return OC_OK;
        }
    return OC_ERR_INVALID_ARGUMENT;
}

oc_status oc_dtype_parse(const char *name, oc_dtype *out)
{
    /* Short spellings as numpy users write them. */
    static const char *const aliases[][2] = {{"i32", "int32"}, {"u16", "uint16"}, {"f32", "float32"}};
    if (!out) return OC_ERR_INVALID_ARGUMENT;
    for (int k = 0; k < COUNT(aliases); ++k)
        if (name && strcmp(name, aliases[k][0]) == 0) name = aliases[k][1];
    for (int i = 0; name && i < OC_DTYPE_COUNT; ++i)
        if (strcmp(elements[i].name, name) == 0) {
            *out = (oc_dtype)i;
            return OC_OK;
        }
    return OC_ERR_INVALID_ARGUMENT;
}

oc_status oc_backend_parse(const char *name, oc_backend *out)
{
    if (!out) return OC_ERR_INVALID_ARGUMENT;
    int i = oc_names_find(backend_names, COUNT(backend_names), name);
    if (i < 0) return OC_ERR_INVALID_ARGUMENT;
    *out = (oc_backend)i;
    return OC_OK;
}

oc_status oc_algorithm_parse(const char *name, oc_algorithm *out)
{
    if (!out) return OC_ERR_INVALID_ARGUMENT;
    int i = oc_names_find(algorithm_names, COUNT(algorithm_names), name);
    if (i < 0) return OC_ERR_INVALID_ARGUMENT;
    *out = (oc_algorithm)i;
    return OC_OK;
}

oc_status oc_gpu_mem_mode_parse(const char *name, oc_gpu_mem_mode *out)
{
    if (!out) return OC_ERR_INVALID_ARGUMENT;
    int i = oc_names_find(gpu_mem_mode_names, COUNT(gpu_mem_mode_names), name);
    if (i < 0) return OC_ERR_INVALID_ARGUMENT;
    *out = (oc_gpu_mem_mode)i;
    return OC_OK;
}

size_t oc_dtype_size(oc_dtype d) { return (unsigned)d < OC_DTYPE_COUNT ? elements[d].size : 0; }

oc_dtype oc_gram_result_dtype(oc_metric metric, oc_dtype dtype)
{
    const oc_metric_info *info = oc_metric_info_of(metric);
    if (!info) return OC_DTYPE_DEFAULT;
    if (dtype == OC_DTYPE_DEFAULT) return info->default_dtype;
    return (unsigned)dtype < 32 && (info->dtypes >> dtype & 1u) ? dtype : OC_DTYPE_DEFAULT;
}
