/* text_buf.c - see text_buf.h. */
#include "core/text_buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <locale.h>
#include <pthread.h>

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
    int n = oc_vsnprintf(NULL, 0, fmt, ap); /* numbers with '.', whatever the caller's locale */
    va_end(ap);
    if (n < 0 || !reserve(t, (size_t)n)) return;
    va_start(ap, fmt);
    oc_vsnprintf(t->data + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* The length of the valid UTF-8 sequence at p (2 to 4 bytes: no overlong form, no
 * surrogate, nothing past U+10FFFF), or 0 when the bytes there are not one; *cp gets its
 * code point. */
static int utf8_sequence(const unsigned char *p, uint32_t *cp)
{
    int len;
    uint32_t c, least;
    if (p[0] >= 0xC2 && p[0] <= 0xDF) len = 2, c = p[0] & 0x1Fu, least = 0x80;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF) len = 3, c = p[0] & 0x0Fu, least = 0x800;
    else if (p[0] >= 0xF0 && p[0] <= 0xF4) len = 4, c = p[0] & 0x07u, least = 0x10000;
    else return 0;
    for (int k = 1; k < len; ++k) {
        if ((p[k] & 0xC0) != 0x80) return 0; /* also stops at the NUL */
        c = c << 6 | (p[k] & 0x3Fu);
    }
    if (c < least || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return len;
}

/* Appends n bytes to out when they fit (size counts the NUL), counting them in *len. */
static void put(char *out, size_t size, size_t *len, const char *bytes, size_t n)
{
    for (size_t k = 0; k < n; ++k, ++*len)
        if (*len + 1 < size) out[*len] = bytes[k];
}

size_t oc_text_escape(char *out, size_t size, const char *text, oc_escape how)
{
    size_t len = 0;
    char buf[8];
    for (const unsigned char *p = (const unsigned char *)(text ? text : ""); *p;) {
        uint32_t cp = 0;
        int seq = *p >= 0x80 ? utf8_sequence(p, &cp) : 0;
        if (seq > 0 && !(how == OC_ESCAPE_TERMINAL && cp <= 0x9F)) { /* valid UTF-8, no C1 control */
            put(out, size, &len, (const char *)p, (size_t)seq);
            p += seq;
            continue;
        }
        if (seq > 0) { /* a C1 control on a terminal: its bytes, escaped */
            for (int k = 0; k < seq; ++k, ++p)
                put(out, size, &len, buf, (size_t)snprintf(buf, sizeof buf, "\\x%02X", *p));
            continue;
        }
        unsigned char c = *p++;
        if (how == OC_ESCAPE_TERMINAL) {
            if (c >= 0x20 && c < 0x7F) put(out, size, &len, (const char *)&c, 1);
            else put(out, size, &len, buf, (size_t)snprintf(buf, sizeof buf, "\\x%02X", c));
            continue;
        }
        const char *named = c == '"'    ? "\\\""
                            : c == '\\' ? "\\\\"
                            : c == '\n' ? "\\n"
                            : c == '\t' ? "\\t"
                            : c == '\r' ? "\\r"
                            : c == '\b' ? "\\b"
                            : c == '\f' ? "\\f"
                                        : NULL;
        if (named) put(out, size, &len, named, strlen(named));
        else if (c >= 0x80) put(out, size, &len, "\\ufffd", 6); /* a byte of invalid UTF-8 */
        else if (c < 0x20 || c == 0x7F) put(out, size, &len, buf, (size_t)snprintf(buf, sizeof buf, "\\u%04x", c));
        else put(out, size, &len, (const char *)&c, 1);
    }
    if (size > 0) out[len < size ? len : size - 1] = '\0';
    return len;
}

static void append_escaped(oc_text *t, const char *s, oc_escape how)
{
    size_t n = oc_text_escape(NULL, 0, s, how);
    if (!reserve(t, n)) return;
    oc_text_escape(t->data + t->len, n + 1, s, how);
    t->len += n;
}

void oc_text_json_string(oc_text *t, const char *s)
{
    if (!s) {
        oc_text_printf(t, "null");
        return;
    }
    oc_text_printf(t, "\"");
    append_escaped(t, s, OC_ESCAPE_JSON);
    oc_text_printf(t, "\"");
}

void oc_text_shown(oc_text *t, const char *s) { append_escaped(t, s, OC_ESCAPE_TERMINAL); }

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

/* ---------------------------------------------------------------- numbers with '.' */

static locale_t c_numeric;
static pthread_once_t c_numeric_once = PTHREAD_ONCE_INIT;

static void make_c_numeric(void) { c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

void *oc_numeric_begin(void)
{
    pthread_once(&c_numeric_once, make_c_numeric);
    return c_numeric ? (void *)uselocale(c_numeric) : NULL;
}

void oc_numeric_end(void *saved)
{
    if (saved) uselocale((locale_t)saved);
}

double oc_strtod(const char *s, char **end)
{
    void *old = oc_numeric_begin();
    double v = strtod(s, end);
    oc_numeric_end(old);
    return v;
}

int oc_strtod_token(const char *s, size_t len, double *out)
{
    /* Decimal only: strtod also reads hexadecimal floats (0x1p0), which no text format
     * outcore reads holds (numpy's and scipy's readers refuse them). */
    char small[64], *buf = len < sizeof small ? small : malloc(len + 1);
    if (!buf || memchr(s, '\0', len) || memchr(s, 'x', len) || memchr(s, 'X', len)) {
        if (buf != small) free(buf);
        return 0;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    *out = oc_strtod(buf, &end);
    const int whole = len > 0 && end == buf + len;
    if (buf != small) free(buf);
    return whole;
}

void oc_text_excerpt(char *out, size_t size, const char *bytes, size_t len, size_t most)
{
    size_t at = 0;
    char one[8];
    for (size_t k = 0; k < len && k < most; ++k) {
        const unsigned char c = (unsigned char)bytes[k];
        const int n =
            c >= 0x20 && c < 0x7F ? snprintf(one, sizeof one, "%c", c) : snprintf(one, sizeof one, "\\x%02X", c);
        for (int i = 0; i < n && at + 1 < size; ++i) out[at++] = one[i];
    }
    for (const char *dots = len > most ? "..." : ""; *dots && at + 1 < size; ++dots) out[at++] = *dots;
    if (size) out[at < size ? at : size - 1] = '\0';
}

float oc_strtof(const char *s, char **end)
{
    void *old = oc_numeric_begin();
    float v = strtof(s, end);
    oc_numeric_end(old);
    return v;
}

int oc_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
    void *old = oc_numeric_begin();
    int n = vsnprintf(buf, size, fmt, ap);
    oc_numeric_end(old);
    return n;
}

int oc_snprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = oc_vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n;
}

const char *oc_shortest(double v, int single, char buf[40])
{
    int digits = 1;
    for (; digits <= 17; ++digits) {
        oc_snprintf(buf, 40, "%.*g", digits, v);
        if (single ? oc_strtof(buf, NULL) == (float)v : oc_strtod(buf, NULL) == v) break;
    }
    /* %g writes 80 in one digit as 8e+01: below 10^16 a whole number, and anything from
     * 10^-4 up, reads as Python shows it, without an exponent (the same value). */
    char *e = strchr(buf, 'e');
    if (e && digits <= 17) {
        int exponent = atoi(e + 1);
        if (exponent >= -4 && exponent < 16)
            oc_snprintf(buf, 40, "%.*f", exponent < digits - 1 ? digits - 1 - exponent : 0, v);
    }
    return buf;
}
