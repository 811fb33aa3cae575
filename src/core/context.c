#include "core/context.h"

#include <assert.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/text_buf.h"
#include "core/process/after_job.h"
#include "core/error.h"
#include "core/process/fork_locks.h"

const char *oc_version(void)
{
#define OC_STR2(x) #x
#define OC_STR(x) OC_STR2(x)
    return OC_STR(OC_VERSION_MAJOR) "." OC_STR(OC_VERSION_MINOR) "." OC_STR(OC_VERSION_PATCH);
}

const char *oc_status_string(oc_status status)
{
    switch (status) {
    case OC_OK:
        return "ok";
    case OC_ERR_INVALID_ARGUMENT:
        return "invalid argument";
    case OC_ERR_INPUT:
        return "bad input";
    case OC_ERR_IO:
        return "i/o error";
    case OC_ERR_NO_MEMORY:
        return "out of host memory";
    case OC_ERR_DEVICE_NO_MEMORY:
        return "out of device memory budget";
    case OC_ERR_DEVICE:
        return "device error";
    case OC_ERR_UNSUPPORTED:
        return "unsupported";
    case OC_ERR_CANCELLED:
        return "cancelled";
    case OC_ERR_INTERNAL:
        return "internal error";
    }
    return "unknown status";
}

/* Every live context, so that oc_release_cached_memory (no context argument, any thread)
 * reaches the staging each one keeps. The lock guards the list's links only; it is taken
 * before a cache's own lock, never after. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
OC_FORK_LOCK(live_lock, OC_FORK_RANK_CONTEXTS, NULL)
static oc_context *live_head;

void oc_context_set_removed_fn(oc_context *ctx, oc_removed_fn fn, void *user)
{
    if (!ctx) return;
    ctx->removed_fn = fn;
    ctx->removed_user = user;
}

void oc_context_set_warning_fn(oc_context *ctx, oc_warning_fn fn, void *user)
{
    if (!ctx) return;
    ctx->warning_fn = fn;
    ctx->warning_user = user;
}

oc_status oc_context_create(oc_context **out)
{
    if (!out) return OC_ERR_INVALID_ARGUMENT;
    oc_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return OC_ERR_NO_MEMORY;
    if (pthread_mutex_init(&ctx->error_lock, NULL) != 0) {
        free(ctx);
        return OC_ERR_NO_MEMORY;
    }
    atomic_init(&ctx->cancel, 0);
    atomic_init(&ctx->pinned_cache, NULL);
    atomic_init(&ctx->kept_device, NULL);
    atomic_init(&ctx->kept_device_bytes, 0);
    pthread_mutex_lock(&live_lock);
    ctx->live_next = live_head;
    if (live_head) live_head->live_prev = ctx;
    live_head = ctx;
    pthread_mutex_unlock(&live_lock);
    *out = ctx;
    return OC_OK;
}

void oc_context_free(oc_context *ctx)
{
    if (!ctx) return;
    oc_after_job_wait(); /* a job's release may still hand staging back to this context */
    /* Unlinked first: once out of the list no other thread can reach its cache. */
    pthread_mutex_lock(&live_lock);
    if (ctx->live_prev) ctx->live_prev->live_next = ctx->live_next;
    else live_head = ctx->live_next;
    if (ctx->live_next) ctx->live_next->live_prev = ctx->live_prev;
    pthread_mutex_unlock(&live_lock);
    struct oc_pinned_cache *cache = atomic_load(&ctx->pinned_cache);
    if (cache) ctx->pinned_cache_free(cache);
    oc_context_free_kept_device(ctx);
    oc_workers_free(ctx->workers);
    pthread_mutex_destroy(&ctx->error_lock);
    free(ctx);
}

oc_status oc_context_workers(oc_context *ctx, int threads, oc_workers **out)
{
    if (!ctx->workers) OC_CHECK(ctx, oc_workers_create(ctx, threads, &ctx->workers));
    else OC_CHECK(ctx, oc_workers_grow(ctx, ctx->workers, threads));
    *out = ctx->workers;
    return OC_OK;
}

struct oc_pinned_cache *oc_context_pinned_cache(oc_context *ctx) { return atomic_load(&ctx->pinned_cache); }

void oc_context_adopt_pinned_cache(oc_context *ctx, struct oc_pinned_cache *cache,
                                   void (*free_fn)(struct oc_pinned_cache *cache))
{
    assert(atomic_load(&ctx->pinned_cache) == NULL);
    ctx->pinned_cache_free = free_fn; /* before the pointer: a reader that sees it sees the call */
    atomic_store(&ctx->pinned_cache, cache);
}

oc_kept_device *oc_context_take_kept_device(oc_context *ctx)
{
    oc_kept_device *block = atomic_exchange(&ctx->kept_device, NULL);
    if (block) atomic_fetch_sub(&ctx->kept_device_bytes, (long long)block->bytes);
    return block;
}

void oc_context_keep_device(oc_context *ctx, oc_kept_device *block)
{
    atomic_fetch_add(&ctx->kept_device_bytes, (long long)block->bytes);
    oc_kept_device *old = atomic_exchange(&ctx->kept_device, block);
    if (old) {
        atomic_fetch_sub(&ctx->kept_device_bytes, (long long)old->bytes);
        old->free(old);
    }
}

void oc_context_free_kept_device(oc_context *ctx)
{
    oc_kept_device *block = oc_context_take_kept_device(ctx);
    if (block) block->free(block);
}

void oc_context_for_each_live(void (*fn)(oc_context *ctx, void *arg), void *arg)
{
    pthread_mutex_lock(&live_lock);
    for (oc_context *c = live_head; c; c = c->live_next) fn(c, arg);
    pthread_mutex_unlock(&live_lock);
}

const char *oc_context_last_error(const oc_context *ctx) { return ctx ? ctx->message : ""; }

const char *oc_context_error_trace(const oc_context *ctx) { return ctx ? ctx->trace : ""; }

void oc_context_cancel(oc_context *ctx)
{
    if (ctx) atomic_store(&ctx->cancel, 1);
}

int oc_cancelled(const oc_context *ctx) { return ctx && atomic_load(&((oc_context *)ctx)->cancel) != 0; }

void oc_context_begin_job(oc_context *ctx)
{
    pthread_mutex_lock(&ctx->error_lock);
    ctx->status = OC_OK;
    ctx->message[0] = '\0';
    ctx->trace[0] = '\0';
    pthread_mutex_unlock(&ctx->error_lock);
    if (!ctx->keep_cancel) atomic_store(&ctx->cancel, 0);
    oc_fault_plan_begin_job(&ctx->faults);
}

oc_status oc_fault_arm(oc_context *ctx, oc_fault_call call, const char *spec)
{
    if (!ctx || (unsigned)call >= OC_FAULT_CALLS)
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT, "oc_fault_arm: no context or an unknown kind of call");
    if (!oc_fault_plan_arm(&ctx->faults, call, spec))
        return oc_fail(ctx, OC_ERR_INVALID_ARGUMENT,
                       "fault spec '%s' for %s does not parse (k[:enospc|:eio|:short],...)", spec,
                       oc_fault_variable(call));
    return OC_OK;
}

static void trace_append(oc_context *ctx, const char *file, int line)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t used = strlen(ctx->trace);
    if (used + 2 >= sizeof ctx->trace) return;
    snprintf(ctx->trace + used, sizeof ctx->trace - used, "  at %s:%d\n", base, line);
}

/* fmt's text in raw as one line: a message is one line of text by contract, so a newline or
 * tab a formatted value brought in (a compiler's log) becomes a blank; the caller then shows
 * every other byte a terminal would act on (a file or matrix name from outside) as \xNN, as
 * the CLI shows names (oc_text_escape). */
static void format_line(char *raw, size_t size, const char *fmt, va_list ap)
{
    oc_vsnprintf(raw, size, fmt, ap);
    for (char *p = raw; *p; ++p)
        if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
}

oc_status oc_fail_at(oc_context *ctx, oc_status status, const char *file, int line, const char *fmt, ...)
{
    if (!ctx) return status;
    char raw[OC_MESSAGE_MAX]; /* one buffer on the stack: a caller may run on 64 KiB */
    va_list ap;
    va_start(ap, fmt);
    format_line(raw, sizeof raw, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&ctx->error_lock);
    oc_text_escape(ctx->message, sizeof ctx->message, raw, OC_ESCAPE_TERMINAL);
    ctx->status = status;
    ctx->trace[0] = '\0';
    trace_append(ctx, file, line);
    pthread_mutex_unlock(&ctx->error_lock);
    return status;
}

void oc_warn(oc_context *ctx, const char *fmt, ...)
{
    if (!ctx) return;
    /* On the heap: a warning is rare, and its caller may run on a small stack. */
    char *raw = malloc(2 * OC_MESSAGE_MAX);
    if (!raw) return; /* no memory for a warning: the job goes on without it */
    char *line = raw + OC_MESSAGE_MAX;
    va_list ap;
    va_start(ap, fmt);
    format_line(raw, OC_MESSAGE_MAX, fmt, ap);
    va_end(ap);
    oc_text_escape(line, OC_MESSAGE_MAX, raw, OC_ESCAPE_TERMINAL); /* as an error message is */
    if (ctx->warning_fn) ctx->warning_fn(ctx->warning_user, line);
    else fprintf(stderr, "outcore: warning: %s\n", line);
    free(raw);
}

oc_status oc_trace_at(oc_context *ctx, oc_status status, const char *file, int line)
{
    if (ctx && status != OC_OK) {
        pthread_mutex_lock(&ctx->error_lock);
        if (ctx->message[0] == '\0') /* a status that nobody described: say at least what */
            snprintf(ctx->message, sizeof ctx->message, "%s", oc_status_string(status));
        trace_append(ctx, file, line);
        pthread_mutex_unlock(&ctx->error_lock);
    }
    return status;
}
