/*
 * text_buf.h - a growing text buffer for the reports the library renders (JSON and text).
 * A failed allocation is remembered and reported once by oc_text_finish, so rendering code
 * appends without checking every call.
 */
#ifndef OC_CORE_TEXT_BUF_H
#define OC_CORE_TEXT_BUF_H

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

#endif
