/*
 * map_cpu_eval.c - the block interpreter (map_cpu_eval.h).
 *
 * The IR is a DAG in topological order (children before parents). The evaluator keeps one
 * step per node reachable from the root, in that order, and per step a buffer of
 * OC_MAP_BLOCK elements of the node's type, shared with other steps whose values are not
 * needed at the same time (assign_buffers). Constants are filled once, when the evaluator
 * is made. An input whose shape is the result's is read in place (its step's pointer points
 * into the mapped file or the caller's array); a broadcast input is gathered into its
 * buffer run by run along the last dimension. A bool input is then copied into its buffer
 * as 0/1, whatever bytes the array holds (numpy reads any nonzero byte as True).
 */
#include "map/cpu/map_cpu_eval.h"

#include <stdlib.h>
#include <string.h>

#include "map/cpu/map_cpu_ops.h"

typedef struct step {
    const oc_map_node *node;
    oc_map_loop loop;
    oc_map_cast_loop cast;     /* casts; bool inputs: to 0/1 (any nonzero byte is True) */
    oc_map_select_loop select; /* a where fused with its comparison: where(p cmp q, x, y) */
    int p, q;                  /* then the comparison's operands (nodes) */
    unsigned char *buf;        /* OC_MAP_BLOCK elements of the node's type */
    const void *ptr;           /* this block's values: buf, or in place for inputs */
} step;

struct oc_map_eval {
    const oc_map_plan *m;
    step *steps;
    int *step_of; /* node index -> step index, -1 when unreachable */
    int nsteps;
    unsigned char *arena;
};

/* A binary op with exactly one constant operand runs its scalar form (the constant's block
 * is still filled: the loop reads its element 0). */
static oc_map_loop scalar_loop(const oc_map_expr *ir, const oc_map_node *nd)
{
    if (oc_map_op_arity(nd->op) != 2) return NULL;
    const int ca = ir->nodes[nd->a].op == MOP_CONST, cb = ir->nodes[nd->b].op == MOP_CONST;
    if (ca == cb) return NULL;
    return oc_map_cpu_loop_scalar(nd->op, nd->otype, cb ? 1 : 0);
}

/* A where whose condition is a comparison in the where's own type, used by nothing else,
 * runs both in one pass (oc_map_cpu_select): the comparison then has no step of its own. A
 * constant on the comparison's left swaps its sides (0 < a is a > 0, NaN included). */
static int fuse_select(const oc_map_expr *ir, const int *users, step *s)
{
    const oc_map_node *w = s->node;
    if (w->op != MOP_WHERE) return 0;
    const oc_map_node *c = &ir->nodes[w->a];
    if (c->op < MOP_EQ || c->op > MOP_GE || c->otype != w->otype || users[w->a] != 1) return 0;
    static const oc_map_op mirror[] = {MOP_EQ, MOP_NE, MOP_GT, MOP_GE, MOP_LT, MOP_LE}; /* EQ NE LT LE GT GE */
    int p = c->a, q = c->b;
    oc_map_op op = c->op;
    const int cp = ir->nodes[p].op == MOP_CONST, cq = ir->nodes[q].op == MOP_CONST;
    if (cp && !cq) {
        p = c->b, q = c->a;
        op = mirror[op - MOP_EQ];
    }
    s->select = oc_map_cpu_select(op, w->otype, cp != cq);
    s->p = p, s->q = q;
    return s->select != NULL;
}

/* The steps (by node) whose values step i reads. */
static int operands_of(const oc_map_eval *ev, const step *s, int *out)
{
    const oc_map_node *nd = s->node;
    int n = 0;
    if (nd->op <= MOP_CONST) return 0;
    const int kids[4] = {s->select ? s->p : nd->a, s->select ? s->q : nd->b, s->select ? nd->b : nd->c,
                         s->select ? nd->c : -1};
    for (int j = 0; j < 4; j++)
        if (kids[j] >= 0) out[n++] = ev->step_of[kids[j]];
    return n;
}

/* A buffer for each step: constants have their own; another step's buffer is free again once
 * the last step that reads it has run (for every block, in step order), so a long expression needs about as many buffers as
 * values live at once, not one per step. Returns the number of buffers, -1 when out of
 * memory. */
static int assign_buffers(const oc_map_eval *ev, int *slot)
{
    int n = ev->nsteps, nslots = 0, nfree = 0, ops[4];
    int *last = malloc(sizeof(int) * (size_t)(2 * n + 1));
    if (!last) return -1;
    int *free_slots = last + n;
    for (int i = 0; i < n; i++) last[i] = i == n - 1 || ev->steps[i].node->op == MOP_CONST ? n : i;
    for (int i = 0; i < n; i++)
        for (int j = 0, k = operands_of(ev, &ev->steps[i], ops); j < k; j++)
            if (last[ops[j]] < i) last[ops[j]] = i;
    for (int i = 0; i < n; i++) {
        /* A constant is filled once, when the evaluator is made: its buffer is its own. */
        slot[i] = nfree && ev->steps[i].node->op != MOP_CONST ? free_slots[--nfree] : nslots++;
        /* Freed only after step i: a loop never writes a buffer it reads. */
        for (int j = 0, k = operands_of(ev, &ev->steps[i], ops); j < k; j++)
            if (last[ops[j]] == i) {
                last[ops[j]] = n; /* once, however often step i reads it */
                free_slots[nfree++] = slot[ops[j]];
            }
    }
    free(last);
    return nslots;
}

oc_map_eval *oc_map_eval_create(const oc_map_plan *m)
{
    const oc_map_expr *ir = &m->ir;
    oc_map_eval *ev = calloc(1, sizeof *ev);
    char *live = calloc((size_t)ir->count, 1);
    int *users = NULL, *slot = NULL;
    if (!ev || !live) goto fail;
    ev->m = m;
    ev->step_of = malloc(sizeof(int) * (size_t)ir->count);
    ev->steps = calloc((size_t)ir->count, sizeof *ev->steps);
    if (!ev->step_of || !ev->steps) goto fail;
    oc_map_expr_live(ir, ir->root, live);
    /* Each live node's live users, for the fused wheres. */
    users = calloc((size_t)ir->count, sizeof *users);
    if (!users) goto fail;
    for (int k = 0; k < ir->count; k++) {
        const oc_map_node *nd = &ir->nodes[k];
        if (!live[k] || nd->op <= MOP_CONST) continue;
        if (nd->a >= 0) users[nd->a]++;
        if (nd->b >= 0) users[nd->b]++;
        if (nd->c >= 0) users[nd->c]++;
    }
    /* A comparison that a fused where alone reads gets no step (its operands keep theirs). */
    for (int k = 0; k < ir->count; k++) {
        step probe = {.node = &ir->nodes[k]};
        if (live[k] && fuse_select(ir, users, &probe)) live[ir->nodes[k].a] = 0;
    }
    for (int k = 0; k < ir->count; k++) {
        ev->step_of[k] = -1;
        if (!live[k]) continue;
        step *s = &ev->steps[ev->nsteps];
        s->node = &ir->nodes[k];
        if (fuse_select(ir, users, s)) {
            ev->step_of[k] = ev->nsteps++;
            continue;
        }
        if (s->node->op == MOP_CAST || (s->node->op == MOP_INPUT && s->node->type == MT_BOOL))
            s->cast = oc_map_cpu_cast(s->node->otype, s->node->type);
        else if (s->node->op > MOP_CAST) s->loop = scalar_loop(ir, s->node);
        if (s->node->op > MOP_CAST && !s->loop) s->loop = oc_map_cpu_loop(s->node->op, s->node->otype);
        if (s->node->op > MOP_CAST && !s->loop) goto fail; /* the type check admits no such op */
        ev->step_of[k] = ev->nsteps++;
    }
    /* 64-byte aligned buffers, 8 bytes per element whatever the type: one allocation. */
    slot = malloc(sizeof(int) * (size_t)(ev->nsteps + 1));
    if (!slot) goto fail;
    int nslots = assign_buffers(ev, slot);
    if (nslots < 0) goto fail;
    ev->arena = aligned_alloc(64, (size_t)nslots * OC_MAP_BLOCK * 8);
    if (!ev->arena) goto fail;
    for (int i = 0; i < ev->nsteps; i++) {
        step *s = &ev->steps[i];
        s->buf = ev->arena + (size_t)slot[i] * OC_MAP_BLOCK * 8;
        s->ptr = s->buf;
        if (s->node->op == MOP_CONST) oc_map_cpu_fill(s->buf, s->node->type, s->node->value, OC_MAP_BLOCK);
    }
    free(slot);
    free(live);
    free(users);
    return ev;
fail:
    free(slot);
    free(live);
    free(users);
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
    case 1:
        memset(dst, *src, (size_t)n);
        break;
    case 2: {
        uint16_t v;
        memcpy(&v, src, 2);
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = v;
        break;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, src, 4);
        for (int64_t i = 0; i < n; i++) ((uint32_t *)dst)[i] = v;
        break;
    }
    default: {
        uint64_t v;
        memcpy(&v, src, 8);
        for (int64_t i = 0; i < n; i++) ((uint64_t *)dst)[i] = v;
        break;
    }
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
        case MOP_CONST:
            break;
        case MOP_INPUT: {
            const oc_map_bound *b = &m->inputs[nd->input];
            if (b->same_shape) s->ptr = b->data + start * (int64_t)oc_mt_size(b->type);
            else gather(m, b, start, n, s->buf);
            /* A bool array's bytes need not be 0 or 1 (a uint8 array viewed as bool, a .npy
             * file's bytes): numpy reads any nonzero byte as True, so every loop gets 0/1. */
            if (s->cast) {
                s->cast(s->buf, s->ptr, (size_t)n);
                s->ptr = s->buf;
            }
            continue;
        }
        case MOP_CAST:
            s->cast(out, ev->steps[ev->step_of[nd->a]].ptr, (size_t)n);
            s->ptr = out;
            break;
        default: {
            if (s->select) {
                s->select(out, ev->steps[ev->step_of[s->p]].ptr, ev->steps[ev->step_of[s->q]].ptr,
                          ev->steps[ev->step_of[nd->b]].ptr, ev->steps[ev->step_of[nd->c]].ptr, (size_t)n);
                s->ptr = out;
                break;
            }
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
