/*
 * map_cpu_eval.c - the block interpreter (map_cpu_eval.h).
 *
 * The IR is a DAG in topological order (children before parents). The evaluator keeps one
 * step per node reachable from the root, in that order, and per step a buffer of
 * OC_MAP_BLOCK elements of the node's type. Constants are filled once, when the evaluator
 * is made. An input whose shape is the result's is read in place (its step's pointer points
 * into the mapped file or the caller's array); a broadcast input is gathered into its
 * buffer run by run along the last dimension.
 */
#include "cpu/map_cpu_eval.h"

#include <stdlib.h>
#include <string.h>

#include "cpu/map_cpu_ops.h"

typedef struct step {
    const oc_map_node *node;
    oc_map_loop loop;
    oc_map_cast_loop cast;
    unsigned char *buf;   /* OC_MAP_BLOCK elements of the node's type */
    const void *ptr;      /* this block's values: buf, or in place for inputs */
} step;

struct oc_map_eval {
    const oc_map_plan *m;
    step *steps;
    int *step_of;         /* node index -> step index, -1 when unreachable */
    int nsteps;
    unsigned char *arena;
};

oc_map_eval *oc_map_eval_create(const oc_map_plan *m)
{
    const oc_map_expr *ir = &m->ir;
    oc_map_eval *ev = calloc(1, sizeof *ev);
    char *live = calloc((size_t)ir->count, 1);
    if (!ev || !live) goto fail;
    ev->m = m;
    ev->step_of = malloc(sizeof(int) * (size_t)ir->count);
    ev->steps = calloc((size_t)ir->count, sizeof *ev->steps);
    if (!ev->step_of || !ev->steps) goto fail;
    oc_map_expr_live(ir, ir->root, live);
    for (int k = 0; k < ir->count; k++) {
        ev->step_of[k] = -1;
        if (!live[k]) continue;
        step *s = &ev->steps[ev->nsteps];
        s->node = &ir->nodes[k];
        if (s->node->op == MOP_CAST) s->cast = oc_map_cpu_cast(s->node->otype, s->node->type);
        else if (s->node->op > MOP_CAST) s->loop = oc_map_cpu_loop(s->node->op, s->node->otype);
        if (s->node->op > MOP_CAST && !s->loop) goto fail; /* the type check admits no such op */
        ev->step_of[k] = ev->nsteps++;
    }
    /* 64-byte aligned buffers, 8 bytes per element whatever the type: one allocation. */
    ev->arena = aligned_alloc(64, (size_t)ev->nsteps * OC_MAP_BLOCK * 8);
    if (!ev->arena) goto fail;
    for (int i = 0; i < ev->nsteps; i++) {
        step *s = &ev->steps[i];
        s->buf = ev->arena + (size_t)i * OC_MAP_BLOCK * 8;
        s->ptr = s->buf;
        if (s->node->op == MOP_CONST) oc_map_cpu_fill(s->buf, s->node->type, s->node->value, OC_MAP_BLOCK);
    }
    free(live);
    return ev;
fail:
    free(live);
    oc_map_eval_free(ev);
    return NULL;
}

void oc_map_eval_free(oc_map_eval *ev)
{
    if (!ev) return;
    free(ev->arena);
    free(ev->steps);
    free(ev->step_of);
    free(ev);
}

/* n copies of the elem-byte element at src. */
static void fill_run(unsigned char *dst, const unsigned char *src, size_t elem, int64_t n)
{
    switch (elem) {
    case 1: memset(dst, *src, (size_t)n); break;
    case 2: { uint16_t v; memcpy(&v, src, 2); for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = v; break; }
    case 4: { uint32_t v; memcpy(&v, src, 4); for (int64_t i = 0; i < n; i++) ((uint32_t *)dst)[i] = v; break; }
    default: { uint64_t v; memcpy(&v, src, 8); for (int64_t i = 0; i < n; i++) ((uint64_t *)dst)[i] = v; break; }
    }
}

/* Input b's values for result elements [start, start + n) into buf, run by run along the
 * result's last dimension (contiguous in the input, or one repeated element). */
static void gather(const oc_map_plan *m, const oc_map_bound *b, int64_t start, int64_t n, unsigned char *buf)
{
    size_t elem = oc_mt_size(b->type);
    int nd = m->ndim;
    if (nd == 0) {
        memcpy(buf, b->data, elem);
        return;
    }
    int64_t idx[OC_MAP_MAX_DIMS], off = 0, rem = start;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = rem % m->shape[d];
        rem /= m->shape[d];
        off += idx[d] * b->stride[d];
    }
    const int64_t last = m->shape[nd - 1], lstride = b->stride[nd - 1];
    int64_t done = 0;
    while (done < n) {
        int64_t run = last - idx[nd - 1];
        if (run > n - done) run = n - done;
        if (lstride == 0) fill_run(buf + done * elem, b->data + off * elem, elem, run);
        else memcpy(buf + done * elem, b->data + off * elem, (size_t)run * elem);
        done += run;
        off += run * lstride;
        idx[nd - 1] += run;
        for (int d = nd - 1; d > 0 && idx[d] == m->shape[d]; d--) {
            off -= idx[d] * b->stride[d];
            idx[d] = 0;
            idx[d - 1]++;
            off += b->stride[d - 1];
        }
    }
}

const void *oc_map_eval_block(oc_map_eval *ev, int64_t start, int64_t n, void *dst, int *error)
{
    const oc_map_plan *m = ev->m;
    for (int i = 0; i < ev->nsteps; i++) {
        step *s = &ev->steps[i];
        const oc_map_node *nd = s->node;
        /* The root writes straight into dst when it computes (a leaf is copied by the caller). */
        void *out = i == ev->nsteps - 1 && dst && nd->op > MOP_CONST ? dst : s->buf;
        switch (nd->op) {
        case MOP_CONST: break;
        case MOP_INPUT: {
            const oc_map_bound *b = &m->inputs[nd->input];
            if (b->same_shape) s->ptr = b->data + start * (int64_t)oc_mt_size(b->type);
            else gather(m, b, start, n, s->buf);
            continue;
        }
        case MOP_CAST: s->cast(out, ev->steps[ev->step_of[nd->a]].ptr, (size_t)n); s->ptr = out; break;
        default: {
            const void *a = ev->steps[ev->step_of[nd->a]].ptr;
            const void *bb = nd->b >= 0 ? ev->steps[ev->step_of[nd->b]].ptr : NULL;
            const void *c = nd->c >= 0 ? ev->steps[ev->step_of[nd->c]].ptr : NULL;
            s->loop(out, a, bb, c, (size_t)n, error);
            s->ptr = out;
        }
        }
    }
    return ev->steps[ev->nsteps - 1].ptr;
}
