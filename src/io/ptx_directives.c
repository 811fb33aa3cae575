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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_image.h"

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

const char *oc_ptx_find_directive(const char *text, size_t size, const char *directive)
{
    size_t n = strlen(directive);
    for (size_t i = 0; i + n < size; i++) {
        if ((i == 0 || is_blank(text[i - 1])) && memcmp(text + i, directive, n) == 0 && is_blank(text[i + n]))
            return text + i + n;
    }
    return NULL;
}

int oc_ptx_target_cc(const char *text, size_t size, char *suffix)
{
    if (suffix) *suffix = '\0';
    const char *t = oc_ptx_find_directive(text, size, ".target");
    if (!t) return 0;
    const char *end = text + size;
    while (t < end && (*t == ' ' || *t == '\t')) t++;
    if (end - t < 4 || strncmp(t, "sm_", 3) != 0) return 0;
    char *after = NULL;
    long cc = strtol(t + 3, &after, 10);
    if (suffix && after < end && (*after == 'a' || *after == 'f')) *suffix = *after;
    return cc > 0 && cc < 10000 ? (int)cc : 0;
}

/* Threads named by "x[, y[, z]]" after a directive; 0 when malformed. */
static int thread_count(const char *p)
{
    int x = 1, y = 1, z = 1;
    int got = sscanf(p, " %d , %d , %d", &x, &y, &z);
    return got >= 1 && x > 0 && y > 0 && z > 0 ? x * y * z : 0;
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

/* The integer argument of `directive` inside [begin, end), 0 when absent. */
static int directive_value(const char *begin, const char *end, const char *directive, int threads)
{
    const char *p = oc_ptx_find_directive(begin, (size_t)(end - begin), directive);
    if (!p) return 0;
    if (threads) return thread_count(p);
    int v = atoi(p);
    return v > 0 ? v : 0;
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
