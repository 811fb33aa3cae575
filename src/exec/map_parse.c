/*
 * map_parse.c - tokenizer and recursive-descent parser of map expressions (grammar in
 * map_expr.h). The parser only builds the tree; names and types are the type check's.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "exec/map_expr.h"

typedef enum tok_kind { T_END, T_NUM, T_NAME, T_OP, T_BAD } tok_kind;

typedef struct parser {
    oc_context *ctx;
    oc_map_expr *e;
    const char *s;
    int pos;           /* start of the current token */
    int next;          /* end of the current token */
    tok_kind kind;
    char op[3];
    oc_status st;      /* first failure */
} parser;

static const struct { const char *name; oc_map_op op; } functions[] = {
    {"abs", MOP_ABS},         {"sqrt", MOP_SQRT},       {"exp", MOP_EXP},         {"log", MOP_LOG},
    {"log1p", MOP_LOG1P},     {"expm1", MOP_EXPM1},     {"sin", MOP_SIN},         {"cos", MOP_COS},
    {"tan", MOP_TAN},         {"tanh", MOP_TANH},       {"floor", MOP_FLOOR},     {"ceil", MOP_CEIL},
    {"arctan2", MOP_ARCTAN2}, {"minimum", MOP_MINIMUM}, {"maximum", MOP_MAXIMUM}, {"where", MOP_WHERE},
    {"clip", MOP_CLIP},
};

static const char *op_names[MOP_COUNT] = {
    [MOP_NAME] = "name", [MOP_INPUT] = "input", [MOP_CONST] = "constant", [MOP_CAST] = "cast",
    [MOP_NEG] = "unary -", [MOP_INVERT] = "~", [MOP_ADD] = "+", [MOP_SUB] = "-", [MOP_MUL] = "*",
    [MOP_DIV] = "/", [MOP_FLOORDIV] = "//", [MOP_MOD] = "%", [MOP_POW] = "**", [MOP_AND] = "&",
    [MOP_OR] = "|", [MOP_XOR] = "^", [MOP_EQ] = "==", [MOP_NE] = "!=", [MOP_LT] = "<", [MOP_LE] = "<=",
    [MOP_GT] = ">", [MOP_GE] = ">=",
};

const char *oc_map_op_name(oc_map_op op)
{
    if (op_names[op]) return op_names[op];
    for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++)
        if (functions[i].op == op) return functions[i].name;
    return "?";
}

int oc_map_op_arity(oc_map_op op)
{
    if (op <= MOP_CONST) return 0;
    if (op < MOP_ADD) return 1;
    if (op < MOP_WHERE) return 2;
    return 3;
}

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

void oc_map_expr_live(const oc_map_expr *e, int k, char *live)
{
    if (k < 0 || live[k]) return;
    live[k] = 1;
    oc_map_expr_live(e, e->nodes[k].a, live);
    oc_map_expr_live(e, e->nodes[k].b, live);
    oc_map_expr_live(e, e->nodes[k].c, live);
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
    while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') i++;
    p->pos = i;
    char c = s[i];
    if (c == '\0') {
        p->kind = T_END;
        p->next = i;
        return;
    }
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)s[i + 1]))) {
        int j = i;
        while (isalnum((unsigned char)s[j]) || s[j] == '.' || s[j] == '_' ||
               ((s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E') && !(s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X'))))
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

/* A Python literal: decimal or 0x/0o/0b integers, floats with '.' or an exponent; '_'
 * separators as Python allows. Integers past int64 are an error (numpy would make them
 * object or uint64 arrays; map has no such type). */
static int number(parser *p)
{
    int pos = p->pos, len = p->next - p->pos;
    char buf[128];
    int n = 0;
    for (int i = 0; i < len && n < (int)sizeof buf - 1; i++)
        if (p->s[pos + i] != '_') buf[n++] = p->s[pos + i];
    buf[n] = '\0';
    if (len >= (int)sizeof buf) return syntax_error(p, pos, "number too long");
    int is_float = !(buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X' || buf[1] == 'o' || buf[1] == 'O' ||
                                       buf[1] == 'b' || buf[1] == 'B')) &&
                   strpbrk(buf, ".eE") != NULL;
    char *end;
    errno = 0;
    oc_map_node n0 = {.op = MOP_CONST, .a = -1, .b = -1, .c = -1, .pos = pos, .input = -1, .type = -1, .otype = -1};
    if (is_float) {
        n0.weak = MW_FLOAT;
        n0.value.f = strtod(buf, &end);
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
        if (errno == ERANGE || v > (unsigned long long)INT64_MAX)
            return syntax_error(p, pos, "integer literal does not fit in int64");
        n0.value.i = (int64_t)v;
    }
    if (*end != '\0') return syntax_error(p, pos, "malformed number");
    int k = oc_map_expr_add(p->e, n0);
    if (k < 0) p->st = oc_fail(p->ctx, OC_ERR_NO_MEMORY, "out of memory parsing the expression");
    advance(p);
    return k;
}

static int parse_expr(parser *p);
static int parse_factor(parser *p);

static int parse_call(parser *p, int name_pos, int name_len)
{
    oc_map_op op = MOP_COUNT;
    for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++)
        if ((int)strlen(functions[i].name) == name_len && strncmp(functions[i].name, p->s + name_pos, (size_t)name_len) == 0)
            op = functions[i].op;
    int args[4] = {-1, -1, -1, -1}, nargs = 0;
    advance(p); /* '(' */
    if (!is_op(p, ")")) {
        for (;;) {
            int a = parse_expr(p);
            if (a < 0) return -1;
            if (nargs < 4) args[nargs] = a;
            nargs++;
            if (is_op(p, ",")) {
                advance(p);
                continue;
            }
            if (!is_op(p, ")")) return syntax_error(p, p->pos, "expected ',' or ')' in the arguments");
            break;
        }
    }
    int close = p->pos;
    advance(p);
    if (op == MOP_COUNT) {
        if (p->st == OC_OK)
            p->st = oc_fail(p->ctx, OC_ERR_INPUT, "unknown function '%.*s' in the expression (known: abs sqrt exp log "
                            "log1p expm1 sin cos tan tanh arctan2 floor ceil minimum maximum clip where)", name_len,
                            p->s + name_pos);
        return -1;
    }
    int want = oc_map_op_arity(op);
    if (nargs != want) {
        if (p->st == OC_OK)
            p->st = oc_fail(p->ctx, OC_ERR_INPUT, "%s() takes %d argument%s, %d given (column %d)", oc_map_op_name(op),
                            want, want == 1 ? "" : "s", nargs, close + 1);
        return -1;
    }
    int k = add_node(p, op, name_pos, args[0], args[1], args[2]);
    if (k >= 0) p->e->nodes[k].name_pos = name_pos, p->e->nodes[k].name_len = name_len;
    return k;
}

static int parse_atom(parser *p)
{
    if (p->st != OC_OK) return -1;
    if (p->kind == T_NUM) return number(p);
    if (p->kind == T_NAME) {
        int pos = p->pos, len = p->next - p->pos;
        advance(p);
        if (is_op(p, "(")) return parse_call(p, pos, len);
        int is_true = len == 4 && strncmp(p->s + pos, "True", 4) == 0;
        int is_false = len == 5 && strncmp(p->s + pos, "False", 5) == 0;
        if (is_true || is_false) {
            int k = add_node(p, MOP_CONST, pos, -1, -1, -1);
            if (k >= 0) p->e->nodes[k].weak = MW_BOOL, p->e->nodes[k].value.i = is_true;
            return k;
        }
        int k = add_node(p, MOP_NAME, pos, -1, -1, -1);
        if (k >= 0) p->e->nodes[k].name_pos = pos, p->e->nodes[k].name_len = len;
        return k;
    }
    if (is_op(p, "(")) {
        advance(p);
        int k = parse_expr(p);
        if (k < 0) return -1;
        if (!is_op(p, ")")) return syntax_error(p, p->pos, "expected ')'");
        advance(p);
        return k;
    }
    if (p->kind == T_END) return syntax_error(p, p->pos, "unexpected end of the expression");
    if (p->kind == T_BAD) return syntax_error(p, p->pos, "unexpected character");
    return syntax_error(p, p->pos, "expected a number, a name or '('");
}

static int parse_power(parser *p)
{
    int a = parse_atom(p);
    if (a < 0 || !is_op(p, "**")) return a;
    int pos = p->pos;
    advance(p);
    int b = parse_factor(p); /* right associative, and binds a unary minus on its right */
    return b < 0 ? -1 : add_node(p, MOP_POW, pos, a, b, -1);
}

static int parse_factor(parser *p)
{
    if (p->kind == T_OP && (is_op(p, "-") || is_op(p, "+") || is_op(p, "~"))) {
        char c = p->op[0];
        int pos = p->pos;
        advance(p);
        int a = parse_factor(p);
        if (a < 0) return -1;
        if (c == '+') return a;
        return add_node(p, c == '-' ? MOP_NEG : MOP_INVERT, pos, a, -1, -1);
    }
    return parse_power(p);
}

typedef struct binop { const char *tok; oc_map_op op; } binop;

/* One left-associative precedence level over `ops`, its operands parsed by `next`. */
static int parse_level(parser *p, int (*next)(parser *), const binop *ops, int nops)
{
    int a = next(p);
    while (a >= 0) {
        int i = 0;
        while (i < nops && !is_op(p, ops[i].tok)) i++;
        if (i == nops) break;
        int pos = p->pos;
        advance(p);
        int b = next(p);
        if (b < 0) return -1;
        a = add_node(p, ops[i].op, pos, a, b, -1);
    }
    return a;
}

static int parse_term(parser *p)
{
    static const binop ops[] = {{"*", MOP_MUL}, {"/", MOP_DIV}, {"//", MOP_FLOORDIV}, {"%", MOP_MOD}};
    return parse_level(p, parse_factor, ops, 4);
}
static int parse_arith(parser *p)
{
    static const binop ops[] = {{"+", MOP_ADD}, {"-", MOP_SUB}};
    return parse_level(p, parse_term, ops, 2);
}
static int parse_and(parser *p)
{
    static const binop ops[] = {{"&", MOP_AND}};
    return parse_level(p, parse_arith, ops, 1);
}
static int parse_xor(parser *p)
{
    static const binop ops[] = {{"^", MOP_XOR}};
    return parse_level(p, parse_and, ops, 1);
}
static int parse_or(parser *p)
{
    static const binop ops[] = {{"|", MOP_OR}};
    return parse_level(p, parse_xor, ops, 1);
}

static const binop comparisons[] = {{"==", MOP_EQ}, {"!=", MOP_NE}, {"<", MOP_LT},
                                    {"<=", MOP_LE}, {">", MOP_GT},  {">=", MOP_GE}};

static int comparison_at(const parser *p)
{
    for (int i = 0; i < 6; i++)
        if (is_op(p, comparisons[i].tok)) return i;
    return -1;
}

static int parse_expr(parser *p)
{
    int a = parse_or(p);
    int i = a >= 0 ? comparison_at(p) : -1;
    if (i < 0) return a;
    int pos = p->pos;
    advance(p);
    int b = parse_or(p);
    if (b < 0) return -1;
    /* Python would read a < b < c as (a < b) and (b < c), which numpy arrays refuse. */
    if (comparison_at(p) >= 0)
        return syntax_error(p, p->pos, "comparisons do not chain; write (a < b) & (b < c)");
    return add_node(p, comparisons[i].op, pos, a, b, -1);
}

oc_status oc_map_parse(oc_context *ctx, const char *text, oc_map_expr *e)
{
    if (!text) return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "no expression given");
    memset(e, 0, sizeof *e);
    e->text = text;
    parser p = {.ctx = ctx, .e = e, .s = text};
    advance(&p);
    if (p.kind == T_END) {
        syntax_error(&p, p.pos, "the expression is empty");
    } else {
        int root = parse_expr(&p);
        if (root >= 0 && p.kind != T_END)
            syntax_error(&p, p.pos, is_op(&p, ")") ? "unmatched ')'" : "expected an operator or the end of the expression");
        e->root = root;
    }
    if (p.st != OC_OK) {
        oc_map_expr_free(e);
        return p.st;
    }
    return OC_OK;
}
