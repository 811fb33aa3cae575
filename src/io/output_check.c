/*
 * output_check.c - an output path that names an input file is refused before anything is
 * written: `outcore gram A.npy -o A.npy` (or ./A.npy, a symbolic link to it, a hard link)
 * would otherwise rename the result over the input once the job is done.
 *
 * Files are compared by identity (st_dev, st_ino), the only test that sees through every
 * spelling of a path. The output is looked up with stat, which follows symbolic links as
 * the final rename does not: a link to the input would be replaced by the result, leaving
 * the input intact, but the user asked to write where the input is, which is the mistake
 * this check exists to catch.
 */
#include <sys/stat.h>

#include "core/error.h"
#include "matrix/matrix.h"
#include "io/io.h"

static int is_source_of(const struct stat *sb, const oc_matrix *m)
{
    return m && m->has_source && m->source_dev == (uint64_t)sb->st_dev && m->source_ino == (uint64_t)sb->st_ino;
}

oc_status oc_output_check_not_input(oc_context *ctx, const char *path, const oc_matrix *a, const oc_matrix *b)
{
    struct stat sb;
    if (!path || stat(path, &sb) != 0) return OC_OK; /* a new file cannot be an input */
    const oc_matrix *same = is_source_of(&sb, a) ? a : is_source_of(&sb, b) ? b : NULL;
    if (same)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: the output is the input file %s (the same file by another name or the same name): "
                       "writing it would replace the input; choose another output name",
                       path, same->name);
    return OC_OK;
}
