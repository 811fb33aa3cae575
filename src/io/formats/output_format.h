/*
 * output_format.h - the table of a Gram result's file formats (include/outcore.h:
 * oc_output_format), read by every check of an output's suffix and, through
 * oc_output_format_name, by the CLI, its completion and the binding.
 */
#ifndef OC_IO_FORMATS_OUTPUT_FORMAT_H
#define OC_IO_FORMATS_OUTPUT_FORMAT_H

#include <stddef.h>

#include "outcore.h"

/* The format path's suffix names (compared lower-cased), or -1 when no format has it. */
int oc_output_format_of(const char *path);

/* The dotted suffixes of the formats that hold `result` (an OC_RESULT_* bit), or with
 * holding 0 of those that do not, joined as messages write them: ".npz, .mtx" then last
 * (" or ", " and ") before the final one. Returns text (size bytes, truncated). */
const char *oc_output_formats_text(char *text, size_t size, unsigned result, int holding, const char *last);

/* OC_OK when path's format holds `result`; else OC_ERR_INVALID_ARGUMENT with "PATH: a WHAT
 * result is written as .npz or .tsv; got '.EXT'" on ctx. */
oc_status oc_output_format_check(oc_context *ctx, const char *path, unsigned result, const char *what);

#endif
