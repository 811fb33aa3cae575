/*
 * c_locale.h - numbers in text as the formats define them, whatever locale the caller set.
 *
 * strtod, printf's %g and their kin read and write the decimal point of the thread's
 * LC_NUMERIC. A program that calls setlocale(LC_ALL, "") (Python's locale.setlocale, many
 * GUI and C programs) under a locale such as de_DE makes them write "0,7" and refuse "0.7":
 * a .tsv or .mtx of scores that scipy reads as 0.0, a .mtx input refused, a map literal
 * misread, JSON that is no JSON. The library's numbers in files, JSON, expressions and its
 * rate cache go through these, which use the "C" locale on the calling thread for the call
 * alone (uselocale, POSIX 2008), so the caller's locale is left as it was.
 */
#ifndef OC_CORE_C_LOCALE_H
#define OC_CORE_C_LOCALE_H

#include <stdarg.h>
#include <stddef.h>

double oc_strtod(const char *s, char **end);
float oc_strtof(const char *s, char **end);
int oc_snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int oc_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);

#endif
