/* text_buf.c - see text_buf.h. */
#include "core/text_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"

static int reserve(oc_text *t, size_t more)
{
    if (t->failed) return 0;
    if (t->len + more + 1 <= t->cap) return 1;
    size_t cap = t->cap ? t->cap : 1024;
    while (cap < t->len + more + 1) cap *= 2;
    char *data = realloc(t->data, cap);
    if (!data) {
        t->failed = 1;
        return 0;
    }
    t->data = data;
    t->cap = cap;
    return 1;
}

void oc_text_printf(oc_text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(t, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

void oc_text_json_string(oc_text *t, const char *s)
{
    if (!s) {
        oc_text_printf(t, "null");
        return;
    }
    oc_text_printf(t, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') oc_text_printf(t, "\\%c", *p);
        else if (*p == '\n') oc_text_printf(t, "\\n");
        else if (*p < 0x20) oc_text_printf(t, "\\u%04x", *p);
        else oc_text_printf(t, "%c", *p);
    }
    oc_text_printf(t, "\"");
}

oc_status oc_text_finish(oc_context *ctx, oc_text *t, char **out)
{
    if (t->failed || !reserve(t, 0)) {
        free(t->data);
        t->data = NULL;
        return oc_fail(ctx, OC_ERR_NO_MEMORY, "out of host memory rendering a report");
    }
    t->data[t->len] = '\0';
    *out = t->data;
    t->data = NULL;
    return OC_OK;
}
