/* output_format.c - the file formats of a Gram result (output_format.h). */
#include "io/formats/output_format.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "io/io.h"

static const struct {
    const char *name;
    unsigned results;
} formats[] = {
    [OC_FORMAT_NPY] = {"npy", OC_RESULT_DENSE},         [OC_FORMAT_NPZ] = {"npz", OC_RESULT_TOPK | OC_RESULT_THRESHOLD},
    [OC_FORMAT_MTX] = {"mtx", OC_RESULT_THRESHOLD},     [OC_FORMAT_TSV] = {"tsv", OC_RESULT_TOPK | OC_RESULT_THRESHOLD},
#if defined(OC_TEST_PRETEND_FORMAT) && !defined(OC_TEST_PRETEND_WITHOUT_ROW)
    [OC_FORMAT_PRETEND] = {"pretend", OC_RESULT_DENSE},
#endif
};

/* A format added to oc_output_format without its row here (or the reverse) stops the build. */
_Static_assert(sizeof formats / sizeof formats[0] == OC_OUTPUT_FORMAT_COUNT,
               "formats[] needs one row per oc_output_format");

const char *oc_output_format_name(oc_output_format f)
{
    return (unsigned)f < OC_OUTPUT_FORMAT_COUNT ? formats[f].name : NULL;
}

unsigned oc_output_format_results(oc_output_format f)
{
    return (unsigned)f < OC_OUTPUT_FORMAT_COUNT ? formats[f].results : 0;
}

int oc_output_format_of(const char *path)
{
    char ext[16];
    oc_path_extension(path, ext, sizeof ext);
    for (int f = 0; f < OC_OUTPUT_FORMAT_COUNT; ++f)
        if (strcmp(formats[f].name, ext) == 0) return f;
    return -1;
}

const char *oc_output_formats_text(char *text, size_t size, unsigned result, int holding, const char *last)
{
    int picked[OC_OUTPUT_FORMAT_COUNT], n = 0;
    for (int f = 0; f < OC_OUTPUT_FORMAT_COUNT; ++f)
        if (!(formats[f].results & result) == !holding) picked[n++] = f;
    size_t len = 0;
    text[0] = 0;
    for (int i = 0; i < n && len < size; ++i) {
        const int w = snprintf(text + len, size - len, "%s.%s",
                               i == 0       ? ""
                               : i == n - 1 ? last
                                            : ", ",
                               formats[picked[i]].name);
        if (w < 0) break;
        len += (size_t)w;
    }
    return text;
}

oc_status oc_output_format_check(oc_context *ctx, const char *path, unsigned result, const char *what)
{
    if (!path) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "output path is NULL");
    const int f = oc_output_format_of(path);
    if (f >= 0 && (formats[f].results & result)) return OC_OK;
    char ext[16], names[64];
    oc_path_extension(path, ext, sizeof ext);
    return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: a %s result is written as %s; got %s%s%s", path, what,
                   oc_output_formats_text(names, sizeof names, result, 1, " or "), ext[0] ? "'." : "",
                   ext[0] ? ext : "a name with no extension", ext[0] ? "'" : "");
}
