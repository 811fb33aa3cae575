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
 *     .reqntid 128, 1, 1                  exactly this block shape (a larger one does not launch)
 *     .minnctapersm 2                     ptxas caps registers so 2 such blocks fit on an SM
 *     .maxnreg 64                         register cap of this kernel; overrides -maxrregcount
 *     {
 */
#include <string.h>

#include "inspect/ptx_directives.h"

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* 1 when text[at] follows a "//" on its line: a comment, which declares nothing. */
static int in_comment(const char *text, size_t at)
{
    for (size_t i = at; i > 0 && text[i - 1] != '\n'; i--)
        if (i >= 2 && text[i - 1] == '/' && text[i - 2] == '/') return 1;
    return 0;
}

const char *oc_ptx_find_directive(const char *text, size_t size, const char *directive)
{
    size_t n = strlen(directive);
    for (size_t i = 0; i + n < size; i++) {
        if ((i == 0 || is_blank(text[i - 1])) && memcmp(text + i, directive, n) == 0 && is_blank(text[i + n]) &&
            !in_comment(text, i))
            return text + i + n;
    }
    return NULL;
}

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

/* Threads named by "x[, y[, z]]" at p; 0 when malformed or zero. */
static int thread_count(const char *p, const char *end)
{
    long dims[3] = {1, 1, 1};
    if (!read_number(&p, end, &dims[0])) return 0;
    for (int i = 1; i < 3; i++) {
        const char *q = p;
        while (q < end && (*q == ' ' || *q == '\t')) q++;
        if (q >= end || *q != ',') break;
        q++;
        if (!read_number(&q, end, &dims[i])) return 0;
        p = q;
    }
    /* Overflow-checked: a product that wraps must not read as a small, plausible bound. */
    long threads;
    if (__builtin_mul_overflow(dims[0], dims[1], &threads) || __builtin_mul_overflow(threads, dims[2], &threads))
        return 0;
    return threads > 0 && threads <= 1 << 20 ? (int)threads : 0;
}

/* The header of entry `name`: from just after its name to the '{' of its body. */
static int entry_header(const char *text, size_t size, const char *name, const char **begin, const char **end)
{
    size_t n = strlen(name);
    const char *limit = text + size;
    for (const char *at = text; (at = oc_ptx_find_directive(at, (size_t)(limit - at), ".entry")) != NULL;) {
        while (at < limit && is_blank(*at)) at++;
        if ((size_t)(limit - at) > n && memcmp(at, name, n) == 0 && (at[n] == '(' || is_blank(at[n]))) {
            *begin = at + n;
            *end = memchr(*begin, '{', (size_t)(limit - *begin));
            if (!*end) *end = limit;
            return 1;
        }
    }
    return 0;
}

/* The argument of `directive` inside [begin, end) (threads: "x, y, z" multiplied), 0 when
 * absent or malformed. */
static int directive_value(const char *begin, const char *end, const char *directive, int threads)
{
    const char *p = oc_ptx_find_directive(begin, (size_t)(end - begin), directive);
    if (!p) return 0;
    if (threads) return thread_count(p, end);
    long v;
    return read_number(&p, end, &v) && v > 0 && v <= 1 << 20 ? (int)v : 0;
}

void oc_ptx_entry_directives(const char *text, size_t size, oc_kernel_list *list, int first)
{
    for (int i = first; i < list->count; i++) {
        oc_kernel_entry *e = &list->items[i];
        const char *begin, *end;
        if (!entry_header(text, size, e->name, &begin, &end)) continue;
        e->maxntid = directive_value(begin, end, ".maxntid", 1);
        e->reqntid = directive_value(begin, end, ".reqntid", 1);
        e->maxnreg = directive_value(begin, end, ".maxnreg", 0);
        e->minnctapersm = directive_value(begin, end, ".minnctapersm", 0);
        int bound = e->maxntid;
        if (e->reqntid > 0 && (bound == 0 || e->reqntid < bound)) bound = e->reqntid;
        if (bound > 0) e->launch_bounds = e->res.max_threads_per_block = bound;
    }
}
