/*
 * map_parse.c - tokenizer and recursive-descent parser of map expressions (grammar in
 * map_expr.h). The parser only builds the tree; names and types are the type check's.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text_buf.h"
#include "core/error.h"
#include "map/map_expr.h"

typedef enum tok_kind { T_END, T_NUM, T_NAME, T_OP, T_BAD } tok_kind;

typedef struct parser {
    oc_context *ctx;
    oc_map_expr *e;
    const char *s;
    int pos;  /* start of the current token */
    int next; /* end of the current token */
    tok_kind kind;
    char op[3];
    int tokens;       /* tokens read so far */
    int out_of_range; /* the failure is an integer literal above 2^64 - 1 */
    oc_status st;     /* first failure */
} parser;

int oc_map_expr_add(oc_map_expr *e, oc_map_node n)
{
    if (e->count == e->cap) {
        int cap = e->cap ? e->cap * 2 : 32;
        oc_map_node *p = realloc(e->nodes, (size_t)cap * sizeof *p);
        if (!p) return -1;
        e->nodes = p;
        e->cap = cap;
    }
    e->nodes[e->count] = n;
    return e->count++;
}

/* Children precede their parents: one sweep down from k marks every node k depends on. */
void oc_map_expr_live(const oc_map_expr *e, int k, char *live)
{
    if (k < 0) return;
    live[k] = 1;
    for (int j = k; j >= 0; j--) {
        if (!live[j]) continue;
        const oc_map_node *n = &e->nodes[j];
        if (n->a >= 0) live[n->a] = 1;
        if (n->b >= 0) live[n->b] = 1;
        if (n->c >= 0) live[n->c] = 1;
    }
}

void oc_map_expr_free(oc_map_expr *e)
{
    if (!e) return;
    free(e->nodes);
    memset(e, 0, sizeof *e);
}

/* A syntax error: one line naming the column (1-based), in the form oc_map_create documents
 * ("syntax error in the expression at column N: ..."), from which callers draw the caret. */
static int syntax_error(parser *p, int pos, const char *what)
{
    if (p->st != OC_OK) return -1;
    p->st = oc_fail(p->ctx, OC_ERR_INPUT, "syntax error in the expression at column %d: %s", pos + 1, what);
    return -1;
}

static void advance(parser *p)
{
    const char *s = p->s;
    int i = p->next;
    while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f') i++;
    p->pos = i;
    char c = s[i];
    if (c == '\0') {
        p->kind = T_END;
        p->next = i;
        return;
    }
    if (++p->tokens > OC_MAP_MAX_TOKENS && p->st == OC_OK)
        p->st = oc_fail(p->ctx, OC_ERR_INPUT, "the expression has more than %d tokens (map's limit) at column %d",
                        OC_MAP_MAX_TOKENS, i + 1);
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)s[i + 1]))) {
        int j = i;
        while (isalnum((unsigned char)s[j]) || s[j] == '.' || s[j] == '_' ||
               ((s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E') &&
                !(s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X'))))
            j++;
        p->kind = T_NUM;
        p->next = j;
        return;
    }
    if (isalpha((unsigned char)c) || c == '_') {
        int j = i;
        while (isalnum((unsigned char)s[j]) || s[j] == '_') j++;
        p->kind = T_NAME;
        p->next = j;
        return;
    }
    static const char *two[] = {"**", "//", "==", "!=", "<=", ">="};
    for (size_t k = 0; k < sizeof two / sizeof two[0]; k++)
        if (s[i] == two[k][0] && s[i + 1] == two[k][1]) {
            memcpy(p->op, two[k], 3);
            p->kind = T_OP;
            p->next = i + 2;
            return;
        }
    if (strchr("+-*/%&|^~<>(),", c)) {
        p->op[0] = c, p->op[1] = '\0';
        p->kind = T_OP;
        p->next = i + 1;
        return;
    }
    p->kind = T_BAD;
    p->next = i + 1;
}

static int is_op(const parser *p, const char *op) { return p->kind == T_OP && strcmp(p->op, op) == 0; }

static int add_node(parser *p, oc_map_op op, int pos, int a, int b, int c)
{
    if (p->st != OC_OK) return -1;
    oc_map_node n = {.op = op, .a = a, .b = b, .c = c, .pos = pos, .input = -1, .type = -1, .otype = -1};
    int k = oc_map_expr_add(p->e, n);
    if (k < 0) p->st = oc_fail(p->ctx, OC_ERR_NO_MEMORY, "out of memory parsing the expression");
    return k;
}

static int is_digit_of(char c, int base)
{
    if (c >= '0' && c <= '9') return c - '0' < base;
    c = (char)tolower((unsigned char)c);
    return base == 16 && c >= 'a' && c <= 'f';
}

/* Python's digitpart in base from s[i]: digits, a single '_' only between two of them;
 * returns where it stops (i when s[i] is no digit). */
static int digit_part(const char *s, int i, int end, int base)
{
    int j = i;
    while (j < end && (is_digit_of(s[j], base) || (s[j] == '_' && j > i && j + 1 < end && is_digit_of(s[j + 1], base))))
        j++;
    return j;
}

/* Checks the number token [pos, pos + len) against Python's grammar of integer and float
 * literals: an underscore only between two digits, or right after a base prefix (0x_1f).
 * 0 when it is one, else a syntax error naming the column at fault. */
static int check_literal(parser *p, int pos, int len)
{
    const char *s = p->s + pos;
    int i, ok;
    if (len >= 2 && s[0] == '0' && strchr("xXoObB", s[1])) {
        int base = s[1] == 'x' || s[1] == 'X' ? 16 : s[1] == 'o' || s[1] == 'O' ? 8 : 2;
        int start = 2 + (len > 2 && s[2] == '_');
        i = digit_part(s, start, len, base);
        ok = i > start;
    } else {
        int int_end = digit_part(s, 0, len, 10);
        i = int_end;
        ok = 1;
        if (i < len && s[i] == '.') {
            i = digit_part(s, i + 1, len, 10);
            ok = int_end > 0 || i > int_end + 1;
        }
        if (ok && i < len && (s[i] == 'e' || s[i] == 'E')) {
            int e = i + 1 + (i + 1 < len && (s[i + 1] == '+' || s[i + 1] == '-'));
            i = digit_part(s, e, len, 10);
            ok = i > e;
        }
    }
    if (ok && i == len) return 0;
    /* Where the digits stopped: an underscore there or just before it is the fault. */
    int at = i < len && s[i] == '_' ? i : i > 0 && s[i - 1] == '_' ? i - 1 : -1;
    if (at >= 0) return syntax_error(p, pos + at, "an underscore in a number must stand between two digits");
    return syntax_error(p, pos, "malformed number");
}

/* A Python literal: decimal or 0x/0o/0b integers, floats with '.' or an exponent; '_'
 * separators as Python allows. Integers up to 2^64 - 1 (uint64's maximum; those above int64's
 * are `big`); larger ones are an error (numpy would make them object arrays; map has no such
 * type). */
static int number_text(parser *p, int pos, const char *buf);

static int number(parser *p)
{
    int pos = p->pos, len = p->next - p->pos;
    if (check_literal(p, pos, len) < 0) return -1;
    /* Any length Python takes (a literal is within the expression's bound): short ones on
     * the stack. */
    char small[128], *buf = len < (int)sizeof small ? small : malloc((size_t)len + 1);
    if (!buf) {
        p->st = oc_fail(p->ctx, OC_ERR_NO_MEMORY, "out of memory parsing the expression");
        return -1;
    }
    int n = 0;
    for (int i = 0; i < len; i++)
        if (p->s[pos + i] != '_') buf[n++] = p->s[pos + i];
    buf[n] = '\0';
    const int k = number_text(p, pos, buf);
    if (buf != small) free(buf);
    return k;
}

/* The literal at pos, its underscores dropped, as a node. */
static int number_text(parser *p, int pos, const char *buf)
{
    int is_float = !(buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X' || buf[1] == 'o' || buf[1] == 'O' ||
                                       buf[1] == 'b' || buf[1] == 'B')) &&
                   strpbrk(buf, ".eE") != NULL;
    char *end;
    errno = 0;
    oc_map_node n0 = {.op = MOP_CONST, .a = -1, .b = -1, .c = -1, .pos = pos, .input = -1, .type = -1, .otype = -1};
    if (is_float) {
        n0.weak = MW_FLOAT;
        n0.value.f = oc_strtod(buf, &end);
    } else {
        n0.weak = MW_INT;
        int base = 10;
        const char *digits = buf;
        if (buf[0] == '0' && buf[1] && strchr("xXoObB", buf[1])) {
            base = buf[1] == 'x' || buf[1] == 'X' ? 16 : buf[1] == 'o' || buf[1] == 'O' ? 8 : 2;
            digits = buf + 2;
        } else if (buf[0] == '0' && buf[1] != '\0') {
            /* Python rejects 0123; accept only zeros. */
            for (const char *q = buf; *q; q++)
                if (*q != '0') return syntax_error(p, pos, "leading zeros in a decimal integer are not allowed");
        }
        unsigned long long v = strtoull(digits, &end, base);
        if (*digits == '\0' || *end != '\0') return syntax_error(p, pos, "malformed number");
        if (errno == ERANGE) {
            if (p->st == OC_OK) p->out_of_range = 1;
            return syntax_error(p, pos, "the integer is out of range: above 2^64 - 1, outside int64 and uint64");
        }
        n0.big = v > (unsigned long long)INT64_MAX;
        n0.value.u = v;
    }
    if (*end != '\0') return syntax_error(p, pos, "malformed number");
    int k = oc_map_expr_add(p->e, n0);
    if (k < 0) p->st = oc_fail(p->ctx, OC_ERR_NO_MEMORY, "out of memory parsing the expression");
    return k;
}

/* ---------------------------------------------------------------- operator precedence
 *
 * The parser keeps its own stacks (operands, pending operators, open groups) on the heap and
 * never recurses, so no input reaches the C stack. Open groups - parentheses, calls - and
 * pending unary operators and `**` count as nesting, bounded by OC_MAP_MAX_NESTING; with the
 * token bound that bounds every stack. */

enum { P_CMP, P_OR, P_XOR, P_AND, P_ARITH, P_TERM, P_UNARY, P_POW };

typedef struct binop {
    const char *tok;
    oc_map_op op;
    int prec;
} binop;

static const binop binops[] = {
    {"**", MOP_POW, P_POW}, {"*", MOP_MUL, P_TERM},  {"/", MOP_DIV, P_TERM},  {"//", MOP_FLOORDIV, P_TERM},
    {"%", MOP_MOD, P_TERM}, {"+", MOP_ADD, P_ARITH}, {"-", MOP_SUB, P_ARITH}, {"&", MOP_AND, P_AND},
    {"^", MOP_XOR, P_XOR},  {"|", MOP_OR, P_OR},     {"==", MOP_EQ, P_CMP},   {"!=", MOP_NE, P_CMP},
    {"<", MOP_LT, P_CMP},   {"<=", MOP_LE, P_CMP},   {">", MOP_GT, P_CMP},    {">=", MOP_GE, P_CMP},
};

typedef enum group_kind { G_TOP, G_PAREN, G_CALL } group_kind;

typedef struct pending {
    oc_map_op op;
    int prec, pos;
} pending;

typedef struct group {
    group_kind kind;
    int ops_base, vals_base; /* its operators and operands lie above these */
    int has_cmp;             /* a comparison in the current operand (they do not chain) */
    int name_pos, name_len;  /* G_CALL */
    int nargs, args[4];
} group;

/* A group's operators: at most one per binary level, plus the nesting ones. */
#define STACK_CAP ((OC_MAP_MAX_NESTING + 1) * (P_POW + 4))

typedef struct stacks {
    int vals[STACK_CAP];
    pending ops[STACK_CAP];
    group groups[OC_MAP_MAX_NESTING + 1];
    int nvals, nops, ngroups, nesting;
} stacks;

static int nest(parser *p, stacks *k, int pos)
{
    if (k->nesting == OC_MAP_MAX_NESTING) {
        if (p->st == OC_OK)
            p->st =
                oc_fail(p->ctx, OC_ERR_INPUT, "the expression nests deeper than %d levels (map's limit) at column %d",
                        OC_MAP_MAX_NESTING, pos + 1);
        return -1;
    }
    k->nesting++;
    return 0;
}

static int push_val(stacks *k, int v)
{
    if (v < 0 || k->nvals == STACK_CAP) return -1;
    k->vals[k->nvals++] = v;
    return 0;
}

static int push_op(parser *p, stacks *k, oc_map_op op, int prec, int pos)
{
    if ((prec >= P_UNARY && nest(p, k, pos) < 0) || k->nops == STACK_CAP) return -1;
    k->ops[k->nops++] = (pending){op, prec, pos};
    return 0;
}

/* Applies the top pending operator to its operands. */
static int reduce_one(parser *p, stacks *k)
{
    pending o = k->ops[--k->nops];
    if (o.prec >= P_UNARY) k->nesting--;
    int b = k->vals[--k->nvals];
    if (o.prec == P_UNARY) return push_val(k, add_node(p, o.op, o.pos, b, -1, -1));
    int a = k->vals[--k->nvals];
    return push_val(k, add_node(p, o.op, o.pos, a, b, -1));
}

/* Applies the current group's pending operators that bind at least as tightly as prec. */
static int reduce_to(parser *p, stacks *k, int prec)
{
    const group *g = &k->groups[k->ngroups - 1];
    while (k->nops > g->ops_base && k->ops[k->nops - 1].prec >= prec)
        if (reduce_one(p, k) < 0) return -1;
    return 0;
}

static int open_group(parser *p, stacks *k, group_kind kind, int pos, int len)
{
    if (nest(p, k, pos) < 0) return -1;
    group *g = &k->groups[k->ngroups++];
    *g = (group){.kind = kind,
                 .ops_base = k->nops,
                 .vals_base = k->nvals,
                 .name_pos = pos,
                 .name_len = len,
                 .args = {-1, -1, -1, -1}};
    return 0;
}

/* The argument just completed, kept in the call's group. */
static void take_arg(stacks *k)
{
    group *g = &k->groups[k->ngroups - 1];
    int a = k->vals[--k->nvals];
    if (g->nargs < 4) g->args[g->nargs] = a;
    g->nargs++;
    g->has_cmp = 0;
}

/* Closes the call group at its ')' (column close): the function and its argument count. */
static int close_call(parser *p, stacks *k, int close)
{
    group g = k->groups[--k->ngroups];
    k->nesting--;
    const oc_map_op_info *fn = oc_map_function(p->s + g.name_pos, g.name_len);
    if (!fn) {
        if (p->st == OC_OK) {
            char known[512];
            size_t len = 0;
            for (int i = 0; oc_map_function_name(i) && len < sizeof known; i++) {
                int w = snprintf(known + len, sizeof known - len, "%s%s", i ? " " : "", oc_map_function_name(i));
                if (w < 0) break;
                len += (size_t)w;
            }
            p->st = oc_fail(p->ctx, OC_ERR_INPUT, "unknown function '%.*s' in the expression (column %d; known: %s)",
                            g.name_len, p->s + g.name_pos, g.name_pos + 1, known);
        }
        return -1;
    }
    const oc_map_op op = fn->op;
    int want = fn->arity;
    if (g.nargs != want) {
        if (p->st == OC_OK)
            p->st = oc_fail(p->ctx, OC_ERR_INPUT, "%s() takes %d argument%s, %d given (column %d)", oc_map_op_name(op),
                            want, want == 1 ? "" : "s", g.nargs, close + 1);
        return -1;
    }
    int n = add_node(p, op, g.name_pos, g.args[0], g.args[1], g.args[2]);
    if (n >= 0) p->e->nodes[n].name_pos = g.name_pos, p->e->nodes[n].name_len = g.name_len;
    return push_val(k, n);
}

/* An operand: a number, a name, True/False, a call's name and '(' or a '(' (the groups
 * then opened), or a unary operator. Returns 1 when an operand is complete, 0 when one is
 * still expected, -1 on error. */
static int operand(parser *p, stacks *k)
{
    int pos = p->pos;
    if (p->kind == T_NUM) {
        if (push_val(k, number(p)) < 0) return -1;
        advance(p);
        return 1;
    }
    if (p->kind == T_NAME) {
        int len = p->next - p->pos;
        advance(p);
        if (is_op(p, "(")) {
            if (open_group(p, k, G_CALL, pos, len) < 0) return -1;
            advance(p);
            if (!is_op(p, ")")) return 0;
            int close = p->pos;
            advance(p);
            return close_call(p, k, close) < 0 ? -1 : 1;
        }
        int is_true = len == 4 && strncmp(p->s + pos, "True", 4) == 0;
        int is_false = len == 5 && strncmp(p->s + pos, "False", 5) == 0;
        int n = add_node(p, is_true || is_false ? MOP_CONST : MOP_NAME, pos, -1, -1, -1);
        if (n < 0) return -1;
        if (is_true || is_false) p->e->nodes[n].weak = MW_BOOL, p->e->nodes[n].value.i = is_true;
        else p->e->nodes[n].name_pos = pos, p->e->nodes[n].name_len = len;
        return push_val(k, n) < 0 ? -1 : 1;
    }
    if (is_op(p, "(") || is_op(p, "-") || is_op(p, "~") || is_op(p, "+")) {
        int r = 0;
        if (is_op(p, "(")) r = open_group(p, k, G_PAREN, pos, 0);
        else r = push_op(p, k, is_op(p, "-") ? MOP_NEG : is_op(p, "+") ? MOP_POS : MOP_INVERT, P_UNARY, pos);
        advance(p);
        return r;
    }
    if (p->kind == T_END) return syntax_error(p, pos, "unexpected end of the expression");
    if (p->kind == T_BAD) return syntax_error(p, pos, "unexpected character");
    return syntax_error(p, pos, "expected a number, a name or '('");
}

/* After an operand: a binary operator, or the end of a group. Returns 1 when an operand
 * follows, 0 when another operator may, 2 at the end of the expression, -1 on error. */
static int operator(parser *p, stacks *k)
{
    group *g = &k->groups[k->ngroups - 1];
    int pos = p->pos;
    for (size_t i = 0; p->kind == T_OP && i < sizeof binops / sizeof binops[0]; i++) {
        const binop *b = &binops[i];
        if (!is_op(p, b->tok)) continue;
        if (b->prec == P_CMP && g->has_cmp)
            return syntax_error(p, pos, "comparisons do not chain; write (a < b) & (b < c)");
        /* ** is right associative and binds a unary minus on its right: -2**2 is -(2**2). */
        if (b->prec != P_POW && reduce_to(p, k, b->prec) < 0) return -1;
        if (push_op(p, k, b->op, b->prec, pos) < 0) return -1;
        if (b->prec == P_CMP) g->has_cmp = 1;
        advance(p);
        return 1;
    }
    if (reduce_to(p, k, P_CMP) < 0) return -1;
    if (is_op(p, ")") && g->kind != G_TOP) {
        advance(p);
        if (g->kind == G_CALL) {
            take_arg(k);
            return close_call(p, k, pos) < 0 ? -1 : 0;
        }
        k->ngroups--;
        k->nesting--;
        return 0;
    }
    if (is_op(p, ",") && g->kind == G_CALL) {
        take_arg(k);
        advance(p);
        if (!is_op(p, ")")) return 1;
        /* a trailing comma, as Python takes: sqrt(x,) */
        const int close = p->pos;
        advance(p);
        return close_call(p, k, close) < 0 ? -1 : 0;
    }
    if (p->kind == T_END && g->kind == G_TOP) return 2;
    /* numpy's spelling of a call (np.sqrt(x)) or a method (x.sum()) after a name. */
    if (p->s[pos] == '.' && pos > 0 && (isalnum((unsigned char)p->s[pos - 1]) || p->s[pos - 1] == '_'))
        return syntax_error(p, pos,
                            "a name takes no '.': write functions without a module (sqrt(x), not np.sqrt(x)), "
                            "and a reduction (x.sum()) as the reduce option");
    if (g->kind == G_PAREN) return syntax_error(p, pos, "expected ')'");
    if (g->kind == G_CALL) return syntax_error(p, pos, "expected ',' or ')' in the arguments");
    return syntax_error(p, pos, is_op(p, ")") ? "unmatched ')'" : "expected an operator or the end of the expression");
}

static int parse(parser *p)
{
    stacks *k = malloc(sizeof *k); /* every entry is written before it is read */
    if (!k) {
        p->st = oc_fail(p->ctx, OC_ERR_NO_MEMORY, "out of memory parsing the expression");
        return -1;
    }
    k->nvals = k->nops = k->nesting = 0;
    k->ngroups = 1;
    k->groups[0] = (group){.kind = G_TOP};
    int want_operand = 1, r = 0;
    while (p->st == OC_OK) {
        r = want_operand ? operand(p, k) : operator(p, k);
        if (r < 0 || r == 2) break;
        want_operand = want_operand ? !r : r;
    }
    int root = r == 2 && p->st == OC_OK ? k->vals[k->nvals - 1] : -1;
    free(k);
    return root;
}

oc_status oc_map_parse(oc_context *ctx, const char *text, oc_map_expr *e)
{
    if (!text) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "no expression given");
    memset(e, 0, sizeof *e);
    e->text = text;
    size_t len = strnlen(text, (size_t)OC_MAP_MAX_LENGTH + 1);
    if (len > OC_MAP_MAX_LENGTH)
        return oc_fail(ctx, OC_ERR_INPUT, "the expression is longer than %d bytes (map's limit)", OC_MAP_MAX_LENGTH);
    parser p = {.ctx = ctx, .e = e, .s = text};
    advance(&p);
    if (p.kind == T_END && p.st == OC_OK) syntax_error(&p, p.pos, "the expression is empty");
    else e->root = parse(&p);
    if (p.st != OC_OK) {
        oc_map_expr_free(e);
        e->out_of_range = p.out_of_range;
        return p.st;
    }
    return OC_OK;
}
