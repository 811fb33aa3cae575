/*
 * struct_defaults.c - oc_struct_defaults: the ..._INIT values of every option struct of
 * outcore.h, by name, for callers that cannot expand a C macro (the Python binding). One
 * table, so the defaults live in the header's macros alone.
 */
#include <string.h>

#include "outcore.h"

static const oc_read_options read_defaults = OC_READ_OPTIONS_INIT;
static const oc_write_options write_defaults = OC_WRITE_OPTIONS_INIT;
static const oc_gram_options gram_defaults = OC_GRAM_OPTIONS_INIT;
static const oc_output output_defaults = OC_OUTPUT_INIT;
static const oc_inspect_options inspect_defaults = OC_INSPECT_OPTIONS_INIT;
static const oc_stream_spec stream_spec_defaults = OC_STREAM_SPEC_INIT;
static const oc_stream_options stream_defaults = OC_STREAM_OPTIONS_INIT;
static const oc_map_array map_array_defaults = OC_MAP_ARRAY_INIT;
static const oc_map_options map_defaults = OC_MAP_OPTIONS_INIT;
static const oc_matmul_array matmul_array_defaults = OC_MATMUL_ARRAY_INIT;
static const oc_matmul_options matmul_defaults = OC_MATMUL_OPTIONS_INIT;

#define DEFAULTS(type, value)         \
    {                                 \
#type, &(value), sizeof(type) \
    }
static const struct {
    const char *name;
    const void *value;
    size_t size;
} defaults[] = {
    DEFAULTS(oc_read_options, read_defaults),       DEFAULTS(oc_write_options, write_defaults),
    DEFAULTS(oc_gram_options, gram_defaults),       DEFAULTS(oc_output, output_defaults),
    DEFAULTS(oc_inspect_options, inspect_defaults), DEFAULTS(oc_stream_spec, stream_spec_defaults),
    DEFAULTS(oc_stream_options, stream_defaults),   DEFAULTS(oc_map_array, map_array_defaults),
    DEFAULTS(oc_map_options, map_defaults),         DEFAULTS(oc_matmul_array, matmul_array_defaults),
    DEFAULTS(oc_matmul_options, matmul_defaults),
};

oc_status oc_struct_defaults(const char *type, void *out, size_t size)
{
    if (!type || !out) return OC_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; ++i) {
        if (strcmp(defaults[i].name, type) != 0) continue;
        if (size != defaults[i].size) return OC_ERR_INVALID_ARGUMENT;
        memcpy(out, defaults[i].value, size);
        return OC_OK;
    }
    return OC_ERR_INVALID_ARGUMENT;
}
