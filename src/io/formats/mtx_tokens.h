/*
 * mtx_tokens.h - the tokens of MatrixMarket lines, shared by the sequential reader (mtx.c)
 * and the parallel one (mtx_parallel.c).
 */
#ifndef OC_IO_FORMATS_MTX_TOKENS_H
#define OC_IO_FORMATS_MTX_TOKENS_H

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/text_buf.h"

#define MTX_MAX_TOKENS 6

typedef struct token {
    const char *s;
    size_t len;
} token;

/* Splits a line at whitespace into at most MTX_MAX_TOKENS tokens; returns how many there
 * are (MTX_MAX_TOKENS + 1 when there are more). */
static inline int split(const char *line, size_t len, token *tok)
{
    int n = 0;
    size_t k = 0;
    for (;;) {
        while (k < len && isspace((unsigned char)line[k])) ++k;
        if (k == len) return n;
        if (n == MTX_MAX_TOKENS) return n + 1;
        tok[n].s = line + k;
        while (k < len && !isspace((unsigned char)line[k])) ++k;
        tok[n].len = (size_t)(line + k - tok[n].s);
        ++n;
    }
}

/* The token for a message: its first 24 bytes, a NUL or a control byte as \\xHH. */
static inline const char *token_shown(const token *t, char *buf, size_t size)
{
    oc_text_excerpt(buf, size, t->s, t->len, 24);
    return buf;
}

static inline int token_is(const token *t, const char *word)
{
    return t->len == strlen(word) && strncasecmp(t->s, word, t->len) == 0;
}

/* A decimal integer token ("+12", "007"); 0 when it is not one or does not fit int64. */
static inline int parse_int(const token *t, int64_t *out)
{
    size_t k = 0;
    int neg = 0;
    if (k < t->len && (t->s[k] == '+' || t->s[k] == '-')) neg = t->s[k++] == '-';
    if (k == t->len) return 0;
    uint64_t v = 0;
    for (; k < t->len; ++k) {
        if (t->s[k] < '0' || t->s[k] > '9') return 0;
        /* Tested before the step, which could wrap past 2^64 and read as a small number. */
        if (v > ((uint64_t)INT64_MAX - (uint64_t)(t->s[k] - '0')) / 10) return 0;
        v = v * 10 + (uint64_t)(t->s[k] - '0');
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 1;
}

/* What a value token holds. Integers are judged by their digits, so values past int64 are
 * still told apart correctly. */
typedef enum mtx_value { VALUE_NOT_A_NUMBER, VALUE_ZERO, VALUE_ONE, VALUE_OTHER } mtx_value;

static inline mtx_value classify_value(const token *t, int real)
{
    if (!real) {
        size_t k = (t->len && (t->s[0] == '+' || t->s[0] == '-')) ? 1 : 0;
        int negative = t->len && t->s[0] == '-';
        if (k == t->len) return VALUE_NOT_A_NUMBER;
        uint64_t v = 0; /* saturates at 2: only 0, 1 and "more" matter */
        for (; k < t->len; ++k) {
            if (t->s[k] < '0' || t->s[k] > '9') return VALUE_NOT_A_NUMBER;
            v = v * 10 + (uint64_t)(t->s[k] - '0');
            if (v > 1) v = 2;
        }
        return v == 0 ? VALUE_ZERO : v == 1 && !negative ? VALUE_ONE : VALUE_OTHER;
    }
    double v;
    if (!oc_strtod_token(t->s, t->len, &v) || v != v) return VALUE_NOT_A_NUMBER; /* NaN: no answer to "is it a one" */
    return v == 0.0 ? VALUE_ZERO : v == 1.0 ? VALUE_ONE : VALUE_OTHER;
}

static inline int is_skippable(const char *line, size_t len)
{
    size_t k = 0;
    while (k < len && isspace((unsigned char)line[k])) ++k;
    return k == len || line[k] == '%';
}

/* The ones of the file as coordinates (0-based), mirrored ones included. */
typedef struct coords {
    uint32_t *row, *col;
    int64_t count, cap;
    int64_t most; /* the most entries the arrays may need: what the bytes can hold */
    int64_t rows, cols;
} coords;

/* Appends the one at (i, j). The arrays grow as entries arrive, by half again, never past
 * c->most: what is allocated follows what the file holds, not what its size line declares.
 * Returns 0 when memory runs out (or, for a caller's broken bound, c->most is reached). */
static inline int coords_push(coords *c, uint32_t i, uint32_t j)
{
    if (c->count == c->cap) {
        int64_t cap = c->cap < 4096 ? 4096 : c->cap + c->cap / 2;
        if (cap > c->most) cap = c->most;
        if (cap <= c->count) return 0;
        uint32_t *row = realloc(c->row, (size_t)cap * sizeof *row);
        if (row) c->row = row;
        uint32_t *col = row ? realloc(c->col, (size_t)cap * sizeof *col) : NULL;
        if (col) c->col = col;
        if (!row || !col) return 0;
        c->cap = cap;
    }
    c->row[c->count] = i, c->col[c->count++] = j;
    return 1;
}

/* The entries of body[0 .. size) (the lines after the size line) on `threads` threads, into
 * c (empty; its arrays are allocated to the count of ones found). Returns 1 when every line was a valid entry and
 * there were exactly `entries` of them; 0 otherwise (a cancel of ctx included), and the
 * caller parses the file again sequentially for its exact message (mtx_parallel.c). */
struct oc_context;
int oc_mtx_parse_parallel(struct oc_context *ctx, const unsigned char *body, size_t size, int pattern, int real,
                          int mirror, int binarize, int64_t entries, int threads, coords *c);

#endif
