/*
 * map_plan.c - the public map API: binds the inputs (files mapped, memory taken in place),
 * types the expression, broadcasts the shapes, resolves the reduction and the output type,
 * and runs the plan on a backend (map_plan.h).
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <math.h>
#include <sys/stat.h>

#include "core/process/bus_signal.h"
#include "core/context.h"
#include "core/error.h"
#include "core/abi/struct_version.h"
#include "core/threads.h"
#include "map/map_plan.h"
#include "cost/cost.h"
#include "map/map_types.h"
#include "mem/host_budget.h"
#include "io/io.h"
#include "io/formats/npy_array.h"

/* The reductions' names, indexed by oc_map_reduce: --reduce, reduce=, --explain and
 * `outcore --list map-reductions` read them (oc_map_reduce_name). */
static const char *const reduce_names[] = {
    [OC_MAP_REDUCE_NONE] = "none",       [OC_MAP_REDUCE_SUM] = "sum", [OC_MAP_REDUCE_MEAN] = "mean",
    [OC_MAP_REDUCE_MIN] = "min",         [OC_MAP_REDUCE_MAX] = "max",
#if defined(OC_TEST_PRETEND_REDUCE) && !defined(OC_TEST_PRETEND_WITHOUT_ROW)
    [OC_MAP_REDUCE_PRETEND] = "pretend",
#endif
};

/* A reduction added to oc_map_reduce without its name here (or the reverse) stops the build. */
_Static_assert(sizeof reduce_names / sizeof reduce_names[0] == OC_MAP_REDUCE_COUNT,
               "reduce_names[] needs one row per oc_map_reduce");

const char *oc_map_reduce_name(oc_map_reduce reduce)
{
    return (unsigned)reduce < OC_MAP_REDUCE_COUNT ? reduce_names[reduce] : NULL;
}

const char *oc_map_dtype_name(int dtype) { return dtype >= 0 && dtype < OC_MT_COUNT ? oc_mt_name(dtype) : NULL; }

oc_status oc_map_dtype_parse(const char *name, int *out)
{
    int t = oc_mt_parse(name);
    if (t < 0 || !out) return OC_ERR_INVALID_ARGUMENT;
    *out = t;
    return OC_OK;
}

const char *oc_map_shape_text(int ndim, const int64_t *shape, char *buf, size_t size)
{
    if (ndim == 0) {
        snprintf(buf, size, "a scalar");
        return buf;
    }
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < ndim && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, i ? " x " : "", shape[i]);
    return buf;
}

int oc_map_reduce_type(oc_map_reduce r, int t)
{
    switch (r) {
    case OC_MAP_REDUCE_SUM:
        /* numpy sums small integers in the platform's long (int64) or unsigned long. */
        if (t == MT_BOOL || (oc_mt_kind_of(t) == MT_KIND_INT)) return MT_I64;
        if (oc_mt_kind_of(t) == MT_KIND_UINT) return MT_U64;
        return t;
    case OC_MAP_REDUCE_MEAN:
        return oc_mt_is_float(t) ? t : MT_F64;
    default:
        return t;
    }
}

void oc_map_free(oc_map *m)
{
    if (!m) return;
    for (int i = 0; i < m->n_inputs; i++) {
        free(m->inputs[i].name);
        free(m->inputs[i].path);
        oc_mapped_file_close(&m->inputs[i].file);
    }
    free(m->inputs);
    oc_map_expr_free(&m->ir);
    free(m->text);
    free(m);
}

/* The elements of a shape, or -1 when the product of its nonzero dimensions passes
 * INT64_MAX (numpy refuses such a shape, "array is too big", even with a zero in it). */
static int64_t shape_count(int ndim, const int64_t *shape)
{
    int64_t n = 1;
    int empty = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            empty = 1;
            continue;
        }
        if (shape[d] < 0 || n > INT64_MAX / shape[d]) return -1;
        n *= shape[d];
    }
    return empty ? 0 : n;
}

static oc_status too_many_elements(oc_context *ctx, oc_status st, const char *what, int ndim, const int64_t *shape)
{
    char s[512];
    return oc_fail(ctx, st, "%s: shape %s has more than 2^63 - 1 elements", what,
                   oc_map_shape_text(ndim, shape, s, sizeof s));
}

/* A name an expression can refer to: an identifier, and not one of the literals True and
 * False, which the expression reads as the values (VALID_NAME says so in messages). */
#define VALID_NAME "a name is a letter or _ then letters, digits and _, not True or False"
static int valid_name(const char *s)
{
    if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return 0;
    if (strcmp(s, "True") == 0 || strcmp(s, "False") == 0) return 0;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9'))) return 0;
    return 1;
}

/* The dimensions of a shape longer than 1. */
static int longer_dims(int ndim, const int64_t *shape)
{
    int longer = 0;
    for (int d = 0; d < ndim; d++) longer += shape[d] > 1;
    return longer;
}

/* The same bytes in C and Fortran order: no element, or at most one dimension longer than 1. */
static int both_orders(const oc_map_bound *b) { return b->count == 0 || longer_dims(b->ndim, b->shape) <= 1; }

/* Maps a .npy input and checks that it is an array of a type map reads (in C order, or in
 * Fortran order: fortran_plan). */
static oc_status open_file_input(oc_context *ctx, const oc_map_array *a, oc_map_bound *b)
{
    OC_CHECK(ctx, oc_mapped_file_open(ctx, a->path, &b->file));
    oc_npy_array_info info;
    OC_CHECK(ctx, oc_npy_array_parse(ctx, a->path, b->file.data, b->file.size, &info));
    b->type = oc_mt_from_descr(info.descr);
    if (b->type < 0)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: dtype '%s' is not one map reads (bool, int8-64, uint8-64, float32, float64 in this "
                       "host's byte order)",
                       a->path, info.descr);
    int64_t count = shape_count(info.ndim, info.shape);
    if (count < 0) return too_many_elements(ctx, OC_ERR_INPUT, a->path, info.ndim, info.shape);
    size_t elem = oc_mt_size(b->type);
    /* The evaluators load elements as their type: numpy.save puts the data on a multiple of 64
     * bytes, and a header that leaves it off its elements' alignment is refused. */
    if (info.data_offset % elem != 0)
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s: its data starts at byte %zu, not on a multiple of its %zu-byte elements as numpy.save "
                       "writes it: save the array again",
                       a->path, info.data_offset, elem);
    if ((uint64_t)count > (b->file.size - info.data_offset) / elem) {
        char s[256];
        char need[32];
        if (count > INT64_MAX / (int64_t)elem) snprintf(need, sizeof need, "more than 2^63 - 1");
        else snprintf(need, sizeof need, "%" PRId64, count * (int64_t)elem);
        return oc_fail(ctx, OC_ERR_INPUT, "%s: truncated .npy: a %s array of %s needs %s data bytes, the file has %zu",
                       a->path, oc_map_shape_text(info.ndim, info.shape, s, sizeof s), oc_mt_name(b->type), need,
                       b->file.size - info.data_offset);
    }
    b->ndim = info.ndim;
    memcpy(b->shape, info.shape, sizeof(int64_t) * (size_t)info.ndim);
    b->data = b->file.data + info.data_offset;
    b->count = count;
    b->fortran = info.fortran_order && !both_orders(b);
    oc_mapped_file_advise_sequential(&b->file);
    return OC_OK;
}

static oc_status bind_inputs(oc_context *ctx, oc_map *m, const oc_map_array *inputs, int n)
{
    m->inputs = calloc((size_t)(n ? n : 1), sizeof *m->inputs);
    if (!m->inputs) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) {
        const oc_map_array *a = &inputs[i];
        oc_map_bound *b = &m->inputs[i];
        m->n_inputs = i + 1;
        if (!a->name) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "input %d has no name", i);
        if (!valid_name(a->name))
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "'%s' is not a valid name for an input (" VALID_NAME ")",
                           a->name);
        for (int j = 0; j < i; j++)
            if (strcmp(m->inputs[j].name, a->name) == 0)
                return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "input '%s' is given twice", a->name);
        b->name = strdup(a->name);
        if (!b->name) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
        if (a->path) {
            b->path = strdup(a->path);
            if (!b->path) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
            oc_status st = open_file_input(ctx, a, b);
            /* A header read as zeros because the file was cut meanwhile: the cut is the news. */
            if (st != OC_OK && oc_mapped_file_check(ctx, a->path, &b->file) != OC_OK) st = OC_ERR_INPUT;
            OC_CHECK(ctx, st);
            continue;
        }
        if (a->ndim > OC_MAP_MAX_DIMS)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "input '%s': the array has %d dimensions; map reads at most %d (numpy allows 64)", a->name,
                           a->ndim, OC_MAP_MAX_DIMS);
        if (a->dtype < 0 || a->dtype >= OC_MT_COUNT || a->ndim < 0 || (!a->shape && a->ndim))
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "input '%s': bad dtype, ndim or shape", a->name);
        b->type = a->dtype;
        b->ndim = a->ndim;
        for (int d = 0; d < a->ndim; d++) {
            if (a->shape[d] < 0)
                return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "input '%s': negative dimension", a->name);
            b->shape[d] = a->shape[d];
        }
        b->count = shape_count(a->ndim, a->shape);
        /* Its bytes too must be a size: the plan and the copies count them. */
        int64_t bytes = 0;
        if (b->count < 0) return too_many_elements(ctx, OC_ERR_INVALID_ARGUMENT, a->name, a->ndim, a->shape);
        if (__builtin_mul_overflow(b->count, (int64_t)oc_mt_size(b->type), &bytes)) {
            char s[512];
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "%s: shape %s of %s takes more than 2^63 - 1 bytes", a->name,
                           oc_map_shape_text(a->ndim, a->shape, s, sizeof s), oc_mt_name(b->type));
        }
        if (!a->data && b->count > 0) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "input '%s' has no data", a->name);
        if ((uintptr_t)a->data % oc_mt_size(b->type) != 0) /* the evaluators load elements as their type */
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "input '%s': its memory starts off its %zu-byte elements' alignment: copy it to an "
                           "aligned array",
                           a->name, oc_mt_size(b->type));
        b->data = a->data;
        b->fortran = a->fortran_order && !both_orders(b);
    }
    return OC_OK;
}

static void mark_used(oc_map *m)
{
    for (int k = 0; k < m->ir.count; k++)
        if (m->ir.nodes[k].op == MOP_INPUT) m->inputs[m->ir.nodes[k].input].used = 1;
}

static void reverse(int n, int64_t *v)
{
    for (int i = 0, j = n - 1; i < j; i++, j--) {
        const int64_t t = v[i];
        v[i] = v[j], v[j] = t;
    }
}

void oc_map_user_shape(const oc_map_plan *m, int ndim, const int64_t *shape, int64_t *out)
{
    memmove(out, shape, sizeof(int64_t) * (size_t)ndim);
    if (m->fortran) reverse(ndim, out);
}

int oc_map_user_axis(const oc_map_plan *m) { return m->axis < 0 || !m->fortran ? m->axis : m->ndim - 1 - m->axis; }

/* How the messages name an input: its file, or "input 'NAME'" for memory. */
static const char *input_label(const oc_map_bound *b, char *buf, size_t size)
{
    if (b->path) snprintf(buf, size, "%s", b->path);
    else snprintf(buf, size, "input '%s'", b->name);
    return buf;
}

/* Fortran-order inputs (numpy.save of a transposed array writes one; memory given with
 * oc_map_array.fortran_order, numpy's F-contiguous arrays, is one). A Fortran-order array's
 * bytes are the C-order array of its reversed shape, and arrays of one number of dimensions
 * broadcast alike in either reading; so when every used input that is not a single element is
 * in Fortran order with as many dimensions, the plan runs on the reversed shapes and writes
 * its result in Fortran order (map_plan.h, `fortran`), reading each input in place. An array
 * with at most one dimension longer than 1, or no element, is in both orders (numpy.save calls
 * it C order; bind_inputs never marks it Fortran), and a single element with no more
 * dimensions broadcasts either way. Any other mix (a C-order
 * array, a 1-D one, which numpy lines up with the last dimension, or fewer dimensions) would
 * need a transpose of an input: refused, naming the two. */
static oc_status fortran_plan(oc_context *ctx, oc_map *m)
{
    const oc_map_bound *f = NULL;
    for (int i = 0; i < m->n_inputs && !f; i++)
        if (m->inputs[i].used && m->inputs[i].fortran) f = &m->inputs[i];
    if (!f) return OC_OK;
    for (int i = 0; i < m->n_inputs; i++) {
        const oc_map_bound *b = &m->inputs[i];
        if (!b->used || ((b->fortran || both_orders(b)) && b->ndim == f->ndim) || (b->count == 1 && b->ndim <= f->ndim))
            continue;
        char x[256], y[256], first[300], who[300];
        const char *is = b->fortran     ? "is too" /* of other dimensions */
                         : b->ndim == 1 ? "is one-dimensional"
                         : b->path      ? "is in C order"
                                        : "is an array in memory, read in C order";
        return oc_fail(ctx, OC_ERR_INPUT,
                       "%s is in Fortran order (%s) and %s %s (%s): map reads a Fortran-order array beside only "
                       "Fortran-order arrays of as many dimensions, or single elements; save them alike "
                       "(numpy.asfortranarray or numpy.ascontiguousarray, then numpy.save)",
                       input_label(f, first, sizeof first), oc_map_shape_text(f->ndim, f->shape, x, sizeof x),
                       input_label(b, who, sizeof who), is, oc_map_shape_text(b->ndim, b->shape, y, sizeof y));
    }
    m->fortran = 1;
    for (int i = 0; i < m->n_inputs; i++) reverse(m->inputs[i].ndim, m->inputs[i].shape);
    return OC_OK;
}

/* numpy broadcasting of the used inputs' shapes; strides per result dim. */
static oc_status broadcast(oc_context *ctx, oc_map *m)
{
    int nd = 0;
    for (int i = 0; i < m->n_inputs; i++)
        if (m->inputs[i].used && m->inputs[i].ndim > nd) nd = m->inputs[i].ndim;
    m->ndim = nd;
    for (int d = 0; d < nd; d++) m->shape[d] = 1;
    int owner[OC_MAP_MAX_DIMS];
    for (int i = 0; i < m->n_inputs; i++) {
        const oc_map_bound *b = &m->inputs[i];
        if (!b->used) continue;
        for (int d = 0; d < b->ndim; d++) {
            int od = nd - b->ndim + d;
            int64_t s = b->shape[d];
            if (s == m->shape[od] || s == 1) continue;
            if (m->shape[od] == 1) {
                m->shape[od] = s;
                owner[od] = i;
                continue;
            }
            char x[256], y[256];
            const oc_map_bound *o = &m->inputs[owner[od]];
            int64_t os[OC_MAP_MAX_DIMS], bs[OC_MAP_MAX_DIMS];
            oc_map_user_shape(m, o->ndim, o->shape, os);
            oc_map_user_shape(m, b->ndim, b->shape, bs);
            return oc_fail(ctx, OC_ERR_INPUT, "shapes do not broadcast: %s is %s, %s is %s", o->name,
                           oc_map_shape_text(o->ndim, os, x, sizeof x), b->name,
                           oc_map_shape_text(b->ndim, bs, y, sizeof y));
        }
    }
    m->count = shape_count(nd, m->shape);
    if (m->count < 0) {
        int64_t shape[OC_MAP_MAX_DIMS];
        oc_map_user_shape(m, nd, m->shape, shape);
        return too_many_elements(ctx, OC_ERR_INPUT, "the broadcast result", nd, shape);
    }
    for (int i = 0; i < m->n_inputs; i++) {
        oc_map_bound *b = &m->inputs[i];
        int64_t st = 1;
        b->same_shape = b->ndim == nd;
        for (int od = nd - 1; od >= 0; od--) {
            int d = b->ndim - nd + od;
            if (d < 0) {
                b->stride[od] = 0;
                b->same_shape = 0;
                continue;
            }
            b->stride[od] = b->shape[d] == 1 && m->shape[od] != 1 ? 0 : st;
            if (b->shape[d] != m->shape[od]) b->same_shape = 0;
            st *= b->shape[d];
        }
    }
    return OC_OK;
}

static oc_status resolve_output(oc_context *ctx, oc_map *m)
{
    m->expr_type = m->ir.nodes[m->ir.root].type;
    m->reduce = m->opts.reduce;
    m->axis = -1;
    if (!oc_map_reduce_name(m->reduce))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "unknown reduction %d", (int)m->reduce);
    if (m->reduce == OC_MAP_REDUCE_NONE) {
        if (m->opts.has_axis) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "--axis needs --reduce");
        m->out_ndim = m->ndim;
        memcpy(m->out_shape, m->shape, sizeof m->shape);
        m->reduce_type = m->expr_type;
    } else {
        m->reduce_type = oc_map_reduce_type(m->reduce, m->expr_type);
        m->out_ndim = 0;
        /* numpy's ufunc reductions (numpy.sum, min, max) take axis 0 or -1 of a 0-d array and
         * reduce its one element, as over all elements; numpy.mean refuses every axis there. */
        int scalar_axis = m->ndim == 0 && (m->opts.axis == 0 || m->opts.axis == -1) && m->reduce != OC_MAP_REDUCE_MEAN;
        if (m->opts.has_axis && !scalar_axis) {
            int ax = m->opts.axis < 0 ? m->opts.axis + m->ndim : m->opts.axis;
            if (ax < 0 || ax >= m->ndim)
                return oc_fail(ctx, OC_ERR_INPUT, "axis %d is out of bounds for a result of %d dimension%s%s",
                               m->opts.axis, m->ndim, m->ndim == 1 ? "" : "s",
                               m->ndim == 0 && m->reduce == OC_MAP_REDUCE_MEAN
                                   ? " (numpy.mean takes no axis of a 0-d array; sum, min and max take 0 and -1)"
                                   : "");
            m->axis = m->fortran ? m->ndim - 1 - ax : ax; /* the plan's dims are reversed */
            for (int d = 0; d < m->ndim; d++)
                if (d != m->axis) m->out_shape[m->out_ndim++] = m->shape[d];
        }
        int64_t len = m->axis < 0 ? m->count : m->shape[m->axis];
        if (len == 0 && (m->reduce == OC_MAP_REDUCE_MIN || m->reduce == OC_MAP_REDUCE_MAX))
            return oc_fail(ctx, OC_ERR_INPUT, "zero-size array to reduction operation %s, which has no identity",
                           m->reduce == OC_MAP_REDUCE_MIN ? "minimum" : "maximum");
    }
    m->out_count = shape_count(m->out_ndim, m->out_shape);
    if (m->out_count < 0) {
        int64_t shape[OC_MAP_MAX_DIMS];
        oc_map_user_shape(m, m->out_ndim, m->out_shape, shape);
        return too_many_elements(ctx, OC_ERR_INPUT, "the result", m->out_ndim, shape);
    }
    m->out_type = m->reduce_type;
    if (m->opts.dtype >= 0) {
        if (m->opts.dtype >= OC_MT_COUNT)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "unknown output dtype %d", m->opts.dtype);
        if (!oc_mt_can_cast_same_kind(m->reduce_type, m->opts.dtype))
            return oc_fail(
                ctx, OC_ERR_INPUT,
                "the result is %s and cannot be written as %s (numpy.can_cast(%s, %s, 'same_kind') is False)",
                oc_mt_name(m->reduce_type), oc_mt_name(m->opts.dtype), oc_mt_name(m->reduce_type),
                oc_mt_name(m->opts.dtype));
        m->out_type = m->opts.dtype;
    }
    return OC_OK;
}

static oc_status map_create(oc_context *ctx, oc_map *m, const char *expr, const oc_map_array *inputs, int n_inputs,
                            const oc_map_scalar *scalars, int n_scalars)
{
    m->text = strdup(expr);
    if (!m->text) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    /* Parse first: a syntax error is reported before any file is opened. */
    oc_map_expr tree;
    OC_CHECK(ctx, oc_map_parse(ctx, m->text, &tree));
    oc_status st = bind_inputs(ctx, m, inputs, n_inputs);
    oc_map_binding *bind = NULL;
    if (st == OC_OK) {
        bind = calloc((size_t)(n_inputs + n_scalars + 1), sizeof *bind);
        if (!bind) st = oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 0; st == OC_OK && i < n_inputs; i++)
        bind[i] = (oc_map_binding){.name = m->inputs[i].name, .type = m->inputs[i].type, .ndim = m->inputs[i].ndim};
    for (int i = 0; st == OC_OK && i < n_scalars; i++) {
        oc_map_binding *b = &bind[n_inputs + i];
        b->name = scalars[i].name;
        b->is_scalar = 1;
        if (!scalars[i].name) {
            st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "scalar %d has no name", i);
            break;
        }
        if (!valid_name(scalars[i].name)) {
            st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "'%s' is not a valid name for a scalar (" VALID_NAME ")",
                         scalars[i].name);
            break;
        }
        for (int j = 0; j < n_inputs + i; j++)
            if (strcmp(bind[j].name, b->name) == 0) {
                st = oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "'%s' is given twice", b->name);
                break;
            }
        oc_map_expr lit;
        const char *text = scalars[i].value ? scalars[i].value : "";
        const char *word = text + (*text == '-' || *text == '+');
        if (st == OC_OK && (strcasecmp(word, "inf") == 0 || strcasecmp(word, "nan") == 0)) {
            /* Python's float('inf') and float('nan'), as repr() writes them. */
            b->scalar = (oc_map_node){.op = MOP_CONST, .weak = MW_FLOAT, .a = -1, .b = -1, .c = -1, .input = -1};
            b->scalar.value.f = (word[0] == 'n' || word[0] == 'N' ? NAN : INFINITY) * (*text == '-' ? -1.0 : 1.0);
            continue;
        }
        if (st == OC_OK && oc_map_parse(ctx, text, &lit) == OC_OK) {
            const oc_map_node *r = &lit.nodes[lit.root];
            /* A literal, or a negated one ("-0.5"); a unary + before it ("+5") is the literal. */
            const int pos = r->op == MOP_POS;
            if (pos) r = &lit.nodes[r->a];
            int neg = r->op == MOP_NEG && lit.nodes[r->a].op == MOP_CONST;
            const oc_map_node *v = neg ? &lit.nodes[r->a] : r;
            if (v->op != MOP_CONST || ((neg || pos) && v->weak == MW_BOOL)) {
                st = oc_fail(ctx, OC_ERR_INPUT, "--set %s=%s: the value is not a number", b->name, text);
            } else if (neg && v->big && v->value.u != (uint64_t)INT64_MAX + 1) {
                /* Python ints are int64's and uint64's values here: -2^63 is the least. */
                st = oc_fail(ctx, OC_ERR_INPUT,
                             "--set %s=%s: the integer is out of range: below -2^63, outside int64 and uint64", b->name,
                             text);
            } else {
                b->scalar = *v;
                if (neg && v->weak == MW_FLOAT) b->scalar.value.f = -v->value.f;
                if (neg && v->weak == MW_INT) b->scalar.value.u = 0 - v->value.u, b->scalar.big = 0;
            }
            oc_map_expr_free(&lit);
        } else if (st == OC_OK && lit.out_of_range) {
            /* A Python int, valid, past the ints map holds (int64's and uint64's values). */
            st = oc_fail(ctx, OC_ERR_INPUT, "--set %s=%s: the integer is out of range: %s, outside int64 and uint64",
                         b->name, text, *text == '-' ? "below -2^63" : "above 2^64 - 1");
        } else if (st == OC_OK) {
            /* A malformed literal: the parser's reason, after "syntax error in the expression
             * at column N: " (copied: the message is about to be replaced). */
            char why[160] = "";
            const char *msg = oc_context_last_error(ctx), *colon = strstr(msg, ": ");
            if (strncmp(msg, "syntax error in the expression", 30) == 0 && colon &&
                (strstr(colon, "number") || strstr(colon, "integer")))
                snprintf(why, sizeof why, " (%s)", colon + 2);
            st = oc_fail(ctx, OC_ERR_INPUT, "--set %s=%s: the value is not a number%s", b->name, text, why);
        }
    }
    if (st == OC_OK) st = oc_map_typecheck(ctx, &tree, bind, n_inputs + n_scalars, &m->ir);
    free(bind);
    oc_map_expr_free(&tree);
    OC_CHECK(ctx, st);
    mark_used(m);
    OC_CHECK(ctx, fortran_plan(ctx, m));
    OC_CHECK(ctx, broadcast(ctx, m));
    OC_CHECK(ctx, resolve_output(ctx, m));
    return OC_OK;
}

static oc_status map_create_call(oc_context *ctx, const char *expr, const oc_map_array *inputs, int n_inputs,
                                 const oc_map_scalar *scalars, int n_scalars, const oc_map_options *opts, oc_map **out)
{
    if (!ctx || !expr || !out || n_inputs < 0 || n_scalars < 0 || (n_inputs && !inputs) || (n_scalars && !scalars))
        return ctx ? oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_map_create: bad arguments") : OC_ERR_INVALID_ARGUMENT;
    oc_context_begin_job(ctx);
    /* oc_map_options has versions 1 (up to progress_user), 2 and 3, oc_map_array 1 (up to
     * shape) and 2 (docs/abi.md). */
    const size_t opts_v1 = OC_STRUCT_VERSION_SIZE(oc_map_options, gpu_mem_fraction),
                 opts_v2 = OC_STRUCT_VERSION_SIZE(oc_map_options, fortran_out),
                 array_v1 = OC_STRUCT_VERSION_SIZE(oc_map_array, fortran_order);
    if (opts && opts->struct_size != sizeof *opts && opts->struct_size != opts_v1 && opts->struct_size != opts_v2)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "oc_map_options: struct_size %zu is no version's (%zu): start from OC_MAP_OPTIONS_INIT",
                       opts->struct_size, sizeof *opts);
    /* An array of an earlier version's structs steps by that version's size: the first
     * element's struct_size, checked before any other is read, which every element shares. */
    const size_t step = n_inputs ? inputs[0].struct_size : sizeof *inputs;
    for (int i = 0; i < n_inputs; i++) {
        const size_t size = ((const oc_map_array *)((const char *)inputs + (size_t)i * step))->struct_size;
        if (size != sizeof *inputs && size != array_v1)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "oc_map_array: struct_size %zu is no version's (%zu): start from OC_MAP_ARRAY_INIT", size,
                           sizeof *inputs);
        if (size != step)
            return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                           "oc_map_array: input %d's struct_size %zu is not input 0's (%zu): the inputs are one "
                           "array of one version's structs; start each from OC_MAP_ARRAY_INIT",
                           i, size, step);
    }
    oc_map *m = calloc(1, sizeof *m);
    if (!m) return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    /* The inputs as the current version, the fields an earlier one lacks at their defaults. */
    oc_map_array *given = calloc((size_t)(n_inputs ? n_inputs : 1), sizeof *given);
    if (!given) {
        free(m);
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of memory");
    }
    for (int i = 0; i < n_inputs; i++) {
        given[i] = (oc_map_array)OC_MAP_ARRAY_INIT;
        memcpy(&given[i], (const char *)inputs + (size_t)i * step, step);
        given[i].struct_size = sizeof given[i];
    }
    oc_map_options defaults = OC_MAP_OPTIONS_INIT;
    m->opts = defaults;
    if (opts) {
        memcpy(&m->opts, opts, opts->struct_size);
        m->opts.struct_size = sizeof m->opts;
    }
    const oc_map_options *o = &m->opts;
    oc_status st = OC_OK;
    if (o->threads < 0 || o->threads > OC_MAX_THREADS || o->host_mem_bytes < 0 || o->gpu_mem_bytes < 0 ||
        (unsigned)o->backend > OC_BACKEND_CUDA || !(o->gpu_mem_fraction >= 0 && o->gpu_mem_fraction <= 1))
        st =
            oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                    "oc_map_options: threads %d (0 to %d), host_mem_bytes %lld, gpu_mem_bytes %lld (>= 0), backend %d, "
                    "gpu_mem_fraction %g (0: the default, or in (0, 1]): one is out of range",
                    o->threads, OC_MAX_THREADS, (long long)o->host_mem_bytes, (long long)o->gpu_mem_bytes,
                    (int)o->backend, o->gpu_mem_fraction);
    if (st == OC_OK) st = map_create(ctx, m, expr, given, n_inputs, scalars, n_scalars);
    free(given);
    if (st != OC_OK) {
        oc_map_free(m);
        return oc_trace_at(ctx, st, __FILE__, __LINE__);
    }
    *out = m;
    return OC_OK;
}

/* Reads the inputs' headers from their mappings: SIGBUS deliverable meanwhile. */
oc_status oc_map_create(oc_context *ctx, const char *expr, const oc_map_array *inputs, int n_inputs,
                        const oc_map_scalar *scalars, int n_scalars, const oc_map_options *opts, oc_map **out)
{
    OC_RETURN_WITH_BUS_SIGNAL(map_create_call(ctx, expr, inputs, n_inputs, scalars, n_scalars, opts, out));
}

/* Without a map: -1, as oc_map_options.dtype says "none" (oc_map_dtype_name(-1) is NULL), and
 * -1 dimensions with shape untouched. */
oc_map_dtype oc_map_result_dtype(const oc_map *m) { return m ? (oc_map_dtype)m->out_type : OC_MAP_DTYPE_NONE; }

int oc_map_result_fortran_order(const oc_map *m) { return m ? m->fortran && m->out_ndim > 1 : -1; }

int oc_map_result_shape(const oc_map *m, int64_t *shape)
{
    if (!m) return -1;
    if (shape) oc_map_user_shape(m, m->out_ndim, m->out_shape, shape);
    return m->out_ndim;
}

/* OC_OK when no input file changed while the job read it (mapped_file.h). */
static oc_status inputs_unchanged(oc_context *ctx, const oc_map *m)
{
    for (int i = 0; i < m->n_inputs; i++)
        OC_CHECK(ctx, oc_mapped_file_check(ctx, m->inputs[i].path, &m->inputs[i].file));
    return OC_OK;
}

/* The output must not be one of the inputs, by any name: it is written while they are read. */
static oc_status check_not_input(oc_context *ctx, const oc_map *m, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return OC_OK;
    for (int i = 0; i < m->n_inputs; i++)
        if (m->inputs[i].path && m->inputs[i].file.dev == (uint64_t)st.st_dev &&
            m->inputs[i].file.ino == (uint64_t)st.st_ino)
            return oc_fail(ctx, OC_ERR_INPUT, "%s: the output is the input '%s' (%s); write to another file", path,
                           m->inputs[i].name, m->inputs[i].path);
    return OC_OK;
}

static oc_status map_run_call(oc_context *ctx, oc_map *m, const char *out_path, void *out_data, oc_map_stats *stats)
{
    if (!ctx || !m || (!out_path && !out_data && m->out_count > 0))
        return ctx ? oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_map_run: no output given") : OC_ERR_INVALID_ARGUMENT;
    if (!out_path && m->fortran && m->out_ndim > 1 && !m->opts.fortran_out)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "the inputs are in Fortran order and so is the result, which out_data takes only with "
                       "oc_map_options.fortran_out set: set it, or write the result to a .npy file");
    /* oc_map_stats has versions 1 (up to bytes_written), 2 (up to threads) and 3 (docs/abi.md). */
    const size_t stats_v1 = OC_STRUCT_VERSION_SIZE(oc_map_stats, threads),
                 stats_v2 = OC_STRUCT_VERSION_SIZE(oc_map_stats, host_peak_bytes);
    if (stats && stats->struct_size != sizeof *stats && stats->struct_size != stats_v1 &&
        stats->struct_size != stats_v2)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "oc_map_stats: struct_size %zu is no version's (%zu): set it to sizeof(oc_map_stats)",
                       stats->struct_size, sizeof *stats);
    oc_context_begin_job(ctx);
    if (out_path) OC_CHECK(ctx, oc_output_npy_name(ctx, out_path, "a map result is written"));
    oc_map_stats local = {.struct_size = sizeof local};
    double t0 = oc_now();
    oc_map_choice choice;
    OC_CHECK(ctx, oc_map_choose(ctx, m, &choice));
    const oc_map_backend *be = choice.backend;
    oc_npy_out *w = NULL;
    void *dst = out_data;
    if (out_path) {
        OC_CHECK(ctx, check_not_input(ctx, m, out_path));
        /* A result its file system cannot hold: refused before any work (exit 2), as gram's. */
        char what[96];
        snprintf(what, sizeof what, "%s %" PRId64 " elements", oc_mt_name(m->out_type), m->out_count);
        OC_CHECK(ctx,
                 oc_npy_out_check_room(ctx, out_path, what, m->out_count * (int64_t)oc_mt_size(m->out_type) + 128));
        int64_t shape[OC_MAP_MAX_DIMS];
        OC_CHECK(ctx, oc_npy_out_create_nd(ctx, out_path, oc_mt_descr(m->out_type), oc_mt_size(m->out_type),
                                           oc_map_result_shape(m, shape), shape, m->fortran, &w, &dst));
    }
    m->out_is_file = w != NULL;
    /* An empty result runs nothing; the stats still name where it would have run. */
    local.backend = be == &oc_map_backend_cpu ? OC_BACKEND_CPU : OC_BACKEND_CUDA;
    snprintf(local.backend_desc, sizeof local.backend_desc, "%s", be->name);
    oc_status st = m->count > 0 || m->reduce != OC_MAP_REDUCE_NONE ? be->run(ctx, m, dst, &local) : OC_OK;
    /* What was computed from an input cut while it was read is not a result. */
    oc_status changed = inputs_unchanged(ctx, m);
    if (changed != OC_OK) st = changed;
    if (st == OC_OK && be != &oc_map_backend_cpu && m->count > 0) oc_cost_note_gpu_job();
    if (st == OC_OK && w) {
        st = oc_npy_out_commit(ctx, w);
    } else if (w) {
        oc_npy_out_abort(w);
    }
    OC_CHECK(ctx, st);
    local.seconds = oc_now() - t0;
    local.elements = m->count;
    local.bytes_read = 0;
    /* An empty result reads nothing, whatever the size of an input it broadcasts against. */
    for (int i = 0; i < m->n_inputs && m->count > 0; i++)
        if (m->inputs[i].used) local.bytes_read += m->inputs[i].count * (int64_t)oc_mt_size(m->inputs[i].type);
    local.bytes_written = m->out_count * (int64_t)oc_mt_size(m->out_type);
    local.host_peak_bytes = oc_host_mem_peak();
    if (stats)
        memcpy((char *)stats + sizeof(size_t), (char *)&local + sizeof(size_t), stats->struct_size - sizeof(size_t));
    return OC_OK;
}

/* The job reads mapped inputs: SIGBUS deliverable meanwhile (core/process/bus_signal.h). */
oc_status oc_map_run(oc_context *ctx, oc_map *m, const char *out_path, void *out_data, oc_map_stats *stats)
{
    OC_RETURN_WITH_BUS_SIGNAL(map_run_call(ctx, m, out_path, out_data, stats));
}
