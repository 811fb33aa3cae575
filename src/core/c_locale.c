/*
 * c_locale.c - the "C" numeric locale for the library's own numbers (see c_locale.h).
 */
#include "core/c_locale.h"

#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static locale_t c_numeric;
static pthread_once_t c_numeric_once = PTHREAD_ONCE_INIT;

static void make_c_numeric(void) { c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0); }

/* Switches the calling thread to the C numeric locale; returns what to restore, or 0 when
 * nothing was switched (no locale object: the thread's own is used, as before). */
static locale_t enter(void)
{
    pthread_once(&c_numeric_once, make_c_numeric);
    return c_numeric ? uselocale(c_numeric) : (locale_t)0;
}

static void leave(locale_t old)
{
    if (old) uselocale(old);
}

double oc_strtod(const char *s, char **end)
{
    locale_t old = enter();
    double v = strtod(s, end);
    leave(old);
    return v;
}

float oc_strtof(const char *s, char **end)
{
    locale_t old = enter();
    float v = strtof(s, end);
    leave(old);
    return v;
}

int oc_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
    locale_t old = enter();
    int n = vsnprintf(buf, size, fmt, ap);
    leave(old);
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
