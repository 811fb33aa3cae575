/*
 * ptx_directives.c - the PTX directives that decide where and how a kernel launches, read
 * from the text itself (ptxas' -v report does not repeat them).
 *
 *     .target sm_90a                      the oldest architecture the PTX compiles for; a
 *                                         suffix ('a', 'f') ties it to that architecture
 *     .visible .entry name(              an entry function (a kernel), then, before its body:
 *         .param .u64 name_param_0
 *     )
 *     .maxntid 256, 1, 1                  at most 256 threads per block: a larger block does
 *                                         not launch, whatever the registers
 *     .reqntid 128, 1, 1                  exactly this block shape (no other size launches)
 *     .minnctapersm 2                     ptxas caps registers so 2 such blocks fit on an SM
 *     .maxnreg 64                         register cap of this kernel; overrides -maxrregcount
 *     {
 *
 * The entry directives are read the way ptxas reads them: token by token, so that line
 * comments (//) and block comments count as blanks wherever they stand, inside an argument
 * list too, and a list may run over several lines; numbers are PTX integer literals (decimal,
 * 0x hex, 0b binary, 0 octal, each with an optional U); a directive given twice takes its
 * last value (ptxas -arch=sm_90 makes ".maxntid 128, 1, 1" then ".maxntid 64" a 64-thread
 * bound); and only an entry's own header counts, from its name to the '{' of its body (a
 * declaration, ".entry k(...);", has none). .maxnctapersm is not read: ptxas refuses it
 * since PTX 2.1.
 */
#include <stdint.h>
#include <string.h>

#include "inspect/ptx_directives.h"

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Reads a decimal number at *p, after blanks, without passing end; advances *p past it.
 * Returns 0 when there is none. The text need not be NUL-terminated. */
static int read_number(const char **p, const char *end, long *value)
{
    const char *q = *p;
    while (q < end && (*q == ' ' || *q == '\t')) q++;
    if (q >= end || *q < '0' || *q > '9') return 0;
    long v = 0;
    while (q < end && *q >= '0' && *q <= '9') {
        if (v < 100000000) v = v * 10 + (*q - '0');
        q++;
    }
    *value = v;
    *p = q;
    return 1;
}

int oc_ptx_target_cc(const char *text, size_t size, char *suffix)
{
    if (suffix) *suffix = '\0';
    const char *t = oc_ptx_find_directive(text, size, ".target");
    if (!t) return 0;
    const char *end = text + size;
    while (t < end && (*t == ' ' || *t == '\t')) t++;
    if (end - t < 3 || strncmp(t, "sm_", 3) != 0) return 0;
    t += 3;
    long cc;
    if (!read_number(&t, end, &cc) || cc <= 0 || cc >= 10000) return 0;
    if (suffix && t < end && (*t == 'a' || *t == 'f')) *suffix = *t;
    return (int)cc;
}

/* One token of PTX text: a word (a directive, a name, a number), a string, or one other
 * character. */
typedef struct ptx_token {
    const char *at;
    size_t len;
} ptx_token;

static int is_space(char c) { return is_blank(c) || c == '\f' || c == '\v'; }

static int is_word(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
           c == '%';
}

/* The token at or after *p, before end, with *p moved past it; 0 at the end of the text.
 * Blanks and comments (// to the end of the line; a block comment to its close, or to the
 * end of the text when it does not close) separate tokens and are no part of them. A string
 * runs to its closing quote (or the end of its line), so that comment marks inside it (a
 * .file path) count as text; a directive starts at its '.', so ".visible.entry" is two. */
static int next_token(const char **p, const char *end, ptx_token *t)
{
    const char *q = *p;
    for (;;) {
        while (q < end && is_space(*q)) q++;
        if (end - q >= 2 && q[0] == '/' && q[1] == '/') {
            while (q < end && *q != '\n') q++;
        } else if (end - q >= 2 && q[0] == '/' && q[1] == '*') {
            q += 2;
            while (end - q >= 2 && !(q[0] == '*' && q[1] == '/')) q++;
            q = end - q >= 2 ? q + 2 : end;
        } else {
            break;
        }
    }
    if (q >= end) {
        *p = end;
        return 0;
    }
    const char *s = q++;
    if (*s == '"') {
        while (q < end && *q != '"' && *q != '\n') q += *q == '\\' && end - q >= 2 ? 2 : 1;
        if (q < end && *q == '"') q++;
    } else if (*s == '.' || is_word(*s)) {
        while (q < end && is_word(*q)) q++;
    }
    t->at = s;
    t->len = (size_t)(q - s);
    *p = q;
    return 1;
}

static int token_is(const ptx_token *t, const char *word)
{
    size_t n = strlen(word);
    return t->len == n && memcmp(t->at, word, n) == 0;
}

const char *oc_ptx_find_directive(const char *text, size_t size, const char *directive)
{
    const char *p = text, *end = text + size;
    ptx_token t;
    while (next_token(&p, end, &t))
        if (token_is(&t, directive)) return t.at + t.len;
    return NULL;
}

/* The largest value a directive may name (threads x*y*z, registers, blocks): larger literals
 * and products read as just above it, never wrapping. */
#define BOUND_MAX ((uint64_t)1 << 20)
#define LITERAL_MAX ((uint64_t)1 << 33) /* past any 32-bit literal */

/* The value of a PTX integer literal: [1-9][0-9]* decimal, 0[xX] hex, 0[bB] binary or 0[0-7]*
 * octal, each with an optional U (a 'u' is a syntax error to ptxas). 0 when the token is no
 * such literal ("08", "0x", "-3", "64u"); values past 2^32 read as LITERAL_MAX. */
static int literal_value(const ptx_token *t, uint64_t *value)
{
    const char *s = t->at;
    size_t n = t->len, i = 0;
    if (n > 0 && s[n - 1] == 'U') n--;
    if (n == 0 || s[0] < '0' || s[0] > '9') return 0;
    unsigned base = 10;
    if (s[0] == '0' && n >= 2 && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        i = 2;
    } else if (s[0] == '0' && n >= 2 && (s[1] == 'b' || s[1] == 'B')) {
        base = 2;
        i = 2;
    } else if (s[0] == '0') {
        base = 8; /* "0" itself too */
    }
    if (i == n && base != 8) return 0; /* "0x", "0b" */
    uint64_t v = 0;
    for (; i < n; i++) {
        char c = s[i];
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16;
        if (d >= base) return 0;
        v = v * base + d;
        if (v > LITERAL_MAX) v = LITERAL_MAX;
    }
    *value = v;
    return 1;
}

/* The argument list of a directive after *p: one to `most` literals separated by commas
 * ("x[, y[, z]]" of a thread directive: their product). Returns it, or 0 when the list is
 * malformed (a token that is no literal, a comma too many), has a zero, or exceeds BOUND_MAX.
 * *p moves past the literals and commas read and never past anything else, so a '{' or a
 * directive after a bad list still counts. */
static int directive_arguments(const char **p, const char *end, int most)
{
    uint64_t product = 1;
    for (int i = 0;; i++) {
        const char *q = *p;
        ptx_token t;
        uint64_t v;
        if (!next_token(&q, end, &t) || !literal_value(&t, &v)) return 0;
        *p = q;
        /* product <= BOUND_MAX + 1 and v <= LITERAL_MAX: product * v stays below 2^54. */
        product *= v;
        if (product > BOUND_MAX) product = BOUND_MAX + 1;
        if (!next_token(&q, end, &t) || !token_is(&t, ",")) break;
        if (i + 1 == most) return 0;
        *p = q;
    }
    return product > 0 && product <= BOUND_MAX ? (int)product : 0;
}

/* The launch directives of one entry. */
typedef struct entry_directives {
    int maxntid, reqntid, maxnreg, minnctapersm;
} entry_directives;

/* Reads the header of an entry from *p (just after its name) to the '{' of its body, each
 * directive's last occurrence winning; *p moves to the end of the header. Returns 1 for a
 * definition (or a header cut off by the end of the text), 0 for a declaration (a ';' right
 * after the parameter list: ".entry k(...);") or a header another .entry or .func
 * interrupts, whose directives are no entry's. A ';' elsewhere ends a statement of the
 * header (.pragma "nounroll";). */
static int read_header(const char **p, const char *end, entry_directives *d)
{
    memset(d, 0, sizeof *d);
    ptx_token t;
    int depth = 0, after_params = 1;
    for (const char *q = *p; next_token(&q, end, &t); *p = q) {
        if (token_is(&t, "{")) {
            *p = q;
            return 1;
        }
        if ((token_is(&t, ";") && after_params) || token_is(&t, ".entry") || token_is(&t, ".func")) return 0;
        after_params = 0;
        if (token_is(&t, "(")) depth++;
        else if (token_is(&t, ")") && depth > 0) after_params = --depth == 0;
        else if (token_is(&t, ".maxntid")) d->maxntid = directive_arguments(&q, end, 3);
        else if (token_is(&t, ".reqntid")) d->reqntid = directive_arguments(&q, end, 3);
        else if (token_is(&t, ".maxnreg")) d->maxnreg = directive_arguments(&q, end, 1);
        else if (token_is(&t, ".minnctapersm")) d->minnctapersm = directive_arguments(&q, end, 1);
    }
    *p = end;
    return 1;
}

void oc_ptx_entry_directives(const char *text, size_t size, oc_kernel_list *list, int first)
{
    const char *p = text, *end = text + size;
    ptx_token t, name;
    while (next_token(&p, end, &t)) {
        if (!token_is(&t, ".entry") || !next_token(&p, end, &name)) continue;
        entry_directives d;
        if (!read_header(&p, end, &d)) continue;
        for (int i = first; i < list->count; i++) {
            oc_kernel_entry *e = &list->items[i];
            if (strlen(e->name) != name.len || memcmp(e->name, name.at, name.len) != 0) continue;
            e->maxntid = d.maxntid;
            e->reqntid = e->res.required_threads = d.reqntid; /* no other block size launches */
            e->maxnreg = d.maxnreg;
            e->minnctapersm = d.minnctapersm;
            int bound = e->maxntid;
            if (e->reqntid > 0 && (bound == 0 || e->reqntid < bound)) bound = e->reqntid;
            if (bound > 0) e->launch_bounds = e->res.max_threads_per_block = bound;
        }
    }
}
