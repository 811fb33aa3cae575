/*
 * matrix_view.c - a block of rows of a matrix, as a matrix (matrix.h: oc_matrix_row_view).
 *
 * A view of a resident matrix is resident: its bits are the parent's, from row row0 on (rows
 * are whole multiples of 64 bytes apart, so the view keeps the 64-byte alignment), borrowed,
 * not freed. A view of any other kind is a file-backed matrix whose source is its parent:
 * every backend already reads such matrices in panels through oc_matrix_load_rows (lists
 * parents are not packed for it, and their column lists are not shared: row i's offsets index
 * the parent's whole list array, which the sparse path does not expect of a matrix). Either
 * way a job on views needs nothing new from any backend. The view owns nothing of the
 * parent, which must outlive it.
 */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "matrix/matrix.h"

typedef struct row_view_source {
    const oc_matrix *parent;
    int64_t row0;
} row_view_source;

static oc_status view_load_rows(void *source, oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows,
                                uint64_t *dst)
{
    const row_view_source *v = source;
    return oc_matrix_load_rows(ctx, v->parent, v->row0 + row0, rows, dst);
}

static oc_status view_load_cols(void *source, oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows,
                                int64_t w0, int64_t w1, uint64_t *dst, int64_t ld)
{
    (void)m;
    const row_view_source *v = source;
    return oc_matrix_load_cols(ctx, v->parent, v->row0 + row0, rows, w0, w1, dst, ld);
}

static oc_status view_check(void *source, oc_context *ctx, const oc_matrix *m)
{
    (void)m;
    const row_view_source *v = source;
    return oc_matrix_check_source(ctx, v->parent);
}

static void view_close(void *source) { free(source); }

static const oc_matrix_source_ops view_ops = {view_load_rows, view_close, view_load_cols, view_check};

oc_status oc_matrix_row_view(oc_context *ctx, const oc_matrix *m, int64_t row0, int64_t rows, oc_matrix **out)
{
    if (!m || !out || rows <= 0 || row0 < 0 || row0 > m->rows - rows)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "row view [%lld, %lld) is outside the matrix's %lld rows",
                       (long long)row0, (long long)(row0 + rows), m ? (long long)m->rows : 0LL);
    if (oc_matrix_resident(m)) {
        oc_matrix *view = oc_matrix_new_header(rows, m->cols, m->name);
        if (!view) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory for a row view", m->name);
        view->bits = m->bits + row0 * m->words_per_row;
        view->bits_borrowed = 1;
        *out = view;
    } else {
        row_view_source *v = malloc(sizeof *v);
        if (!v) return oc_fail(ctx, OC_ERR_NO_MEMORY, "%s: out of memory for a row view", m->name);
        *v = (row_view_source){.parent = m, .row0 = row0};
        OC_CHECK(ctx, oc_matrix_create_file_backed(ctx, rows, m->cols, m->name, &view_ops, v, out));
        (*out)->column_slices = m->column_slices;
    }
    (*out)->has_source = m->has_source;
    (*out)->source_dev = m->source_dev;
    (*out)->source_ino = m->source_ino;
    return OC_OK;
}
