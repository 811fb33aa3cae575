/*
 * text_buf.h - the library's text: a growing buffer for the reports it renders (JSON and
 * text), and numbers read and written with '.' whatever locale the caller set.
 * A failed allocation is remembered and reported once by oc_text_finish, so rendering code
 * appends without checking every call.
 */
#ifndef OC_CORE_TEXT_BUF_H
#define OC_CORE_TEXT_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include "outcore.h"

typedef struct oc_text {
    char *data;
    size_t len, cap;
    int failed;
} oc_text;

void oc_text_printf(oc_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a JSON string literal, quotes included (oc_text_escape's JSON rule); NULL
 * becomes null. */
void oc_text_json_string(oc_text *t, const char *s);
/* Appends s escaped for a terminal (oc_text_escape's terminal rule): every name from outside
 * (a path, a kernel name) in a text report goes through it. */
void oc_text_shown(oc_text *t, const char *s);
/* Hands the text to *out (caller frees) or fails with OC_ERR_NO_MEMORY. */
oc_status oc_text_finish(oc_context *ctx, oc_text *t, char **out);

/* Numbers in text as the formats define them, whatever locale the caller set.
 *
 * strtod, printf's %g and their kin read and write the decimal point of the thread's
 * LC_NUMERIC. A program that calls setlocale(LC_ALL, "") (Python's locale.setlocale, many
 * GUI and C programs) under a locale such as de_DE makes them write "0,7" and refuse "0.7":
 * a .tsv or .mtx of scores that scipy reads as 0.0, a .mtx input refused, a map literal
 * misread, JSON that is no JSON. The library's numbers in files, JSON, expressions and its
 * rate cache go through these, which use the "C" locale on the calling thread for the call
 * alone (uselocale, POSIX 2008), so the caller's locale is left as it was.
 */
/* The C numeric locale on the calling thread until oc_numeric_end(what it returned): for a
 * loop that writes many numbers, one switch rather than one a number. NULL: none was made
 * (the thread's own locale stays). */
void *oc_numeric_begin(void);
void oc_numeric_end(void *saved);
double oc_strtod(const char *s, char **end);
/* The len bytes at s as one decimal number, whatever their length (a token of a line, not
 * NUL-terminated): 1 with *out set when all of them are a number strtod reads and not a
 * hexadecimal one, else 0 (and when out of memory for a token past 63 bytes). */
int oc_strtod_token(const char *s, size_t len, double *out);
/* The first bytes of a token of input for a message: printable ASCII as it is, any other
 * byte (a NUL, a control) as \xHH, "..." past `most` bytes; out always NUL-terminated. */
void oc_text_excerpt(char *out, size_t size, const char *bytes, size_t len, size_t most);
float oc_strtof(const char *s, char **end);
int oc_snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int oc_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
/* v in the fewest significant digits that read back as v (in float32 when single): the
 * digits numpy and Python show, where %g's six can make 1.0000001 read "1"; without an
 * exponent from 10^-4 to 10^16 (80, not 8e+01). */
const char *oc_shortest(double v, int single, char buf[40]);

#endif
