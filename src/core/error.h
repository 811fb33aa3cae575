/*
 * error.h - status propagation inside the library (the NCCL pattern).
 *
 * A function that fails records a one-line message on the context with oc_fail() and
 * returns the status. Callers forward it with OC_CHECK(ctx, call), which appends "file:line" to
 * the context's trace, so the user sees one line and a --verbose log sees where it came
 * from. Broken invariants use assert(), never a status.
 */
#ifndef OC_CORE_ERROR_H
#define OC_CORE_ERROR_H

#include "outcore.h"

/* Records status and a printf-style one-line message on ctx (ctx may be NULL), adds the
 * first trace frame, and returns status. */
oc_status oc_fail_at(oc_context *ctx, oc_status status, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Sends a printf-style one-line warning to ctx's warning function (stderr by default:
 * oc_context_set_warning_fn), on the calling thread; nothing when ctx is NULL. */
void oc_warn(oc_context *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends one "file:line" frame to ctx's trace; returns status unchanged. */
oc_status oc_trace_at(oc_context *ctx, oc_status status, const char *file, int line);

#define oc_fail(ctx, status, ...) oc_fail_at((ctx), (status), __FILE__, __LINE__, __VA_ARGS__)

/* Forwards a failing status of call to the caller, recording on ctx's trace where it passed. */
#define OC_CHECK(ctx, call)                                                                   \
    do {                                                                                      \
        oc_status oc_check_s_ = (call);                                                       \
        if (oc_check_s_ != OC_OK) return oc_trace_at((ctx), oc_check_s_, __FILE__, __LINE__); \
    } while (0)

/* The same for functions that release resources at a label: stores call's status in st and,
 * when it failed, records the frame on ctx and jumps to label. */
#define OC_CHECK_GOTO(ctx, st, call, label)               \
    do {                                                  \
        (st) = (call);                                    \
        if ((st) != OC_OK) {                              \
            oc_trace_at((ctx), (st), __FILE__, __LINE__); \
            goto label;                                   \
        }                                                 \
    } while (0)

/* True when the current job on ctx was asked to stop. */
int oc_cancelled(const oc_context *ctx);

#endif
